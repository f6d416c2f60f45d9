"""BurnboxSMTP reads message data in blocks; aiosmtpd reads it line by line. Over real sockets,
the same bytes, however the network splits them, must get the same reply and the same content
from both: the lone dot ends the data wherever it falls, dot-stuffing is undone, a line over the
limit is refused 500, and data over the size limit is refused 552 (the one difference: data over
the size limit is always 552 here, where aiosmtpd may say 500 when a long line came first)."""

import asyncio

from aiosmtpd.smtp import SMTP
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mailin.server import BurnboxSMTP, ConnectionLimiter

SIZE_LIMIT = 3000
TERMINATOR = b"\r\n.\r\n"


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


def _both(data: bytes, cuts: list[int]) -> tuple[tuple[bytes, list[bytes]], ...]:
    async def main():
        return (await _deliver(_burnbox, data, cuts), await _deliver(_aiosmtpd, data, cuts))

    return asyncio.run(main())


_LINE = st.one_of(
    st.binary(max_size=12).map(lambda raw: raw.replace(b"\r", b"r").replace(b"\n", b"n")),
    st.sampled_from([b"", b".", b"..", b".x", b"x.", b"\r", b"\n", b"a\rb", b"a\nb",
                     "é".encode(), b"x" * 998, b"x" * 999, b"x" * 1000, b"." + b"x" * 998]))


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


@settings(max_examples=300, deadline=None)
@given(_transfers())
@example((b".\r\n", []))  # the empty message
@example((b"a\r\n.\r\n", [3]))  # the lone dot in a piece of its own
@example((b"a\r\n.\r\n", [2]))  # ... its CR at the end of the previous piece
@example((b"..\r\n.x\r\nx.\r\n.\r\n", [1, 5]))  # dot-stuffed lines, lines ending with a dot
@example((b"x" * 999 + b"\r\n.\r\n", []))  # a line over the limit
@example((b"y" * 1500 + b"\r\n" + b"z" * 1600 + b"\r\n.\r\n", [700]))  # over the size limit
def test_data_reads_as_aiosmtpd_reads_it(transfer):
    data, cuts = transfer
    (code, contents), (expected_code, expected_contents) = _both(data, cuts)
    if len(data) - 3 > SIZE_LIMIT:
        assert (code, contents) == (b"552", [])
    else:
        assert (code, contents) == (expected_code, expected_contents)
