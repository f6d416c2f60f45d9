"""The scope of a compat face's request, and who may use it: shared by the Mailpit and MailHog
surfaces (`compat.mailpit`, `compat.mailhog`).

A peer's instance held one set of mail; here a *scope* stands in for it, named by the base path
`/compat/<peer>/<kind>/<id>`:

- `inboxes/<inbox id>`: one inbox, with the mail its capture credentials delivered (any
  recipient: that mail is stored in the inbox);
- `catch-all/<domain assignment id>`: every inbox created through one domain assignment of the
  key's team (the inboxes its catch-all made on first mail included).

`authenticate_scope(ref, permission)` authenticates the caller and resolves the scope, in this
order, raising `CompatError` for each face to render in its peer's shape:

1. an API key, as the password of HTTP Basic (any user name) or as `Authorization: Bearer`;
   none, or one that is unknown, revoked, expired, disabled or refused from this address: 401
   (`WWW-Authenticate: Basic realm="Burnbox"`). The key is authenticated as on the native API
   (`web.auth.authenticate_api_key`), so the request counts in its usage and rate limit;
2. the scope: an id that is malformed, unknown, or of another team than the key's: 404, the
   same answer for each, so nothing is learnt about other tenants;
3. `permission` through the native permission check (`web.permissions`: the key's scopes and
   its creator's roles): 403 when it lacks it.

`authenticate_scope_of_email(ref, permission, message_id)` does the same for a request about
one message and finds it too: an inbox scope and its e-mail in one statement, as the native
read of an e-mail finds it with its inbox.

A `Scope` then offers the scope's e-mails (`emails`, a select, newest first) and the models'
actions confined to it (`find`, `latest`, `mark`, `mark_all`, `delete`, `delete_all`,
`counts`, `release`, `chaos_rules`, `set_chaos_rules`); each face only shapes requests and
answers around them. Reading needs `team.emails.view` (`VIEW`), marking read and tagging too,
as on the native API; deleting needs `team.emails.manage` (`MANAGE`). `release` and the chaos
methods demand the native routes' permissions themselves: `team.emails.release` to release;
an inbox's chaos rules need `team.inboxes.view` to read and `team.inboxes.manage` to set, a
catch-all's (its assignment's template rules, copied to each inbox it creates)
`team.domains.view` and `team.domains.manage`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flask import g
from flask.blueprints import BlueprintSetupState
from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session
from werkzeug.routing import BaseConverter

from models.domains.assignments import VIEW_ASSIGNMENTS, DomainAssignment
from models.errors import Forbidden, NotFound, Unauthenticated
from models.mail import chaos, release
from models.mail import emails as mail
from models.mail import inboxes as mail_inboxes
from models.mail.entities import Email
from models.mail.inboxes import EMAILS_MANAGE, EMAILS_VIEW, Inbox
from tasks.release import deliver_release
from web.auth import Principal, authenticate_api_key, presented_key
from web.context import db, read_inbox_ahead, runtime
from web.permissions import authorize_email, authorize_inbox, authorize_team, caller

INBOXES = "inboxes"
CATCH_ALL = "catch-all"
KINDS = (INBOXES, CATCH_ALL)
VIEW = EMAILS_VIEW
MANAGE = EMAILS_MANAGE
REALM = 'Basic realm="Burnbox"'
MANAGE_ASSIGNMENTS = "team.domains.manage"


class CompatError(Exception):
    """A refusal of a compat request: `status` (401, 403, 404 here; a face may raise its own
    400s) and a plain-text `message`; a face renders it in its peer's shape, with `headers`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def unauthorised() -> CompatError:
    """The 401 of a request without a valid key, asking for Basic credentials."""
    return CompatError(401, "Unauthorized.", {"WWW-Authenticate": REALM})


def scope_not_found() -> CompatError:
    """The 404 of a scope that does not exist or is not the key's team's (one answer)."""
    return CompatError(404, "Not found")


class RawText(BaseConverter):
    """A path segment taken as it is (`web.routing` leaves `RAW_TEXT` converters unchecked):
    a compat face refuses a NUL or a lone surrogate in an id in its peer's shape, not in the
    native API's envelope."""

    RAW_TEXT = True


# The prefix of every compat route after `/compat/<peer>`: the scope's kind and id.
SCOPE_PATH = '/<any(inboxes, "catch-all"):kind>/<compat_text:scope_id>'


def install_converter(state: BlueprintSetupState) -> None:
    """Register `RawText` as `compat_text` on the app (a face's `blp.record_once`)."""
    state.app.url_map.converters["compat_text"] = RawText


