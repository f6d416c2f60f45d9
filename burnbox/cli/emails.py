"""`burnbox emails`: list an inbox's e-mails and show one, through the domain actions the API
uses (`models.mail.emails`), acting as a member of the org (`burnbox.cli.acting`)."""

from __future__ import annotations

import uuid

import click

from burnbox.cli.acting import acting_option, operating
from burnbox.cli.output import json_option, page_options, print_fields, print_json, print_page

# A list's items are the dicts of `models.mail.emails.email_summary`.
COLUMNS = (("id", lambda email: email["id"]), ("received", lambda email: email["received_at"]),
           ("from", lambda email: email["from_address"]),
           ("subject", lambda email: email["subject"]), ("read", lambda email: email["is_read"]))


@click.group("emails")
def group() -> None:
    """The e-mails of an inbox."""


@group.command("list")
@click.argument("inbox")
@click.option("--search", "q", default=None,
              help="full-text search in subject, sender and text body (whole words)")
@page_options
@acting_option
@json_option
def list_(inbox: str, q: str | None, page: int, per_page: int, acting: str | None,
          as_json: bool) -> None:
    """List an inbox's e-mails (by inbox id or address), newest first."""
    from models.mail.emails import list_emails
    from models.mail.inboxes import EMAILS_VIEW
    from web.views.emails import EmailSummarySchema

    with operating("emails list", acting) as op:
        access = op.inbox(inbox, EMAILS_VIEW)
        found = list_emails(op.session, access.inbox.id, q=q, page=page, per_page=per_page)
        print_page(found, EmailSummarySchema, COLUMNS, as_json, "e-mails")


@group.command("show")
@click.argument("email_id", type=click.UUID)
@acting_option
@json_option
def show(email_id: uuid.UUID, acting: str | None, as_json: bool) -> None:
    """Show an e-mail: its headers, text body and attachments."""
    from models.mail.inboxes import EMAILS_VIEW
    from web.views.emails import EmailDetailSchema

    with operating("emails show", acting) as op:
        email = op.email(email_id, EMAILS_VIEW).email
        if as_json:
            print_json(EmailDetailSchema, email)
            return
        print_fields([("id", email.id), ("from", email.from_address),
                      ("to", email.to_address), ("cc", email.cc),
                      ("subject", email.subject), ("received", email.received_at),
                      ("size", f"{email.size_bytes} bytes"), ("spam score", email.spam_score),
                      *(("attachment", f"{part.filename} ({part.content_type}, "
                                       f"{part.size_bytes} bytes)")
                        for part in email.attachments)])
        click.echo()
        click.echo(email.body_text or "(no text body; --json shows the HTML body)")
