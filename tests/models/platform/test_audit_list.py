"""The audit list's capped count: exact up to the cap (or to the page's end, if further),
a lower bound flagged `total_capped` beyond it, and no count at all for a last page."""

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import insert

from burnbox.timeutil import utcnow
from models.pagination import paginate
from models.platform.audit import AuditEntry
from models.platform.audit_log import COUNT_CAP, AuditFilter, _query, list_entries


def _entries(session, org_id, count, action="inbox.create"):
    now = utcnow()
    session.execute(insert(AuditEntry), [
        {"id": uuid.uuid4(), "created_at": now - timedelta(seconds=n), "action": action,
         "actor_id": None, "org_id": org_id, "resource_type": "inbox", "resource_id": None,
         "ip": None, "user_agent": None, "channel": "api", "severity": "info",
         "category": "inbox"} for n in range(count)])


@pytest.fixture
def org_with_12(runtime, world):
    with runtime.db.session() as session:
        _entries(session, world.ids["org"], 12)
        session.commit()
    return world.ids["org"]


@pytest.mark.parametrize(("page", "per_page", "total", "capped", "items"), [
    (1, 2, 5, True, 2),     # counting stops at the cap
    (3, 2, 6, True, 2),     # ... or at this page's end, if further: the next page has rows
    (6, 2, 12, False, 2),   # the last full page: the count reaches the end
    (4, 3, 12, False, 3),
    (7, 2, 12, False, 0),   # past the end: exact
    (2, 10, 12, False, 2),  # a page that is not full is the last: exact, no count
])
def test_the_count_stops_at_the_cap_and_says_so(runtime, org_with_12, page, per_page, total,
                                               capped, items):
    with runtime.db.session() as session:
        query = _query(org_with_12, AuditFilter(action="inbox.create"))
        result = paginate(session, query, page, per_page, count_cap=5)
    assert (result.total, result.total_capped, len(result.data)) == (total, capped, items)


def test_the_list_counts_exactly_up_to_the_cap(runtime, world):
    with runtime.db.session() as session:
        _entries(session, world.ids["org"], COUNT_CAP + 1, action="webhook.create")
        session.commit()
        where = AuditFilter(action="webhook.create")
        first = list_entries(session, world.ids["org"], where, 1, 20)
        assert (first.total, first.total_capped, first.total_pages) == (COUNT_CAP, True, 500)
        last = list_entries(session, world.ids["org"], where, 501, 20)
        assert (last.total, last.total_capped, len(last.data)) == (COUNT_CAP + 1, False, 1)
        few = list_entries(session, world.ids["org"], AuditFilter(action="inbox.create"), 1, 20)
        assert (few.total, few.total_capped) == (0, False)
