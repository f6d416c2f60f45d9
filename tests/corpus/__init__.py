"""A corpus of transactional e-mails written for the tests of link and code extraction."""
