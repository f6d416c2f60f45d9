"""The request's session is the request's unit of work: opened on first use, current until the
request ends, then closed."""

from models.db import current_unit_of_work
from web.context import db


def test_the_request_session_is_the_unit_of_work_until_the_request_ends(app):
    with app.test_request_context():
        assert current_unit_of_work() is None  # nothing opened yet
        session = db()
        assert db() is session
        assert current_unit_of_work() is session
    assert current_unit_of_work() is None
