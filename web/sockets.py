"""WebSockets in a web process: the one subscriber that fans published messages out to the
process's sockets, the checks made before the upgrade, and the loop that serves one socket.

The upgrade itself is flask-sock's engine, simple-websocket, used directly: flask-sock's route
decorator accepts the upgrade before the view runs, and every refusal (bad origin, bad ticket,
forbidden stream, too many sockets) must be an ordinary HTTP answer given before it. It works
under gunicorn's gevent workers (one greenlet per socket) and Werkzeug's threaded server
(`burnbox serve`, one thread per socket) alike.

Each socket gets a bounded queue filled by the process's single subscriber (`Hub`); a client
that cannot keep up is closed (1013, try again later) instead of growing memory. A second small
thread per socket reads what the client sends: a text message `{"type": "ping"}` is answered with
`{"type": "pong", "data": {}}` (browsers cannot send protocol pings), and the end of the
connection wakes the loop at once. The server also sends protocol pings every
`websockets.ping_interval` and drops a client that did not answer the previous one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, request
from simple_websocket import ConnectionClosed, Server

from burnbox import metrics
from burnbox.kv import KeyValueStore, StoreUnavailable, Subscription
from burnbox.settings import Settings
from models.delivery.realtime import (
    CHANNELS,
    RENEW_EVERY,
    KeptStream,
    encode_message,
    number_of,
)
from models.errors import Forbidden

log = logging.getLogger(__name__)

EXTENSION = "burnbox.sockets"
QUEUE_SIZE = 256
MAX_CLIENT_MESSAGE = 4096
TRY_AGAIN_LATER = 1013
PONG = encode_message("pong", {})
REPLAY_INCOMPLETE = encode_message("replay.incomplete", {})
_CLOSED = object()
# Queued to every listener when its process subscribed again after losing its subscription:
# what was published in between reached none of them.
_RESUBSCRIBED = object()


class Listener:
    """The messages waiting for one socket."""

    def __init__(self, channels: Iterable[str]) -> None:
        self.channels = tuple(channels)
        self.overflowed = False
        self._queue: queue.Queue[object] = queue.Queue(maxsize=QUEUE_SIZE)

    def offer(self, message: str) -> None:
        """Queue a message; a full queue marks the socket as too slow (it is then closed)."""
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self.overflowed = True

    def closed(self) -> None:
        """Wake the socket's loop: the client has gone."""
        try:
            self._queue.put_nowait(_CLOSED)
        except queue.Full:
            self.overflowed = True  # the loop notices at its next message and ends

    def resubscribed(self) -> None:
        """Wake the listener: its process has just subscribed (again, or for the first time
        after the listener gave up waiting for it), and messages published before that never
        reached it."""
        try:
            self._queue.put_nowait(_RESUBSCRIBED)
        except queue.Full:
            self.overflowed = True

    def next(self, timeout: float) -> object | None:
        """The next message, `_CLOSED`, `_RESUBSCRIBED`, or None after `timeout` seconds."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None


class Hub:
    """The process's one subscription to every realtime channel, fanned out to local sockets.

    Started by the first socket of the process (never at import or app creation) and kept
    running; when the store is unreachable it subscribes again every second, and once it has,
    tells every listener (`Listener.resubscribed`): a waiting request then looks again, a
    socket of a numbered stream sends what was kept meanwhile."""

    def __init__(self, store: KeyValueStore) -> None:
        self.store = store
        self._listeners: dict[str, set[Listener]] = defaultdict(set)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, listener: Listener) -> None:
        """Deliver the messages of the listener's channels to it from now on."""
        self._ensure_running()
        with self._lock:
            for channel in listener.channels:
                self._listeners[channel].add(listener)

    def remove(self, listener: Listener) -> None:
        """Stop delivering to the listener."""
        with self._lock:
            for channel in listener.channels:
                self._listeners[channel].discard(listener)
                if not self._listeners[channel]:
                    del self._listeners[channel]

    def _ensure_running(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="realtime-hub",
                                                daemon=True)
                self._thread.start()
        # A socket accepted before the subscription is confirmed could miss a message
        # published right after its handshake; wait for it (bounded, in case the store is down).
        self._ready.wait(timeout=5)

    def stop(self) -> None:
        """End the subscriber (tests; a web process simply exits)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                subscription = self.store.subscribe(CHANNELS)
            except StoreUnavailable as exc:
                log.warning("realtime subscribe failed; retrying", extra={"reason": str(exc)})
                self._stop.wait(1)
                continue
            # Every time, the first included: listeners that gave up waiting for a first
            # subscription (the store refused it) missed what was published until now.
            self._tell_subscribed()
            self._ready.set()
            try:
                self._pump(subscription)
            except StoreUnavailable as exc:
                log.warning("realtime subscription lost; resubscribing",
                            extra={"reason": str(exc)})
            finally:
                subscription.close()

    def _tell_subscribed(self) -> None:
        with self._lock:
            listeners = set().union(*self._listeners.values())
        if listeners:
            log.info("realtime subscription made; listeners catch up",
                     extra={"listeners": len(listeners)})
        for listener in listeners:
            listener.resubscribed()

    def _pump(self, subscription: Subscription) -> None:
        while not self._stop.is_set():
            item = subscription.get(timeout=1.0)
            if item is None:
                continue
            channel, message = item
            with self._lock:
                listeners = list(self._listeners.get(channel, ()))
            for listener in listeners:
                listener.offer(message)


def hub() -> Hub:
    """The current app's hub."""
    return current_app.extensions[EXTENSION]


