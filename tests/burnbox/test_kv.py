"""The key-value store contract, run against both implementations: MemoryStore and RedisStore.

The Redis half uses BURNBOX_TEST_REDIS_URL (default redis://127.0.0.1:6379/15) and is skipped only
when no Redis answers there. Every test works under its own random key prefix.
"""

import threading
import time
import uuid
from datetime import timedelta

import pytest

from burnbox.kv import OnceGroup, RedisStore, StoreUnavailable

CLOSED_PORT_URL = "redis://127.0.0.1:1/0"
SHORT = timedelta(milliseconds=80)
AFTER_SHORT = 0.15


@pytest.fixture
def prefix():
    """A key prefix of this test alone, so runs sharing one Redis never meet."""
    return f"test:{uuid.uuid4().hex}:"


@pytest.fixture
def store(any_store, prefix):
    """Each store implementation in turn (see `any_store`); this test's Redis keys are removed."""
    yield any_store
    if isinstance(any_store, RedisStore):
        for key in any_store._client.scan_iter(match=f"{prefix}*"):
            any_store._client.delete(key)


def _all_at_once(count, work):
    """Run `work()` in `count` threads released together; return their results."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(index):
        barrier.wait()
        results[index] = work()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    return results


def test_a_value_set_is_read_back_and_an_absent_key_is_none(store, prefix):
    assert store.get(prefix + "k") is None
    store.set(prefix + "k", "v1")
    assert store.get(prefix + "k") == "v1"
    store.set(prefix + "k", "v2")
    assert store.get(prefix + "k") == "v2"


def test_a_value_with_a_ttl_disappears_after_it(store, prefix):
    store.set(prefix + "short", "v", SHORT)
    store.set(prefix + "long", "v", timedelta(seconds=30))
    assert store.get(prefix + "short") == "v"
    time.sleep(AFTER_SHORT)
    assert store.get(prefix + "short") is None
    assert store.get(prefix + "long") == "v"


def test_setting_without_a_ttl_makes_a_value_permanent_again(store, prefix):
    store.set(prefix + "k", "old", SHORT)
    store.set(prefix + "k", "new")
    time.sleep(AFTER_SHORT)
    assert store.get(prefix + "k") == "new"


def test_delete_removes_a_key_and_ignores_an_absent_one(store, prefix):
    store.set(prefix + "k", "v")
    store.delete(prefix + "k")
    store.delete(prefix + "never-set")
    assert store.get(prefix + "k") is None


def test_set_if_absent_stores_only_the_first_time_until_expiry(store, prefix):
    assert store.set_if_absent(prefix + "lock", "first", SHORT) is True
    assert store.set_if_absent(prefix + "lock", "second", SHORT) is False
    assert store.get(prefix + "lock") == "first"
    time.sleep(AFTER_SHORT)
    assert store.set_if_absent(prefix + "lock", "third", SHORT) is True
    assert store.get(prefix + "lock") == "third"


def test_set_if_absent_has_exactly_one_winner_among_concurrent_callers(store, prefix):
    results = _all_at_once(16, lambda: store.set_if_absent(prefix + "once", "x",
                                                           timedelta(seconds=30)))
    assert results.count(True) == 1


def test_take_returns_a_value_once(store, prefix):
    store.set(prefix + "ticket", "payload", timedelta(seconds=30))
    assert store.take(prefix + "ticket") == "payload"
    assert store.take(prefix + "ticket") is None
    assert store.get(prefix + "ticket") is None
    assert store.take(prefix + "never-set") is None


def test_take_of_an_expired_value_is_none(store, prefix):
    store.set(prefix + "ticket", "payload", SHORT)
    time.sleep(AFTER_SHORT)
    assert store.take(prefix + "ticket") is None


def test_exactly_one_of_many_concurrent_takers_gets_the_value(store, prefix):
    for round_ in range(5):
        key = f"{prefix}ticket{round_}"
        store.set(key, "payload", timedelta(seconds=30))
        results = _all_at_once(16, lambda key=key: store.take(key))
        assert results.count("payload") == 1
        assert results.count(None) == 15


def test_incr_counts_from_one_and_expires_from_its_creation(store, prefix):
    assert store.incr(prefix + "n", SHORT) == 1
    # A later call does not push the expiry out: a fixed window, as rate limits need.
    assert store.incr(prefix + "n", timedelta(seconds=30)) == 2
    assert store.incr(prefix + "n", timedelta(seconds=30)) == 3
    time.sleep(AFTER_SHORT)
    assert store.incr(prefix + "n", timedelta(seconds=30)) == 1


def test_concurrent_increments_are_all_counted(store, prefix):
    def work():
        for _ in range(50):
            store.incr(prefix + "n", timedelta(seconds=30))

    _all_at_once(8, work)
    assert store.get(prefix + "n") == "400"


def test_incr_adds_any_amount_and_a_negative_one_takes_back(store, prefix):
    assert store.incr(prefix + "n", timedelta(seconds=30), amount=5) == 5
    assert store.incr(prefix + "n", timedelta(seconds=30), amount=-2) == 3
    assert store.incr(prefix + "n", timedelta(seconds=30)) == 4


def test_a_set_collects_distinct_members_until_it_is_taken_whole(store, prefix):
    assert store.take_set(prefix + "s") == set()
    for member in ("a", "b", "a"):
        store.add_to_set(prefix + "s", member)
    assert store.take_set(prefix + "s") == {"a", "b"}
    assert store.take_set(prefix + "s") == set()
    store.add_to_set(prefix + "s", "c")
    store.delete(prefix + "s")
    assert store.take_set(prefix + "s") == set()


def test_members_added_while_sets_are_taken_are_each_taken_exactly_once(store, prefix):
    taken: list[str] = []
    done = threading.Event()

    def add():
        for n in range(300):
            store.add_to_set(prefix + "s", str(n))
        done.set()

    def take():
        while not done.is_set():
            taken.extend(store.take_set(prefix + "s"))
        taken.extend(store.take_set(prefix + "s"))

    threads = [threading.Thread(target=add), threading.Thread(target=take)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(taken, key=int) == [str(n) for n in range(300)]


def test_a_subscriber_receives_messages_of_its_exact_channel_only(store, prefix):
    subscription = store.subscribe(prefix + "inbox:1")
    try:
        store.publish(prefix + "inbox:2", "not for me")
        store.publish(prefix + "inbox:1", "hello")
        assert subscription.get(timeout=2) == (prefix + "inbox:1", "hello")
        assert subscription.get(timeout=0.1) is None
    finally:
        subscription.close()


def test_a_prefix_pattern_receives_every_channel_under_it(store, prefix):
    subscription = store.subscribe(prefix + "inbox:*")
    try:
        store.publish(prefix + "inbox:1", "a")
        store.publish(prefix + "other:1", "ignored")
        store.publish(prefix + "inbox:2", "b")
        received = [subscription.get(timeout=2), subscription.get(timeout=2)]
        assert received == [(prefix + "inbox:1", "a"), (prefix + "inbox:2", "b")]
        assert subscription.get(timeout=0.1) is None
    finally:
        subscription.close()


def test_one_subscription_can_mix_exact_channels_and_patterns(store, prefix):
    subscription = store.subscribe(prefix + "admin", prefix + "user:*")
    try:
        store.publish(prefix + "user:7", "u")
        store.publish(prefix + "admin", "a")
        received = {subscription.get(timeout=2), subscription.get(timeout=2)}
        assert received == {(prefix + "user:7", "u"), (prefix + "admin", "a")}
    finally:
        subscription.close()


def test_every_subscriber_of_a_channel_gets_the_message(store, prefix):
    first = store.subscribe(prefix + "c")
    second = store.subscribe(prefix + "*")
    try:
        store.publish(prefix + "c", "m")
        assert first.get(timeout=2) == (prefix + "c", "m")
        assert second.get(timeout=2) == (prefix + "c", "m")
    finally:
        first.close()
        second.close()


def test_a_message_published_right_after_subscribing_arrives_on_the_first_get(store, prefix):
    for n in range(20):
        subscription = store.subscribe(f"{prefix}c{n}")
        try:
            store.publish(f"{prefix}c{n}", "m")
            assert subscription.get(timeout=2) == (f"{prefix}c{n}", "m")
        finally:
            subscription.close()


def test_publish_all_sends_the_plain_messages_in_order_then_the_numbered(store, prefix):
    subscription = store.subscribe(prefix + "*")
    try:
        store.publish_all([(prefix + "a", "1"), (prefix + "b", "2"), (prefix + "a", "3")],
                          [(prefix + "n", '{"x":1}')], 10, SHORT)
        assert [subscription.get(timeout=2) for _ in range(4)] == [
            (prefix + "a", "1"), (prefix + "b", "2"), (prefix + "a", "3"),
            (prefix + "n", '{"id":1,"x":1}')]
    finally:
        subscription.close()


KEPT = timedelta(minutes=1)


def _group(prefix: str, key: str, text: str) -> OnceGroup:
    return OnceGroup(prefix + key, timedelta(minutes=1), [(prefix + "team", text)],
                     [(prefix + "inbox", text)])


def test_publish_once_sends_each_group_once_whoever_publishes_it(store, prefix):
    subscription = store.subscribe(prefix + "*")
    try:
        store.publish_once([_group(prefix, "e1", '{"e":1}'), _group(prefix, "e2", '{"e":2}')],
                           10, KEPT)
        # The backup publisher: e1 again (already sent: nothing) with a new e3.
        store.publish_once([_group(prefix, "e1", '{"e":1}'), _group(prefix, "e3", '{"e":3}')],
                           10, KEPT)
        got = [subscription.get(timeout=2) for _ in range(6)]
        assert subscription.get(timeout=0.3) is None
    finally:
        subscription.close()
    assert got == [(prefix + "team", '{"e":1}'), (prefix + "inbox", '{"id":1,"e":1}'),
                   (prefix + "team", '{"e":2}'), (prefix + "inbox", '{"id":2,"e":2}'),
                   (prefix + "team", '{"e":3}'), (prefix + "inbox", '{"id":3,"e":3}')]
    messages, last = store.numbered_since(prefix + "inbox", 0)
    assert (messages, last) == (['{"id":1,"e":1}', '{"id":2,"e":2}', '{"id":3,"e":3}'], 3)


def test_publish_all_numbers_the_kept_channels_and_publishes_the_others_in_one_call(store,
                                                                                   prefix):
    subscription = store.subscribe(prefix + "*")
    try:
        store.publish_all([(prefix + "plain", '{"p":1}')],
                          [(prefix + "kept", '{"k":1}'), (prefix + "kept", '{"k":2}')],
                          10, timedelta(seconds=10))
        heard = [subscription.get(timeout=2) for _ in range(3)]
    finally:
        subscription.close()
    assert heard == [(prefix + "plain", '{"p":1}'), (prefix + "kept", '{"id":1,"k":1}'),
                     (prefix + "kept", '{"id":2,"k":2}')]
    assert store.numbered_since(prefix + "kept", 0) == ([text for _, text in heard[1:]], 2)


def test_numbered_messages_are_numbered_after_the_server_lost_its_scripts(store, prefix):
    # The numbering script runs by its digest; a restarted or flushed server no longer knows
    # it, and the store must load it again rather than fail the publish.
    if not isinstance(store, RedisStore):
        pytest.skip("only a Redis server keeps scripts")
    redis_store, channel = store, prefix + "kept"
    assert redis_store.publish_numbered(channel, '{"a":1}', 10, timedelta(seconds=10)) == 1
    redis_store._client.script_flush()
    assert redis_store.publish_numbered(channel, '{"a":1}', 10, timedelta(seconds=10)) == 2
    redis_store._client.script_flush()
    redis_store.publish_all([], [(channel, '{"a":1}'), (channel, '{"a":2}')], 10,
                            timedelta(seconds=10))
    assert redis_store.numbered_since(channel, 2) == (['{"id":3,"a":1}', '{"id":4,"a":2}'], 4)
    redis_store._client.script_flush()
    redis_store.publish_once([OnceGroup(prefix + "once", timedelta(seconds=10), [],
                                        [(channel, '{"a":3}')])], 10, timedelta(seconds=10))
    assert redis_store.numbered_since(channel, 4) == (['{"id":5,"a":3}'], 5)


def test_get_waits_for_its_timeout_when_nothing_is_published(store, prefix):
    subscription = store.subscribe(prefix + "quiet")
    try:
        started = time.monotonic()
        assert subscription.get(timeout=0.3) is None
        assert time.monotonic() - started >= 0.25
    finally:
        subscription.close()


def test_an_unreachable_redis_raises_store_unavailable_for_every_operation():
    store = RedisStore(CLOSED_PORT_URL)
    operations = [
        store.ping,
        lambda: store.get("k"),
        lambda: store.set("k", "v"),
        lambda: store.set_if_absent("k", "v", SHORT),
        lambda: store.take("k"),
        lambda: store.delete("k"),
        lambda: store.incr("k", SHORT),
        lambda: store.add_to_set("s", "m"),
        lambda: store.take_set("s"),
        lambda: store.publish("c", "m"),
        lambda: store.publish_once([OnceGroup("k", SHORT, [("c", "m")], [])], 1, SHORT),
        lambda: store.publish_numbered("c", "{}", 1, SHORT),
        lambda: store.publish_all([("c", "m")], [("d", "{}")], 1, SHORT),
        lambda: store.subscribe("c"),
    ]
    for operation in operations:
        with pytest.raises(StoreUnavailable):
            operation()


def test_numbered_messages_reach_subscribers_in_the_order_of_their_numbers(store, prefix):
    # Numbering, keeping and publishing are one step: with a separate counter, one publisher
    # could publish 6 before another published 5, and a client resuming after 6 would miss 5.
    channel = prefix + "inbox:1"
    subscription = store.subscribe(channel)
    counter = iter(range(400))

    def publish_some():
        for _ in range(20):
            store.publish_numbered(channel, f'{{"n":{next(counter)}}}', 1000,
                                   timedelta(seconds=10))

    _all_at_once(10, publish_some)
    heard = []
    while (item := subscription.get(timeout=1.0)) is not None:
        heard.append(item[1])
    subscription.close()
    assert [int(text.split(",")[0].removeprefix('{"id":')) for text in heard] == list(
        range(1, 201))
    kept, last = store.numbered_since(channel, 0)
    assert (kept, last) == (heard, 200)
    assert store.numbered_since(channel, 198) == (heard[198:], 200)


def test_a_numbered_channel_keeps_its_last_messages_and_forgets_them_when_idle(store, prefix):
    channel = prefix + "user:1"
    for number in range(1, 6):
        assert store.publish_numbered(channel, '{"a":1}', 3, SHORT * 4) == number
    assert store.numbered_since(channel, 0) == ([f'{{"id":{n},"a":1}}' for n in (3, 4, 5)], 5)
    time.sleep(AFTER_SHORT * 4)
    assert store.numbered_since(channel, 0) == ([], 0)
    assert store.publish_numbered(channel, '{"a":1}', 3, SHORT) == 1  # numbering starts again
