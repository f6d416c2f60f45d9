"""Key-value store and pub/sub bus: Redis in production, in-process equivalents in embedded mode.

Both implement `KeyValueStore`. Values are strings; expiries are timedeltas. The memory store is
shared by every thread of one process (the embedded mode runs web, worker, clock and SMTP there),
which is exactly the reach Redis gives a deployment.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import redis

from burnbox.settings import Settings

# How long subscribe() waits for Redis to confirm the channels.
_SUBSCRIBE_TIMEOUT = 5.0


class StoreUnavailable(RuntimeError):
    """The key-value store could not be reached; callers decide whether to fail open or closed."""


class Subscription(Protocol):
    """Messages published on the channels a subscriber listens to."""

    def get(self, timeout: float) -> tuple[str, str] | None:
        """Wait up to `timeout` seconds for one (channel, message); None when nothing came."""

    def close(self) -> None:
        """Stop listening."""


class Batch(Protocol):
    """Writes queued by `KeyValueStore.batch`, with the meaning of the store's own."""

    def incr(self, key: str, ttl: timedelta, amount: int = 1) -> object:
        """As `KeyValueStore.incr`, without the new value."""

    def set(self, key: str, value: str, ttl: timedelta | None = None) -> None:
        """As `KeyValueStore.set`."""

    def add_to_set(self, key: str, member: str) -> None:
        """As `KeyValueStore.add_to_set`."""


