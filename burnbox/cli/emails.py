"""`burnbox emails`: list an inbox's e-mails, show one with the codes and links found in it, tag
one, and put one in as though it had arrived over SMTP: over HTTP with the API key in the
environment, or on the database through the domain actions the API uses (`models.mail.emails`,
`models.mail.ingest.compose`), acting as a member of the org (`burnbox.cli.remote` says which)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import click

from burnbox.cli.acting import acting_option, operating
from burnbox.cli.errors import fail
from burnbox.cli.follow import link_text
from burnbox.cli.output import echo_json, json_option, page_options, print_fields, print_page
from burnbox.cli.remote import KEY_ENV, Api, Refused, through_api

# Over the API's JSON for an e-mail list item (EmailSummarySchema).
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
    api = through_api(acting)
    if api is not None:
        found = _in_inbox(api, inbox, "GET", "emails",
                          query={"q": q, "page": page, "per_page": per_page})
        print_page(found, COLUMNS, as_json, "e-mails")
        return
    from burnbox.cli.output import dump_page
    from models.mail.emails import list_emails
    from models.mail.inboxes import EMAILS_VIEW
    from web.views.emails import EmailSummarySchema

    with operating("emails list", acting) as op:
        access = op.inbox(inbox, EMAILS_VIEW)
        found = list_emails(op.session, access.inbox.id, q=q, page=page, per_page=per_page)
        print_page(dump_page(found, EmailSummarySchema), COLUMNS, as_json, "e-mails")


def _in_inbox(api: Api, inbox: str, method: str, what: str, *,
              query: dict[str, Any] | None = None, body: dict[str, Any] | None = None) -> Any:
    """The API's answer of `method /inboxes/<id>/<what>` for the inbox named by its id or
    address; a 404 ends the command naming the inbox, any other refusal with the API's
    message."""
    try:
        inbox_id = str(uuid.UUID(inbox.strip()))
    except ValueError:
        inbox_id = api.inbox(inbox)["id"]
    try:
        return api.call(method, f"/inboxes/{inbox_id}/{what}", query, body)
    except Refused as refused:
        if refused.status == 404:
            fail(f"no inbox {inbox!r}", "not_found")
        refused.fail()


@group.command("show")
@click.argument("email_id", type=click.UUID)
@acting_option
@json_option
def show(email_id: uuid.UUID, acting: str | None, as_json: bool) -> None:
    """Show an e-mail: its headers, the codes and links found in it, its text body and
    attachments."""
    api = through_api(acting)
    if api is not None:
        _print(api.email(email_id), as_json)
        return
    from models.mail.inboxes import EMAILS_VIEW
    from web.views.emails import EmailDetailSchema

    with operating("emails show", acting) as op:
        _print(EmailDetailSchema().dump(op.email(email_id, EMAILS_VIEW).email), as_json)


@group.command("put")
@click.argument("inbox")
@click.option("--from", "sender", required=True, help="an address, or 'Name <address>'")
@click.option("--to", "to", multiple=True, help="a To address (repeat; default: the inbox)")
@click.option("--subject", default="")
@click.option("--text", default=None, help="the text body")
@click.option("--html", default=None, help="the HTML body")
@click.option("--attach", "files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="a file to attach (repeat)")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="an extra header (repeat)")
@click.option("--tag", "tags", multiple=True, help="a tag, written as X-Tags (repeat)")
@acting_option
@json_option
def put(inbox: str, sender: str, to: tuple[str, ...], subject: str, text: str | None,
        html: str | None, files: tuple[str, ...], headers: tuple[str, ...],
        tags: tuple[str, ...], acting: str | None, as_json: bool) -> None:
    """Put an e-mail into an inbox (by id or address) as though it had arrived over SMTP."""
    body = _message_body(sender, to, subject, text, html, files, headers, tags)
    api = through_api(acting)
    if api is not None:
        _print(_in_inbox(api, inbox, "POST", "messages", body=body), as_json)
        return
    from marshmallow import ValidationError

    from models.mail.entities import Email
    from models.mail.inboxes import MANAGE
    from models.mail.ingest.compose import put_message
    from web.views.emails import EmailDetailSchema
    from web.views.messages import MessageInSchema

    try:
        composition = MessageInSchema().load(body)
    except ValidationError as exc:
        fail("the message is not valid", "validation_error", exc.normalized_messages())
    with operating("emails put", acting) as op:
        access = op.inbox(inbox, MANAGE)
        rt = op.runtime
        email_id = put_message(rt.db, rt.storage, rt.settings, op.session,
                               op.caller(access.inbox.org_id), access.inbox, composition)
        _print(EmailDetailSchema().dump(op.session.get(Email, email_id)), as_json)


def _message_body(sender: str, to: tuple[str, ...], subject: str, text: str | None,
                  html: str | None, files: tuple[str, ...], headers: tuple[str, ...],
                  tags: tuple[str, ...]) -> dict[str, Any]:
    """The JSON body of `POST /inboxes/:id/messages` from the verb's options."""
    import base64
    from pathlib import Path

    extra: dict[str, str] = {}
    for line in headers:
        name, colon, value = line.partition(":")
        if not colon:
            fail(f"--header {line!r}: write it as 'Name: value'")
        extra[name.strip()] = value.strip()
    body: dict[str, Any] = {"from": sender, "subject": subject, "headers": extra,
                            "tags": list(tags), "attachments": [
        {"filename": Path(path).name,
         "content": base64.b64encode(Path(path).read_bytes()).decode("ascii")}
        for path in files]}
    if to:
        body["to"] = list(to)
    for name, value in (("text", text), ("html", html)):
        if value is not None:
            body[name] = value
    return body


