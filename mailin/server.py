"""The SMTP ingest server: aiosmtpd on plain asyncio (no gevent), one per `mailin` process, or a
thread of its own in the embedded mode.

The EHLO reply advertises SIZE, 8BITMIME, PIPELINING, ENHANCEDSTATUSCODES and, when
`smtp.tls_cert` and `smtp.tls_key` are set, STARTTLS; AUTH PLAIN LOGIN (capture credentials,
mailin/logins.py) after STARTTLS, or on a plain connection as well when
`Settings.smtp_auth_without_tls`. Limits: connections above
`smtp.max_connections` are answered 421 and closed; a client that sends no command for
`smtp.timeout` is dropped (the per-command timeout, which also bounds one DATA transfer); a
connection is closed with 421 after `smtp.connection_timeout` whatever it is doing; a message
above `smtp.max_message_bytes` is refused with `552 5.3.4`, up front when the client declares
SIZE, else once the data is in. Lines of the data may end with a bare LF (stored as CRLF);
the data itself ends only at <CRLF>.<CRLF>. Recipient checks and durable storing live in
`IngestHandler` (mailin/handler.py), group commit in `Committer` (mailin/committer.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AnyStr

from aiosmtpd.smtp import MISSING, SMTP, AuthResult, LoginPassword, _AuthMechAttr, syntax

from burnbox import metrics
from burnbox.gc_tuning import tune_collector
from burnbox.settings import Settings
from mailin.committer import Committer
from mailin.handler import IngestHandler
from mailin.store_process import StoreProcess
from models.runtime import Runtime

log = logging.getLogger(__name__)


_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
# `<local@domain>` with dot-atoms on both sides, then nothing or a space and the parameters:
# the path nearly every sender writes in MAIL and RCPT.
_PLAIN_PATH = re.compile(
    rf"<({_ATOM}(?:\.{_ATOM})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)>(?: +([^ (].*))?")


# What `BurnboxSMTP._authenticate` answers aiosmtpd: the credentials are to be checked (by
# `_checked`, off the loop), never a verdict.
_TO_CHECK = AuthResult(success=False, handled=True)

# Bytes a session's reader holds before the socket waits (asyncio's own default); a command line
# up to this long is read whole before it is refused as too long.
READ_BUFFER_LIMIT = 64 * 1024


class BurnboxSMTP(SMTP):
    """aiosmtpd's SMTP protocol with a per-server connection cap, a connection lifetime,
    enhanced status codes on the size refusals aiosmtpd words itself, and message data read in
    blocks rather than line by line (`smtp_DATA`)."""

    def __init__(self, *args: Any, limiter: ConnectionLimiter, lifetime: float,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # aiosmtpd gives its StreamReader the line limit (1 001 bytes) as its buffer limit, and
        # asyncio stops reading the socket whenever more than twice that is buffered: every
        # message over 2 KB paused and resumed the socket's reader (two epoll changes and a
        # turn of the loop) once per chunk received, some 4 % of the process's CPU. No limit
        # needs it: aiosmtpd checks command lines against their own limits once read, and
        # `smtp_DATA` checks the lines of the data itself (`_kept_lines`).
        self._stream_reader._limit = READ_BUFFER_LIMIT  # type: ignore[union-attr]
        self._limiter = limiter
        self._counted = False
        self._lifetime = lifetime
        self._lifetime_handle: asyncio.TimerHandle | None = None
        self._idle_deadline = 0.0  # loop time after which a session without a command is dropped
        too_big = f"552 5.3.4 Message size exceeds the limit of {self.data_size_limit} bytes"
        self._replies = {"552 Error: message size exceeds fixed maximum message size": too_big,
                         "552 Error: Too much mail data": too_big}

    def fresh(self) -> BurnboxSMTP:
        """A new session configured as this one, for the next connection, without running
        aiosmtpd's constructor again: it looks the class and the handler over with `inspect`
        and `dir` each time (some 180 µs per connection, a fifth of what a sender that opens a
        connection per message costs the process). The copy shares the configuration and the
        tables of hooks and commands (its own commands bound to it); what one connection
        changes (the stream reader, the flow control, the futures) is made anew, as
        `asyncio.StreamReaderProtocol`'s constructor makes it. Call it on a session that has
        never been connected."""
        session = object.__new__(type(self))
        session.__dict__.update(self.__dict__)
        asyncio.StreamReaderProtocol.__init__(
            session, asyncio.StreamReader(limit=READ_BUFFER_LIMIT, loop=self.loop),
            client_connected_cb=session._cb_client_connected, loop=self.loop)
        session._smtp_methods = {name: _bound_to(session, self, method)
                                 for name, method in self._smtp_methods.items()}
        session._auth_methods = {
            name: _AuthMechAttr(_bound_to(session, self, mechanism.method), mechanism.is_builtin)
            for name, mechanism in self._auth_methods.items()}
        return session

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._limiter.acquire():
            # Counted before the answer leaves: whoever reads the 421 finds it counted.
            metrics.SMTP_CONNECTIONS_REFUSED.inc()
            # Refuse before the greeting, with a transient code so the sender retries later.
            transport.write(b"421 4.3.2 Too many connections, try again later\r\n")  # type: ignore[attr-defined]
            transport.close()
            return
        self._counted = True
        metrics.SMTP_SESSIONS_OPEN.inc()
        super().connection_made(transport)
        self._lifetime_handle = self.loop.call_later(self._lifetime, self._lifetime_over)

    def connection_lost(self, error: Exception | None) -> None:
        if self._counted:
            self._limiter.release()
            metrics.SMTP_SESSIONS_OPEN.dec()
            self._counted = False
            if self._lifetime_handle is not None:
                self._lifetime_handle.cancel()
            super().connection_lost(error)

    # aiosmtpd re-arms its idle timer on every command: a cancelled TimerHandle and a new one
    # on the loop's heap each time, 3 % of the SMTP process's CPU under load. Here a command
    # only moves the deadline; the one timer, when it fires early, sleeps on to the deadline.
    def _reset_timeout(self, duration: float | None = None) -> None:
        delay = duration or self._timeout_duration
        self._idle_deadline = self.loop.time() + delay
        handle = self._timeout_handle
        if handle is None or handle.cancelled() or handle.when() > self._idle_deadline:
            if handle is not None:
                handle.cancel()
            self._timeout_handle = self.loop.call_at(self._idle_deadline, self._timeout_cb)

    def _timeout_cb(self) -> None:
        if self.loop.time() < self._idle_deadline:  # a command came since the timer was set
            self._timeout_handle = self.loop.call_at(self._idle_deadline, self._timeout_cb)
            return
        super()._timeout_cb()

    def _lifetime_over(self) -> None:
        if self.transport is not None:
            self.transport.write(b"421 4.4.2 Connection time limit exceeded\r\n")  # type: ignore[attr-defined]
            self.transport.close()

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        """The address and parameters of a MAIL or RCPT argument. A plain `<local@domain>`
        path is read with one regular expression; anything else goes to aiosmtpd's reading
        (email's full RFC 5322 parser, which costs more than the rest of the command and gives
        the same answer for plain paths). (None, None) when the path is malformed."""
        match = _PLAIN_PATH.fullmatch(arg)
        if match is None:
            try:
                return super()._getaddr(arg)
            except (IndexError, AttributeError):
                # email's parser crashes on some malformed paths ("a@", "a@["): a syntax
                # error (553 or 501), not a failure of ours (451).
                return None, None
        address = match.group(1)
        if self.local_part_limit and len(address.rpartition("@")[0]) > self.local_part_limit:
            return None, None
        return address, match.group(2) or ""

    # AUTH: aiosmtpd reads PLAIN and LOGIN itself, then asks a synchronous authenticator, which
    # would run on the event loop; checking a login reads the key-value store and maybe the
    # database, which nothing on the loop may wait for. So the synchronous step only keeps the
    # username and secret, and the mechanisms await the handler's check of them.
    async def auth_PLAIN(self, _: SMTP, args: list[str]) -> AuthResult:
        """aiosmtpd's PLAIN, the credentials checked by the handler (`check_login`)."""
        return await self._checked(await super().auth_PLAIN(_, args))

    async def auth_LOGIN(self, _: SMTP, args: list[str]) -> AuthResult:
        """aiosmtpd's LOGIN, the credentials checked by the handler (`check_login`)."""
        return await self._checked(await super().auth_LOGIN(_, args))

    def _authenticate(self, mechanism: str, auth_data: Any) -> AuthResult:
        self._presented: LoginPassword = auth_data
        return _TO_CHECK

    async def _checked(self, result: AuthResult) -> AuthResult:
        if result is not _TO_CHECK:  # malformed or cancelled: aiosmtpd has answered
            return result
        presented, self._presented = self._presented, LoginPassword(b"", b"")
        answer: AuthResult = await self.event_handler.check_login(self, presented)
        return answer

    @syntax("DATA")
    async def smtp_DATA(self, arg: str) -> None:
        """aiosmtpd's DATA, with the message read in blocks: the same replies, the same
        content and the same limits (the size limit, answered 552 once the data is in; a line
        over `line_length_limit`, answered 500), at a fraction of the cost of aiosmtpd's
        line-by-line loop (measured: a 2 KB message is some 30 lines, and each line is an await
        and several copies). Only for undecoded data, as mailin takes it.

        Unlike aiosmtpd, a bare LF ends a line inside the data, as in Postfix's default
        (`smtpd_forbid_bare_newline = normalize`): the message is kept with CRLF line ends,
        the size and line limits apply to it as kept, and every line loses its stuffed dot.
        The data still ends only at <CRLF>.<CRLF> (`_read_data`), so no bare LF can end it
        early and smuggle what follows in as commands."""
        if self._decode_data:
            await super().smtp_DATA(arg)
            return
        if await self.check_helo_needed() or await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 Error: need RCPT command")
            return
        if arg:
            await self.push("501 Syntax: DATA")
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        try:
            data = await self._read_data()
        except asyncio.CancelledError:
            log.info("connection lost during DATA")
            self._writer.close()
            raise
        too_long = False
        if data is not None:
            data, too_long = _kept_lines(data, self.line_length_limit - 2)
            if self.data_size_limit and len(data) > self.data_size_limit:
                data = None  # over the limit only once its bare LFs were made CRLFs
        if data is None:
            status = "552 Error: Too much mail data"
            metrics.SMTP_RECIPIENTS_REFUSED.labels("size").inc(len(self.envelope.rcpt_tos))
        elif too_long:
            status = "500 Line too long (see RFC5321 4.5.3.1.6)"
        else:
            # Undo the dot-stuffing (RFC 5321 4.5.2): a line's leading dot goes.
            content = data[1:] if data.startswith(b".") else data
            content = content.replace(b"\r\n.", b"\r\n")
            self.envelope.content = self.envelope.original_content = content
            status = await self._call_handler_hook("DATA")
        self._set_post_data_state()
        await self.push("250 OK" if status is MISSING else status)

    async def _read_data(self) -> bytes | None:
        """The raw data up to the lone dot that ends it (the dot's line not included), or None
        when it is over `data_size_limit` (read to the end all the same, keeping none of it:
        that is answered 552 whatever else is wrong with it).

        The lone dot's line ends the data where a line starts: ".\r\n" at the start of the
        data, "\r\n.\r\n" after it. A search for ".\r\n" stops at every line that ends a
        sentence (every line of some messages), so where the bytes already read show the next
        line is not the lone dot, the search is for the whole "\r\n.\r\n", which reads up to
        the end at once. The reader's buffer is looked at for that (asyncio's StreamReader has
        no public peek). Elsewhere (fewer than three bytes buffered, or after a block longer
        than the reader's limit, which may end inside a line end) ".\r\n" is searched for and
        what precedes it checked, which is right wherever it starts."""
        limit = self.data_size_limit
        reader = self._reader
        data = bytearray()
        size = 0  # of the data, kept or not
        while True:
            line_start = size == 0 or data[-2:] == b"\r\n"
            buffered = reader._buffer  # type: ignore[attr-defined]
            if line_start and buffered[:3] == b".\r\n":
                await reader.readexactly(3)
                break
            whole = line_start and len(buffered) >= 3
            try:
                block = await reader.readuntil(b"\r\n.\r\n" if whole else b".\r\n")
            except asyncio.LimitOverrunError as overrun:  # longer than the reader's limit
                block = await reader.readexactly(overrun.consumed)
            else:
                before = block[-5:-3] if len(block) >= 5 else (data[-2:] + block[:-3])[-2:]
                if whole or before == b"\r\n" or (size == 0 and len(block) == 3):
                    size += len(block) - 3
                    data += block[:-3]
                    break
            size += len(block)
            data += block
            if limit and size > limit:
                del data[:-2]  # only what the next block's checks need
        return None if limit and size > limit else bytes(data)

    async def push(self, status: AnyStr) -> None:
        """Send a reply, with the enhanced status code on the replies aiosmtpd words itself."""
        if isinstance(status, str):
            status = self._replies.get(status, status)
        await super().push(status)


