"""API keys: scoped programmatic access to one team on behalf of the member who made the key.

A key is `bb_` + 64 lowercase hex characters (32 random bytes). Only its SHA-256 hash (unique, so
authentication is one indexed look-up) and its 11-character prefix are stored; the raw key is
returned once, by creation or rotation.

Rules kept here:
- scopes are team-scoped permission keys read from the database, so a permission added for a
  custom team role is a valid scope with no code change; at least one is needed;
- a key acts as its creator, with the creator's current roles narrowed to the key's scopes
  (the web layer intersects them); it never carries system-admin rights and only reaches its own
  team;
- states: active; disabled (`is_active` false, re-enabled by setting it true again); revoked
  (DELETE: `revoked_at`/`revoked_by` set, `is_active` false, the row kept for audit, nothing
  can change it again); expired (`expires_at` passed: the cleanup job hard-deletes it unless it
  was revoked, whose rows are kept);
- a key acting on keys hands out no more than it holds: the keys it creates, changes or rotates
  stay within its own scopes, IP ranges and lifetime;
- a key goes when its creator leaves the team, is deactivated in the org, or deletes their
  account: it is revoked (`models.lifecycle` calls `revoke_member_team_keys`,
  `revoke_member_org_keys` and `revoke_user_keys`), because a key must not outlive the access it
  was made with;
- every change is audited. Actions flush but never commit: the caller does.

Usage (`request_count`, `last_used_at`, `last_used_ip`) is counted in the key-value store on each
accepted request and written to the rows by the clock's `api_key_usage` job, so a busy key does
not turn its row into a write hot spot; the counts stay exact (see `record_usage`).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import secrets
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, String, delete, func, select, update
from sqlalchemy.orm import Mapped, Session, column_property, mapped_column

from burnbox.durations import DurationError, parse_duration
from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.security import TOKEN_BYTES, hash_token
from burnbox.timeutil import isoformat, utcnow
from models.caching import Lookup, uncached
from models.db import LEAVES_CACHES, Base, Timestamps, UUIDKey, detached_copy
from models.errors import Conflict, Forbidden, NotFound, Unauthenticated, ValidationFailed
from models.identity.callers import attach
from models.identity.users import User
from models.pagination import Page, paginate
from models.platform.audit import record_audit
from models.tenancy.access import Caller, audit
from models.tenancy.teams import Team, TeamAccess, ensure_team_active

log = logging.getLogger(__name__)

KEY_PREFIX = "bb_"
KEY_FORMAT = re.compile(r"bb_[0-9a-f]{64}")
PREFIX_LENGTH = len(KEY_PREFIX) + 8
MAX_NAME = 200
MAX_SCOPES = 100
MAX_ALLOWED_IPS = 100
# Far enough for any real key, and keeps now + lifetime well inside datetime's range.
MAX_LIFETIME = timedelta(days=3650)

# The rejection messages, word for word as docs/api-keys.md lists them: clients match on them.
INVALID = "invalid API key"
EXPIRED = "API key expired"
REVOKED = "API key revoked"
DISABLED = "API key disabled"
IP_REFUSED = "IP not allowed for this API key"
INSUFFICIENT_SCOPE = "insufficient scope"

# Key-value store keys of the usage counters (see record_usage).
USAGE_PENDING = "apikey-usage:pending"
USAGE_COUNT = "apikey-usage:count:"
USAGE_LAST = "apikey-usage:last:"
# Counters outlive any flush gap (the worker down for a while) by a wide margin.
USAGE_TTL = timedelta(days=7)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ApiKey(UUIDKey, Timestamps, Base):
    """An API key of a team; the secret itself is never stored, only its hash."""

    __tablename__ = "api_keys"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"),
                                               index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    prefix: Mapped[str] = mapped_column(String(PREFIX_LENGTH))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]]
    allowed_ips: Mapped[list[str]]
    expires_at: Mapped[datetime | None] = mapped_column(index=True)
    is_active: Mapped[bool] = mapped_column(default=True)
    request_count: Mapped[int] = mapped_column(BigInteger, default=0)
    last_used_at: Mapped[datetime | None]
    last_used_ip: Mapped[str | None] = mapped_column(String(45))
    # SET NULL: a deleted user's keys are revoked first (a key must not outlive its creator's
    # account); the rows stay for audit.
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True)
    revoked_at: Mapped[datetime | None]
    revoked_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"))


# The org follows from the team (a transferred team takes its keys along), so it is not stored.
ApiKey.org_id = column_property(
    select(Team.org_id).where(Team.id == ApiKey.team_id).correlate_except(Team)
    .scalar_subquery())


@dataclass(frozen=True)
class KeyGrant:
    """What an authenticated key allows, as the permission check sees it."""

    id: uuid.UUID
    org_id: uuid.UUID
    team_id: uuid.UUID
    scopes: frozenset[str]
    allowed_ips: tuple[str, ...]
    expires_at: datetime | None


@dataclass(frozen=True)
class IssuedKey:
    """A key just created or rotated, with its raw secret (shown this once)."""

    key: ApiKey
    raw_key: str


@dataclass(frozen=True)
class BulkRevoked:
    """How many keys a bulk revoke revoked, and the ids it left alone."""

    revoked: int
    skipped: list[uuid.UUID]


# --- the secret -------------------------------------------------------------------------------

def new_raw_key() -> str:
    """A fresh key: `bb_` + 64 lowercase hex characters (32 random bytes)."""
    return KEY_PREFIX + secrets.token_hex(TOKEN_BYTES)


def check_given_key(raw_key: str) -> str:
    """`raw_key` when it has the key format (`bb_` + 64 lowercase hex); raise ValidationFailed
    (naming `api_key`) otherwise. For secrets an operator fixes in advance (bootstrap)."""
    if KEY_FORMAT.fullmatch(raw_key) is None:
        raise ValidationFailed("invalid API key format", details={
            "api_key": ["must be bb_ followed by 64 lowercase hexadecimal characters"]})
    return raw_key


def find_key(session: Session, raw_key: str) -> ApiKey | None:
    """The stored key whose secret is `raw_key` (matched by hash), revoked or not."""
    return session.scalars(select(ApiKey).where(ApiKey.key_hash == hash_token(raw_key))).first()


def _issue(key: ApiKey, given: str | None = None) -> str:
    raw = new_raw_key() if given is None else check_given_key(given)
    key.key_hash = hash_token(raw)
    key.prefix = raw[:PREFIX_LENGTH]
    return raw


# --- input rules ------------------------------------------------------------------------------

def clean_name(name: str) -> str:
    """The trimmed name; ValidationFailed unless it is 1-200 characters."""
    clean = name.strip()
    if not 1 <= len(clean) <= MAX_NAME:
        raise ValidationFailed("invalid key name",
                               details={"name": [f"must be 1-{MAX_NAME} characters"]})
    return clean


def clean_scopes(scopes: Iterable[str], valid: frozenset[str]) -> list[str]:
    """The scopes, sorted and without repeats; ValidationFailed unless each is a team permission
    key of the database (`valid`) and there is at least one."""
    chosen = sorted(set(scopes))
    unknown = [scope for scope in chosen if scope not in valid]
    if unknown:
        raise ValidationFailed("unknown scope", details={"scopes": [
            f"not a team permission: {', '.join(unknown)}"]})
    if not chosen:
        raise ValidationFailed("a key needs a scope", details={"scopes": ["give at least one"]})
    if len(chosen) > MAX_SCOPES:
        raise ValidationFailed("too many scopes", details={"scopes": [f"at most {MAX_SCOPES}"]})
    return chosen


@functools.lru_cache(maxsize=4096)
def _network(entry: str) -> Network:
    """An address (as a one-address network; IPv4-mapped IPv6 as IPv4) or a CIDR range (host
    bits ignored); ValueError otherwise. Cached: allowlists are parsed on every request."""
    text = entry.strip()
    if "%" in text:  # a zone (fe80::1%eth0) means nothing across machines
        raise ValueError(f"{entry!r} has a zone index")
    if "/" in text:
        return ipaddress.ip_network(text, strict=False)
    address = ipaddress.ip_address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return ipaddress.ip_network(address)


def _canonical(entry: str) -> str:
    """`entry` written canonically: a plain address stays an address, a range becomes its
    network (`10.1.2.3/8` -> `10.0.0.0/8`)."""
    network = _network(entry)
    return str(network.network_address) if "/" not in entry else str(network)


def clean_allowed_ips(entries: Sequence[str]) -> list[str]:
    """The allowlist in canonical form, without repeats, in the order given; ValidationFailed
    naming every entry that is not an IPv4 or IPv6 address or CIDR range. Empty allows every
    address."""
    if len(entries) > MAX_ALLOWED_IPS:
        raise ValidationFailed("too many allowed_ips", details={"allowed_ips": [
            f"at most {MAX_ALLOWED_IPS} entries"]})
    clean: list[str] = []
    bad: list[str] = []
    for entry in entries:
        try:
            text = _canonical(entry)
        except ValueError:
            bad.append(entry)
            continue
        if text not in clean:
            clean.append(text)
    if bad:
        raise ValidationFailed("invalid allowed_ips", details={"allowed_ips": [
            f"not an IP address or CIDR range: {entry!r}" for entry in bad]})
    return clean


def ip_allowed(allowed_ips: Sequence[str], ip: str) -> bool:
    """True when `ip` is inside one of `allowed_ips` (an empty list allows every address); an
    unparsable client address is never allowed by a non-empty list."""
    if not allowed_ips:
        return True
    try:
        address = _network(ip).network_address
    except ValueError:
        return False
    return any(address in _network(entry) for entry in allowed_ips)


def expiry_from(expires_in: str | None, now: datetime) -> datetime | None:
    """`now` + the Go-style duration `expires_in` (`720h`, `90m`, `1h30m`), or None when it is
    None (the key never expires); ValidationFailed naming `expires_in` for anything else, for
    zero, and beyond ten years."""
    if expires_in is None:
        return None
    try:
        lifetime = parse_duration(expires_in)
    except DurationError as exc:
        raise ValidationFailed("invalid expires_in", details={"expires_in": [str(exc)]}) from exc
    if lifetime <= timedelta(0) or lifetime > MAX_LIFETIME:
        raise ValidationFailed("invalid expires_in", details={"expires_in": [
            f"must be above 0 and at most {int(MAX_LIFETIME.total_seconds() // 3600)}h"]})
    return now + lifetime


def _inside(entry: str, ranges: Sequence[str]) -> bool:
    network = _network(entry)
    return any(network.version == outer.version
               and network.subnet_of(outer)  # type: ignore[arg-type]
               for outer in map(_network, ranges))


def _within(acting: KeyGrant | None, scopes: Sequence[str], allowed_ips: Sequence[str],
            expires_at: datetime | None) -> None:
    """Raise Forbidden when a key made or changed by the key `acting` would allow more than
    `acting` does (users acting through a session are not limited here: their roles are)."""
    if acting is None:
        return
    if not set(scopes) <= acting.scopes:
        raise Forbidden("an API key cannot hand out scopes it does not hold")
    if acting.allowed_ips and not (allowed_ips and all(
            _inside(entry, acting.allowed_ips) for entry in allowed_ips)):
        raise Forbidden("an API key cannot hand out IP ranges outside its own allowed_ips")
    if acting.expires_at is not None and (expires_at is None or expires_at > acting.expires_at):
        raise Forbidden("an API key cannot hand out a lifetime beyond its own expiry")


def snapshot(key: ApiKey) -> dict[str, Any]:
    """A key's audit snapshot (never its hash)."""
    return {"name": key.name, "prefix": key.prefix, "scopes": list(key.scopes),
            "allowed_ips": list(key.allowed_ips), "is_active": key.is_active,
            "expires_at": isoformat(key.expires_at), "revoked_at": isoformat(key.revoked_at)}