def init_app(app: Flask, store: KeyValueStore) -> None:
    """Give the app its hub (not started until the first socket)."""
    app.extensions[EXTENSION] = Hub(store)


# --- checks before the upgrade --------------------------------------------------------------

def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_origin(settings: Settings) -> None:
    """Raise Forbidden when a browser connects from a page of another origin than this service
    (`http.public_url` or the Host asked for) or those in `http.allowed_origins` ("*": any).
    Clients that send no Origin (not browsers) are not concerned: they carry no cookies and
    authenticate with a ticket."""
    origin = request.headers.get("Origin")
    if not origin:
        return
    allowed = {_origin(value) for value in settings.http.allowed_origins if value != "*"}
    allowed.add(_origin(settings.http.url))
    if "*" in settings.http.allowed_origins or origin.lower() in allowed:
        return
    if urlsplit(origin).netloc.lower() == request.host.lower():
        return
    raise Forbidden("this origin may not open WebSockets here")


# --- serving one socket ---------------------------------------------------------------------

class _Upgraded(Response):
    """The response of a view that took the connection over (as flask-sock answers): the
    server must not write anything more on it."""

    def __init__(self, ws: Server) -> None:
        super().__init__()
        self._ws = ws

    def __call__(self, environ: Any, start_response: Any) -> Any:
        if self._ws.mode == "gunicorn":
            # gunicorn's worker treats StopIteration from the app as "the socket is handled".
            raise StopIteration()
        if self._ws.mode == "werkzeug":
            # Returning a response here had werkzeug's server write its status line onto the
            # socket after the WebSocket's closing handshake, and the browser logged "Invalid
            # frame header" each time a page left a stream. A dropped connection is the one
            # outcome that server writes nothing for.
            raise ConnectionAbortedError("the WebSocket took the connection over")
        return []


def _read_client(ws: Server, listener: Listener) -> None:
    with contextlib.suppress(ConnectionClosed):  # the normal end of every socket
        try:
            while True:
                text = ws.receive()
                if isinstance(text, str) and _is_ping(text):
                    listener.offer(PONG)
        finally:
            listener.closed()


def _is_ping(text: str) -> bool:
    try:
        return json.loads(text).get("type") == "ping"
    except (ValueError, AttributeError):
        return False


# What a stream's `shape` makes of one published message: the text to send, several texts
# (sent in order), or None to send nothing.
Shaped = str | list[str] | None


def _as_published(message: str) -> Shaped:
    return message


