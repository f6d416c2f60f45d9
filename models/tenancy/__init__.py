"""Tenancy context: orgs, members, teams, invites, roles and permissions, the access checks, and
the org and team levels of the settings cascade.

Depends on: platform, identity.
"""