@group.command("release")
@click.argument("email_id", type=click.UUID)
@click.option("--to", "recipients", multiple=True, required=True, metavar="ADDRESS",
              help="a real mailbox to send the e-mail to (repeat for several); the operator's, "
                   "the org's and the team's recipient patterns must allow it")
@json_option
def release(email_id: uuid.UUID, recipients: tuple[str, ...], as_json: bool) -> None:
    """Send an e-mail on to real mailboxes through the server's release relay (over the API,
    with a key holding the team.emails.release scope); prints the queued release. The
    server's worker delivers it: `burnbox emails releases` shows how it went."""
    api = _release_api()
    try:
        queued = api.call("POST", f"/emails/{email_id}/release",
                          body={"recipients": list(recipients)})
    except Refused as refused:
        if refused.status == 404:
            fail(f"no e-mail {email_id}", "not_found")
        refused.fail()
    _print_releases([queued], as_json, one=True)


@group.command("releases")
@click.argument("email_id", type=click.UUID)
@json_option
def releases(email_id: uuid.UUID, as_json: bool) -> None:
    """List an e-mail's releases, newest first, with the relay's reply to each."""
    api = _release_api()
    try:
        found = api.call("GET", f"/emails/{email_id}/releases")["releases"]
    except Refused as refused:
        if refused.status == 404:
            fail(f"no e-mail {email_id}", "not_found")
        refused.fail()
    _print_releases(found, as_json)


def _release_api() -> Api:
    """The API: releases go through the service, whose worker delivers them (a process of its
    own, on the database, could queue a release no worker ever takes in the embedded mode)."""
    api = through_api()
    if api is None:
        fail(f"releases go through the API: export {KEY_ENV} (a key with the "
             "team.emails.release scope), and BURNBOX_URL when the server is not this host's")
    return api


def _print_releases(found: list[dict[str, Any]], as_json: bool, one: bool = False) -> None:
    if as_json:
        echo_json(found[0] if one else found)
        return
    if not found:
        click.echo("No releases.")
    for item in found:
        print_fields([("release", item["id"]), ("to", ", ".join(item["recipients"])),
                      ("state", item["state"]), ("attempts", item["attempts"]),
                      ("relay reply", item["relay_reply"] or "(none yet)"),
                      ("asked", item["created_at"]),
                      ("finished", item["finished_at"] or "(not yet)")])


def _print(email: dict[str, Any], as_json: bool) -> None:
    """An e-mail's detail (the API's JSON): as it is with `--json`, else labelled lines, then
    the text body."""
    if as_json:
        echo_json(email)
        return
    print_fields([("id", email["id"]), ("from", email["from_address"]),
                  ("to", email["to_address"]), ("cc", email["cc"]),
                  ("subject", email["subject"]), ("received", email["received_at"]),
                  ("size", f"{email['size_bytes']} bytes"), ("spam score", email["spam_score"]),
                  ("tags", ", ".join(email["tags"]) or "none"),
                  *(("code", code) for code in email["codes"]),
                  *(("link", link_text(link)) for link in email["links"]),
                  *(("attachment", f"{part['filename']} ({part['content_type']}, "
                                   f"{part['size_bytes']} bytes)")
                    for part in email["attachments"])])
    click.echo()
    click.echo(email["body_text"] or "(no text body; --json shows the HTML body)")


@group.command("tag")
@click.argument("email_id", type=click.UUID)
@click.argument("tags", nargs=-1)
@click.option("--remove", "mode", flag_value="remove", help="take these tags off instead")
@click.option("--set", "mode", flag_value="replace",
              help="give it exactly these tags (none: take them all off)")
@acting_option
@json_option
def tag(email_id: uuid.UUID, tags: tuple[str, ...], mode: str | None, acting: str | None,
        as_json: bool) -> None:
    """Add tags to an e-mail (or take them off, or set them), and print its tags after."""
    mode = mode or "add"
    if not tags and mode != "replace":
        fail("name at least one tag (or --set with none to take them all off)", "usage")
    api = through_api(acting)
    if api is not None:
        try:
            if mode == "remove":
                for name in tags:
                    answer = api.call("DELETE", f"/emails/{email_id}/tags/{quote(name, safe='')}")
            else:
                answer = api.call("PUT" if mode == "replace" else "POST",
                                  f"/emails/{email_id}/tags", body={"tags": list(tags)})
        except Refused as refused:
            refused.fail()
        _print_tags(answer["tags"], as_json)
        return
    from models.mail.inboxes import EMAILS_VIEW
    from models.mail.tags import change_email_tags

    with operating("emails tag", acting) as op:
        access = op.email(email_id, EMAILS_VIEW)
        changed = change_email_tags(op.session, access.email, access.inbox.inbox.team_id,
                                    list(tags), mode)
        names = list(changed.tags)
    _print_tags(names, as_json)


def _print_tags(tags: list[str], as_json: bool) -> None:
    if as_json:
        echo_json({"tags": tags})
    else:
        click.echo(", ".join(tags) if tags else "no tags")
