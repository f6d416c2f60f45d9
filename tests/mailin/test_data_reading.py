"""BurnboxSMTP reads message data in blocks; aiosmtpd reads it line by line. Over real sockets,
the same bytes, however the network splits them, must get the same reply and the same content
from both: the lone dot ends the data wherever it falls, dot-stuffing is undone, a line over the
limit is refused 500, and data over the size limit is refused 552 (one difference: data over
the size limit is always 552 here, where aiosmtpd may say 500 when a long line came first).

The other difference is bare LFs: BurnboxSMTP takes one as a line end (stored as CRLF, its line
dot-unstuffed), where aiosmtpd keeps it inside the line. So aiosmtpd, the oracle, is fed the data
as BurnboxSMTP reads it: every line end a CRLF, and a lone dot that did not end the data (one
next to a bare LF) already unstuffed. Only <CRLF>.<CRLF> ends the data (no SMTP smuggling)."""

import asyncio

import pytest
from aiosmtpd.smtp import SMTP
from hypothesis import example, given
from hypothesis import strategies as st

from mailin.server import BurnboxSMTP, ConnectionLimiter
from tests.properties import property_settings

SIZE_LIMIT = 3000
TERMINATOR = b"\r\n.\r\n"
END = b".\r\n"


class Recorder:
    """A handler that keeps what DATA hands it and accepts every message."""

    def __init__(self) -> None:
        self.contents: list[bytes] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.contents.append(envelope.content)
        return "250 OK"


def _burnbox(handler: Recorder) -> SMTP:
    return BurnboxSMTP(handler, data_size_limit=SIZE_LIMIT, decode_data=False,
                       limiter=ConnectionLimiter(10), lifetime=60)


def _aiosmtpd(handler: Recorder) -> SMTP:
    return SMTP(handler, data_size_limit=SIZE_LIMIT, decode_data=False)


async def _reply(reader: asyncio.StreamReader) -> bytes:
    """One reply's code (the last line of a multi-line reply)."""
    while True:
        line = await asyncio.wait_for(reader.readline(), 10)
        if line[3:4] != b"-":
            return line[:3]


