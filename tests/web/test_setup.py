"""First-run setup through the API: status, completion (once), and the connectivity checks that
are public only until setup completes."""

import json
import threading
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from models.identity.users import User
from models.tenancy.orgs import Org, OrgMember
from tests.factories.identity import make_password_user
from tests.identity import PASSWORD, app_with, bearer, sign_in
from tests.smtp_sink import SmtpSink, free_port
from web import create_app

SETUP = {"admin": {"email": "Admin@Example.test", "password": PASSWORD,
                   "display_name": "The Admin"},
         "org": {"name": "Acme Widgets"}}


def _complete(client, body=None):
    return client.post("/api/v1/setup/complete", json=body or SETUP)


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def test_before_setup_the_status_names_the_datastores_without_credentials(client, settings):
    response = client.get("/api/v1/setup/status")
    assert response.status_code == 200
    body = response.get_json()
    assert body["completed"] is False
    database, redis = body["datastores"]["database"], body["datastores"]["redis"]
    if settings.database.url:
        assert database["type"] == "postgresql"
        assert database["target"].startswith("127.0.0.1:5432/")
        parts = urlsplit(settings.redis.url)
        assert redis == {"type": "redis", "target": f"{parts.hostname}:{parts.port}{parts.path}"}
        assert parts.username is None or parts.username not in json.dumps(body)
    else:
        assert database == {"type": "sqlite", "target": settings.database_url[len("sqlite:///"):]}
        assert redis == {"type": "memory", "target": None}
    assert "postgres@" not in json.dumps(body)


def test_completing_setup_creates_the_admin_and_org_and_signs_in(client, runtime):
    response = _complete(client)
    assert response.status_code == 201
    body = response.get_json()
    assert set(body) == {"user", "org", "tokens"}
    user, org = body["user"], body["org"]
    assert user["email"] == "admin@example.test"
    assert (user["is_system_admin"], user["email_verified"]) == (True, True)
    assert set(org) == {"id", "name", "slug", "settings", "created_at", "updated_at"}
    assert (org["name"], org["slug"], org["settings"]) == ("Acme Widgets", "acme-widgets", {})
    assert set(body["tokens"]) == {"access_token", "refresh_token", "token_type", "expires_in"}
    me = client.get("/api/v1/auth/me", headers=bearer(body["tokens"]["access_token"]))
    assert me.get_json()["is_system_admin"] is True
    with runtime.db.session() as session:
        [member] = session.scalars(select(OrgMember)).all()
    assert (str(member.user_id), str(member.org_id), member.role) == (user["id"], org["id"],
                                                                      "owner")
    assert client.get("/api/v1/setup/status").get_json() == {"completed": True}


def test_setup_completes_only_once(client, runtime):
    assert _complete(client).status_code == 201
    again = _complete(client, {"admin": {**SETUP["admin"], "email": "second@example.test"},
                               "org": {"name": "Other"}})
    assert again.status_code == 409
    assert again.get_json() == {"error": "setup is already complete", "code": "conflict"}
    with runtime.db.session() as session:
        assert session.scalars(select(User.email)).all() == ["admin@example.test"]
        assert session.scalars(select(Org.name)).all() == ["Acme Widgets"]


@pytest.mark.parametrize(("body", "field"), [
    ({"admin": SETUP["admin"]}, "org"),
    ({"admin": {**SETUP["admin"], "password": "short"}, "org": SETUP["org"]}, "admin"),
    ({"admin": {**SETUP["admin"], "email": "nope"}, "org": SETUP["org"]}, "admin"),
    ({"admin": SETUP["admin"], "org": {"name": ""}}, "org"),
    ({**SETUP, "mailer": {"host": "smtp.example.test"}}, "mailer"),
    ({**SETUP, "domain": {"domain_name": "not a domain"}}, "domain"),
])
def test_bad_setup_bodies_are_400_and_change_nothing(client, runtime, body, field):
    response = _complete(client, body)
    assert response.status_code == 400
    assert field in response.get_json()["details"]
    assert client.get("/api/v1/setup/status").get_json()["completed"] is False
    with runtime.db.session() as session:
        assert session.scalars(select(User)).all() == []


def test_the_password_policy_problems_are_named_under_admin(client):
    body = {"admin": {**SETUP["admin"], "password": "short"}, "org": SETUP["org"]}
    details = _complete(client, body).get_json()["details"]
    assert details == {"admin": {"password": ["must be at least 8 characters"]}}


