"""Rate limiting: fixed windows in Redis (or process memory in embedded mode, through `limits`).

Every request is counted in exactly one bucket:
- a view decorated with `@rate_limited("auth")` (or "refresh", "forgot_password", "demo") counts
  per client IP in that bucket of its own;
- otherwise a request with a valid JWT counts per user, one with an API key (`bb_...`, as Bearer
  or as the password of HTTP Basic, which the compat faces' clients send) per key,
  and anything else per client IP in the anonymous bucket. A key that turns out to be invalid
  (401) also counts against its client IP's anonymous bucket, and a client IP whose anonymous
  bucket is spent cannot try further keys: random `bb_` values buy no extra budget.
Health, metrics and docs routes (`@rate_exempt`) are not counted; their headers show the caller's
anonymous bucket. A WebSocket upgrade (`@ticketed`) is not counted either: its single-use ticket
was counted in its user's bucket when it was issued. A refused ticket spends its client IP's
anonymous budget, and a client IP whose anonymous budget is spent opens no socket, as for keys.
Every response carries X-RateLimit-Limit, -Remaining and -Reset (Unix seconds); a refused
request gets 429 `rate_limited` with Retry-After. If the counter store is unreachable, ordinary
traffic passes uncounted (fail open), while the auth buckets fail closed onto counters
kept in the process's memory: an outage never lets anyone guess passwords at full speed, and
logins keep working (with the store down, a login at the session limit revokes the oldest
sessions instead of answering 409: docs/identity.md).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import limits
import redis
from flask import Flask, Response, current_app, g, request
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter

from burnbox import metrics
from burnbox.security import InvalidToken, decode_access_token
from burnbox.settings import Settings, SettingsError
from models.apikeys.keys import UsageWrite
from models.caching import Revisions
from web import key_usage
from web.auth import presented_key
from web.context import revisions_to_read, runtime
from web.errors import error_response
from web.per_request import client_ip
from web.routing import matched_view

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
BUCKETS = ("authenticated", "anonymous", "auth", "refresh", "forgot_password", "demo")
FAIL_CLOSED = frozenset({"auth", "refresh", "forgot_password"})
EXTENSION = "burnbox.ratelimit"


def rate_limited(bucket: str) -> Callable[[F], F]:
    """Count the decorated view in the named per-IP bucket instead of the general ones."""
    if bucket not in BUCKETS:
        raise ValueError(f"unknown rate-limit bucket {bucket!r}")

    def mark(view: F) -> F:
        view._rate_bucket = bucket  # type: ignore[attr-defined]
        return view

    return mark


def rate_exempt(view: F) -> F:
    """Do not count the decorated view (health probes, metrics scrapes, documentation)."""
    view._rate_bucket = None  # type: ignore[attr-defined]
    return view


# The mark of a view whose request is counted through its ticket (`ticketed`): not a bucket.
TICKETED = "ticketed"


def ticketed(view: F) -> F:
    """Count the decorated view (a WebSocket upgrade authenticated by a single-use ticket) as
    its ticket was counted: not again. Counting the upgrade too, in the anonymous bucket of
    its client IP (it carries no credential header), spent 60 a minute for every user behind
    that IP, and a browser cannot tell an upgrade refused 429 from a network fault."""
    view._rate_bucket = TICKETED  # type: ignore[attr-defined]
    return view


@dataclass(frozen=True)
class Window:
    """Where a caller stands in one bucket after this request."""

    limit: int
    remaining: int
    reset: int
    allowed: bool = True


# One round trip for every window a request looks at. ARGV[1] is the number of windows W,
# ARGV[2] the number of keys only read R, ARGV[3] "1" when a key's usage is counted too. KEYS
# are the W windows, the R keys read, then the usage's counter, last-use and pending keys.
# Window i has ARGV[3i+1] (its length in milliseconds), ARGV[3i+2] ("1" to count this request,
# "0" to only look) and ARGV[3i+3] (its limit); the usage's TTL in milliseconds, last use and
# pending member follow the windows'.
# Answered: the values of the keys read (the request's cache revisions, models.caching), then
# each window's count and the milliseconds left in it. A window starts at its first request. A
# window only looked at that is already spent refuses the request: the windows after it are
# neither counted nor returned. The usage (models.apikeys.keys.UsageWrite) is counted only for
# a request no window refuses.
_WINDOWS_SCRIPT = """
local windows, reads = tonumber(ARGV[1]), tonumber(ARGV[2])
local answer = {}
for i = windows + 1, windows + reads do
  answer[#answer + 1] = redis.call('GET', KEYS[i])
end
local allowed = true
for i = 1, windows do
  local key, length, counts, limit = KEYS[i], ARGV[3 * i + 1], ARGV[3 * i + 2], ARGV[3 * i + 3]
  local count
  if counts == '1' then
    count = redis.call('INCR', key)
    if count == 1 then redis.call('PEXPIRE', key, length) end
    if count > tonumber(limit) then allowed = false end
  else
    count = tonumber(redis.call('GET', key) or '0')
  end
  local left = redis.call('PTTL', key)
  if left < 0 then left = 0 end
  answer[#answer + 1] = count
  answer[#answer + 1] = left
  if counts == '0' and count >= tonumber(limit) then
    allowed = false
    break
  end
end
if ARGV[3] == '1' and allowed then
  local usage, extra = windows + reads, 3 * windows + 3
  redis.call('INCR', KEYS[usage + 1])
  redis.call('PEXPIRE', KEYS[usage + 1], ARGV[extra + 1], 'NX')
  redis.call('SET', KEYS[usage + 2], ARGV[extra + 2], 'PX', ARGV[extra + 1])
  redis.call('SADD', KEYS[usage + 3], ARGV[extra + 3])
end
return answer
"""


@dataclass(frozen=True)
class Look:
    """One window a request looks at: a bucket and an identity, counted or only read."""

    bucket: str
    identity: str
    count: bool = True


class RateLimiter:
    """The buckets of one app, parsed from `rate_limits.*`, over one counter store: fixed
    windows in Redis (every window a request looks at in one round trip: where `limits`' own
    limiter made two per window, they were most of a cached read's Redis traffic), or in this
    process's memory through `limits` (the embedded mode, and the fail-closed buckets during
    a Redis outage)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.items: dict[str, limits.RateLimitItem] = {}
        for bucket in BUCKETS:
            value = getattr(settings.rate_limits, bucket)
            try:
                self.items[bucket] = limits.parse(value)
            except ValueError as exc:
                raise SettingsError(f"setting rate_limits.{bucket}: {value!r} is not a rate "
                                    "such as '60/minute'") from exc
        self.local = FixedWindowRateLimiter(storage_from_string("memory://"))
        self.redis: redis.Redis | None = None
        if settings.redis.url:
            self.redis = redis.Redis.from_url(settings.redis.url, socket_timeout=1.0,
                                              socket_connect_timeout=1.0)
            self._windows = self.redis.register_script(_WINDOWS_SCRIPT)

    def hit(self, bucket: str, identity: str, *, local: bool = False) -> Window:
        """Count one request of `identity` in `bucket` (in this process's memory if `local`)."""
        return self.look([Look(bucket, identity)], local=local)[0]

    def peek(self, bucket: str, identity: str) -> Window:
        """Where `identity` stands in `bucket`, without counting."""
        return self.look([Look(bucket, identity, count=False)])[0]

    def look(self, looks: list[Look], *, local: bool = False) -> list[Window]:
        """Where the request stands in each window, counting it in those to count, up to and
        including the first window only looked at that is spent (the request is refused
        there: the windows after it are not counted); raise redis.RedisError when Redis does
        not answer."""
        return self.look_and_read(looks, [], local=local)[0]

    def look_and_read(self, looks: list[Look], reads: list[str], *, local: bool = False,
                      usage: UsageWrite | None = None
                      ) -> tuple[list[Window], list[str | None] | None]:
        """`look`, and the values of the store's keys `reads` in the same round trip (None
        when the windows are in this process's memory: nothing was read, and no usage
        counted); and `usage` counted there too when the windows allow the request."""
        if local or self.redis is None:
            windows = []
            for one in looks:
                windows.append(self._local_window(one))
                if not one.count and windows[-1].remaining == 0:
                    break
            return windows, None
        items = [self.items[one.bucket] for one in looks]
        args: list[object] = [len(looks), len(reads), "0" if usage is None else "1"]
        for one, item in zip(looks, items, strict=True):
            args += [item.get_expiry() * 1000, "1" if one.count else "0", item.amount]
        keys = [_key(one, item) for one, item in zip(looks, items, strict=True)] + reads
        if usage is not None:
            keys += [usage.count_key, usage.last_key, usage.pending_key]
            args += [int(usage.ttl.total_seconds() * 1000), usage.last, usage.member]
        answer = self._windows(keys=keys, args=args)
        values = [None if value is None else value.decode() for value in answer[:len(reads)]]
        answer = answer[len(reads):]
        return self._windows_of(looks, items, answer), values

    @staticmethod
    def _windows_of(looks: list[Look], items: list[limits.RateLimitItem],
                    answer: list[int]) -> list[Window]:
        now = time.time()
        # A window only looked at allows the request: it refuses by stopping the windows after
        # it (its count may exceed the limit by the requests it refused).
        return [Window(limit=item.amount, remaining=max(0, item.amount - count),
                       reset=math.ceil(now + left / 1000),
                       allowed=count <= item.amount or not one.count)
                for one, item, count, left in zip(looks, items, answer[::2], answer[1::2],
                                                  strict=False)]

    def _local_window(self, one: Look) -> Window:
        item = self.items[one.bucket]
        allowed = self.local.hit(item, one.bucket, one.identity) if one.count else True
        stats = self.local.get_window_stats(item, one.bucket, one.identity)
        return Window(limit=item.amount, remaining=max(0, stats.remaining),
                      reset=math.ceil(stats.reset_time), allowed=allowed)


def _key(look: Look, item: limits.RateLimitItem) -> str:
    """The counter of one window; the rate is part of it, so a changed limit starts afresh."""
    return f"ratelimit:{look.bucket}:{look.identity}:{item.amount}/{item.get_expiry()}"


def _declared_bucket() -> tuple[bool, str | None]:
    """(declared, bucket) of the matched view: (False, None) when the view declares nothing."""
    target = matched_view()
    if target is not None and hasattr(target, "_rate_bucket"):
        return True, target._rate_bucket
    return False, None


def _caller(settings: Settings) -> tuple[str, str]:
    """(bucket, identity) for a request that declares no bucket of its own."""
    key = presented_key()
    if key is not None:
        return "authenticated", "key:" + hashlib.sha256(key.encode()).hexdigest()
    header = request.headers.get("Authorization", "")
    scheme, _, credential = header.partition(" ")
    credential = credential.strip()
    if scheme.lower() == "bearer" and credential:
        try:
            claims = decode_access_token(settings.auth.jwt_secret, credential)
        except InvalidToken:
            pass
        else:
            return "authenticated", f"user:{claims.user_id}"
    return "anonymous", f"ip:{client_ip()}"


def _count(limiter: RateLimiter) -> Window | None:
    """Count this request in its bucket (kept in `g.rate_bucket` for the refusal counter);
    None when it is exempt and the store is down."""
    ip = f"ip:{client_ip()}"
    declared, bucket = _declared_bucket()
    try:
        if declared and bucket == TICKETED:
            g.rate_bucket = "anonymous"
            g.rate_key_ip = ip  # a refused ticket (401) spends this budget (`_finish`)
            window = limiter.peek("anonymous", ip)
            return window if window.remaining else Window(window.limit, 0, window.reset,
                                                          allowed=False)
        if declared and bucket is None:
            g.rate_bucket = "anonymous"
            return limiter.peek("anonymous", ip)
        if declared:
            assert bucket is not None
            g.rate_bucket = bucket
            return limiter.hit(bucket, ip)
        bucket, identity = _caller(limiter.settings)
        g.rate_bucket = bucket
        looks = [Look(bucket, identity)]
        if identity.startswith("key:"):
            g.rate_key_ip = ip
            # The client's anonymous budget, looked at in the same round trip as the key's
            # count (which it stops when spent).
            looks.insert(0, Look("anonymous", ip, count=False))
        # A caller with a credential needs the cache revisions next: read in this round trip.
        reads = revisions_to_read() if bucket == "authenticated" else []
        # A key this process knows has its usage counted in this round trip too.
        usage = (key_usage.write_ahead(identity.removeprefix("key:"), client_ip())
                 if identity.startswith("key:") else None)
        windows, values = limiter.look_and_read(looks, reads, usage=usage)
        if values is not None and reads:
            g.revisions = Revisions(runtime().store, dict(zip(reads, values, strict=True)))
        if values is not None and usage is not None and len(windows) == len(looks) and all(
                window.allowed for window in windows):
            key_usage.counted_ahead(usage)
        if identity.startswith("key:"):
            spent, *counted = windows
            if not counted:
                g.rate_bucket = "anonymous"  # the key's client spent its anonymous budget
                return Window(spent.limit, 0, spent.reset, allowed=False)
            return counted[0]
        return windows[0]
    except redis.RedisError as exc:
        log.warning("rate-limit store unavailable", extra={"reason": str(exc)})
        if bucket in FAIL_CLOSED:
            return limiter.hit(bucket, ip, local=True)
        return None


def _check() -> Response | None:
    window = _count(current_app.extensions[EXTENSION])
    g.rate_window = window
    if window is None or window.allowed:
        return None
    metrics.RATE_LIMIT_REFUSALS.labels(g.rate_bucket).inc()
    response = error_response(429, "rate limit exceeded")
    response.headers["Retry-After"] = str(max(1, window.reset - int(time.time())))
    return response


def _finish(response: Response) -> Response:
    key_usage.release_unclaimed(runtime().store)
    key_ip = g.get("rate_key_ip")
    if key_ip and response.status_code == 401:
        # An unknown, expired or revoked key (or a refused ticket) spends its client's
        # anonymous budget.
        try:
            current_app.extensions[EXTENSION].hit("anonymous", key_ip)
        except redis.RedisError:
            log.warning("rate-limit store unavailable while counting a failed key")
    window: Window | None = g.get("rate_window")
    if window is not None:
        response.headers["X-RateLimit-Limit"] = str(window.limit)
        response.headers["X-RateLimit-Remaining"] = str(window.remaining)
        response.headers["X-RateLimit-Reset"] = str(window.reset)
    return response


def init_app(app: Flask, settings: Settings) -> None:
    """Install the limiter when `rate_limits.enabled` (it runs after the client IP is known)."""
    if not settings.rate_limits.enabled:
        return
    app.extensions[EXTENSION] = RateLimiter(settings)
    app.before_request(_check)
    app.after_request(_finish)
