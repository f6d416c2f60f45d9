"""Release: send a captured e-mail to a real mailbox (docs/mail.md "Release").

A disposable-inbox service must never become an open relay, so a release passes every guard
before anything is queued (`request_release`), in this order:
1. a relay: `release.relay` is `own` with a host, or `mailer` with a platform mailer in force
   (Conflict otherwise, nothing queued);
2. the recipients: 1 to MAX_RECIPIENTS bare addresses (ValidationFailed);
3. the allow-lists: each recipient matches the operator's patterns, its org's and its team's
   where they set some (`models.mail.release_patterns`; Forbidden, naming the recipients);
4. the team's budget: `release.rate_limit` recipients per window, counted with one atomic
   increment in the key-value store, so parallel requests cannot overspend it (RateLimited;
   a refused request gives its count back). The count fails closed: with the store down no
   release leaves.
Then a `releases` row (queued) and the audit entry `email.release` with the recipients, in
the caller's transaction; the view sends the delivery actor, which waits for the commit.

The permission is `team.emails.release`: the team lead role holds it (and org owners and
admins, through every team); the team member role does not, nor does any key scope a key is
given unless someone ticks it.

Delivery (`deliver`, run by `tasks.release`) reads the release and the relay in a short
session, sends the stored raw message unchanged below a block of `Resent-*` fields (RFC 5322
3.6.6: the message is re-sent by a new sender to new recipients, its `To` untouched), the
envelope to the release's recipients only, and records the outcome in a second transaction:
sent with the relay's reply; failed with it on a 5xx or once MAX_ATTEMPTS attempts met 4xx
replies or no connection. Each outcome is audited (`email.release_sent`,
`email.release_failed`).
"""

from __future__ import annotations

import smtplib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import format_datetime, make_msgid, parseaddr

import limits
from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox import mailer
from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.secretbox import SecretsUnavailable
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, Forbidden, RateLimited, ValidationFailed
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.mail.release_patterns import (
    Address,
    Pattern,
    allowed_by,
    checked_patterns,
    operator_bound,
    parse_address,
    parse_pattern,
)
from models.platform.audit import record_audit
from models.system_config import mailer_config
from models.tenancy.access import Caller, audit

RELEASE = "team.emails.release"
MAX_RECIPIENTS = 10
MAX_ATTEMPTS = 5
# Each wait before a next attempt is this many times the one before (release.retry_delay first).
BACKOFF_FACTOR = 4
MAX_REPLY = 1000
QUEUED, SENT, FAILED = "queued", "sent", "failed"
STATES = (QUEUED, SENT, FAILED)
RELEASED = "email.release"
RELEASE_SENT = "email.release_sent"
RELEASE_FAILED = "email.release_failed"
NO_RELAY = ("release is not available: this server has no relay for it (the operator sets "
            "release.relay)")
RATE_KEY = "release:budget:{team_id}"


class Release(UUIDKey, Timestamps, Base):
    """One release of an e-mail to real recipients, and how its delivery went."""

    __tablename__ = "releases"

    email_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("emails.id", ondelete="CASCADE"),
                                                index=True)
    # Who asked (None once their account is gone; the audit trail keeps their e-mail).
    released_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"))
    recipients: Mapped[list[str]]
    state: Mapped[str] = mapped_column(String(8), default=QUEUED)
    attempts: Mapped[int] = mapped_column(default=0)
    # The relay's last answer ("250 2.0.0 Ok: queued as ...", "550 5.1.1 unknown user") or why
    # there was none ("connection refused").
    relay_reply: Mapped[str] = mapped_column(Text, default="")
    finished_at: Mapped[datetime | None]
    # The auto-release rule that made it (None: a person asked, or the rule is gone). One
    # release per e-mail and rule: the key that makes a rule release an e-mail at most once.
    rule_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("release_rules.id", ondelete="SET NULL"))

    __table_args__ = (UniqueConstraint("email_id", "rule_id"),)