class KeyValueStore(Protocol):
    """The operations Burnbox needs from Redis, with the same meaning in both implementations."""

    def ping(self) -> None:
        """Raise StoreUnavailable when the store cannot be reached."""

    def get(self, key: str) -> str | None:
        """The value of `key`, or None."""

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The values of `keys` in their order (None for a missing one), in one round trip."""

    def set(self, key: str, value: str, ttl: timedelta | None = None) -> None:
        """Store `value` under `key`, expiring after `ttl` when given."""

    def set_if_absent(self, key: str, value: str, ttl: timedelta) -> bool:
        """Store only if `key` is absent; True when this call stored it (a lock or a once-key)."""

    def take(self, key: str) -> str | None:
        """Atomically read and delete `key` (single-use tokens); None when absent or expired."""

    def delete(self, key: str) -> None:
        """Remove `key` if present."""

    def incr(self, key: str, ttl: timedelta, amount: int = 1) -> int:
        """Add `amount` to a counter, setting its expiry when it is created; return the new
        value."""

    def add_to_set(self, key: str, member: str) -> None:
        """Add `member` to the set stored under `key` (a set without expiry)."""

    def take_set(self, key: str) -> set[str]:
        """Atomically read and delete the set under `key`; empty when absent."""

    def batch(self) -> contextlib.AbstractContextManager[Batch]:
        """Writes made in order, for the price of one round trip: Redis queues them and makes
        them when the block ends, as one MULTI transaction (StoreUnavailable from the block's
        end); the memory store makes each at once."""

    def publish(self, channel: str, message: str) -> None:
        """Send `message` to every current subscriber of `channel`."""

    def subscribe(self, *channels: str) -> Subscription:
        """Listen on `channels` (patterns ending in * match prefixes)."""

    def publish_numbered(self, channel: str, message: str, keep: int, ttl: timedelta) -> int:
        """Give `message` (a JSON object's text) the channel's next number n (1, 2, 3...),
        publish it with `"id": n` as its first member, and keep it for `numbered_since`, with
        the channel's last `keep` others, for `ttl` after the latest. Return n. Atomic: every
        subscriber sees a channel's numbered messages in the order of their numbers."""

    def publish_all(self, plain: Iterable[tuple[str, str]], numbered: Iterable[tuple[str, str]],
                    keep: int, ttl: timedelta) -> None:
        """`publish` each (channel, message) of `plain` and `publish_numbered` each of
        `numbered` (keeping `keep` for `ttl`), each in order, in one round trip."""

    def publish_once(self, groups: Iterable[OnceGroup], keep: int, ttl: timedelta) -> None:
        """For each group whose `key` is not held: hold it for `hold`, then `publish_all` the
        group's messages; a group whose key is held publishes nothing. Each group is one atomic
        step, and all of them go in one round trip: two processes publishing the same group
        send its messages once."""

    def numbered_since(self, channel: str, after: int) -> tuple[list[str], int]:
        """The kept messages of `channel` numbered above `after`, in order (as published), and
        the channel's last number (0 when it has none)."""

@dataclass(frozen=True)
class OnceGroup:
    """Messages published together at most once (`KeyValueStore.publish_once`): `key` is
    held for `hold` by the first publisher, and later ones with the same key send nothing."""

    key: str
    hold: timedelta
    plain: list[tuple[str, str]]
    numbered: list[tuple[str, str]]


# One function, so numbering, keeping and publishing are one atomic step: a message published
# by one process can never overtake a lower number published by another.
_NUMBER = """
local function publish_numbered(last_key, kept_key, channel, message, keep, ttl)
  local n = redis.call('INCR', last_key)
  local text = '{"id":' .. n .. ',' .. string.sub(message, 2)
  redis.call('ZADD', kept_key, n, text)
  redis.call('ZREMRANGEBYRANK', kept_key, 0, -tonumber(keep) - 1)
  redis.call('PEXPIRE', last_key, ttl)
  redis.call('PEXPIRE', kept_key, ttl)
  redis.call('PUBLISH', channel, text)
  return n
end
"""
# KEYS: the number keys of the channel; ARGV: message, keep, ttl (ms), channel.
_PUBLISH_NUMBERED = (_NUMBER + "return publish_numbered(KEYS[1], KEYS[2], ARGV[4], ARGV[1], "
                                "ARGV[2], ARGV[3])")
# KEYS: the once key, then the number keys of each numbered message; ARGV: how long the once
# key is held (ms), keep, ttl (ms), the count of plain messages, then (channel, message) pairs:
# the plain ones, then the numbered ones.
_PUBLISH_ONCE = _NUMBER + """
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 0 end
local plain = tonumber(ARGV[4])
for i = 1, plain do redis.call('PUBLISH', ARGV[3 + 2 * i], ARGV[4 + 2 * i]) end
local k = 2
for i = 5 + 2 * plain, #ARGV, 2 do
  publish_numbered(KEYS[k], KEYS[k + 1], ARGV[i], ARGV[i + 1], ARGV[2], ARGV[3])
  k = k + 2
end
return 1
"""


def numbered(message: str, number: int) -> str:
    """`message`, a JSON object's text, with `"id": number` as its first member."""
    return f'{{"id":{number},{message[1:]}'


def _number_keys(channel: str) -> tuple[str, str]:
    return f"numbered:last:{channel}", f"numbered:kept:{channel}"


class _RedisBatch:
    """`Batch` on a Redis pipeline."""

    def __init__(self, pipe: redis.client.Pipeline) -> None:
        self._pipe = pipe

    def incr(self, key: str, ttl: timedelta, amount: int = 1) -> None:
        self._pipe.incrby(key, amount)
        self._pipe.pexpire(key, _ms(ttl), nx=True)

    def set(self, key: str, value: str, ttl: timedelta | None = None) -> None:
        self._pipe.set(key, value, px=_ms(ttl) if ttl else None)

    def add_to_set(self, key: str, member: str) -> None:
        self._pipe.sadd(key, member)


def _numbered_call(channel: str, message: str, keep: int, ttl: timedelta
                   ) -> tuple[list[str], list[object]]:
    """The keys and arguments of `_PUBLISH_NUMBERED` for one message."""
    return list(_number_keys(channel)), [message, keep, _ms(ttl), channel]


def _once_call(group: OnceGroup, keep: int, ttl: timedelta) -> tuple[list[str], list[object]]:
    """The keys and arguments of `_PUBLISH_ONCE` for one group."""
    keys = [group.key, *(key for channel, _ in group.numbered for key in _number_keys(channel))]
    pairs = [part for pair in [*group.plain, *group.numbered] for part in pair]
    return keys, [_ms(group.hold), keep, _ms(ttl), len(group.plain), *pairs]


# A script run by digest, with its keys and arguments.
ScriptCall = tuple[redis.commands.core.Script, list[str], list[object]]


class RedisStore:
    """KeyValueStore over a Redis server."""

    def __init__(self, url: str) -> None:
        self._client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                            socket_connect_timeout=2, health_check_interval=30)
        # Run by its digest (EVALSHA, loaded again when the server lost it): sending the
        # script's text with every numbered message cost the fan-out's publishes more than
        # the publishing.
        self._numbering = self._client.register_script(_PUBLISH_NUMBERED)
        self._once = self._client.register_script(_PUBLISH_ONCE)

    def _call(self, name: str, *args: object, **kwargs: object) -> object:
        try:
            return getattr(self._client, name)(*args, **kwargs)
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def ping(self) -> None:
        self._call("ping")

    def get(self, key: str) -> str | None:
        return self._call("get", key)  # type: ignore[return-value]

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return self._call("mget", keys)  # type: ignore[return-value]

    def set(self, key: str, value: str, ttl: timedelta | None = None) -> None:
        self._call("set", key, value, px=_ms(ttl) if ttl else None)

    def set_if_absent(self, key: str, value: str, ttl: timedelta) -> bool:
        return bool(self._call("set", key, value, px=_ms(ttl), nx=True))

    def take(self, key: str) -> str | None:
        return self._call("getdel", key)  # type: ignore[return-value]

    def delete(self, key: str) -> None:
        self._call("delete", key)

    def incr(self, key: str, ttl: timedelta, amount: int = 1) -> int:
        try:
            pipe = self._client.pipeline()
            pipe.incrby(key, amount)
            pipe.pexpire(key, _ms(ttl), nx=True)
            value, _ = pipe.execute()
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc
        return int(value)

    def add_to_set(self, key: str, member: str) -> None:
        self._call("sadd", key, member)

    def take_set(self, key: str) -> set[str]:
        try:
            pipe = self._client.pipeline(transaction=True)  # MULTI: nothing slips in between
            pipe.smembers(key)
            pipe.delete(key)
            members, _ = pipe.execute()
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc
        return set(members)

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        with self._client.pipeline(transaction=True) as pipe:  # MULTI: nothing in between
            yield _RedisBatch(pipe)
            try:
                pipe.execute()
            except redis.RedisError as exc:
                raise StoreUnavailable(str(exc)) from exc

    def publish(self, channel: str, message: str) -> None:
        self._call("publish", channel, message)

    def publish_numbered(self, channel: str, message: str, keep: int, ttl: timedelta) -> int:
        keys, args = _numbered_call(channel, message, keep, ttl)
        try:
            return int(self._numbering(keys=keys, args=args))  # type: ignore[arg-type]
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def publish_all(self, plain: Iterable[tuple[str, str]], numbered: Iterable[tuple[str, str]],
                    keep: int, ttl: timedelta) -> None:
        self._publish_and_run(list(plain), [
            (self._numbering, *_numbered_call(channel, message, keep, ttl))
            for channel, message in numbered])

    def publish_once(self, groups: Iterable[OnceGroup], keep: int, ttl: timedelta) -> None:
        self._publish_and_run([], [(self._once, *_once_call(group, keep, ttl))
                                   for group in groups])

    def _publish_and_run(self, plain: list[tuple[str, str]], calls: list[ScriptCall]) -> None:
        """Publish `plain`, then run each script call, in order, in one round trip."""
        try:
            pipe = self._client.pipeline(transaction=False)
            for channel, message in plain:
                pipe.publish(channel, message)
            for script, keys, args in calls:
                # By digest alone: a Script in a pipeline asks the server first whether it
                # has it, one more round trip each time.
                pipe.evalsha(script.sha, len(keys), *keys, *args)  # type: ignore[arg-type]
            answers = pipe.execute(raise_on_error=False)
            for answer in answers:
                if isinstance(answer, Exception) and not isinstance(
                        answer, redis.exceptions.NoScriptError):
                    raise answer
            # A server that lost its scripts (restarted, flushed) refused the calls from then
            # on: run those again, in order, loading the script (those run before stay as
            # they are: no message twice).
            for (script, keys, args), answer in zip(calls, answers[len(plain):], strict=True):
                if isinstance(answer, redis.exceptions.NoScriptError):
                    script(keys=keys, args=args)  # type: ignore[arg-type]
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def numbered_since(self, channel: str, after: int) -> tuple[list[str], int]:
        last_key, kept_key = _number_keys(channel)
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.zrangebyscore(kept_key, f"({after}", "+inf")
            pipe.get(last_key)
            messages, last = pipe.execute()
        except redis.RedisError as exc:
            raise StoreUnavailable(str(exc)) from exc
        return list(messages), int(last or 0)

    def subscribe(self, *channels: str) -> Subscription:
        pubsub = self._client.pubsub()
        try:
            plain = [c for c in channels if not c.endswith("*")]
            patterns = [c for c in channels if c.endswith("*")]
            if plain:
                pubsub.subscribe(*plain)
            if patterns:
                pubsub.psubscribe(*patterns)
            # Wait for the server to confirm every channel, so that a message published after
            # subscribe() returns is delivered, as with MemoryStore.
            deadline = time.monotonic() + _SUBSCRIBE_TIMEOUT
            pending = len(plain) + len(patterns)
            while pending:
                if time.monotonic() >= deadline:
                    raise redis.TimeoutError("Redis did not confirm the subscription")
                message = pubsub.get_message(timeout=deadline - time.monotonic())
                if message is not None and message["type"] in ("subscribe", "psubscribe"):
                    pending -= 1
        except redis.RedisError as exc:
            pubsub.close()
            raise StoreUnavailable(str(exc)) from exc
        return _RedisSubscription(pubsub)


