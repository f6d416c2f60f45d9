"""The MIME tree of a message read both ways, the feed parser's and the common-shape reader's
(models/mail/ingest/common_shapes.py), for the tests and for any folder of messages:

    python -m tests.models.mail.ingest.compare_structure DIR...

reads every file under each DIR as one message and prints how many the common-shape reader
read, how many it declined, and every message where the two trees differ (exit status 1).
"""

from __future__ import annotations

import sys
from email.message import Message
from pathlib import Path
from typing import Any

from models.mail.ingest import parse


def feed_parser_tree(raw: bytes) -> tuple[Any, ...]:
    """The feed parser's tree of `raw` as plain values, and whether the budget cut it."""
    root, truncated = parse.feed_parser_structure(raw, parse.MAX_HEADER_BYTES,
                                                  parse._line_limit(raw))
    return _values(root), truncated


def common_shape_tree(raw: bytes) -> tuple[Any, ...] | None:
    """The common-shape reader's tree of `raw` as `feed_parser_tree` gives it; None when it
    declines the message."""
    read = parse.common_shape_structure(raw, parse.MAX_HEADER_BYTES)
    return None if read is None else (_values(read[0]), read[1])


def _values(part: Message) -> tuple[Any, ...]:
    payload = part._payload  # type: ignore[attr-defined]
    return (type(part), list(part._headers), part._unixfrom,  # type: ignore[attr-defined]
            [_values(child) for child in payload] if isinstance(payload, list) else payload,
            part.preamble, part.epilogue, [type(defect) for defect in part.defects],
            part.get_default_type(), part._charset,  # type: ignore[attr-defined]
            part._depth, part._fields, part._header_chars)  # type: ignore[attr-defined]


def compare(raw: bytes) -> bool | None:
    """True when the common-shape reader read `raw` into the feed parser's tree, None when it
    declined it; False when the trees differ."""
    fast = common_shape_tree(raw)
    if fast is None:
        return None
    return fast == feed_parser_tree(raw)


def main(folders: list[str]) -> int:
    """Compare every file under `folders`; print the counts and the files that differ."""
    counts = {True: 0, None: 0, False: 0}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file():
                result = compare(path.read_bytes())
                counts[result] += 1
                if result is False:
                    print(f"differs: {path}")
    print(f"read alike: {counts[True]}, declined: {counts[None]}, differ: {counts[False]}")
    return 1 if counts[False] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
