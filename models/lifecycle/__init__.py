"""Lifecycle context: the removals and transfers whose effects span contexts: deleting an account,
an org, a team or a domain; a member leaving an org or a team; moving a team or a domain to
another org. Each action calls every context's own step by name, in order, so reading it tells
everything that runs.

Depends on: platform, identity, tenancy, domains, mail, delivery, apikeys.
"""