class _RedisSubscription:
    def __init__(self, pubsub: redis.client.PubSub) -> None:
        self._pubsub = pubsub

    def get(self, timeout: float) -> tuple[str, str] | None:
        # get_message also returns (or swallows, as None) subscription confirmations and health
        # check replies; only a published message, or the deadline, ends the wait.
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._pubsub.get_message(
                    timeout=max(0.0, deadline - time.monotonic()))
            except redis.RedisError as exc:
                raise StoreUnavailable(str(exc)) from exc
            if message is not None and message["type"] in ("message", "pmessage"):
                return message["channel"], message["data"]
            if time.monotonic() >= deadline:
                return None

    def close(self) -> None:
        self._pubsub.close()


class MemoryStore:
    """KeyValueStore inside one process: a dict with expiry times and in-process subscribers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[str, float | None]] = {}
        self._sets: dict[str, set[str]] = {}
        self._subscribers: list[_MemorySubscription] = []
        # channel -> (last number, kept (number, message) oldest first, expiry)
        self._numbered: dict[str, tuple[int, list[tuple[int, str]], float]] = {}
        # Held from numbering through publishing, so subscribers see numbers in order.
        self._numbering = threading.Lock()

    def _live(self, key: str) -> str | None:
        item = self._values.get(key)
        if item is None:
            return None
        value, expires = item
        if expires is not None and expires <= time.monotonic():
            del self._values[key]
            return None
        return value

    def ping(self) -> None:
        return None

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._live(key)

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        with self._lock:
            return [self._live(key) for key in keys]

    def set(self, key: str, value: str, ttl: timedelta | None = None) -> None:
        with self._lock:
            self._values[key] = (value, _deadline(ttl))

    def set_if_absent(self, key: str, value: str, ttl: timedelta) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._values[key] = (value, _deadline(ttl))
            return True

    def take(self, key: str) -> str | None:
        with self._lock:
            value = self._live(key)
            self._values.pop(key, None)
            return value

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)
            self._sets.pop(key, None)

    def incr(self, key: str, ttl: timedelta, amount: int = 1) -> int:
        with self._lock:
            current = self._live(key)
            if current is None:
                self._values[key] = (str(amount), _deadline(ttl))
                return amount
            value = int(current) + amount
            self._values[key] = (str(value), self._values[key][1])
            return value

    def add_to_set(self, key: str, member: str) -> None:
        with self._lock:
            self._sets.setdefault(key, set()).add(member)

    def take_set(self, key: str) -> set[str]:
        with self._lock:
            return self._sets.pop(key, set())

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        yield self  # each write at once, in order: no round trip to save

    def publish(self, channel: str, message: str) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            subscriber.offer(channel, message)

    def publish_numbered(self, channel: str, message: str, keep: int, ttl: timedelta) -> int:
        with self._numbering:
            last, kept, _ = self._live_numbered(channel)
            number = last + 1
            text = numbered(message, number)
            kept = [*kept, (number, text)][-keep:]
            self._numbered[channel] = (number, kept, time.monotonic() + ttl.total_seconds())
            self.publish(channel, text)
            return number

    def publish_all(self, plain: Iterable[tuple[str, str]], numbered: Iterable[tuple[str, str]],
                    keep: int, ttl: timedelta) -> None:
        for channel, message in plain:
            self.publish(channel, message)
        for channel, message in numbered:
            self.publish_numbered(channel, message, keep, ttl)

    def publish_once(self, groups: Iterable[OnceGroup], keep: int, ttl: timedelta) -> None:
        for group in groups:
            if self.set_if_absent(group.key, "1", group.hold):
                self.publish_all(group.plain, group.numbered, keep, ttl)

    def numbered_since(self, channel: str, after: int) -> tuple[list[str], int]:
        with self._numbering:
            last, kept, _ = self._live_numbered(channel)
            return [text for number, text in kept if number > after], last

    def _live_numbered(self, channel: str) -> tuple[int, list[tuple[int, str]], float]:
        item = self._numbered.get(channel)
        if item is None or item[2] <= time.monotonic():
            return 0, [], 0.0
        return item

    def subscribe(self, *channels: str) -> Subscription:
        subscription = _MemorySubscription(self, channels)
        with self._lock:
            self._subscribers.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: _MemorySubscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)


class _MemorySubscription:
    def __init__(self, store: MemoryStore, channels: tuple[str, ...]) -> None:
        self._store = store
        self._channels = channels
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue(maxsize=10_000)

    def matches(self, channel: str) -> bool:
        return any(
            channel.startswith(c[:-1]) if c.endswith("*") else channel == c for c in self._channels
        )

    def offer(self, channel: str, message: str) -> None:
        # Like Redis pub/sub, a subscriber that cannot keep up loses messages rather than
        # blocking the publisher.
        if self.matches(channel):
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait((channel, message))

    def get(self, timeout: float) -> tuple[str, str] | None:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        self._store._unsubscribe(self)


def _ms(ttl: timedelta) -> int:
    return max(1, int(ttl.total_seconds() * 1000))


def _deadline(ttl: timedelta | None) -> float | None:
    return None if ttl is None else time.monotonic() + ttl.total_seconds()


def make_store(settings: Settings) -> KeyValueStore:
    """The store the settings choose: Redis when redis.url is set, else a new in-process one."""
    if settings.redis.url:
        return RedisStore(settings.redis.url)
    return MemoryStore()
