"""The Mailpit face: Mailpit's API v1, view pages and probes over one scope's mail
(`compat.mailpit.views`), in Mailpit's shapes (`shapes`) and search syntax (`search`)."""
