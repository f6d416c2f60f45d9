"""aiosmtpd's SMTP protocol past its public surface: every underscore method mailin overrides
and every underscore attribute it reads, in `PatchedSMTP`, the base of mailin's protocol
(`mailin.server.BurnboxSMTP`, which keeps to aiosmtpd's public hooks and this class's names).
Proved on aiosmtpd `PROVED_ON`; checked at import (`burnbox.patches`).

What each patch buys, as measured on 2026-12-02 against the tree without it: `bench.ingest`
on SQLite at 1, 8 and 64 connections, 2 KB and 50 KB messages, three runs, on 2 cores shared
with other work, as the SMTP process's CPU per message with the patch over without
(docs/performance.md#library-patches has the runs, the command and the noise: a comparison
that cannot differ reads a median of 0.97):

- `_getaddr`, plain paths by a regular expression: 0.71-0.90, median 0.83.
- `fresh`, sessions copied: 156 µs of CPU less per connection (a copy 38 µs, aiosmtpd's
  constructor 194 µs, in one process); the benchmark's connections carry 5 to 320 messages
  each, where it reads 0.89-1.06 (median 0.96), within the noise: it is for senders that open
  a connection per message.
- The DATA pieces (`connection_reader` and the rest) buy no speed: they are what mailin's DATA
  (a bare LF taken as a line end, the data read in blocks) needs of aiosmtpd's.

- `_reset_timeout`, one idle timer per session: 0.90-1.08, median 0.97, read as noise and
  taken out, then put back when counted (`bench.ingest_calls`, which the load of the machine
  does not move): aiosmtpd cancels a timer and puts a new one on the loop's heap at every
  command, 35 of the SMTP process's 1 350 calls for a 2 KB message (MAIL, RCPT, DATA).

The reader's 64 KiB buffer (0.87-1.07, median 0.95) stays for what it does (an AUTH line
longer than aiosmtpd's 1 001 bytes is read and checked), given through asyncio's public
constructor. The look into asyncio's reader buffer (to search for the whole end of the data
at once) is gone: mailin's DATA finds the end whole without it (`mailin.server`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from aiosmtpd.smtp import SMTP, _AuthMechAttr

from burnbox.patches import require

PROVED_ON = ">=1.4.6,<1.5"
VERSION = require("aiosmtpd", PROVED_ON)

_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
# `<local@domain>` with dot-atoms on both sides, then nothing or a space and the parameters:
# the path nearly every sender writes in MAIL and RCPT.
_PLAIN_PATH = re.compile(
    rf"<({_ATOM}(?:\.{_ATOM})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)>(?: +([^ (].*))?")

# A command of the session's table: a bound `smtp_*` method, awaited with the argument.
Command = Callable[[str | None], Any]


class PatchedSMTP(SMTP):
    """aiosmtpd's SMTP with sessions copied rather than constructed (`fresh`), plain paths read
    by a regular expression (`_getaddr`), one idle timer per session (`_reset_timeout`), a
    reader buffer of `reader_limit` bytes, and the pieces of aiosmtpd's DATA that a DATA of its
    own needs (`connection_reader`, `decodes_data`, `call_data_hook`, `end_data`)."""

    def __init__(self, *args: Any, reader_limit: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reader_limit = reader_limit
        self._idle_deadline = 0.0  # loop time after which a session without a command is dropped
        # aiosmtpd gives its StreamReader the line limit (1 001 bytes) as its buffer limit: a
        # line longer than that could not be read at all (an AUTH response, which RFC 4954
        # lets run to 12 288 bytes). aiosmtpd checks command lines against their own limits
        # once read, so the reader may hold more; it is made anew with `reader_limit`.
        _new_connection_state(self)

    # -- sessions copied, not constructed ------------------------------------------------

    def guarded(self, command: Command) -> Command:
        """The command a copied session runs for `command` (a bound `smtp_*` method of the
        session): `command` itself here; a subclass may wrap it."""
        return command

    def fresh(self) -> PatchedSMTP:
        """A new session configured as this one, for the next connection, without running
        aiosmtpd's constructor again: it looks the class and the handler over with `inspect`
        and `dir` each time (194 µs of CPU per connection, a copy 38 µs). The copy shares the
        configuration and the tables of hooks and commands (its own commands bound to it, each
        through `guarded`); what one connection changes (the stream reader, the flow control, the
        futures) is made anew, as `asyncio.StreamReaderProtocol`'s constructor makes it. Call
        it on a session that has never been connected."""
        session = object.__new__(type(self))
        session.__dict__.update(self.__dict__)
        _new_connection_state(session)
        session._smtp_methods = {name: session.guarded(_bound_to(session, self, method))
                                 for name, method in self._smtp_methods.items()}
        session._auth_methods = {
            name: _AuthMechAttr(_bound_to(session, self, mechanism.method), mechanism.is_builtin)
            for name, mechanism in self._auth_methods.items()}
        return session

    # -- one idle timer per session --------------------------------------------------------

    def _reset_timeout(self, duration: float | None = None) -> None:
        """Give the session `duration` (else the server's timeout) from now before it is
        dropped as idle. aiosmtpd cancels its timer and sets a new one at every command; here a
        command only moves the deadline, and the one timer is set anew only when it would fire
        after the deadline (a shorter `duration`) or is gone."""
        self._idle_deadline = self.loop.time() + (duration or self._timeout_duration)
        handle = self._timeout_handle
        if handle is None or handle.cancelled() or handle.when() > self._idle_deadline:
            if handle is not None:
                handle.cancel()
            self._timeout_handle = self.loop.call_at(self._idle_deadline, self._timeout_cb)

    def _timeout_cb(self) -> None:
        """aiosmtpd's timeout (close the connection), unless a command moved the deadline
        since the timer was set: then the timer is set again for the deadline."""
        if self.loop.time() < self._idle_deadline:
            self._timeout_handle = self.loop.call_at(self._idle_deadline, self._timeout_cb)
            return
        super()._timeout_cb()

    # -- MAIL and RCPT paths ---------------------------------------------------------------

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

    # -- what a DATA of one's own needs of aiosmtpd's --------------------------------------

    @property
    def connection_reader(self) -> asyncio.StreamReader:
        """The stream reader of the current connection (set once it is made)."""
        reader: asyncio.StreamReader = self._reader
        return reader

    @property
    def decodes_data(self) -> bool:
        """Whether the data is decoded to text (`decode_data=True`), which mailin never asks."""
        return bool(self._decode_data)

    def close_connection(self) -> None:
        """Close the current connection's writer (the transport goes with it)."""
        self._writer.close()

    async def call_data_hook(self) -> Any:
        """The handler's `handle_DATA` answer for the envelope (MISSING without a hook)."""
        return await self._call_handler_hook("DATA")

    def end_data(self) -> None:
        """Leave the DATA state as aiosmtpd does after the data: a new envelope, the session
        ready for the next MAIL."""
        self._set_post_data_state()


def _new_connection_state(session: PatchedSMTP) -> None:
    """Give `session` what one connection changes, made anew as `asyncio.StreamReaderProtocol`'s
    constructor makes it (the flow control, the futures), with a stream reader of the
    session's `_reader_limit` bytes."""
    asyncio.StreamReaderProtocol.__init__(
        session, asyncio.StreamReader(limit=session._reader_limit, loop=session.loop),
        client_connected_cb=session._cb_client_connected, loop=session.loop)


def _bound_to(session: SMTP, template: SMTP, method: Any) -> Any:
    """`method` bound to `session` when it is one of `template`'s own; as it is otherwise (a
    handler's)."""
    if getattr(method, "__self__", None) is template:
        return method.__func__.__get__(session)
    return method
