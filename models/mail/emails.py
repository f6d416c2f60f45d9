"""The e-mails of an inbox: listing and full-text search, reading, read state, deletion,
attachments, and the query of requests waiting for e-mail.

Search (`?q=`) is the syntax of `models.mail.query`: operators, phrases, negation, and plain
words as full text over the subject, the From address and the text body.

Counters: every change of an e-mail's read state or existence updates its inbox's `email_count`
and `unread_count` in the same transaction, after locking the inbox row. Ingest locks the inbox
row first too, so the two never wait on each other in opposite orders.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from sqlalchemy import ColumnElement, bindparam, delete, func, select, update
from sqlalchemy.orm import Session, joinedload, lazyload
from sqlalchemy.orm.attributes import set_committed_value

from burnbox.storage import ObjectStorage
from models.db import detached_copy, remember_mail_change
from models.errors import NotFound, ValidationFailed
from models.handoffs import EMAIL_DELETED, EMAIL_UPDATED, INBOX_EMPTIED, INBOX_MARKED, MailChange
from models.mail.caches import CACHED_PAGE, INBOX_REVISIONS, InboxCaches, inbox_revision
from models.mail.entities import (
    Attachment,
    Email,
    discard_after_commit,
    discard_objects_of,
    object_keys,
)
from models.mail.inboxes import (
    ACCESS_COLUMNS,
    Inbox,
    InboxAccess,
    access_of,
    join_access,
    resolve_inbox_access,
)
from models.mail.query import filter_emails
from models.mail.tag_entities import has_tag, search_key
from models.pagination import Page, PageQuery, paginate
from models.search import contains
from models.tenancy.access import CALLER_ID, Caller
from models.tenancy.rbac import Grants


@dataclass(frozen=True)
class EmailAccess:
    """An e-mail and the caller's access to its inbox."""

    email: Email
    inbox: InboxAccess


# Loads e-mails without their attachments, which `attach` then gives them.
_WITHOUT_ATTACHMENTS = lazyload(Email.attachments)
_ATTACHMENTS_OF = (select(Attachment)
                   .where(Attachment.email_id.in_(bindparam("email_ids", expanding=True)))
                   .order_by(Attachment.email_id, Attachment.position))


def attach(session: Session, emails: Sequence[Email]) -> None:
    """Give `emails` (loaded with `_WITHOUT_ATTACHMENTS`) their attachments, by position: one
    statement for those that have any, none when none has. Why: the relationship's own loader
    reads them for every e-mail, and the mail of a test (a code, a link) mostly has none: a
    statement fewer for each detail and wait that reads such mail."""
    having = [email.id for email in emails if email.has_attachments]
    found: dict[uuid.UUID, list[Attachment]] = {}
    if having:
        for attachment in session.scalars(_ATTACHMENTS_OF, {"email_ids": having}):
            found.setdefault(attachment.email_id, []).append(attachment)
    for email in emails:
        set_committed_value(email, "attachments", found.get(email.id, []))


_EMAIL_WITH_ROLES = (join_access(select(Email, Inbox, *ACCESS_COLUMNS)
                                 .join(Inbox, Inbox.id == Email.inbox_id))
                     .where(Email.id == bindparam("email_id")).options(_WITHOUT_ATTACHMENTS))


def resolve_email_access(session: Session, grants: Grants, caller: Caller,
                         email_id: uuid.UUID, cache: InboxCaches | None = None
                         ) -> EmailAccess:
    """The e-mail `email_id` with the caller's access to its inbox; NotFound for an unknown id
    or one the caller cannot see at all (see `models.mail.inboxes.access_of`). One statement:
    the e-mail, its inbox and the caller's roles (its attachments in one more, if it has any).
    With `cache` (a read-only request's), none while the inbox's revision stands, once the
    process knows the e-mail's inbox; the e-mail is then a detached copy, for reading only."""
    inbox_id = None if cache is None else cache.inbox_of(email_id)
    try:
        if cache is not None and inbox_id is not None:
            email = cache.emails(email_id, lambda: _email_copy(session, email_id),
                                 also=inbox_revision(inbox_id))
            if email is None:
                raise NotFound("email not found")
            return EmailAccess(email=email, inbox=resolve_inbox_access(
                session, grants, caller, inbox_id, cache))
        row = session.execute(_EMAIL_WITH_ROLES,
                              {"email_id": email_id, CALLER_ID: caller.user_id}).one_or_none()
        if row is None:
            raise NotFound("email not found")
        attach(session, [row[0]])
        if cache is not None:
            # An e-mail never changes inbox: the next request can read the inbox's revision
            # ahead, and take the e-mail from the cache.
            cache.note_inbox_of(email_id, row[1].id)
        return EmailAccess(email=row[0], inbox=access_of(grants, caller, row[1], row.org_role,
                                                         row.team_role))
    except NotFound:
        raise NotFound("email not found") from None


