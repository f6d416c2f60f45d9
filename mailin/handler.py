"""SMTP command hooks for aiosmtpd.

Until inbox routing lands (the mail issue), no address is deliverable: every RCPT is refused with
550 5.1.1, so DATA is never reached and nothing is ever acknowledged that was not stored.
"""

from __future__ import annotations

from aiosmtpd.smtp import SMTP, Envelope, Session

from models.runtime import Runtime

EXTENSIONS = ("250-PIPELINING", "250-ENHANCEDSTATUSCODES")


class IngestHandler:
    """aiosmtpd handler: EHLO extensions, recipient checks, and the durable store on DATA."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def handle_EHLO(self, server: SMTP, session: Session, envelope: Envelope,
                          hostname: str, responses: list[str]) -> list[str]:
        """Add PIPELINING and ENHANCEDSTATUSCODES (both honoured by aiosmtpd) before HELP."""
        session.host_name = hostname
        return [*responses[:-1], *EXTENSIONS, responses[-1]]

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope,
                          address: str, rcpt_options: list[str]) -> str:
        """Cap the recipients per message, and refuse addresses that are not live inboxes."""
        if len(envelope.rcpt_tos) >= self.runtime.settings.smtp.max_recipients:
            return "452 4.5.3 Too many recipients"
        return "550 5.1.1 Mailbox unavailable"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Refuse: with no deliverable recipient there is nothing to store (never a blind 250)."""
        return "554 5.5.1 No valid recipients"
