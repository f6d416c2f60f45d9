"""Identity context: users, passwords and lockout, sessions and tokens, account e-mails, and the
account actions (register, password change and reset, e-mail verification).

Depends on: platform. Knows nothing of orgs or teams; removing a user, which touches every
context, is an action of `models.lifecycle`.
"""
