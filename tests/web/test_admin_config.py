"""GET/PUT /admin/config/mailer and /admin/config/storage, and the /admin/infra connectivity
tests: stored groups over the settings, secrets sealed at rest and never shown, an empty secret
keeps the stored one, storage never moved away from stored objects."""

import time
from unittest.mock import ANY

import pytest
from sqlalchemy import select, update

from burnbox.secretbox import new_key
from burnbox.timeutil import utcnow
from models.admin.runtime_config import update_config
from models.platform.audit import AuditEntry, Origin
from models.system_config import STORAGE as STORAGE_GROUP
from models.system_config import SystemConfig, follow_storage, mailer_config, storage_config
from tests.admin_helpers import assert_admin_only
from tests.factories.mail import make_email, make_inbox
from tests.smtp_sink import SmtpSink, free_port

MAILER = "/api/v1/admin/config/mailer"
STORAGE = "/api/v1/admin/config/storage"
SECRET = "relay pass phrase 42"


@pytest.fixture
def key():
    return new_key()


@pytest.fixture
def sealed(make_app, key):
    """A client of an app with an encryption key."""
    return make_app(**{"secrets.encryption_keys": key}).test_client()


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def _stored(runtime, group):
    with runtime.db.session() as session:
        row = session.get(SystemConfig, group)
        return None if row is None else dict(row.value)


def test_without_a_stored_group_get_shows_the_settings(client, world):
    mailer = client.get(MAILER, headers=world.headers["sysadmin"]).get_json()
    assert mailer == {"host": "", "port": 587, "username": "", "starttls": True,
                      "from_address": "Burnbox <no-reply@localhost>", "has_password": False,
                      "stored": False, "updated_at": None}
    storage = client.get(STORAGE, headers=world.headers["sysadmin"]).get_json()
    assert (storage["backend"], storage["has_secret_key"], storage["stored"]) == (
        "fs", False, False)


def test_every_config_route_refuses_an_org_owner_and_a_system_admins_api_key(client, runtime,
                                                                             world):
    for method, path, body in (("GET", MAILER, None), ("PUT", MAILER, {"port": 25}),
                               ("GET", STORAGE, None), ("PUT", STORAGE, {"s3_region": "x"}),
                               ("POST", "/api/v1/admin/infra/test-smtp", {"host": "a.test"}),
                               ("POST", "/api/v1/admin/infra/test-storage", {})):
        assert_admin_only(client, runtime, world, method, path, body)
    assert _stored(runtime, "mailer") is None and _stored(runtime, "storage") is None


def test_a_secret_without_an_encryption_key_is_refused_and_nothing_is_stored(client, runtime,
                                                                             world):
    response = client.put(MAILER, json={"host": "smtp.example.com", "password": SECRET},
                          headers=world.headers["sysadmin"])
    assert response.status_code == 400
    assert "encryption" in response.get_json()["details"]["password"][0]
    assert _stored(runtime, "mailer") is None
    plain = client.put(MAILER, json={"host": "smtp.example.com"},
                       headers=world.headers["sysadmin"])
    assert (plain.status_code, plain.get_json()["has_password"]) == (200, False)


@pytest.mark.parametrize(("path", "secret", "flag", "body"), [
    (MAILER, "password", "has_password", {"host": "smtp.example.com", "port": 2525,
                                          "username": "u", "tls": False,
                                          "from": "Ops <ops@example.com>"}),
    (STORAGE, "s3_secret_key", "has_secret_key", {"backend": "s3", "bucket": "mail",
                                                  "endpoint": "https://s3.example.com",
                                                  "access_key": "AKIA1"}),
])
def test_every_secret_group_round_trips_sealed_and_an_empty_secret_keeps_it(
        sealed, runtime, world, key, path, secret, flag, body):
    headers = world.headers["sysadmin"]
    response = sealed.put(path, json={**body, secret: SECRET}, headers=headers)
    assert response.status_code == 200, response.get_json()
    shown = response.get_json()
    assert shown[flag] is True and shown["stored"] is True
    assert SECRET not in str(shown) and secret not in shown
    group = path.rsplit("/", 1)[1]
    stored = _stored(runtime, group)
    assert stored[secret].startswith("fernet:") and SECRET not in str(stored)
    settings = runtime.settings.replace(**{"secrets.encryption_keys": key})
    read = mailer_config if group == "mailer" else storage_config
    with runtime.db.session() as session:
        assert getattr(read(session, settings), secret) == SECRET

    kept = sealed.put(path, json={secret: ""}, headers=headers)
    assert kept.get_json()[flag] is True
    with runtime.db.session() as session:
        assert getattr(read(session, settings), secret) == SECRET
    assert sealed.get(path, headers=headers).get_json() == kept.get_json()
    # A rotated key list (new key first, old one kept) still opens it.
    rotated = settings.replace(**{"secrets.encryption_keys": [new_key(), key]})
    with runtime.db.session() as session:
        assert getattr(read(session, rotated), secret) == SECRET
        entries = session.scalars(select(AuditEntry).where(
            AuditEntry.action == f"admin.{group}_config_updated")).all()
    assert len(entries) == 2 and all(e.org_id is None for e in entries)
    assert SECRET not in str([(e.before, e.after) for e in entries])
    assert [e.after["secret_changed"] for e in entries] == [True, False]