class ReleaseRecipients(Base):
    """The recipient patterns an org (team_id None) or one of its teams allows releases to."""

    __tablename__ = "release_recipients"

    # The org's id for the org's list, the team's for a team's: one list per owner.
    owner_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              index=True)
    team_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"))
    patterns: Mapped[list[str]]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


# --- the relay ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReleaseRelay:
    """Where released mail goes and the envelope sender it goes with."""

    relay: mailer.Relay
    envelope_from: str


def release_relay(session: Session, settings: Settings) -> ReleaseRelay | None:
    """The relay in force for releases, or None when there is none: `release.relay` off,
    `own` without a host, or `mailer` while the platform mailer has no host (the settings, or
    what an administrator stored) or its stored password cannot be opened (the key that
    sealed it is gone: the mailer cannot log in)."""
    release = settings.release
    if release.relay == "own" and release.relay_host:
        relay = mailer.Relay(host=release.relay_host, port=release.relay_port,
                             username=release.relay_username, password=release.relay_password,
                             starttls=release.relay_tls == "starttls",
                             implicit_tls=release.relay_tls == "tls",
                             from_address=settings.mailer.from_address)
    elif release.relay == "mailer":
        try:
            config = mailer_config(session, settings)
        except SecretsUnavailable:
            return None
        if not config.host:
            return None
        relay = mailer.Relay.from_settings(config)
    else:
        return None
    sender = parseaddr(release.from_address or relay.from_address)[1] or "no-reply@localhost"
    return ReleaseRelay(relay, sender)


# --- allow-lists ----------------------------------------------------------------------------

def _stored_patterns(session: Session, owner_id: uuid.UUID) -> list[Pattern] | None:
    row = session.get(ReleaseRecipients, owner_id)
    if row is None:
        return None
    return [pattern for pattern in map(parse_pattern, row.patterns) if pattern is not None]


@dataclass(frozen=True)
class AllowedRecipients:
    """The patterns of each level over a team: the operator's, its org's and its own (None
    where that level set none, so it follows the level above)."""

    operator: list[Pattern]
    org: list[Pattern] | None
    team: list[Pattern] | None

    def levels(self) -> list[list[Pattern]]:
        """The levels a recipient must match, the unset ones left out."""
        return [level for level in (self.operator, self.org, self.team) if level is not None]

    def bound_of_team(self) -> list[Pattern]:
        """What a team's own list must lie within: its org's, or the operator's."""
        return self.org if self.org is not None else self.operator


def allowed_recipients(session: Session, settings: Settings, org_id: uuid.UUID,
                       team_id: uuid.UUID | None) -> AllowedRecipients:
    """The allow-lists over team `team_id` of org `org_id` (None: the org's alone)."""
    return AllowedRecipients(operator=operator_bound(settings.release.allowed_recipients),
                             org=_stored_patterns(session, org_id),
                             team=None if team_id is None else _stored_patterns(session, team_id))


def set_allowed_recipients(session: Session, caller: Caller, settings: Settings, *,
                           org_id: uuid.UUID, team_id: uuid.UUID | None,
                           patterns: Sequence[str]) -> list[str]:
    """Replace the patterns of the org (team_id None) or of one of its teams; an empty list
    removes them (the level then follows the one above). Each must lie within the level
    above (ValidationFailed otherwise). Audited as `org.release_recipients_update` or
    `team.release_recipients_update`; the patterns stored, as text."""
    levels = allowed_recipients(session, settings, org_id, team_id)
    bound = levels.operator if team_id is None else levels.bound_of_team()
    chosen = [str(pattern) for pattern in checked_patterns(patterns, bound)]
    owner_id = team_id or org_id
    row = session.get(ReleaseRecipients, owner_id)
    before = None if row is None else {"patterns": list(row.patterns)}
    if not chosen:
        if row is not None:
            session.delete(row)
    elif row is None:
        session.add(ReleaseRecipients(owner_id=owner_id, org_id=org_id, team_id=team_id,
                                      patterns=chosen))
    else:
        row.patterns = chosen
    session.flush()
    audit(session, caller,
          "org.release_recipients_update" if team_id is None else
          "team.release_recipients_update",
          org_id=org_id, resource_type="team" if team_id else "org", resource_id=owner_id,
          before=before, after={"patterns": chosen})
    return chosen