def _audit(session: Session, caller: Caller, action: str, key: ApiKey, team: Team,
           before: dict[str, Any] | None = None) -> None:
    audit(session, caller, action, org_id=team.org_id, resource_type="api_key",
          resource_id=key.id, before=before, after=snapshot(key))


# --- actions ----------------------------------------------------------------------------------

def create_key(session: Session, access: TeamAccess, *, name: str, scopes: Sequence[str],
               expires_in: str | None = None, allowed_ips: Sequence[str] = (),
               acting: KeyGrant | None = None, given: str | None = None) -> IssuedKey:
    """Make a key of the team for the caller; its secret is random, or `given` (checked by
    `check_given_key`; only its hash is kept, like any key's; the caller has made sure no key
    has it, `find_key`). Raise ValidationFailed (name, scopes, expires_in, allowed_ips, a
    malformed `given`), Conflict (archived team), Forbidden (`acting` key handing out more than
    it holds)."""
    team = access.team
    ensure_team_active(team)
    now = utcnow()
    key = ApiKey(id=uuid.uuid4(), team_id=team.id, name=clean_name(name),
                 scopes=clean_scopes(scopes, access.org.grants.team_permissions),
                 allowed_ips=clean_allowed_ips(allowed_ips),
                 expires_at=expiry_from(expires_in, now),
                 is_active=True, request_count=0, last_used_at=None, last_used_ip=None,
                 created_by=access.org.caller.user_id, revoked_at=None, revoked_by=None,
                 created_at=now, updated_at=now)
    _within(acting, key.scopes, key.allowed_ips, key.expires_at)
    raw = _issue(key, given)
    session.add(key)
    session.flush()
    _audit(session, access.org.caller, "apikey.create", key, team)
    return IssuedKey(key=key, raw_key=raw)