_EMAIL_WITH_INBOX = (select(Email, Inbox).join(Inbox, Inbox.id == Email.inbox_id)
                     .where(Email.id == bindparam("email_id")).options(_WITHOUT_ATTACHMENTS))


def _email_copy(session: Session, email_id: uuid.UUID) -> Email | None:
    """The e-mail with its attachments and its inbox, detached copies all (for a cache)."""
    row = session.execute(_EMAIL_WITH_INBOX, {"email_id": email_id}).one_or_none()
    if row is None:
        return None
    email, inbox = row
    attach(session, [email])
    copy = detached_copy(email)
    set_committed_value(copy, "attachments", [detached_copy(a) for a in email.attachments])
    set_committed_value(copy, "inbox", detached_copy(inbox))
    return copy


# The columns of a list item (`email_summary`) that the e-mail's row holds, and only those:
# the bodies, headers and attachments a list never shows stay in the database.
ROW_SUMMARY_COLUMNS = (Email.id, Email.inbox_id, Email.message_id, Email.from_address,
                       Email.to_address, Email.subject, Email.snippet, Email.has_attachments,
                       Email.is_read, Email.size_bytes, Email.received_at, Email.tags)
ROW_SUMMARY_KEYS = tuple(column.key for column in ROW_SUMMARY_COLUMNS)


def _first_thumbnail(column: Any) -> Any:
    """`column` of the e-mail's first attachment (by position) that has a thumbnail: a scalar
    subquery correlated to the e-mail, found through the attachments' `email_id` index."""
    return (select(column).where(Attachment.email_id == Email.id,
                                 Attachment.thumbnail_key.is_not(None))
            .order_by(Attachment.position).limit(1).correlate(Email).scalar_subquery())


THUMBNAIL_COLUMNS = (_first_thumbnail(Attachment.id).label("thumbnail_attachment_id"),
                     _first_thumbnail(Attachment.filename).label("thumbnail_filename"))
SUMMARY_KEYS = (*ROW_SUMMARY_KEYS, *(column.key for column in THUMBNAIL_COLUMNS))


def new_summary_item(row: dict[str, Any]) -> dict[str, Any]:
    """The list item of an e-mail being stored (its row's values by key): no thumbnail yet,
    the worker makes them after the e-mail is stored."""
    return {**{key: row[key] for key in ROW_SUMMARY_KEYS}, "thumbnail": None}


def summary_item(row: dict[str, Any]) -> dict[str, Any]:
    """A list item from the values of SUMMARY_KEYS: the row's own values, and `thumbnail`,
    `{"attachment_id", "filename"}` of its first image with a thumbnail, or None."""
    item = new_summary_item(row)
    if row["thumbnail_attachment_id"] is not None:
        item["thumbnail"] = {"attachment_id": row["thumbnail_attachment_id"],
                             "filename": row["thumbnail_filename"]}
    return item


# The thumbnails of a page's e-mails, their ids bound.
_THUMBNAILS = (select(Email.id, *THUMBNAIL_COLUMNS)
               .where(Email.id.in_(bindparam("email_ids", expanding=True))))


def _items(session: Session, page: Page[dict[str, Any]]) -> Page[dict[str, Any]]:
    """The page's rows (ROW_SUMMARY_COLUMNS) as list items. The thumbnails of its e-mails
    that have attachments are read in one statement more, over those e-mails alone (none for
    a page without attachments): in the page's own statement SQLite runs the subqueries for
    every row its total counts, before LIMIT (a first page of 50 of 20,000 e-mails, half with
    an image: 64 ms, 103 ms so, 70 ms this way; PostgreSQL alike either way)."""
    ids = [row["id"] for row in page.data if row["has_attachments"]]
    found = {} if not ids else {
        row.id: row._mapping for row in session.execute(_THUMBNAILS, {"email_ids": ids})}
    none = dict.fromkeys((column.key for column in THUMBNAIL_COLUMNS), None)
    return dataclasses.replace(page, data=[summary_item({**none, **found.get(row["id"], {}),
                                                         **row}) for row in page.data])