def allowed_view(session: Session, settings: Settings, org_id: uuid.UUID,
                 team_id: uuid.UUID | None) -> dict[str, list[str] | None]:
    """The allow-lists as the API shows them: `operator`, `org` and (for a team) `team`, each a
    list of patterns or None where the level set none."""
    levels = allowed_recipients(session, settings, org_id, team_id)

    def shown(level: list[Pattern] | None) -> list[str] | None:
        return None if level is None else [str(pattern) for pattern in level]

    view = {"operator": shown(levels.operator), "org": shown(levels.org)}
    if team_id is not None:
        view["team"] = shown(levels.team)
    return view


# --- asking for a release -------------------------------------------------------------------

def checked_recipients(texts: Sequence[str]) -> list[Address]:
    """The recipients as addresses, without repeats; ValidationFailed for none, more than
    MAX_RECIPIENTS, or one that is not a bare address."""
    if not texts:
        raise ValidationFailed("give at least one recipient",
                               details={"recipients": ["give at least one"]})
    if len(texts) > MAX_RECIPIENTS:
        raise ValidationFailed("too many recipients",
                               details={"recipients": [f"at most {MAX_RECIPIENTS}"]})
    found: dict[str, Address] = {}
    bad = []
    for text in texts:
        address = parse_address(text)
        if address is None:
            bad.append(text[:64])
        else:
            found.setdefault(str(address), address)
    if bad:
        raise ValidationFailed("not an e-mail address", details={"recipients": bad})
    return list(found.values())


def _spend(store: KeyValueStore, settings: Settings, team_id: uuid.UUID, count: int) -> None:
    """Take `count` recipients from the team's budget, or raise RateLimited (the count given
    back). One atomic increment decides, so parallel requests never spend more than it."""
    rate = limits.parse(settings.release.rate_limit)
    key = RATE_KEY.format(team_id=team_id)
    window = timedelta(seconds=rate.get_expiry())
    try:
        spent = store.incr(key, window, count)
        if spent > rate.amount:
            store.incr(key, window, -count)
            raise RateLimited(f"this team may release to at most {rate.amount} recipients "
                              f"per {window_words(rate)}; try again later")
    except StoreUnavailable:
        raise RateLimited("releases are paused: their budget cannot be counted now") from None


def window_words(rate: limits.RateLimitItem) -> str:
    """'hour', '2 hours': the window of a rate in words."""
    unit = rate.GRANULARITY.name
    return unit if rate.multiples == 1 else f"{rate.multiples} {unit}s"


def guard_release(session: Session, store: KeyValueStore, settings: Settings, inbox: Inbox,
                  recipients: Sequence[str]) -> list[Address]:
    """Pass every guard of the module for a release from `inbox` to `recipients`, in order
    (relay, recipients, allow-lists, the team's budget, spent last): the recipients as
    addresses, or Conflict, ValidationFailed, Forbidden or RateLimited with nothing spent."""
    if release_relay(session, settings) is None:
        raise Conflict(NO_RELAY)
    addresses = allowed_addresses(session, settings, inbox.org_id, inbox.team_id, recipients)
    _spend(store, settings, inbox.team_id, len(addresses))
    return addresses


def allowed_addresses(session: Session, settings: Settings, org_id: uuid.UUID,
                      team_id: uuid.UUID, recipients: Sequence[str]) -> list[Address]:
    """The recipients as addresses (`checked_recipients`: ValidationFailed) once each is
    allowed by the allow-lists over team `team_id` of org `org_id` now (Forbidden, naming
    the others)."""
    addresses = checked_recipients(recipients)
    levels = allowed_recipients(session, settings, org_id, team_id).levels()
    refused = [str(address) for address in addresses if not allowed_by(address, levels)]
    if refused:
        raise Forbidden("these recipients are not allowed for releases from this team",
                        details={"recipients": refused})
    return addresses