def list_keys(session: Session, team_id: uuid.UUID, page: int, per_page: int) -> Page[ApiKey]:
    """The team's keys, revoked ones included, newest first."""
    query = (select(ApiKey).where(ApiKey.team_id == team_id)
             .order_by(ApiKey.created_at.desc(), ApiKey.id))
    return paginate(session, query, page, per_page)


def get_key(session: Session, team_id: uuid.UUID, key_id: uuid.UUID) -> ApiKey:
    """The key `key_id` of the team; NotFound when the team has no such key."""
    key = session.get(ApiKey, key_id)
    if key is None or key.team_id != team_id:
        raise NotFound("API key not found")
    return key


def _changeable(session: Session, access: TeamAccess, key_id: uuid.UUID) -> ApiKey:
    key = get_key(session, access.team.id, key_id)
    if key.revoked_at is not None:
        raise Conflict("the API key is revoked; it cannot be changed")
    return key


def update_key(session: Session, access: TeamAccess, key_id: uuid.UUID, *,
               name: str | None = None, scopes: Sequence[str] | None = None,
               allowed_ips: Sequence[str] | None = None, is_active: bool | None = None,
               acting: KeyGrant | None = None) -> ApiKey:
    """Rename the key, replace its scopes or allowlist, disable it (`is_active` false) or
    enable it again (true). Raise NotFound, Conflict (revoked), ValidationFailed, Forbidden
    (`acting` key widening a key beyond itself)."""
    key = _changeable(session, access, key_id)
    before = snapshot(key)
    if name is not None:
        key.name = clean_name(name)
    if scopes is not None:
        key.scopes = clean_scopes(scopes, access.org.grants.team_permissions)
    if allowed_ips is not None:
        key.allowed_ips = clean_allowed_ips(allowed_ips)
    if is_active is not None:
        key.is_active = is_active
    if scopes is not None or allowed_ips is not None or is_active:
        _within(acting, key.scopes, key.allowed_ips, key.expires_at)
    session.flush()
    if snapshot(key) != before:
        _audit(session, access.org.caller, "apikey.update", key, access.team, before)
    return key