def _bound_to(session: SMTP, template: SMTP, method: Any) -> Any:
    """`method` bound to `session` when it is one of `template`'s own; as it is otherwise (a
    handler's)."""
    if getattr(method, "__self__", None) is template:
        return method.__func__.__get__(session)
    return method


def _kept_lines(data: bytes, line_limit: int) -> tuple[bytes, bool]:
    """`data` as it is kept, every bare LF made a CRLF (a CR alone is left as it is), and
    whether one of its lines is longer than `line_limit` bytes (its CRLF not counted).

    Both answers come from one split on CRLF when the data is long enough to hold such a
    line: the pieces number one more than the CRLFs, so the data holds a bare LF exactly when
    it holds more LFs than that. (Scanning for CRLFs on top of the split cost the SMTP process
    some 4 % of its CPU per 50 KB message.) Shorter data is only counted."""
    # Python's smtplib sends a bytes message as it is, so a message built with the default
    # policy (`msg.as_bytes()`) arrives with bare LFs, as from many scripts and test suites.
    lines = data.split(b"\r\n") if len(data) > line_limit else None
    if data.count(b"\n") != (data.count(b"\r\n") if lines is None else len(lines) - 1):
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        lines = data.split(b"\r\n") if len(data) > line_limit else None
    return data, lines is not None and max(map(len, lines)) > line_limit