def released_audit(release: Release, email: Email, inbox: Inbox) -> dict[str, object]:
    """The `email.release` entry's snapshot of a queued release."""
    return {"release_id": str(release.id), "recipients": release.recipients,
            "subject": email.subject[:200], "inbox": inbox.full_address}


def request_release(session: Session, store: KeyValueStore, settings: Settings,
                    caller: Caller, email: Email, inbox: Inbox,
                    recipients: Sequence[str]) -> Release:
    """Queue a release of `email` (of `inbox`) to `recipients` once every guard of the module
    passes (`guard_release`: nothing written otherwise); the queued row, audited as
    `email.release`. The caller sends the delivery after commit."""
    addresses = guard_release(session, store, settings, inbox, recipients)
    release = Release(id=uuid.uuid4(), email_id=email.id, released_by=caller.user_id,
                      recipients=[str(address) for address in addresses], state=QUEUED)
    session.add(release)
    session.flush()
    audit(session, caller, RELEASED, org_id=inbox.org_id, resource_type="email",
          resource_id=email.id, after=released_audit(release, email, inbox))
    return release


def list_releases(session: Session, email: Email) -> list[Release]:
    """The e-mail's releases, newest first."""
    return list(session.scalars(select(Release).where(Release.email_id == email.id)
                                .order_by(Release.created_at.desc(), Release.id)))


def release_view(release: Release) -> dict[str, object]:
    """A release as the API shows it."""
    return {"id": release.id, "email_id": release.email_id, "recipients": release.recipients,
            "state": release.state, "attempts": release.attempts,
            "relay_reply": release.relay_reply, "rule_id": release.rule_id,
            "created_at": release.created_at, "finished_at": release.finished_at}


# --- delivery (the worker's) ----------------------------------------------------------------

@dataclass(frozen=True)
class PendingRelease:
    """What one attempt needs, read in a short transaction: the release, the raw message's
    key, the org (for the audit entry) and the relay (None: gone since it was queued)."""

    release_id: uuid.UUID
    recipients: list[str]
    raw_key: str
    org_id: uuid.UUID
    relay: ReleaseRelay | None


def pending_release(session: Session, settings: Settings,
                    release_id: uuid.UUID) -> PendingRelease | None:
    """The release if it still waits for delivery (queued); None when it is gone (its e-mail
    deleted) or already finished, so a message delivered twice sends once."""
    row = session.execute(
        select(Release, Email.raw_key, Inbox.org_id)
        .join(Email, Email.id == Release.email_id).join(Inbox, Inbox.id == Email.inbox_id)
        .where(Release.id == release_id)).one_or_none()
    if row is None or row[0].state != QUEUED:
        return None
    release = row[0]
    return PendingRelease(release.id, list(release.recipients), row.raw_key, row.org_id,
                          release_relay(session, settings))


def resent_message(raw: bytes, pending: PendingRelease, relay: ReleaseRelay,
                   now: datetime | None = None) -> bytes:
    """The stored message as released: a block of Resent-* fields (RFC 5322 3.6.6) and
    X-Burnbox-Release-Id on top of the raw bytes, which stay exactly as received (so the
    original To, Subject, body and any DKIM signature are kept)."""
    domain = relay.envelope_from.rpartition("@")[2] or "localhost"
    fields = [f"Resent-Date: {format_datetime(now or utcnow())}",
              f"Resent-From: {relay.envelope_from}",
              f"Resent-To: {', '.join(pending.recipients)}",
              f"Resent-Message-ID: {make_msgid(domain=domain)}",
              f"X-Burnbox-Release-Id: {pending.release_id}"]
    return "".join(f"{field}\r\n" for field in fields).encode("ascii") + raw


@dataclass(frozen=True)
class Outcome:
    """One attempt's result: the relay's reply, and whether it was accepted, refused for
    good, or may be tried again."""

    reply: str
    sent: bool = False
    transient: bool = False