def rotate_key(session: Session, access: TeamAccess, key_id: uuid.UUID, *,
               acting: KeyGrant | None = None, given: str | None = None) -> IssuedKey:
    """Give the key a new secret (random, or `given` as in `create_key`); the old one stops
    working at once. Everything else (scopes, allowlist, expiry, usage, disabled or not)
    stays. Raise NotFound, Conflict (revoked or expired), ValidationFailed (a malformed
    `given`), Forbidden (`acting` key rotating a key broader than itself)."""
    key = _changeable(session, access, key_id)
    if key.expires_at is not None and key.expires_at <= utcnow():
        raise Conflict("the API key has expired; create a new one")
    _within(acting, key.scopes, key.allowed_ips, key.expires_at)
    before = snapshot(key)
    raw = _issue(key, given)
    key.updated_at = utcnow()
    session.flush()
    _audit(session, access.org.caller, "apikey.rotate", key, access.team, before)
    return IssuedKey(key=key, raw_key=raw)


def _revoke(key: ApiKey, by: uuid.UUID | None, now: datetime) -> None:
    key.revoked_at = now
    key.revoked_by = by
    key.is_active = False


def revoke_key(session: Session, access: TeamAccess, key_id: uuid.UUID) -> None:
    """Revoke the key for good: it keeps its row (for audit) with `revoked_at` and `revoked_by`.
    Revoking a revoked key changes nothing. Raise NotFound."""
    key = get_key(session, access.team.id, key_id)
    if key.revoked_at is not None:
        return
    before = snapshot(key)
    _revoke(key, access.org.caller.user_id, utcnow())
    session.flush()
    _audit(session, access.org.caller, "apikey.revoke", key, access.team, before)


