"""The audit trail as documents: one entry as a record (the API's entry object), and a stream of
entries as CSV or as a JSON array, produced piece by piece so an export of any size holds one
batch of rows in memory (see `models.platform.audit_log.stream_entries`).

CSV injection: a spreadsheet evaluates a cell that starts with `=`, `+`, `-` or `@` (also
after leading whitespace, which spreadsheets skip) as a formula, so an attacker who names a
resource `=HYPERLINK(...)` would run it on the auditor's machine. Such cells are prefixed with
an apostrophe, which spreadsheets show as text and do not display.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from burnbox.timeutil import isoformat
from models.platform.audit import AuditEntry

CSV = "csv"
JSON = "json"
FORMATS = (CSV, JSON)
MEDIA_TYPES = {CSV: "text/csv; charset=utf-8", JSON: "application/json"}
# The CSV columns, in order (the reference system's, so its importers keep working).
COLUMNS = ("id", "created_at", "org_id", "actor_id", "actor_email", "actor_display_name",
           "action", "severity", "category", "resource_type", "resource_id", "resource_name",
           "ip_address", "user_agent", "metadata")
_FORMULA_STARTS = ("=", "+", "-", "@")
# Entries per chunk of the response body: large enough that the chunk framing costs nothing,
# small enough that a chunk stays a few hundred kilobytes.
_ENTRIES_PER_CHUNK = 200


def entry_record(entry: AuditEntry) -> dict[str, Any]:
    """An entry as the API shows it. `metadata` holds the before/after snapshots (of what the
    action changed) and the channel (api or cli)."""
    return {
        "id": str(entry.id), "created_at": isoformat(entry.created_at),
        "org_id": None if entry.org_id is None else str(entry.org_id),
        "actor_id": None if entry.actor_id is None else str(entry.actor_id),
        "actor_email": entry.actor_email, "actor_display_name": entry.actor_display_name,
        "action": entry.action, "severity": entry.severity, "category": entry.category,
        "resource_type": entry.resource_type, "resource_id": entry.resource_id,
        "resource_name": entry.resource_name, "ip_address": entry.ip,
        "user_agent": entry.user_agent,
        "metadata": {"before": entry.before, "after": entry.after, "channel": entry.channel},
    }


def defuse(cell: str) -> str:
    """`cell` made safe for a spreadsheet: an apostrophe before a would-be formula, that is a
    cell that starts with a tab or a carriage return, or whose first visible character is one
    of = + - @. Blanks and invisible format characters (Unicode Cf: zero-width space, BOM,
    bidi marks) before it are skipped, as spreadsheets skip them: a zero-width space or a BOM
    before "=" once let a formula through."""
    if cell.startswith(("\t", "\r")):
        return "'" + cell
    for char in cell:
        if not (char.isspace() or unicodedata.category(char) == "Cf"):
            return "'" + cell if char in _FORMULA_STARTS else cell
    return cell


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)
    return defuse(text)


def csv_chunks(entries: Iterable[AuditEntry]) -> Iterator[str]:
    """The CSV document of `entries`: the header row, then a chunk per _ENTRIES_PER_CHUNK."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for count, entry in enumerate(entries, 1):
        record = entry_record(entry)
        writer.writerow([_csv_cell(record[column]) for column in COLUMNS])
        if count % _ENTRIES_PER_CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def json_chunks(entries: Iterable[AuditEntry]) -> Iterator[str]:
    """The JSON array of `entries`' records, a chunk per _ENTRIES_PER_CHUNK entries."""
    parts = ["["]
    for count, entry in enumerate(entries):
        parts.append(("," if count else "") + json.dumps(entry_record(entry)))
        if len(parts) >= _ENTRIES_PER_CHUNK:
            yield "".join(parts)
            parts = []
    parts.append("]")
    yield "".join(parts)


def chunks(format_: str, entries: Iterable[AuditEntry]) -> Iterator[str]:
    """The document of `entries` in `format_` (one of FORMATS)."""
    return (csv_chunks if format_ == CSV else json_chunks)(entries)


def filename(format_: str, moment: datetime) -> str:
    """The export's file name, stamped with `moment` (UTC): audit_export_20261124T093000Z.csv."""
    return f"audit_export_{moment.strftime('%Y%m%dT%H%M%SZ')}.{format_}"