@pytest.mark.slow
def test_concurrent_setups_let_exactly_one_complete(committed_runtime):
    app = create_app(runtime=committed_runtime)
    barrier = threading.Barrier(6)
    statuses = []

    def attempt(i):
        barrier.wait()
        body = {"admin": {**SETUP["admin"], "email": f"admin{i}@example.test"},
                "org": {"name": f"Org {i}"}}
        statuses.append(_complete(app.test_client(), body).status_code)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(statuses) == [201] + [409] * 5
    with committed_runtime.db.session() as session:
        assert len(session.scalars(select(User)).all()) == 1
        assert len(session.scalars(select(Org)).all()) == 1


# Connectivity checks

def _smtp(client, port, **extra):
    return client.post("/api/v1/setup/test-smtp", json={"host": "127.0.0.1", "port": port,
                                                        "starttls": False, **extra})


def test_the_smtp_check_connects_to_a_working_relay(client, sink):
    response = _smtp(client, sink.port)
    assert response.status_code == 200
    assert response.get_json() == {"success": True,
                                   "message": f"connected to 127.0.0.1:{sink.port}"}


def test_the_smtp_check_reports_a_relay_that_does_not_answer(client):
    response = _smtp(client, free_port())
    assert response.status_code == 200
    body = response.get_json()
    assert body["success"] is False
    assert body["message"].startswith("SMTP check failed")


def test_the_smtp_check_reports_a_missing_starttls(client, sink):
    body = _smtp(client, sink.port, starttls=True).get_json()
    assert body["success"] is False


def test_the_smtp_check_refuses_internal_addresses_unless_allowed(runtime, sink):
    client = app_with(runtime, **{"webhooks.allow_private_targets": False}).test_client()
    for host in ("127.0.0.1", "localhost", "10.1.2.3", "169.254.169.254", "::1", "0.0.0.0"):
        response = client.post("/api/v1/setup/test-smtp", json={"host": host, "port": sink.port})
        assert response.status_code == 400, host
        assert response.get_json()["code"] == "validation_error"
    assert sink.messages == []


def test_the_smtp_check_refuses_a_host_that_does_not_resolve(client):
    response = client.post("/api/v1/setup/test-smtp", json={"host": "no-such-host.invalid"})
    assert response.status_code == 400


def test_the_storage_check_probes_a_folder(client, tmp_path):
    ok = client.post("/api/v1/setup/test-storage", json={"path": str(tmp_path / "objects")})
    assert ok.get_json()["success"] is True
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    failed = client.post("/api/v1/setup/test-storage", json={"path": str(blocker)})
    assert failed.status_code == 200
    assert failed.get_json()["success"] is False
    for bad in ("relative/path", "/tmp/nul\x00byte"):
        assert client.post("/api/v1/setup/test-storage", json={"path": bad}).status_code == 400
    other = client.post("/api/v1/setup/test-storage", json={"backend": "ftp", "path": "/tmp"})
    assert other.status_code == 400


def test_after_setup_the_checks_need_a_system_administrator(client, runtime, sink, tmp_path):
    admin = _complete(client).get_json()["tokens"]["access_token"]
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings)
    user = sign_in(client)["access_token"]
    assert _smtp(client, sink.port).status_code == 401
    smtp = client.post("/api/v1/setup/test-smtp", headers=bearer(user),
                       json={"host": "127.0.0.1", "port": sink.port, "starttls": False})
    assert smtp.status_code == 403
    storage = client.post("/api/v1/setup/test-storage", headers=bearer(user),
                          json={"path": str(tmp_path)})
    assert storage.status_code == 403
    allowed = client.post("/api/v1/setup/test-smtp", headers=bearer(admin),
                          json={"host": "127.0.0.1", "port": sink.port, "starttls": False})
    assert allowed.get_json()["success"] is True


def test_administrator_rights_are_read_from_the_database_not_the_token(client, runtime, sink):
    body = _complete(client).get_json()
    token = body["tokens"]["access_token"]
    with runtime.db.transaction() as session:
        session.execute(update(User).values(is_system_admin=False))
    response = client.post("/api/v1/setup/test-smtp", headers=bearer(token),
                           json={"host": "127.0.0.1", "port": sink.port, "starttls": False})
    assert response.status_code == 403
    assert client.get("/api/v1/auth/me", headers=bearer(token)).get_json()[
        "is_system_admin"] is False
