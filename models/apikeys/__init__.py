"""API-keys context: team API keys, their scopes, authentication and usage counting.

Depends on: platform, identity, tenancy.
"""