NEWEST_FIRST = (Email.received_at.desc(), Email.id.desc())
# The unfiltered list, which tests poll: built once (models.pagination.PageQuery).
_INBOX_PAGE = PageQuery(select(*ROW_SUMMARY_COLUMNS)
                        .where(Email.inbox_id == bindparam("inbox_id")).order_by(*NEWEST_FIRST))


def list_emails(session: Session, inbox_id: uuid.UUID, *, q: str | None = None, page: int = 1,
                per_page: int = 20, cache: InboxCaches | None = None) -> Page[dict[str, Any]]:
    """One page of the inbox's e-mails as list items (the dicts of `email_summary`), newest
    first, optionally only those matching the search `q` (see `models.mail.query`;
    QuerySyntaxError when it is malformed). One statement: the listed columns and the total
    (and one more for the thumbnails of a page with attachments, `_items`); with `cache` (a
    read-only request's), none for an unfiltered first page while the inbox's revision
    stands."""
    if not q:
        if cache is None or page != CACHED_PAGE:
            return _items(session, _INBOX_PAGE.run(session, page, per_page,
                                                   {"inbox_id": inbox_id}))
        found = cache.pages(
            (inbox_id, per_page),
            lambda: _items(session, _INBOX_PAGE.run(session, page, per_page,
                                                    {"inbox_id": inbox_id})),
            also=inbox_revision(inbox_id))
        assert found is not None  # a page is never None
        return found  # type: ignore[no-any-return]
    query = filter_emails(select(*ROW_SUMMARY_COLUMNS).where(Email.inbox_id == inbox_id), q)
    return _items(session, paginate(session, query.order_by(*NEWEST_FIRST), page, per_page))


def email_summary(email: Email) -> dict[str, Any]:
    """The e-mail as a list item: the API's e-mail lists and the inbox stream's `email.received`
    message both send exactly this."""
    return {"id": email.id, "inbox_id": email.inbox_id, "message_id": email.message_id,
            "from_address": email.from_address, "to_address": email.to_address,
            "subject": email.subject, "snippet": email.snippet,
            "has_attachments": email.has_attachments, "is_read": email.is_read,
            "size_bytes": email.size_bytes, "received_at": email.received_at,
            "tags": email.tags, "thumbnail": next(
                ({"attachment_id": part.id, "filename": part.filename}
                 for part in sorted(email.attachments, key=lambda part: part.position)
                 if part.thumbnail_key is not None), None)}


# Built once, the e-mails' ids bound: the live push runs it for every e-mail received.
_SUMMARIES_WITH_TEAM = (select(*ROW_SUMMARY_COLUMNS, *THUMBNAIL_COLUMNS, Inbox.team_id)
                        .join(Inbox, Inbox.id == Email.inbox_id)
                        .where(Email.id.in_(bindparam("email_ids", expanding=True))))


def summaries_with_team(session: Session, email_ids: Sequence[uuid.UUID]
                        ) -> dict[uuid.UUID, tuple[dict[str, Any], uuid.UUID]]:
    """Each e-mail's list item (`email_summary`'s values) with its inbox's team id, by e-mail
    id, read from the listed columns only, in one query; an e-mail gone is missing. For the
    live push of new e-mail, which has no use for the bodies and headers a whole row would
    decode."""
    found = {}
    for *summary, team_id in session.execute(_SUMMARIES_WITH_TEAM,
                                             {"email_ids": list(email_ids)}):
        data = summary_item(dict(zip(SUMMARY_KEYS, summary, strict=True)))
        found[data["id"]] = (data, team_id)
    return found


def _lock_inbox(session: Session, inbox_id: uuid.UUID) -> None:
    session.execute(select(Inbox.id).where(Inbox.id == inbox_id).with_for_update())


def _count_in_inbox(session: Session, email: Email,
                    **counters: Any) -> tuple[uuid.UUID | None, tuple[int, int]]:
    """Update the counters of the e-mail's inbox (`counters`: column -> new value) and return
    its domain assignment with its counters now (e-mails, unread), in the same statement."""
    inbox = session.execute(
        update(Inbox).where(Inbox.id == email.inbox_id).values(**counters)
        .returning(Inbox.domain_assignment_id, Inbox.email_count, Inbox.unread_count),
        execution_options=INBOX_REVISIONS.naming([email.inbox_id])).one()
    return inbox.domain_assignment_id, (inbox.email_count, inbox.unread_count)


