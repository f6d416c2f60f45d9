"""Mail context: inboxes, stored e-mails and attachments, SMTP ingest and parsing, the demo mode
and the append-only mail counters.

Depends on: platform, identity, tenancy, domains.
"""