def serve(settings: Settings, stream: str, channels: Iterable[str], *, first: Iterable[str] = (),
          kept: KeptStream | None = None, since: int | None = None,
          keep_alive: Callable[[], bool] = lambda: True,
          shape: Callable[[str], Shaped] = _as_published) -> Response:
    """Accept the upgrade and stream the messages of `channels` until the client goes; the
    socket counts in burnbox_websockets_open under `stream` (a fixed name per route).

    `first` are messages sent right after the handshake. `kept` is the stream's numbered
    channel, when it has one: a socket reopened with `since` is sent the kept messages it
    missed after `first`, and the live messages they already hold are then skipped; and
    whenever the process subscribes again after losing its subscription, the socket sends the
    kept messages after the last one it sent (or after where the stream stood when it opened).
    `keep_alive` runs every `RENEW_EVERY` (renew the socket's slot, presence...) and ends the
    socket when it returns False. `shape` turns each message of the channels (live or kept)
    into the text sent, several texts, or None to send nothing (`Shaped`): a face speaking
    another protocol's messages (the compatible faces' WebSockets); the messages go as
    published without it. Call only
    once every check passed and the request's database session is closed: the loop may last
    hours."""
    # Listen before the handshake completes: a message published as soon as the client sees
    # the upgrade must already find the socket's queue.
    listener = Listener(channels)
    subscriber = hub()
    subscriber.add(listener)
    try:
        # Read what was kept only once listening: a message published in between is then in
        # both, and skipped once live (no gap); read before, it would be in neither.
        place = _Place.opened(kept, since)
        sent_first = [*first, *(shape(kept_message) for kept_message in
                                (place.catch_up() if since is not None else []))]
        ws = Server.accept(request.environ, ping_interval=settings.websockets.ping_interval
                           .total_seconds() or None, max_message_size=MAX_CLIENT_MESSAGE)
    except BaseException:
        subscriber.remove(listener)
        raise
    reader = threading.Thread(target=_read_client, args=(ws, listener), daemon=True,
                              name="ws-reader")
    reader.start()
    open_sockets = metrics.WEBSOCKETS_OPEN.labels(stream)
    open_sockets.inc()
    try:
        for message in sent_first:
            _send(ws, message)
        _pump(ws, listener, keep_alive, place, shape)
    except ConnectionClosed:
        pass
    finally:
        open_sockets.dec()
        subscriber.remove(listener)
        if ws.connected:
            with contextlib.suppress(ConnectionClosed):  # it closed meanwhile
                ws.close()
        # A close we sent does not wake a reader blocked in receive(); this does.
        ws.event.set()
    return _Upgraded(ws)


@dataclass
class _Place:
    """Where a socket stands in its stream's numbered messages: the last number it sent (at
    first, where the stream stood when it opened), and the number up to which live messages
    were already sent from the kept ones (a channel's numbers arrive in order, so the first
    higher one ends the skipping). Neither applies to a stream without numbers."""

    kept: KeptStream | None
    sent_through: int | None = None
    sent_text: str | None = None  # message `sent_through` as sent, when known
    skip_through: int | None = None

    @classmethod
    def opened(cls, kept: KeptStream | None, since: int | None) -> _Place:
        """The place of a socket opening now: after `since` when given, else where the stream
        stands. Raise StoreUnavailable when the store is down."""
        if kept is None:
            return cls(None)
        if since is not None:
            return cls(kept, sent_through=since)
        last, text = kept.mark()
        return cls(kept, sent_through=last, sent_text=text)

    def to_send(self, message: str) -> bool:
        """Whether a live message is still to be sent (noting its number if so)."""
        number = number_of(message)
        if number is None:
            return True
        if self.skip_through is not None:
            if number <= self.skip_through:
                return False
            self.skip_through = None
        self.sent_through, self.sent_text = number, message
        return True

    def catch_up(self) -> list[str]:
        """The kept messages after the last one sent, preceded by `replay.incomplete` when
        some are no longer kept; the live ones they hold will be skipped. Raise
        StoreUnavailable when the store is down."""
        if self.kept is None or self.sent_through is None:  # a stream without numbers
            return []
        replay = self.kept.after(self.sent_through, self.sent_text)
        self.sent_through = self.skip_through = replay.last
        self.sent_text = replay.last_text
        return replay.messages if replay.complete else [REPLAY_INCOMPLETE, *replay.messages]


def _send(ws: Server, shaped: Shaped) -> None:
    for text in [shaped] if isinstance(shaped, str) else shaped or ():
        ws.send(text)


def _pump(ws: Server, listener: Listener, keep_alive: Callable[[], bool], place: _Place,
          shape: Callable[[str], Shaped]) -> None:
    """Send the listener's messages that `place` has not sent yet, and on `_RESUBSCRIBED`
    those published while the process had no subscription, each as `shape` makes it."""
    renew_at = time.monotonic() + RENEW_EVERY.total_seconds()
    while ws.connected:
        item = listener.next(timeout=max(renew_at - time.monotonic(), 0.0))
        if item is _CLOSED:
            return
        if listener.overflowed:
            ws.close(TRY_AGAIN_LATER, "too slow: messages were dropped")
            return
        if item is _RESUBSCRIBED:
            try:
                missed = place.catch_up()
            except StoreUnavailable:
                # Lost again at once: the client reconnects with `since` instead.
                ws.close(TRY_AGAIN_LATER, "the stream could not be read")
                return
            for message in missed:
                _send(ws, shape(message))
        elif isinstance(item, str) and place.to_send(item):
            _send(ws, shape(item))
        if time.monotonic() >= renew_at:
            renew_at = time.monotonic() + RENEW_EVERY.total_seconds()
            if not keep_alive():
                ws.close(TRY_AGAIN_LATER, "connection limit")
                return