def set_read(session: Session, email: Email, is_read: bool) -> Email:
    """Mark the e-mail read or unread, keeping its inbox's unread_count in step; a change is
    announced to the streams of the inbox's mail once it commits."""
    _lock_inbox(session, email.inbox_id)
    session.refresh(email, ["is_read"])
    if email.is_read != is_read:
        email.is_read = is_read
        assignment_id, counts = _count_in_inbox(
            session, email, unread_count=Inbox.unread_count + (-1 if is_read else 1))
        session.flush()
        remember_mail_change(session, MailChange(EMAIL_UPDATED, email.inbox_id, assignment_id,
                                                 email.id, is_read=is_read, counts=counts))
    return email


def delete_email(session: Session, email: Email) -> None:
    """Delete the e-mail and its attachments; its objects go after commit unless another
    recipient's copy still uses them. The deletion is announced to the streams of the
    inbox's mail once it commits."""
    _lock_inbox(session, email.inbox_id)
    session.refresh(email, ["is_read"])
    keys = object_keys(session, [email.id])
    assignment_id, counts = _count_in_inbox(
        session, email, email_count=Inbox.email_count - 1,
        unread_count=Inbox.unread_count - (0 if email.is_read else 1))
    session.delete(email)
    session.flush()
    discard_after_commit(session, keys)
    remember_mail_change(session, MailChange(EMAIL_DELETED, email.inbox_id, assignment_id,
                                             email.id, counts=counts))


def delete_all_emails(session: Session, inbox: Inbox) -> int:
    """Delete every e-mail of the inbox with its attachments (the inbox itself stays, its
    counters at zero); return how many e-mails went. Their objects go after commit unless
    another recipient's copy still uses them.

    The keys are handed over by the same streaming query an inbox deletion uses, so an inbox
    of any size costs one batch of keys in memory; the inbox row is locked first, as ingest
    does, so mail arriving meanwhile is either deleted here or lands after, counted."""
    _lock_inbox(session, inbox.id)
    naming = INBOX_REVISIONS.naming([inbox.id])
    discard_objects_of(session, select(Inbox.id).where(Inbox.id == inbox.id))
    # Attachments go by the database's cascade from their e-mail.
    deleted = session.execute(delete(Email).where(Email.inbox_id == inbox.id),
                              execution_options={**naming, "synchronize_session": False}).rowcount
    session.execute(update(Inbox).where(Inbox.id == inbox.id).values(
        email_count=0, unread_count=0), execution_options=naming)
    session.refresh(inbox, ["email_count", "unread_count"])
    if deleted:
        remember_mail_change(session, MailChange(INBOX_EMPTIED, inbox.id,
                                                 inbox.domain_assignment_id, counts=(0, 0)))
    return deleted


def mark_all_read(session: Session, inbox: Inbox, is_read: bool = True) -> int:
    """Mark every unread e-mail of the inbox read (with `is_read` false: every read one
    unread); return how many changed. A change is announced to the streams of the inbox's
    mail once it commits, as one change of the inbox."""
    _lock_inbox(session, inbox.id)
    naming = INBOX_REVISIONS.naming([inbox.id])
    changed = session.execute(update(Email).where(Email.inbox_id == inbox.id,
                                                  Email.is_read.is_(not is_read))
                              .values(is_read=is_read), execution_options=naming).rowcount
    if changed:
        session.execute(update(Inbox).where(Inbox.id == inbox.id).values(
            unread_count=Inbox.unread_count + (-changed if is_read else changed)),
            execution_options=naming)
    session.refresh(inbox, ["email_count", "unread_count"])
    if changed:
        remember_mail_change(session, MailChange(
            INBOX_MARKED, inbox.id, inbox.domain_assignment_id, is_read=is_read,
            counts=(inbox.email_count, inbox.unread_count)))
    return changed


def get_attachment(email: Email, attachment_id: uuid.UUID) -> Attachment:
    """The e-mail's attachment `attachment_id`; NotFound when it is another e-mail's."""
    for attachment in email.attachments:
        if attachment.id == attachment_id:
            return attachment
    raise NotFound("attachment not found")


def open_object(storage: ObjectStorage, key: str) -> IO[bytes]:
    """A stored object as a stream to read in blocks (the caller closes it); NotFound when the
    object is gone."""
    try:
        return storage.open(key)
    except FileNotFoundError:
        raise NotFound("the stored file is gone") from None


@dataclass(frozen=True)
class StoredObject:
    """A mail object in storage: how to name it in a download, and the inboxes whose e-mails
    use it (the copies of one message delivered to several inboxes share its objects)."""

    key: str
    filename: str
    content_type: str
    inbox_ids: list[uuid.UUID]