@dataclass(frozen=True)
class ScopeRef:
    """A scope as the URL names it: `kind` (INBOXES or CATCH_ALL) and its id, None when the
    path's text is not a UUID (a 404 once the caller is authenticated)."""

    kind: str
    id: uuid.UUID | None

    @classmethod
    def parse(cls, kind: str, text: str) -> ScopeRef:
        """The scope `kind`/`text` names (a path's two segments); never raises: a malformed
        id is kept as None, so the caller's key is checked before anything is said about it."""
        try:
            return cls(kind, uuid.UUID(text)) if len(text) <= 36 else cls(kind, None)
        except ValueError:
            return cls(kind, None)


def read_scope_ahead(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    """A face's `url_value_preprocessor`: an inbox scope's request reads its inbox's cache
    revision in the rate limiter's round trip (`web.context.read_inbox_ahead`), as a native
    request naming the inbox does, instead of in one more round trip of its own."""
    if values and values.get("kind") == INBOXES:
        ref = ScopeRef.parse(INBOXES, str(values.get("scope_id", "")))
        if ref.id is not None:
            read_inbox_ahead(ref.id)


def email_id(text: str) -> uuid.UUID | None:
    """The e-mail id `text` is (a UUID, as the native API names e-mails), or None."""
    try:
        return uuid.UUID(text) if len(text) <= 36 else None
    except ValueError:
        return None


def counts_of(session: Session, inbox_ids: Select[Any]) -> tuple[int, int]:
    """(e-mails, unread e-mails) of the inboxes `inbox_ids` selects, from their counters now."""
    total, unread = session.execute(
        select(func.coalesce(func.sum(Inbox.email_count), 0),
               func.coalesce(func.sum(Inbox.unread_count), 0))
        .where(Inbox.id.in_(inbox_ids))).one()
    return int(total), int(unread)


@dataclass(frozen=True)
class Scope:
    """An authenticated caller's scope: the key (`principal`), the team, and which e-mails are
    in it (`where`). Its methods run on the request's session."""

    ref: ScopeRef
    principal: Principal
    org_id: uuid.UUID
    team_id: uuid.UUID
    where: ColumnElement[bool]
    inbox_ids: Select[Any]
    inbox: Inbox | None = None  # an inbox scope's
    assignment: DomainAssignment | None = None  # a catch-all scope's

    def authorize(self, permission: str) -> None:
        """Demand one more permission in the scope (an operation needing more than the one
        authenticated with); CompatError 403 without it."""
        try:
            if self.ref.kind == INBOXES:
                authorize_inbox(self._id, permission)
            else:
                authorize_team(self.org_id, self.team_id, permission)
        except Forbidden as refusal:
            raise CompatError(403, refusal.message) from None
        except NotFound:
            raise scope_not_found() from None

    @property
    def _id(self) -> uuid.UUID:
        assert self.ref.id is not None
        return self.ref.id

    def emails(self, *columns: Any) -> Select[Any]:
        """A select of the scope's e-mails (the `Email` rows, or `columns` of them), newest
        first."""
        return select(*(columns or (Email,))).where(self.where).order_by(*mail.NEWEST_FIRST)

    def find(self, session: Session, ids: Iterable[uuid.UUID]) -> list[Email]:
        """The e-mails among `ids` that are in the scope, newest first (the rest are not
        there, whoever's they are)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        return list(session.scalars(self.emails().where(Email.id.in_(wanted))))

    def get(self, session: Session, id_text: str) -> Email | None:
        """The scope's e-mail whose id is `id_text`; None when it is not one of the scope's
        (malformed, unknown, another scope's)."""
        found = email_id(id_text)
        if found is None:
            return None
        return session.scalars(self.emails().where(Email.id == found)).first()

    def latest(self, session: Session) -> Email | None:
        """The scope's newest e-mail, None when it holds none."""
        return session.scalars(self.emails().limit(1)).first()

    def inboxes(self, session: Session) -> list[Inbox]:
        """The scope's inboxes, in id order (the order their rows are locked in)."""
        return list(session.scalars(select(Inbox).where(Inbox.id.in_(self.inbox_ids))
                                    .order_by(Inbox.id)))

    def counts(self, session: Session) -> tuple[int, int]:
        """(e-mails, unread e-mails) of the scope, from its inboxes' counters (an inbox
        scope's as its row was read when the scope was)."""
        if self.inbox is not None:
            return self.inbox.email_count, self.inbox.unread_count
        return counts_of(session, self.inbox_ids)

    def mark(self, session: Session, found: Sequence[Email], is_read: bool) -> None:
        """Mark the scope's e-mails `found` read or unread (`models.mail.emails.set_read`);
        one already so, as read with it, is left alone (no inbox lock for a read of a read
        message)."""
        for email in found:
            if email.is_read != is_read:
                mail.set_read(session, email, is_read)

    def mark_all(self, session: Session, is_read: bool) -> int:
        """Mark every e-mail of the scope read or unread; how many changed."""
        return sum(mail.mark_all_read(session, inbox, is_read) for inbox in self.inboxes(session))

    def delete(self, session: Session, found: Sequence[Email]) -> None:
        """Delete the scope's e-mails `found` (`models.mail.emails.delete_email`)."""
        for email in found:
            mail.delete_email(session, email)

    def delete_all(self, session: Session) -> int:
        """Delete every e-mail of the scope (its inboxes stay); how many went."""
        return sum(mail.delete_all_emails(session, inbox) for inbox in self.inboxes(session))

    def release(self, session: Session, email: Email, recipients: Sequence[str]
                ) -> release.Release:
        """Queue the scope's `email` for release to `recipients` and send it to the worker,
        as the native release route does (every guard of `models.mail.release` applies);
        CompatError 403 without `team.emails.release`."""
        self.authorize(release.RELEASE)
        rt = runtime()
        queued = release.request_release(session, rt.store, rt.settings, caller(), email,
                                         email.inbox, list(recipients))
        deliver_release.send(str(queued.id))
        return queued

    def chaos_rules(self, session: Session) -> list[chaos.ChaosRule]:
        """The scope's chaos rules: its inbox's, or its assignment's template rules."""
        if self.inbox is not None:
            self.authorize(mail_inboxes.VIEW)
            return chaos.list_rules(session, inbox_id=self.inbox.id)
        self.authorize(VIEW_ASSIGNMENTS)
        return chaos.list_rules(session, assignment_id=self._id)

    def set_chaos_rules(self, session: Session, rules: Sequence[dict[str, Any]]
                        ) -> list[chaos.ChaosRule]:
        """Replace the scope's chaos rules (`models.mail.chaos`'s rule dicts; empty clears)."""
        if self.inbox is not None:
            self.authorize(mail_inboxes.MANAGE)
            return chaos.set_inbox_rules(session, caller(), self.inbox, rules)
        self.authorize(MANAGE_ASSIGNMENTS)
        assert self.assignment is not None
        return chaos.set_assignment_rules(session, caller(), self.assignment, rules)


def _principal() -> Principal:
    """The caller, from the API key the request presents; CompatError 401 otherwise."""
    key = presented_key()
    if key is None:
        raise unauthorised()
    try:
        principal = authenticate_api_key(key)
    except (Unauthenticated, Forbidden):
        raise unauthorised() from None
    g.principal = principal  # what web.permissions reads as the request's caller
    return principal


def authenticate_scope_of_email(ref: ScopeRef, permission: str, message_id: str
                                ) -> tuple[Scope, Email | None]:
    """`authenticate_scope` for a request about one message, and the scope's e-mail
    `message_id` (None when it is not one of the scope's). An inbox scope and its e-mail
    resolve in one statement, as the native read of an e-mail does (`authorize_email`);
    anything else, a miss included, takes the scope's own way, with its answers."""
    principal = _principal()
    wanted = email_id(message_id)
    if ref.kind == INBOXES and ref.id is not None and wanted is not None:
        try:
            access = authorize_email(wanted, permission)
        except (NotFound, Forbidden):
            access = None
        if access is not None and access.email.inbox_id == ref.id:
            return _inbox_scope(ref, principal, access.inbox.inbox), access.email
    scope = _resolve(ref, permission, principal)
    return scope, scope.get(db(), message_id)


def _inbox_scope(ref: ScopeRef, principal: Principal, inbox: Inbox) -> Scope:
    return Scope(ref, principal, inbox.org_id, inbox.team_id, mail.inbox_scope(inbox.id),
                 select(Inbox.id).where(Inbox.id == inbox.id), inbox=inbox)


def authenticate_scope(ref: ScopeRef, permission: str) -> Scope:
    """The scope `ref` names, once its caller is authenticated and holds `permission` there;
    CompatError 401, 404 or 403 (in that order, see the module's docstring)."""
    return _resolve(ref, permission, _principal())


def _resolve(ref: ScopeRef, permission: str, principal: Principal) -> Scope:
    """The scope `ref` names, for the authenticated `principal`, once it holds `permission`
    there; CompatError 404 or 403."""
    key = principal.api_key
    assert key is not None
    if ref.id is None or ref.kind not in KINDS:
        raise scope_not_found()
    try:
        if ref.kind == INBOXES:
            return _inbox_scope(ref, principal, authorize_inbox(ref.id, permission).inbox)
        assignment = db().get(DomainAssignment, ref.id)
        if assignment is None or assignment.team_id != key.team_id:
            raise scope_not_found()
        authorize_team(key.org_id, key.team_id, permission)
        return Scope(ref, principal, key.org_id, key.team_id, mail.assignment_scope(ref.id),
                     select(Inbox.id).where(Inbox.domain_assignment_id == ref.id),
                     assignment=assignment)
    except NotFound:
        raise scope_not_found() from None
    except Forbidden as refusal:
        raise CompatError(403, refusal.message) from None