class ConnectionLimiter:
    """Counts open SMTP connections of one server (touched only from its event loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def acquire(self) -> bool:
        """Take a slot; False when all are in use."""
        if self.open >= self.limit:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        """Give a slot back."""
        self.open -= 1


def tls_context(settings: Settings) -> ssl.SSLContext | None:
    """A server TLS context for STARTTLS when a certificate and key are configured."""
    if not (settings.smtp.tls_cert and settings.smtp.tls_key):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.smtp.tls_cert, settings.smtp.tls_key)
    return context


@dataclass
class RunningServer:
    """A running SMTP server: the listening socket and what stores its mail (a committing
    thread, or a store process)."""

    server: asyncio.Server
    committer: Committer | StoreProcess

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) it listens on."""
        host, port = self.server.sockets[0].getsockname()[:2]
        return host, port

    async def close(self) -> None:
        """Stop accepting connections, then store what is queued and stop the committer."""
        self.server.close()
        await self.server.wait_closed()
        await self.committer.close()


async def start_server(runtime: Runtime, host: str | None = None, port: int | None = None,
                       sock: socket.socket | None = None, store_process: bool = False
                       ) -> RunningServer:
    """Listen for SMTP on host:port (default: the smtp settings), or accept on the listening
    socket `sock` when given (mailin.supervisor shares one between processes), in the running
    loop, with a committer storing accepted mail in batches of up to `smtp.commit_batch_size`
    (a thread of this process, or with `store_process` a process of its own:
    mailin.store_process); give the loop a default executor of `smtp.store_threads` threads
    for the look-ups that miss the route cache and the parsing of large messages (the loop's
    owner shuts it down: `asyncio.run` does, `MailinThread` too)."""
    settings = runtime.settings
    loop = asyncio.get_running_loop()
    threads = max(1, settings.smtp.store_threads)
    loop.set_default_executor(ThreadPoolExecutor(threads, thread_name_prefix="mailin-store"))
    committer: Committer | StoreProcess = (
        await StoreProcess(settings).start() if store_process
        else Committer.of(runtime).start())
    handler = IngestHandler(runtime, committer)
    limiter = ConnectionLimiter(settings.smtp.max_connections)
    context = tls_context(settings)
    auth_require_tls = not settings.smtp_auth_without_tls

    # aiosmtpd's constructor once per server; each connection gets a fresh copy of it.
    template = BurnboxSMTP(
        handler,
        hostname=settings.smtp.hostname,
        ident="Burnbox ESMTP",
        data_size_limit=settings.smtp.max_message_bytes,
        enable_SMTPUTF8=True,
        decode_data=False,
        tls_context=context,
        require_starttls=False,
        auth_required=False,
        auth_require_tls=auth_require_tls,
        timeout=settings.smtp.timeout.total_seconds(),
        limiter=limiter,
        lifetime=settings.smtp.connection_timeout.total_seconds(),
    )
    protocol = template.fresh

    try:
        if sock is not None:
            server = await loop.create_server(protocol, sock=sock)
        else:
            server = await loop.create_server(protocol, host or settings.smtp.host,
                                              settings.smtp.port if port is None else port)
    except BaseException:
        await committer.close()
        raise
    return RunningServer(server, committer)


