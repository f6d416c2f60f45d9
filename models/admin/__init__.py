"""Admin context: the operator's side: first-run setup and the platform-wide figures.

The highest context: it may call any other.
"""