def test_the_mailer_names_are_those_of_the_reference_too(sealed, world):
    response = sealed.put(MAILER, json={"from": "a@example.com", "tls": False},
                          headers=world.headers["sysadmin"])
    assert (response.get_json()["from_address"], response.get_json()["starttls"]) == (
        "a@example.com", False)


def test_bad_config_values_are_400_and_change_nothing(sealed, runtime, world):
    for path, body in ((MAILER, {"port": 0}), (MAILER, {"port": "25"}),
                       (MAILER, {"host": "smtp.example.com", "from_address": "nobody"}),
                       (MAILER, {"from": "a@example.com", "from_address": "b@example.com"}),
                       (STORAGE, {"backend": "ftp"}), (STORAGE, {"backend": "s3"}),
                       (STORAGE, {"path": "relative/folder"}), (STORAGE, {"unknown": 1})):
        response = sealed.put(path, json=body, headers=world.headers["sysadmin"])
        assert response.status_code == 400, (path, body)
    assert _stored(runtime, "mailer") is None and _stored(runtime, "storage") is None


@pytest.mark.parametrize("host", ["   ", "smtp example.com", "smtp.\u202eexample.com",
                                  "\U0001f4e7.example.com", "smtp\x00.example.com", "a_b.test"])
def test_a_mailer_host_that_is_no_host_name_or_address_is_a_400_on_both_routes(
        sealed, runtime, world, host):
    # Blanks, bidi controls and emoji were stored as the relay host once.
    for method, path in (("PUT", MAILER), ("POST", "/api/v1/admin/infra/test-smtp")):
        response = sealed.open(path, method=method, json={"host": host, "port": 2525},
                               headers=world.headers["sysadmin"])
        assert response.status_code == 400, (path, host)
        assert response.get_json()["code"] == "validation_error"
        assert "host" in response.get_json()["details"]
    assert _stored(runtime, "mailer") is None


def test_a_mailer_host_is_stored_as_it_is_connected_to(sealed, world):
    for given, stored in ((" Smtp.Example.COM. ", "smtp.example.com"),
                          ("relais.müller.test", "relais.xn--mller-kva.test"),
                          ("[2001:DB8::25]", "2001:db8::25"), ("192.0.2.25", "192.0.2.25")):
        response = sealed.put(MAILER, json={"host": given, "from": "a@example.com"},
                              headers=world.headers["sysadmin"])
        assert (response.status_code, response.get_json()["host"]) == (200, stored)


def test_the_storage_cannot_move_away_from_stored_objects(sealed, runtime, world, mail_world,
                                                          tmp_path):
    headers = world.headers["sysadmin"]
    assert sealed.put(STORAGE, json={"s3_region": "eu-west-1"},
                      headers=headers).status_code == 200  # not a move
    with runtime.db.transaction() as session:
        address = make_inbox(session, runtime.settings, mail_world).full_address
    make_email(runtime, address)
    refused = sealed.put(STORAGE, json={"path": str(tmp_path / "elsewhere")}, headers=headers)
    assert refused.status_code == 409
    assert refused.get_json()["details"] == {"objects": 1, "fields": ["path"]}
    assert _stored(runtime, "storage")["path"] == ""


def test_the_smtp_test_connects_to_a_relay_given_or_stored(sealed, world, sink):
    headers = world.headers["sysadmin"]
    path = "/api/v1/admin/infra/test-smtp"
    body = sealed.post(path, json={"host": "127.0.0.1", "port": sink.port, "starttls": False},
                       headers=headers).get_json()
    assert (body["success"], body["message"]) == (True, f"connected to 127.0.0.1:{sink.port}")
    assert isinstance(body["response_time"], int)
    sealed.put(MAILER, json={"host": "127.0.0.1", "port": free_port(), "starttls": False},
               headers=headers)
    failed = sealed.post(path, json={}, headers=headers).get_json()
    assert failed["success"] is False and failed["message"].startswith("SMTP check failed")
    # No body at all tests what is in force, as `{}` does.
    assert sealed.post(path, headers=headers).get_json() == {**failed, "response_time": ANY}
    assert sink.messages == []