async def _deliver(factory, data: bytes, cuts: list[int]) -> tuple[bytes, list[bytes]]:
    """Send `data` after DATA, then a pipelined NOOP, in pieces cut at `cuts`; the reply to
    the data and what the handler got."""
    handler = Recorder()
    server = await asyncio.get_running_loop().create_server(lambda: factory(handler),
                                                            "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
    try:
        await _reply(reader)
        writer.write(b"HELO client.example\r\nMAIL FROM:<a@sender.example>\r\n"
                     b"RCPT TO:<b@inbox.example>\r\nDATA\r\n")
        assert [await _reply(reader) for _ in range(4)] == [b"250", b"250", b"250", b"354"]
        stream = data + b"NOOP\r\n"
        for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
            writer.write(stream[start:end])
            await writer.drain()
            await asyncio.sleep(0)
        code = await _reply(reader)
        assert await _reply(reader) == b"250"  # the NOOP: nothing after the dot was lost
        return code, handler.contents
    finally:
        writer.close()
        server.close()


def _crlf_lines(body: bytes) -> bytes:
    """The data before the final lone dot as BurnboxSMTP reads it, in the form aiosmtpd reads
    the same way: each bare LF a CRLF, and a lone dot line (which ended nothing, as only
    <CRLF>.<CRLF> does) unstuffed to the empty line it stands for."""
    lines = body.replace(b"\r\n", b"\n").split(b"\n")
    return b"\r\n".join(b"" if line == b"." else line for line in lines)


def _both(data: bytes, cuts: list[int]) -> tuple[tuple[bytes, list[bytes]], ...]:
    """What BurnboxSMTP makes of `data` cut at `cuts`, and what aiosmtpd makes of the same data
    with CRLF line ends (cut at the same places, so both see the pieces split alike)."""
    oracle = _crlf_lines(data[:-len(END)]) + END

    async def main():
        return (await _deliver(_burnbox, data, cuts), await _deliver(_aiosmtpd, oracle, cuts))

    return asyncio.run(main())


_LINE = st.one_of(
    st.binary(max_size=12).map(lambda raw: raw.replace(b"\r", b"r").replace(b"\n", b"n")),
    st.sampled_from([b"", b".", b"..", b".x", b"x.", b"\r", b"\n", b"a\rb", b"a\nb",
                     "é".encode(), b"x" * 998, b"x" * 999, b"x" * 1000, b"." + b"x" * 998,
                     # bare LFs around dots: lines of their own, never the end of the data
                     b"\n.", b".\n", b"\n.\n", b"\n..x", b"a\r\n.\n", b"\n" + b"x" * 1000,
                     b"x" * 999 + b"\n", b"\n" * 5]))


@st.composite
def _transfers(draw) -> tuple[bytes, list[int]]:
    """Message data as a client sends it, ending with the lone dot (no lone dot before it),
    and where the network cuts it."""
    lines = draw(st.lists(_LINE, max_size=40))
    body = b"".join(line + b"\r\n" for line in lines)
    if body.startswith(b".\r\n"):
        body = b"." + body
    while TERMINATOR in body:
        body = body.replace(TERMINATOR, b"\r\n..\r\n")
    data = body + b".\r\n"
    cuts = sorted(set(draw(st.lists(st.integers(1, len(data) + 5), max_size=6))))
    return data, cuts


@property_settings(300)
@given(_transfers())
@example((b".\r\n", []))  # the empty message
@example((b"a\r\n.\r\n", [3]))  # the lone dot in a piece of its own
@example((b"a\r\n.\r\n", [2]))  # ... its CR at the end of the previous piece
@example((b"..\r\n.x\r\nx.\r\n.\r\n", [1, 5]))  # dot-stuffed lines, lines ending with a dot
@example((b"x" * 1000 + b"\r\n.\r\n", []))  # a line over the limit
@example((b"y" * 1500 + b"\r\n" + b"z" * 1600 + b"\r\n.\r\n", [700]))  # over the size limit
@example((b"a\n..b\n.\n\r\n.\r\n", [2]))  # bare LFs: dot-stuffed lines, a lone dot
@example((b"x" * 999 + b"\n" + b"x" * 1000 + b"\n\r\n.\r\n", []))  # ... a line over the limit
@example((b"y\n" * 1400 + b"\r\n.\r\n", []))  # ... over the size limit only with CRLFs
@example((b"x" * 600 + b"\r\n" + b"y" * 600 + b"\nz\r\n.\r\n", []))  # ... one, in long data
@example((b"x" * 998 + b"\n\r\n.\r\n", []))  # ... one that makes short data long
# Data longer than the reader's buffer (64 KiB) without a line end, and in lines that end a
# sentence (each a ".\r\n" that ends nothing): read in blocks, the end found wherever it falls.
@example((b"x" * 70_000 + b"\r\n.\r\n", [65_535, 65_537]))
@example((b"Done.\r\n" * 12_000 + b".\r\n", [65_534, 70_000, 84_001]))
@example((b"a.\r\n\r\n.\r\n", [4, 6]))  # an empty line, then the lone dot in pieces
# Data starting with a CR or a dot is read a line at a time (only its end can be in its first
# bytes); any other is searched for the whole CRLF.CRLF at once.
@example((b"\r\n.\r\n", [1]))  # an empty first line, then the lone dot
@example((b"..\r\n.\r\n", [1, 2]))  # a stuffed dot first
@example((b"\r\n" + b"y" * 3200 + b"\r\n.\r\n", [1, 1700]))  # ... over the size limit
@example((b"Subject: x\r\n" + b"y" * 3200 + b"\r\n.\r\n", [1, 3214]))  # the fast one, over it
def test_data_reads_as_aiosmtpd_reads_it(transfer):
    data, cuts = transfer
    (code, contents), (expected_code, expected_contents) = _both(data, cuts)
    body = data[:-len(END)]
    if len(body) + body.count(b"\n") - body.count(b"\r\n") > SIZE_LIMIT:  # with CRLFs only
        assert (code, contents) == (b"552", [])
    else:
        assert (code, contents) == (expected_code, expected_contents)


@pytest.mark.parametrize("fake_end", [b"\n.\n", b"\r\n.\n", b"\n.\r\n"])
def test_only_crlf_dot_crlf_ends_the_data_so_no_command_can_be_smuggled(fake_end):
    smuggled = (b"MAIL FROM:<evil@sender.example>\r\nRCPT TO:<c@inbox.example>\r\nDATA\r\n"
                b"forged\r\n")
    data = b"Subject: one\r\n\r\nbody" + fake_end + smuggled + b".\r\n"

    async def main():
        return await _deliver(_burnbox, data, [])

    code, contents = asyncio.run(main())
    # One message, holding what looked like commands; the lone dot became an empty line.
    assert (code, contents) == (b"250", [b"Subject: one\r\n\r\nbody\r\n\r\n" + smuggled])


async def _replies_to_commands(factory, lines: list[bytes]) -> list[bytes]:
    """The reply codes to `lines` sent one by one after HELO, then to a NOOP."""
    server = await asyncio.get_running_loop().create_server(lambda: factory(Recorder()),
                                                            "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
    try:
        await _reply(reader)
        writer.write(b"HELO client.example\r\n")
        await _reply(reader)
        codes = []
        for line in [*lines, b"NOOP"]:
            writer.write(line + b"\r\n")
            codes.append(await _reply(reader))
        return codes
    finally:
        writer.close()
        server.close()


def test_command_lines_over_their_limit_are_refused_as_aiosmtpd_refuses_them():
    """mailin's sessions buffer more than aiosmtpd's (their reader's limit is larger), so a
    long command line is read whole before the check: the replies must not change, whether
    the line fits the buffer or not."""
    lines = [b"NOOP " + b"x" * size for size in (400, 600, 1_100, 5_000, 70_000)]

    async def main():
        return (await _replies_to_commands(_burnbox, lines),
                await _replies_to_commands(_aiosmtpd, lines))

    burnbox, aiosmtpd = asyncio.run(main())
    assert burnbox == aiosmtpd == [b"250", b"500", b"500", b"500", b"500", b"250"]


def test_a_50_kb_message_is_read_without_stopping_the_socket():
    """asyncio stops reading the socket while a session's reader holds more than twice its
    limit; with aiosmtpd's limit (the line length) every message over 2 KB paused and resumed
    the socket's reader once per chunk received, a cost paid on every large message."""
    pauses = []

    class Watched(BurnboxSMTP):
        def connection_made(self, transport):
            # Count the reader's calls on this connection's transport (asyncio's, not ours).
            pause = transport.pause_reading

            def counted():
                pauses.append(1)
                pause()

            transport.pause_reading = counted
            super().connection_made(transport)

    def factory(handler):
        return Watched(handler, data_size_limit=1_000_000, decode_data=False,
                       limiter=ConnectionLimiter(10), lifetime=60)

    data = b"Subject: big\r\n\r\n" + (b"x" * 76 + b"\r\n") * 650 + END

    async def main():
        return await _deliver(factory, data, [])

    code, contents = asyncio.run(main())
    assert code == b"250" and len(contents[0]) == len(data) - len(END)
    assert pauses == []
