"""Analytics: what an org or a team received and created, by day, hour, domain and sender
domain, read from the append-only counters of `models.mail.counters` (never from the live inbox
and e-mail rows, so the cleanup of expired inboxes never lowers history)."""
