"""What judges stored mail: authentication, the HTML and link checks, the spam score."""