def run(runtime: Runtime, sock: socket.socket | None = None) -> None:
    """Serve SMTP (on `sock` when given), storing in a store process, until SIGTERM or SIGINT,
    then stop accepting, store what is queued and close connections cleanly. Both processes
    tune their garbage collector (burnbox.gc_tuning) once set up."""

    async def main() -> None:
        running = await start_server(runtime, sock=sock, store_process=True)
        tune_collector()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("mailin listening", extra={"address": running.address})
        await stop.wait()
        await running.close()
        log.info("mailin stopped")

    asyncio.run(main())


class MailinThread(threading.Thread):
    """The SMTP server on its own event loop in a thread (embedded mode and tests)."""

    def __init__(self, runtime: Runtime, host: str | None = None, port: int | None = None) -> None:
        super().__init__(name="mailin", daemon=True)
        self._runtime, self._host, self._port = runtime, host, port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: RunningServer | None = None
        self._error: BaseException | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        assert self._server is not None
        return self._server.address

    def run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                start_server(self._runtime, self._host, self._port))
        except BaseException as exc:  # reported to start()'s caller, not swallowed
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._server.close())
        self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()

    def start_and_wait(self, timeout: float = 10.0) -> MailinThread:
        """Start the thread and return once the port is bound; re-raise a bind failure."""
        self.start()
        self._ready.wait(timeout)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        """Stop the loop, close the server and join the thread."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.join(timeout=10)

