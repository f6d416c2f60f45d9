"""Which failures are outages (burnbox.outages): connection-level failures of the database, the
key-value store and object storage are; errors about the data itself never are."""

import errno
import sqlite3
import uuid

import psycopg
import pytest
from botocore.exceptions import EndpointConnectionError
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError

from burnbox.kv import RedisStore, StoreUnavailable
from burnbox.outages import DATABASE, KEY_VALUE_STORE, STORAGE, unavailable_dependency
from burnbox.settings import Settings
from burnbox.storage import S3Storage, StorageError, StorageUnavailable, s3_client
from tests.processes import free_port


def _raised(call) -> BaseException:
    with pytest.raises(Exception) as caught:
        call()
    return caught.value


def test_a_database_on_a_closed_port_is_unavailable(settings: Settings):
    if settings.database_url.startswith("postgresql"):
        url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/burnbox"
    else:
        url = "sqlite:////proc/no-such-folder/burnbox.db"
    engine = create_engine(url)
    try:
        assert unavailable_dependency(_raised(engine.connect)) == DATABASE
    finally:
        engine.dispose()


def test_errors_about_the_data_are_not_outages(runtime):
    with runtime.db.session() as session:
        missing_table = _raised(lambda: session.execute(text("SELECT * FROM no_such_table")))
        session.rollback()
        duplicate = _raised(lambda: session.execute(text(
            "INSERT INTO permissions (key, scope, description) "
            "SELECT key, scope, description FROM permissions LIMIT 1")))
        session.rollback()
        errors = [missing_table, duplicate]
        if session.bind.dialect.name == "postgresql":
            errors.append(_raised(lambda: session.execute(text("SELECT CAST('x' AS integer)"))))
            session.rollback()
            assert isinstance(errors[-1], DataError)
    assert isinstance(duplicate, IntegrityError)
    assert [unavailable_dependency(error) for error in errors] == [None] * len(errors)


@pytest.mark.parametrize(("error", "expected"), [
    (psycopg.OperationalError("connection failed: Connection refused"), DATABASE),
    (psycopg.errors.AdminShutdown(), DATABASE),
    (psycopg.errors.CannotConnectNow(), DATABASE),
    (psycopg.errors.TooManyConnections(), DATABASE),
    (psycopg.errors.ConnectionFailure(), DATABASE),
    (psycopg.InterfaceError("the connection is closed"), DATABASE),
    (psycopg.errors.QueryCanceled(), None),
    (psycopg.errors.DeadlockDetected(), None),
    (psycopg.errors.UniqueViolation(), None),
    (psycopg.errors.InvalidTextRepresentation(), None),
])
def test_postgresql_failures_are_outages_by_sqlstate(error, expected):
    wrapped = DBAPIError.instance("SELECT 1", {}, error, psycopg.Error)
    assert unavailable_dependency(wrapped) == expected


def test_a_locked_sqlite_database_is_unavailable(tmp_path):
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    try:
        with engine.connect() as connection:
            error = _raised(lambda: connection.exec_driver_sql("INSERT INTO t VALUES (1)"))
        assert unavailable_dependency(error) == DATABASE
    finally:
        engine.dispose()
        holder.close()


def test_an_unreachable_key_value_store_is_unavailable():
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    error = _raised(lambda: store.get("k"))
    assert isinstance(error, StoreUnavailable)
    assert unavailable_dependency(error) == KEY_VALUE_STORE


def test_an_unreachable_s3_endpoint_is_unavailable_and_a_refusal_is_not(settings: Settings):
    config = settings.replace(**{
        "storage.backend": "s3", "storage.s3_endpoint_url": f"http://127.0.0.1:{free_port()}",
        "storage.s3_access_key": "testing", "storage.s3_secret_key": "testing",
    }).storage
    storage = S3Storage(s3_client(config), "bucket")
    error = _raised(lambda: storage.get(f"raw/{uuid.uuid4()}.eml"))
    assert isinstance(error, StorageUnavailable)
    assert unavailable_dependency(error) == STORAGE
    assert unavailable_dependency(StorageError("access denied")) is None
    assert isinstance(storage._failure("read", "k", EndpointConnectionError(endpoint_url="x")),
                      StorageUnavailable)


def test_a_filesystem_that_fails_is_unavailable_but_a_missing_file_is_not():
    assert unavailable_dependency(OSError(errno.EIO, "Input/output error")) == STORAGE
    assert unavailable_dependency(OSError(errno.ENOSPC, "No space left on device")) == STORAGE
    assert unavailable_dependency(FileNotFoundError(errno.ENOENT, "missing")) is None
    assert unavailable_dependency(ValueError("bad")) is None
