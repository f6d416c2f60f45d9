"""SSO context: OpenID Connect providers that system administrators configure (and, later,
the domain mappings that place their users and the identities that link users to them).

Above identity and tenancy (a provider's default role is an org role, and sign-in will create
users and memberships), below lifecycle, which drops the mappings of a team it moves to another
org.
"""
