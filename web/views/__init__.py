"""Resource groups of the API: one flask-smorest Blueprint per module, with its schemas.

Views parse, authenticate, call one domain action and return; they hold no business rules.
"""
