"""Burnbox's Python client and pytest plugin.

    from burnbox_client import Burnbox
    client = Burnbox("http://127.0.0.1:8080", api_key)
    inbox = client.inboxes.create()
    email = inbox.wait_for_email(subject="Confirm", timeout=30)
    email.codes, email.links
"""

from burnbox_client.client import Burnbox, BurnboxError, EmailNotReceived
from burnbox_client.models import Attachment, Email, Inbox, Link

__all__ = ["Attachment", "Burnbox", "BurnboxError", "Email", "EmailNotReceived", "Inbox", "Link"]