def bulk_revoke(session: Session, access: TeamAccess,
                key_ids: Sequence[uuid.UUID]) -> BulkRevoked:
    """Revoke each key of the team among `key_ids`; ids of no key of this team (other teams'
    keys included, which are never touched) and keys already revoked are skipped."""
    wanted = list(dict.fromkeys(key_ids))
    found = {key.id: key for key in session.scalars(
        select(ApiKey).where(ApiKey.team_id == access.team.id, ApiKey.id.in_(wanted)))}
    now = utcnow()
    revoked, skipped = 0, []
    for key_id in wanted:
        key = found.get(key_id)
        if key is None or key.revoked_at is not None:
            skipped.append(key_id)
            continue
        before = snapshot(key)
        _revoke(key, access.org.caller.user_id, now)
        _audit(session, access.org.caller, "apikey.revoke", key, access.team, before)
        revoked += 1
    session.flush()
    return BulkRevoked(revoked=revoked, skipped=skipped)


# --- authentication ---------------------------------------------------------------------------

@dataclass(frozen=True)
class KnownKey:
    """An API key as the callers' cache keeps it: what authenticating checks, and a detached
    copy of its creator (None once the creator is gone)."""

    grant: KeyGrant
    revoked: bool
    active: bool
    creator: User | None


def _known_key(session: Session, key_hash: str) -> KnownKey | None:
    row = session.execute(select(ApiKey, User).outerjoin(User, User.id == ApiKey.created_by)
                          .where(ApiKey.key_hash == key_hash)).one_or_none()
    if row is None:
        return None
    key, user = row
    grant = KeyGrant(id=key.id, org_id=key.org_id, team_id=key.team_id,
                     scopes=frozenset(key.scopes), allowed_ips=tuple(key.allowed_ips),
                     expires_at=key.expires_at)
    return KnownKey(grant=grant, revoked=key.revoked_at is not None, active=key.is_active,
                    creator=None if user is None else detached_copy(user))


def authenticate_key(session: Session, raw_key: str, ip: str, now: datetime | None = None,
                     lookup: Lookup[KnownKey] = uncached) -> tuple[User, KeyGrant]:
    """The creator of the key (an entity of `session`) and what the key allows, for a request
    from `ip`. Raise Unauthenticated (`invalid API key`, `API key revoked`, `API key expired`,
    `API key disabled`, checked in that order) or Forbidden (`IP not allowed for this API
    key`).

    `lookup` may serve the key and its creator from a `models.identity.callers.CallerCache`,
    which every write to them invalidates; the checks run on every call either way."""
    if KEY_FORMAT.fullmatch(raw_key) is None:
        raise Unauthenticated(INVALID)
    key_hash = hash_token(raw_key)
    known = lookup(("key", key_hash), lambda: _known_key(session, key_hash))
    if known is None:
        raise Unauthenticated(INVALID)
    # A key whose creator is gone was revoked with the account; a missing creator never acts.
    if known.revoked or known.creator is None:
        raise Unauthenticated(REVOKED)
    grant = known.grant
    if grant.expires_at is not None and grant.expires_at <= (now or utcnow()):
        raise Unauthenticated(EXPIRED)
    # A key acts as its creator: while an administrator has disabled the account, its keys
    # are refused as a disabled key is.
    if not known.active or known.creator.disabled_at is not None:
        raise Unauthenticated(DISABLED)
    if not ip_allowed(grant.allowed_ips, ip):
        raise Forbidden(IP_REFUSED)
    return attach(session, known.creator), grant