def find_object(session: Session, key: str) -> StoredObject | None:
    """The raw message or attachment stored under `key`; None when no e-mail uses it."""
    inbox_ids = list(dict.fromkeys(session.scalars(
        select(Email.inbox_id).where(Email.raw_key == key).order_by(Email.id))))
    if inbox_ids:
        return StoredObject(key, "message.eml", "message/rfc822", inbox_ids)
    rows = session.execute(select(Email.inbox_id, Attachment.filename, Attachment.content_type)
                           .join(Attachment, Attachment.email_id == Email.id)
                           .where(Attachment.storage_key == key).order_by(Attachment.id)).all()
    if not rows:
        return None
    return StoredObject(key, rows[0].filename or "attachment", rows[0].content_type,
                        list(dict.fromkeys(row.inbox_id for row in rows)))


# --- waiting for e-mail ---------------------------------------------------------------------
# The query a request waiting for e-mail runs at its start and after each wake-up (the waiting
# itself, which holds no database connection, is the web face's: `web/waits.py`).

MAX_WAIT_COUNT = 50


@dataclass(frozen=True)
class WaitCriteria:
    """Which e-mails a waiting request counts: received after `after` (None: any, so mail
    already there counts), From and subject containing `from_address` / `subject` (case-blind),
    matching the full-text `q` as the list's `?q=` does, carrying the tag `tag`. `count` is how
    many it waits for."""

    count: int = 1
    from_address: str | None = None
    subject: str | None = None
    q: str | None = None
    tag: str | None = None
    after: datetime | None = None


def inbox_scope(inbox_id: uuid.UUID | ColumnElement[Any]) -> ColumnElement[bool]:
    """The e-mails of one inbox (its id, or a bound parameter for a statement built once)."""
    return Email.inbox_id == inbox_id


def team_scope(team_id: uuid.UUID) -> ColumnElement[bool]:
    """The e-mails of every inbox of a team."""
    return Email.inbox_id.in_(select(Inbox.id).where(Inbox.team_id == team_id))


def assignment_scope(assignment_id: uuid.UUID) -> ColumnElement[bool]:
    """The e-mails of every inbox created through one domain assignment (the inboxes its
    catch-all made included)."""
    return Email.inbox_id.in_(select(Inbox.id).where(
        Inbox.domain_assignment_id == assignment_id))


def resolve_after(session: Session, scope: ColumnElement[bool], value: str) -> datetime:
    """The moment `after` stands for: the `received_at` of the e-mail it names (which must be in
    `scope`), or the ISO 8601 timestamp it is (UTC when it names no zone). ValidationFailed for
    anything else, an e-mail id outside the scope included (nothing is learnt about it)."""
    try:
        email_id = uuid.UUID(value)
    except ValueError:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationFailed("invalid after", details={"after": [
                "an e-mail id or an ISO 8601 timestamp"]}) from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    received = session.scalar(select(Email.received_at).where(scope, Email.id == email_id))
    if received is None:
        raise ValidationFailed("invalid after", details={"after": [
            "no such e-mail among those waited for"]})
    return received


# A waited e-mail's inbox, read in the e-mails' statement: the answer's `expires_at` is the
# inbox's, and a wait's read-only session holds no inbox of its own (the permission check's
# is a cached copy, and a team's wait spans inboxes), so each was a lazy load of its own.
_WITH_INBOX = joinedload(Email.inbox, innerjoin=True)


def waited_emails(session: Session, scope: ColumnElement[bool], criteria: WaitCriteria
                  ) -> list[Email]:
    """The first `criteria.count` e-mails of `scope` that match, oldest first, with their
    inboxes."""
    query = select(Email).where(scope).options(_WITHOUT_ATTACHMENTS, _WITH_INBOX)
    if criteria.after is not None:
        query = query.where(Email.received_at > criteria.after)
    if criteria.from_address:
        query = query.where(contains(func.lower(Email.from_address),
                                     criteria.from_address.lower()))
    if criteria.subject:
        query = query.where(contains(func.lower(Email.subject), criteria.subject.lower()))
    if criteria.q:
        query = filter_emails(query, criteria.q)
    if criteria.tag:
        query = query.where(has_tag(search_key(criteria.tag)))
    query = query.order_by(Email.received_at, Email.id).limit(criteria.count)
    found = list(session.scalars(query))
    attach(session, found)
    return found
