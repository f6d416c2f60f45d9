"""The ceiling of `bench.readpath`: a bare Flask app serving a 20-item JSON list (items shaped
like the API's e-mail list items), run by gunicorn with Burnbox's gunicorn.conf.py, so the
workers, the gevent worker class and the server settings are the same as `burnbox web`'s."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue

app = Flask(__name__)

_INBOX = str(uuid.uuid4())
ITEMS = [{"id": str(uuid.uuid4()), "inbox_id": _INBOX, "message_id": f"<{n}@bench.test>",
          "from_address": "sender@example.test", "to_address": "qa@mail.bench.test",
          "subject": f"Your code {n}", "snippet": "Use 482913 to sign in", "has_attachments": False,
          "is_read": False, "size_bytes": 2048,
          "received_at": datetime.now(UTC).isoformat()} for n in range(20)]


@app.get("/list")
def listing() -> ResponseReturnValue:
    """The 20 items in the API's page envelope."""
    return jsonify({"data": ITEMS, "total": 20, "page": 1, "per_page": 20, "total_pages": 1})
