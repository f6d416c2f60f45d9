"""The faces that answer the APIs of other mail catchers (Mailpit, MailHog) over Burnbox's mail,
one scope at a time (`compat.scopes`); each peer's surface is a sub-package."""
