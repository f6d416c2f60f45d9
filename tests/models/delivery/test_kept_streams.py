"""`KeptStream`, what a socket of a numbered stream reads when it opens and when its process
subscribes again: where the stream stands, what followed a message the socket had, and a
stream numbered again after its store restarted empty, told apart by the text of the socket's
last message. On the in-memory store and on a private Redis server restarted for real."""

import json
import uuid
from collections.abc import Iterator

import pytest

from burnbox.kv import KeyValueStore, MemoryStore, RedisStore, StoreUnavailable
from models.delivery import realtime as rt
from tests.processes import wait_until
from tests.redis_server import private_redis


class Restartable:
    """A store whose server can be restarted empty."""

    def __init__(self, kind: str, server=None) -> None:
        self.kind, self.server = kind, server
        self.store: KeyValueStore = MemoryStore() if server is None else RedisStore(server.url)

    def restart(self) -> None:
        if self.server is None:
            self.store = MemoryStore()  # the embedded store lives and dies with its process
            return
        self.server.stop()
        self.server.start()
        wait_until(self._answers)

    def _answers(self) -> bool:
        try:
            self.store.ping()
        except StoreUnavailable:
            return False
        return True


@pytest.fixture(params=["memory", "redis"])
def restartable(request) -> Iterator[Restartable]:
    if request.param == "memory":
        yield Restartable("memory")
        return
    with private_redis() as server:
        yield Restartable("redis", server)


def _publish(store: KeyValueStore, channel: str, *subjects: str) -> list[str]:
    """Publish one numbered message per subject; their texts as kept."""
    for subject in subjects:
        store.publish_numbered(channel, rt.encode_message("email.received", {"subject": subject}),
                               rt.REPLAY_KEEP, rt.REPLAY_TTL)
    return store.numbered_since(channel, 0)[0]


def _subjects(replay: rt.Replay) -> list[str]:
    return [json.loads(text)["data"]["subject"] for text in replay.messages]


def test_the_mark_is_the_last_number_and_its_text(restartable):
    channel = rt.inbox_channel(uuid.uuid4())
    kept = rt.KeptStream(restartable.store, channel)
    assert kept.mark() == (0, None)
    texts = _publish(restartable.store, channel, "one", "two")
    assert kept.mark() == (2, texts[1])


def test_after_a_message_the_socket_had_come_the_ones_that_followed_it(restartable):
    channel = rt.inbox_channel(uuid.uuid4())
    texts = _publish(restartable.store, channel, "one", "two", "three")
    replay = rt.KeptStream(restartable.store, channel).after(1, texts[0])
    assert (_subjects(replay), replay.last, replay.complete) == (["two", "three"], 3, True)
    nothing = rt.KeptStream(restartable.store, channel).after(3, texts[2])
    assert (nothing.messages, nothing.last, nothing.complete) == ([], 3, True)


def test_a_stream_numbered_again_past_the_socket_is_replayed_whole_as_incomplete(restartable):
    """The socket had 1-3; the store restarted empty and numbered four new messages 1-4.
    Message 3 is now another one: all four are new to the socket, and the replay says some
    were lost (what was published before the restart)."""
    channel = rt.inbox_channel(uuid.uuid4())
    seen = _publish(restartable.store, channel, "one", "two", "three")[-1]
    restartable.restart()
    _publish(restartable.store, channel, "new one", "new two", "new three", "new four")

    replay = rt.KeptStream(restartable.store, channel).after(3, seen)
    assert _subjects(replay) == ["new one", "new two", "new three", "new four"]
    assert (replay.last, replay.complete) == (4, False)
    # Without the text, number 3 looks like the same stream: only "new four" would follow.
    assert _subjects(rt.replay(restartable.store, channel, 3)) == ["new four"]


def test_a_stream_numbered_again_below_the_socket_is_replayed_whole(restartable):
    channel = rt.inbox_channel(uuid.uuid4())
    seen = _publish(restartable.store, channel, "one", "two", "three")[-1]
    restartable.restart()
    _publish(restartable.store, channel, "new one")
    replay = rt.KeptStream(restartable.store, channel).after(3, seen)
    assert (_subjects(replay), replay.last, replay.complete) == (["new one"], 1, False)


def test_a_socket_resumed_with_since_knows_that_message_and_tells_a_renumbering(restartable):
    """A socket reopened with `since=3` had message 3 from an earlier socket: the replay
    gives its text, so a renumbering after the store restarts is told apart from a gap."""
    channel = rt.inbox_channel(uuid.uuid4())
    texts = _publish(restartable.store, channel, "one", "two", "three")
    resumed = rt.replay(restartable.store, channel, 3)
    assert (resumed.messages, resumed.last, resumed.last_text) == ([], 3, texts[2])
    restartable.restart()
    _publish(restartable.store, channel, "new one", "new two", "new three", "new four")

    replay = rt.KeptStream(restartable.store, channel).after(resumed.last, resumed.last_text)
    assert _subjects(replay) == ["new one", "new two", "new three", "new four"]
    assert (replay.last, replay.complete, replay.last_text) == (4, False, replay.messages[-1])