def test_the_smtp_test_refuses_internal_addresses_unless_allowed(make_app, world, sink):
    client = make_app(**{"webhooks.allow_private_targets": False}).test_client()
    response = client.post("/api/v1/admin/infra/test-smtp", headers=world.headers["sysadmin"],
                           json={"host": "127.0.0.1", "port": sink.port, "starttls": False})
    assert response.status_code == 400
    assert client.post("/api/v1/admin/infra/test-smtp", headers=world.headers["sysadmin"],
                       json={}).status_code == 400  # no host at all


def test_the_smtp_test_says_when_the_stored_password_cannot_be_opened(make_app, sealed, world):
    sealed.put(MAILER, json={"host": "smtp.example.com", "password": SECRET},
               headers=world.headers["sysadmin"])
    keyless = make_app(**{"secrets.encryption_keys": [new_key()]}).test_client()
    response = keyless.post("/api/v1/admin/infra/test-smtp", json={},
                            headers=world.headers["sysadmin"])
    assert response.status_code == 409
    assert keyless.get(MAILER, headers=world.headers["sysadmin"]).get_json()["has_password"]


def test_the_storage_test_probes_a_folder(client, world, tmp_path):
    path = "/api/v1/admin/infra/test-storage"
    headers = world.headers["sysadmin"]
    ok = client.post(path, json={"backend": "fs", "path": str(tmp_path)}, headers=headers)
    assert ok.get_json()["success"] is True, ok.get_json()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    failed = client.post(path, json={"path": str(blocker / "sub")}, headers=headers).get_json()
    assert failed["success"] is False
    assert client.post(path, json={"path": "relative"}, headers=headers).status_code == 400


def test_the_storage_test_refuses_an_internal_s3_endpoint_unless_allowed(make_app, world):
    client = make_app(**{"webhooks.allow_private_targets": False}).test_client()
    response = client.post("/api/v1/admin/infra/test-storage", headers=world.headers["sysadmin"],
                           json={"backend": "s3", "bucket": "b",
                                 "endpoint": "http://169.254.169.254"})
    assert response.status_code == 400
    assert "internal" in response.get_json()["error"]


def test_the_connectivity_tests_are_rate_limited(make_app, world, tmp_path):
    client = make_app(**{"rate_limits.auth": "2/minute"}).test_client()
    answers = [client.post("/api/v1/admin/infra/test-storage", json={"path": str(tmp_path)},
                           headers=world.headers["sysadmin"]).status_code for _ in range(3)]
    assert answers == [200, 200, 429]


def test_a_process_storage_follows_the_stored_configuration(committed_runtime, tmp_path):
    settings = committed_runtime.settings.replace(**{"storage.path": str(tmp_path / "one"),
                                                     "storage.config_refresh": "0s"})
    storage = follow_storage(committed_runtime.db, settings)
    storage.put("a/old", b"1")
    with committed_runtime.db.transaction() as session:
        update_config(session, settings, STORAGE_GROUP, {"path": str(tmp_path / "two")},
                      actor_id=None, origin=Origin())
    storage.put("a/new", b"2")
    assert (tmp_path / "two" / "a" / "new").read_bytes() == b"2"
    assert storage.get("a/old") == b"1"


def test_the_storage_looks_at_its_configuration_from_inside_a_writing_transaction(
        committed_runtime, tmp_path):
    """A dispatch deletes stored objects while its transaction holds SQLite's write lock. The
    storage's look at its configuration, on a second connection, began with BEGIN IMMEDIATE
    and waited for that same thread's lock until the busy timeout: 30 s, then the look failed
    and every request behind the lock waited too (seen as a client's read timeout in CI)."""
    settings = committed_runtime.settings.replace(**{"storage.path": str(tmp_path / "one"),
                                                     "storage.config_refresh": "0s"})
    storage = follow_storage(committed_runtime.db, settings)
    with committed_runtime.db.transaction() as session:
        update_config(session, settings, STORAGE_GROUP, {"path": str(tmp_path / "two")},
                      actor_id=None, origin=Origin())
    with committed_runtime.db.transaction() as session:
        session.execute(update(SystemConfig).values(updated_at=utcnow()))  # holds the lock
        started = time.monotonic()
        storage.put("a/new", b"2")
        assert time.monotonic() - started < 5
    assert (tmp_path / "two" / "a" / "new").read_bytes() == b"2"  # it read the new one
