"""The app's JSON writer (web.encoding): what a view returns without a schema's dump comes out
as the schemas would write it."""

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal


@dataclass
class Point:
    day: date
    count: int


def test_dates_uuids_and_dataclasses_are_written_as_the_schemas_write_them(app):
    key = uuid.UUID("00000000-0000-4000-8000-000000000001")
    moment = datetime(2026, 11, 24, 21, 5, 7, 120000, tzinfo=UTC)
    text = app.json.dumps({"z": 1, "day": date(2026, 11, 24), "at": moment, "id": key,
                           "point": Point(date(2026, 1, 2), 3), "price": Decimal("1.50")})
    # UTC as "Z", as the Timestamp field writes it (the writer gave "+00:00" before).
    assert text == ('{"z":1,"day":"2026-11-24","at":"2026-11-24T21:05:07.120000Z",'
                    '"id":"00000000-0000-4000-8000-000000000001",'
                    '"point":{"day":"2026-01-02","count":3},"price":"1.50"}')


def test_an_integer_beyond_64_bits_is_still_written(app):
    """orjson refuses it (a client may send one and an error may echo it): the standard
    library's encoder takes over, with the same ISO dates."""
    moment = datetime(2026, 11, 24, 21, 5, 7, tzinfo=UTC)
    text = app.json.dumps({"n": 10**30, "day": date(2026, 11, 24), "at": moment})
    assert json.loads(text) == {"n": 10**30, "day": "2026-11-24", "at": "2026-11-24T21:05:07Z"}

