"""Capture credentials: an SMTP username and secret of one inbox, so that an application can
send its mail to Burnbox as to any submission server (docs/mail.md "Capture credentials").

Rules kept here:
- one credential per inbox (`inbox_id` unique; the row goes with its inbox);
- the username is the inbox's own address (unique, since addresses are): what an application's
  mail settings ask for as "user name", and the place its mail ends up;
- the secret is a random token of 256 bits (`burnbox.security.new_token`, as refresh and reset
  tokens), returned once by creation or rotation; only its SHA-256 hash is stored
  (`burnbox.security.hash_token`, as API keys' secrets) and a presented secret is compared with
  it in constant time;
- creating again rotates: the old secret stops working with that commit (mailin reads
  credentials under `SMTP_CREDENTIALS_REVISION_KEY`, which every committed write moves);
  revoking deletes the row;
- every change is audited (`inbox.smtp_credentials_create`, `_rotate`, `_revoke`), never with the
  secret or its hash. Actions flush but never commit: the caller does.

Mailin's side is `find_login` (one indexed read by username, a plain value it may cache) and
`record_use` (`last_used_at`, written at most once per `USE_RECORDED_EVERY` per credential, since
each write moves the revision and makes every mailin process read the credentials again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ForeignKey, String, or_, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.security import constant_time_equals, hash_token, new_token
from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.errors import NotFound
from models.mail.entities import MAX_ADDRESS, may_be_address
from models.mail.inboxes import Inbox
from models.tenancy.access import Caller, audit

# How often a credential's `last_used_at` is written at most: it is shown to the minute, and a
# write per login would make every mailin process read the credentials again each time.
USE_RECORDED_EVERY = timedelta(minutes=1)
NO_CREDENTIALS = "this inbox has no SMTP credentials"


class SmtpCredential(UUIDKey, Base):
    """The SMTP credential of one inbox; the secret itself is never stored, only its hash."""

    __tablename__ = "smtp_credentials"

    inbox_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"),
                                                unique=True)
    username: Mapped[str] = mapped_column(String(MAX_ADDRESS), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]


@dataclass(frozen=True)
class IssuedCredential:
    """A credential just created or rotated, with its secret (shown this once)."""

    credential: SmtpCredential
    secret: str
    rotated: bool


@dataclass(frozen=True)
class Login:
    """What mailin needs to check a login (a plain value, safe to cache and share across
    threads): the credential, its secret's hash, and the inbox its mail goes to."""

    credential_id: uuid.UUID
    secret_hash: str
    inbox_id: uuid.UUID
    address: str
    expires_at: datetime
    last_used_at: datetime | None

    def accepts(self, secret: str) -> bool:
        """Whether `secret` is this credential's, compared in constant time."""
        return constant_time_equals(hash_token(secret), self.secret_hash)


def credential_of(session: Session, inbox: Inbox) -> SmtpCredential | None:
    """The inbox's credential, or None when it has none."""
    return session.scalars(
        select(SmtpCredential).where(SmtpCredential.inbox_id == inbox.id)).first()


def get_credential(session: Session, inbox: Inbox) -> SmtpCredential:
    """The inbox's credential; NotFound when it has none."""
    credential = credential_of(session, inbox)
    if credential is None:
        raise NotFound(NO_CREDENTIALS)
    return credential


def issue_credential(session: Session, caller: Caller, inbox: Inbox) -> IssuedCredential:
    """Give the inbox credentials, or new ones (a new secret: the old one stops working once
    this commits); audited as `inbox.smtp_credentials_create` or `_rotate`."""
    credential = credential_of(session, inbox)
    rotated = credential is not None
    if credential is None:
        credential = SmtpCredential(id=uuid.uuid4(), inbox_id=inbox.id,
                                    username=inbox.full_address, created_at=utcnow())
        session.add(credential)
    else:
        credential.created_at, credential.last_used_at = utcnow(), None
    secret = new_token()
    credential.secret_hash = hash_token(secret)
    session.flush()
    audit(session, caller,
          "inbox.smtp_credentials_rotate" if rotated else "inbox.smtp_credentials_create",
          org_id=inbox.org_id, resource_type="inbox", resource_id=inbox.id,
          after={"address": inbox.full_address, "username": credential.username})
    return IssuedCredential(credential, secret, rotated)


def revoke_credential(session: Session, caller: Caller, inbox: Inbox) -> None:
    """Delete the inbox's credential (its secret stops working once this commits); audited as
    `inbox.smtp_credentials_revoke`. NotFound when it has none."""
    credential = get_credential(session, inbox)
    session.delete(credential)
    session.flush()
    audit(session, caller, "inbox.smtp_credentials_revoke", org_id=inbox.org_id,
          resource_type="inbox", resource_id=inbox.id,
          before={"address": inbox.full_address, "username": credential.username})


def find_login(session: Session, username: str) -> Login | None:
    """The credential whose username is `username` (compared in lower case, as addresses are
    stored), with its inbox; None when there is none (also, without a query, when the
    username cannot be an address: `may_be_address`)."""
    if not may_be_address(username):
        return None
    row = session.execute(
        select(SmtpCredential.id, SmtpCredential.secret_hash, SmtpCredential.last_used_at,
               Inbox.id.label("inbox_id"), Inbox.full_address, Inbox.expires_at)
        .join(Inbox, Inbox.id == SmtpCredential.inbox_id)
        .where(SmtpCredential.username == username.strip().lower())).first()
    if row is None:
        return None
    return Login(credential_id=row.id, secret_hash=row.secret_hash, inbox_id=row.inbox_id,
                 address=row.full_address, expires_at=row.expires_at,
                 last_used_at=row.last_used_at)


def record_use(session: Session, login: Login, now: datetime | None = None) -> bool:
    """Set the credential's `last_used_at` unless it was set less than `USE_RECORDED_EVERY`
    ago (one conditional UPDATE, so concurrent logins write once); whether it was written."""
    now = now or utcnow()
    result = session.execute(
        update(SmtpCredential)
        .where(SmtpCredential.id == login.credential_id,
               or_(SmtpCredential.last_used_at.is_(None),
                   SmtpCredential.last_used_at <= now - USE_RECORDED_EVERY))
        .values(last_used_at=now))
    return result.rowcount == 1  # type: ignore[attr-defined]
