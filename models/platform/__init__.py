"""Platform context: the platform-wide settings row and the audit trail.

The lowest context: every other context reads the platform settings and writes audit entries, and
this one imports only the shared core (`models.db`, `models.errors`, ...).
"""
