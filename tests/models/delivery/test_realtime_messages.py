"""The text of a live message: what sockets and the replay buffer hold."""

import json
import uuid
from datetime import UTC, datetime

from models.delivery.realtime import encode_message


def test_a_message_is_the_compact_json_the_standard_library_writes_with_api_times():
    # orjson writes it (mailin encodes one per new e-mail); the text must not change with it:
    # clients and the kept replay compare and parse these bytes.
    data = {"id": uuid.UUID("56dbd9f3-7171-4ee0-90ff-856b3aab5eba"),
            "subject": 'Ünïcode "quoted" \u2028 </script>', "is_read": False, "size": 2311,
            "received_at": datetime(2026, 11, 27, 10, 0, 0, 123456, tzinfo=UTC),
            "expires_at": datetime(2026, 11, 27, 11, 0, 0, tzinfo=UTC), "cc": [], "x": None}
    text = encode_message("email.received", data)
    assert text == json.dumps(
        {"type": "email.received", "data": {
            **data, "id": str(data["id"]), "received_at": "2026-11-27T10:00:00.123456Z",
            "expires_at": "2026-11-27T11:00:00Z"}},
        separators=(",", ":"), ensure_ascii=False)