def attempt_delivery(message: bytes, pending: PendingRelease, relay: ReleaseRelay) -> Outcome:
    """Submit the message to the relay, envelope to the release's recipients: the outcome with
    the relay's own reply to DATA (or to what it refused), never an exception for what a relay
    or the network answers."""
    try:
        with mailer.connect(relay.relay) as client:
            return _submit(client, message, relay.envelope_from, pending.recipients)
    except smtplib.SMTPServerDisconnected as exc:
        return Outcome(f"the relay closed the connection: {exc}"[:MAX_REPLY], transient=True)
    except smtplib.SMTPResponseException as exc:  # refused the login, or the greeting
        return Outcome(_reply(exc.smtp_code, exc.smtp_error),
                       transient=400 <= exc.smtp_code < 500)
    except smtplib.SMTPException as exc:  # e.g. STARTTLS asked but not offered: configuration
        return Outcome(f"the relay cannot be used: {exc}"[:MAX_REPLY])
    except OSError as exc:
        return Outcome(f"no connection to the relay: {exc}"[:MAX_REPLY], transient=True)


def _refusal(code: int, text: bytes) -> Outcome:
    return Outcome(_reply(code, text), transient=400 <= code < 500)


def _submit(client: smtplib.SMTP, message: bytes, sender: str,
            recipients: Sequence[str]) -> Outcome:
    """MAIL, RCPT per recipient, DATA: step by step (smtplib's sendmail drops the reply to
    DATA, the one a person wants to see). Accepted when DATA is, even if some recipients
    were refused (their replies are kept in the outcome)."""
    code, text = client.mail(sender)
    if code != 250:
        client.rset()
        return _refusal(code, text)
    refused = []
    for recipient in recipients:
        code, text = client.rcpt(recipient)
        if code not in (250, 251):
            refused.append((recipient, code, text))
    if len(refused) == len(recipients):
        client.rset()
        return Outcome("; ".join(f"{who}: {_reply(code, text)}" for who, code, text in refused
                                 )[:MAX_REPLY],
                       transient=all(400 <= code < 500 for _, code, _ in refused))
    code, text = client.data(message)
    if code != 250:
        return _refusal(code, text)
    reply = _reply(code, text)
    if refused:
        reply = "; ".join([reply, *(f"{who}: {_reply(c, t)}" for who, c, t in refused)])
    return Outcome(reply[:MAX_REPLY], sent=True)


def _reply(code: int, text: bytes | str) -> str:
    words = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return f"{code} {words}"[:MAX_REPLY]


def record_outcome(session: Session, pending: PendingRelease, outcome: Outcome, *,
                   final: bool) -> str | None:
    """Write one attempt's outcome: sent, failed (a refusal for good, or `final` and
    transient), or still queued for a next attempt. The state now (None: the release went
    meanwhile); sent and failed are audited."""
    release = session.get(Release, pending.release_id, with_for_update=True)
    if release is None or release.state != QUEUED:
        return None if release is None else release.state
    release.attempts += 1
    release.relay_reply = outcome.reply
    if outcome.sent or not outcome.transient or final:
        finish(session, release, SENT if outcome.sent else FAILED, org_id=pending.org_id)
    session.flush()
    return release.state


def finish(session: Session, release: Release, state: str, *, org_id: uuid.UUID) -> None:
    """Mark `release` sent or failed (`state`) now, audited as `email.release_sent` or
    `email.release_failed` with its recipients, attempts and the relay's reply (and the rule
    that made it, if one did)."""
    release.state = state
    release.finished_at = utcnow()
    after: dict[str, object] = {"release_id": str(release.id), "recipients": release.recipients,
                                "state": release.state, "attempts": release.attempts,
                                "relay_reply": release.relay_reply}
    if release.rule_id is not None:
        after["rule_id"] = str(release.rule_id)
    record_audit(session, RELEASE_SENT if state == SENT else RELEASE_FAILED,
                 actor_id=release.released_by, org_id=org_id, resource_type="email",
                 resource_id=release.email_id, ip=None, user_agent=None, after=after)


def next_delay(settings: Settings, attempt: int) -> timedelta:
    """The wait before attempt `attempt + 1`, after attempt `attempt` was refused for now."""
    return settings.release.retry_delay * BACKOFF_FACTOR ** (attempt - 1)

