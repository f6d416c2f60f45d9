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
import base64
import binascii
import functools
import logging
import re
import signal
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AnyStr

from aiosmtpd.smtp import MISSING, SMTP, AuthResult, Envelope, LoginPassword, Session, syntax

from burnbox import metrics
from burnbox.gc_tuning import tune_collector
from burnbox.patches.aiosmtpd import Command, PatchedSMTP
from burnbox.settings import Settings
from mailin.committer import Committer
from mailin.handler import IngestHandler
from mailin.store_process import StoreProcess
from models.runtime import Runtime

log = logging.getLogger(__name__)


# What `_keep_presented` answers aiosmtpd: the credentials are to be checked (by
# `BurnboxSMTP._checked`, off the loop), never a verdict.
_TO_CHECK = AuthResult(success=False, handled=True)

# What no SMTP command argument holds (RFC 5321 has none of them in its syntax, even quoted):
# NUL and the other control characters but tab, and surrogates, which stand for bytes that are
# not UTF-8 (aiosmtpd decodes arguments with surrogateescape). Checked for every command
# before it runs, so a HELO name, a MAIL FROM or RCPT TO path, AUTH's arguments or a parameter
# never carries one into a look-up or a stored row: on PostgreSQL a NUL in the HELO name or
# the sender failed the message's commit and a NUL in a recipient its look-up, each answered
# `451` with a traceback, and the sender retried an argument that can never be taken.
_REFUSED_IN_COMMANDS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
BAD_ARGUMENT = ("501 5.5.4 Syntax error in parameters or arguments: a control character or "
                "bytes that are not UTF-8")

# Bytes a session's reader holds before the socket waits (asyncio's own default); a command line
# up to this long is read whole before it is refused as too long.
READ_BUFFER_LIMIT = 64 * 1024