# --- usage ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UsageWrite:
    """The store writes that count one accepted request of a key, in their order: raise
    `count_key` (kept `ttl`), set `last_key` to `last` (kept `ttl`), add `member` to the
    pending set. The order matters for exactness: the counter is raised and the last use
    written before the key is marked pending, so a flush that takes the pending set in between
    either takes this request's count now or finds the key pending again next time."""

    count_key: str
    last_key: str
    last: str
    member: str
    ttl: timedelta = USAGE_TTL
    pending_key: str = USAGE_PENDING


def usage_write(key_id: uuid.UUID, ip: str, now: datetime | None = None) -> UsageWrite:
    """The writes that count one request of the key, made from `ip`; a caller may send them in
    a round trip of its own (the web request's rate limiter does, `web.ratelimit`)."""
    ident = str(key_id)
    return UsageWrite(count_key=USAGE_COUNT + ident, last_key=USAGE_LAST + ident,
                      last=f"{isoformat(now or utcnow())}|{ip}", member=ident)


def record_usage(store: KeyValueStore, key_id: uuid.UUID, ip: str,
                 now: datetime | None = None) -> None:
    """Count one accepted request of the key, made from `ip`, in the key-value store: the
    three writes of `usage_write`, in one round trip, instead of a row update per request. An
    unreachable store loses the count (logged) rather than failing the request."""
    write = usage_write(key_id, ip, now)
    try:
        with store.batch() as batch:
            batch.incr(write.count_key, write.ttl)
            batch.set(write.last_key, write.last, write.ttl)
            batch.add_to_set(write.pending_key, write.member)
    except StoreUnavailable as exc:
        log.warning("API key usage not counted: store unavailable",
                    extra={"api_key_id": write.member, "reason": str(exc)})


def uncount_usage(store: KeyValueStore, key_id: uuid.UUID) -> None:
    """Take back one request counted ahead (by `usage_write`'s writes) that was then refused:
    the counter goes down by one and the key is pending, so the next flush adds the net
    count. The last use stays as written."""
    write = usage_write(key_id, "")
    try:
        with store.batch() as batch:
            batch.incr(write.count_key, write.ttl, amount=-1)
            batch.add_to_set(write.pending_key, write.member)
    except StoreUnavailable as exc:
        log.warning("API key usage not taken back: store unavailable",
                    extra={"api_key_id": write.member, "reason": str(exc)})


@dataclass(frozen=True)
class KeyUsage:
    """The usage of one key taken from the store, to add to its row."""

    key_id: uuid.UUID
    count: int
    last: str | None


def _take_usage(store: KeyValueStore) -> list[KeyUsage]:
    taken = []
    for ident in store.take_set(USAGE_PENDING):
        count = int(store.take(USAGE_COUNT + ident) or 0)
        last = store.take(USAGE_LAST + ident)
        try:
            taken.append(KeyUsage(uuid.UUID(ident), count, last))
        except ValueError:
            log.warning("ignoring a malformed API key usage entry", extra={"entry": ident})
    return taken


def _give_back(store: KeyValueStore, usages: Sequence[KeyUsage]) -> None:
    """Put taken usage back after a failed write, so the next flush counts it."""
    for usage in usages:
        ident = str(usage.key_id)
        if usage.count:
            store.incr(USAGE_COUNT + ident, USAGE_TTL, amount=usage.count)
        if usage.last is not None:
            store.set_if_absent(USAGE_LAST + ident, usage.last, USAGE_TTL)
        store.add_to_set(USAGE_PENDING, ident)


