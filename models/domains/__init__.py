"""Domains context: mail domains registered by an org, their DNS verification, and their
assignments to teams (with the domain and assignment levels of the settings cascade).

Depends on: platform, identity, tenancy.
"""