class BurnboxSMTP(PatchedSMTP):
    """aiosmtpd's SMTP protocol (as `PatchedSMTP` patches it) with a per-server connection
    cap, a connection lifetime, enhanced status codes on the size refusals aiosmtpd words
    itself, command arguments with a control character refused (`BAD_ARGUMENT`), AUTH checked
    off the loop, and message data read in blocks rather than line by line (`smtp_DATA`).
    Each connection gets a copy of one configured session (`fresh`)."""

    def __init__(self, *args: Any, limiter: ConnectionLimiter, lifetime: float,
                 **kwargs: Any) -> None:
        # `smtp_DATA` checks the lines of the data against the line limit itself
        # (`_kept_lines`), so the reader's buffer need not be that small.
        super().__init__(*args, reader_limit=READ_BUFFER_LIMIT, authenticator=_keep_presented,
                         **kwargs)
        self._limiter = limiter
        self._counted = False
        self._lifetime = lifetime
        self._lifetime_handle: asyncio.TimerHandle | None = None
        self.presented = LoginPassword(b"", b"")  # the last AUTH's credentials, to be checked
        too_big = f"552 5.3.4 Message size exceeds the limit of {self.data_size_limit} bytes"
        self._replies = {"552 Error: message size exceeds fixed maximum message size": too_big,
                         "552 Error: Too much mail data": too_big}

    def guarded(self, command: Command) -> Command:
        """`command`, refusing an argument with a control character (`_checking_argument`)."""
        return _checking_argument(self, command)

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

    def _lifetime_over(self) -> None:
        if self.transport is not None:
            self.transport.write(b"421 4.4.2 Connection time limit exceeded\r\n")  # type: ignore[attr-defined]
            self.transport.close()

    # AUTH: aiosmtpd reads PLAIN and LOGIN itself, then asks a synchronous authenticator, which
    # would run on the event loop; checking a login reads the key-value store and maybe the
    # database, which nothing on the loop may wait for. So the authenticator only keeps the
    # username and secret (`_keep_presented`), and the mechanisms await the handler's check of
    # them.
    async def auth_PLAIN(self, _: SMTP, args: list[str]) -> AuthResult:
        """aiosmtpd's PLAIN, the credentials checked by the handler (`check_login`)."""
        return await self._checked(await super().auth_PLAIN(_, args))

    async def auth_LOGIN(self, _: SMTP, args: list[str]) -> AuthResult:
        """aiosmtpd's LOGIN, the credentials checked by the handler (`check_login`)."""
        return await self._checked(await super().auth_LOGIN(_, args))

    async def challenge_auth(self, challenge: str | bytes, encode_to_b64: bool = True,
                             log_client_response: bool = False) -> Any:
        """aiosmtpd's challenge (a `334` line, then the client's response, decoded), except
        for a response line longer than the reader's buffer (`READ_BUFFER_LIMIT`): aiosmtpd's
        readline raised, which answered `451` with a traceback, did not count as a failed
        login (so the lockout never stopped a client sending such lines) and could leave the
        rest of the line to be read as commands. Here it is read to its end and dropped, and
        the handler counts it as a failed login and answers it (`500 5.5.6`, RFC 4954, or the
        lockout's 454). MISSING when the exchange ends without a response to check; the
        client's response is never logged."""
        challenge = challenge.encode() if isinstance(challenge, str) else challenge
        await self.push(b"334 " + (base64.b64encode(challenge) if encode_to_b64 else challenge))
        line = await self._auth_line()
        if line is None:
            await self.push(await self.event_handler.refuse_long_auth_line(self))
            return MISSING
        blob = line.strip()
        if blob == b"*":  # RFC 4954 4: the client cancels the exchange
            await self.push("501 5.7.0 Auth aborted")
            return MISSING
        try:
            return base64.b64decode(blob, validate=True)
        except binascii.Error:
            await self.push("501 5.5.2 Can't decode base64")
            return MISSING

    async def _auth_line(self) -> bytes | None:
        """The client's next line; None when it is longer than the reader's buffer (read to
        its end, or to the end of the connection, and dropped)."""
        reader = self.connection_reader
        try:
            return await reader.readuntil()
        except asyncio.IncompleteReadError as ended:  # the client went away mid-line
            return ended.partial
        except asyncio.LimitOverrunError as overrun:
            consumed = overrun.consumed
        while True:
            await reader.readexactly(consumed)
            try:
                await reader.readuntil()
                return None
            except asyncio.IncompleteReadError:
                return None
            except asyncio.LimitOverrunError as overrun:
                consumed = overrun.consumed

    async def _checked(self, result: AuthResult) -> AuthResult:
        if result is not _TO_CHECK:  # malformed or cancelled: aiosmtpd has answered
            return result
        presented, self.presented = self.presented, LoginPassword(b"", b"")
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
        if self.decodes_data:
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
            self.close_connection()
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
            status = await self.call_data_hook()
        self.end_data()
        await self.push("250 OK" if status is MISSING else status)

    async def _read_data(self) -> bytes | None:
        """The raw data up to the lone dot that ends it (the dot's line not included), or None
        when it is over `data_size_limit` (read to the end all the same, keeping none of it:
        that is answered 552 whatever else is wrong with it).

        The lone dot's line ends the data where a line starts: ".\r\n" at the very start,
        "\r\n.\r\n" after it. Only a data starting with a dot or a CR can end at its start
        or in its first bytes, so the first byte is read alone: after any other (every real
        message starts with a header field's name), the whole "\r\n.\r\n" is searched for
        in the reader's buffer, one search for all the lines. Searching for ".\r\n" instead
        stopped at every line ending a sentence: 26 more reads of the buffer for a 2 KB
        message of prose, and mailin spent 8 % more CPU per message. A block cut at the
        reader's limit never ends inside a possible "\r\n.\r\n" (asyncio leaves the last
        four bytes in the buffer), so the search sees every end whole."""
        reader = self.connection_reader
        first = await reader.readexactly(1)
        if first in (b".", b"\r"):
            return await self._read_data_by_lines(first)
        limit = self.data_size_limit
        data = bytearray(first)
        size = 1  # of the data, kept or not
        while True:
            try:
                block = await reader.readuntil(b"\r\n.\r\n")
            except asyncio.LimitOverrunError as overrun:  # longer than the reader's limit
                block, ended = await reader.readexactly(overrun.consumed), False
            else:
                block, ended = block[:-3], True  # the CRLF before the dot is the data's
            size += len(block)
            if limit and size > limit:
                data.clear()
            else:
                data += block
            if ended:
                return None if limit and size > limit else bytes(data)

    async def _read_data_by_lines(self, start: bytes) -> bytes | None:
        """`_read_data` for a data whose first byte, `start`, was a dot or a CR: a line at a
        time, until what was read ends as the data does."""
        limit = self.data_size_limit
        reader = self.connection_reader
        data = bytearray(start)
        size = len(start)
        while not (data == b".\r\n" if size == 3 else data.endswith(b"\r\n.\r\n")):
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as overrun:
                line = await reader.readexactly(overrun.consumed)
            size += len(line)
            data += line
            if limit and size > limit:
                del data[:-5]  # only what the end's check needs
        if limit and size > limit:
            return None
        return bytes(data[:-3])

    async def push(self, status: AnyStr) -> None:
        """Send a reply, with the enhanced status code on the replies aiosmtpd words itself."""
        if isinstance(status, str):
            status = self._replies.get(status, status)
        await super().push(status)


def _keep_presented(server: SMTP, session: Session, envelope: Envelope, mechanism: str,
                    auth_data: Any) -> AuthResult:
    """aiosmtpd's authenticator: keep the credentials on `server` for `BurnboxSMTP._checked`
    to check, and say so (`_TO_CHECK`)."""
    assert isinstance(server, BurnboxSMTP)
    server.presented = auth_data
    return _TO_CHECK


def _checking_argument(session: SMTP, command: Command) -> Command:
    """`command` (a bound `smtp_*` method) answering `BAD_ARGUMENT` instead when its argument
    holds a character no command may carry (`_REFUSED_IN_COMMANDS`)."""

    @functools.wraps(command)
    async def checked(arg: str | None) -> None:
        if arg is not None and _REFUSED_IN_COMMANDS.search(arg) is not None:
            await session.push(BAD_ARGUMENT)
            return
        await command(arg)

    return checked


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