@contextmanager
def taken_usage(store: KeyValueStore) -> Iterator[list[KeyUsage]]:
    """The usage counted since the last flush, taken out of the store for `write_usage`.

    The caller writes it and commits inside the block: if the block raises (the write or the
    commit failed), the usage goes back to the store before the error propagates, so the next
    flush counts it; nothing is lost or counted twice."""
    usages = _take_usage(store)
    try:
        yield usages
    except BaseException:
        _give_back(store, usages)
        raise


def write_usage(session: Session, usages: Sequence[KeyUsage]) -> int:
    """Add taken usage to the keys' rows; return how many keys it names. Rows of keys deleted
    meanwhile are skipped. `updated_at` is left alone, and the callers' caches are kept: usage
    is not a change to the key."""
    for usage in usages:
        values: dict[str, Any] = {"request_count": ApiKey.request_count + usage.count,
                                  "updated_at": ApiKey.updated_at}
        if usage.last is not None:
            at, _, ip = usage.last.partition("|")
            values["last_used_at"] = datetime.fromisoformat(at)
            values["last_used_ip"] = ip[:45]
        session.execute(update(ApiKey).where(ApiKey.id == usage.key_id).values(**values)
                        .execution_options(**{LEAVES_CACHES: True}))
    return len(usages)


# --- cleanup ----------------------------------------------------------------------------------

def delete_expired_keys(session: Session, now: datetime | None = None) -> int:
    """Hard-delete the keys whose `expires_at` has passed, except revoked ones (their rows are
    kept for audit); disabled keys that expired go too. Return how many went."""
    moment = now or utcnow()
    result = session.execute(delete(ApiKey).where(
        ApiKey.expires_at.is_not(None), ApiKey.expires_at <= moment,
        ApiKey.revoked_at.is_(None)).execution_options(synchronize_session=False))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


# --- a member's keys go with them: a key must not outlive the access it was made with ---------

def _revoke_keys_of(session: Session, user_id: uuid.UUID, reason: str, *,
                    team_id: uuid.UUID | None = None, org_id: uuid.UUID | None = None) -> int:
    """Revoke the live keys `user_id` created (in one team, or one org, or everywhere), audited
    with `reason` and no actor (the system does it); return how many."""
    query = select(ApiKey).where(ApiKey.created_by == user_id, ApiKey.revoked_at.is_(None))
    if team_id is not None:
        query = query.where(ApiKey.team_id == team_id)
    if org_id is not None:
        query = query.where(ApiKey.team_id.in_(select(Team.id).where(Team.org_id == org_id)))
    keys = list(session.scalars(query))
    now = utcnow()
    for key in keys:
        before = snapshot(key)
        _revoke(key, None, now)
        record_audit(session, "apikey.revoke", actor_id=None, org_id=key.org_id,
                     resource_type="api_key", resource_id=key.id, ip=None, user_agent=None,
                     before=before, after={**snapshot(key), "reason": reason})
    session.flush()
    return len(keys)


def revoke_member_team_keys(session: Session, team_id: uuid.UUID, user_id: uuid.UUID) -> int:
    """Revoke the keys `user_id` created in the team they are leaving; return how many."""
    return _revoke_keys_of(session, user_id, "the creator left the team", team_id=team_id)


def revoke_member_org_keys(session: Session, org_id: uuid.UUID, user_id: uuid.UUID) -> int:
    """Revoke the keys `user_id` created in any team of the org they are leaving (those of
    teams they reached through their org role, not a team membership); return how many."""
    return _revoke_keys_of(session, user_id, "the creator left the org", org_id=org_id)


def revoke_user_keys(session: Session, user_id: uuid.UUID) -> int:
    """Revoke every key of a user whose account is being deleted; return how many."""
    return _revoke_keys_of(session, user_id, "the creator's account was deleted")


def count_team_keys(session: Session, team_id: uuid.UUID) -> int:
    """How many keys the team has, revoked ones included (its deletion removes them all)."""
    return session.scalar(select(func.count()).select_from(ApiKey)
                          .where(ApiKey.team_id == team_id)) or 0
