"""The web process answers 503 while the database is not migrated yet (it starts beside
`release` under honcho and on most platforms), not a 500; once migrated, it serves."""

from models.runtime import Runtime
from models.schema import upgrade
from tests.identity import app_with


def test_an_unmigrated_database_is_a_503_until_it_is_migrated(settings, tmp_path):
    fresh = settings.replace(**{"database.url": f"sqlite:///{tmp_path / 'fresh.db'}"})
    runtime = Runtime.from_settings(fresh)
    try:
        client = app_with(runtime).test_client()
        waiting = client.get("/api/v1/roles")
        assert waiting.status_code == 503, waiting.get_json()
        assert waiting.get_json()["code"] == "unavailable"
        assert waiting.headers["Retry-After"]
        upgrade(runtime.db.engine)
        assert client.get("/api/v1/roles").status_code == 200
    finally:
        runtime.db.dispose()


def test_a_missing_table_in_a_migrated_database_is_still_a_bug(runtime):
    from sqlalchemy import text

    from web.errors import _schema_not_migrated

    with runtime.db.session() as session:
        try:
            session.execute(text("SELECT * FROM no_such_table"))
        except Exception as exc:
            error = exc
        session.rollback()
    assert not _schema_not_migrated_in(runtime, error, _schema_not_migrated)


def _schema_not_migrated_in(runtime: Runtime, error: Exception, check) -> bool:
    with app_with(runtime).test_request_context():
        return check(error)
