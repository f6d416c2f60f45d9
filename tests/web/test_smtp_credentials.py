"""The capture credentials API: create (the secret shown once, stored hashed), read (never the
secret), rotate, revoke; 404 envelopes when there are none and for another org's inbox; who
may do what; every change audited without the secret."""

from sqlalchemy import select

from burnbox.security import hash_token
from models.mail.smtp_credentials import SmtpCredential
from tests.apikey_helpers import key_auth, make_key
from tests.web.conftest import audit_entries

PATH = "/inboxes/{inbox}/smtp-credentials"


def _stored(runtime, inbox):
    with runtime.db.session() as session:
        return session.scalars(select(SmtpCredential)
                               .where(SmtpCredential.inbox_id == inbox.id)).first()


def test_credentials_are_created_read_rotated_and_revoked(api, runtime, inbox):
    none = api("GET", PATH)
    assert none.status_code == 200  # not a 404: the inbox page asks on every load
    assert none.get_json()["active"] is False
    assert none.get_json()["username"] == inbox.full_address
    assert none.get_json()["created_at"] is None

    created = api("POST", PATH)
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    settings = runtime.settings
    assert body["username"] == inbox.full_address
    assert (body["host"], body["port"]) == (settings.smtp.hostname, settings.smtp.port)
    assert body["auth_without_tls"] is settings.smtp_auth_without_tls
    assert body["last_used_at"] is None and body["created_at"].endswith("Z")
    assert body["active"] is True
    secret = body["secret"]
    assert len(secret) >= 43  # 256 random bits
    row = _stored(runtime, inbox)
    assert row.secret_hash == hash_token(secret) and secret not in row.secret_hash

    read = api("GET", PATH)
    assert read.status_code == 200
    assert read.get_json() == {key: value for key, value in body.items() if key != "secret"}

    rotated = api("POST", PATH)
    assert rotated.status_code == 201
    assert rotated.get_json()["secret"] != secret
    assert _stored(runtime, inbox).secret_hash == hash_token(rotated.get_json()["secret"])

    revoked = api("DELETE", PATH)
    assert (revoked.status_code, revoked.get_json()) == (
        200, {"message": "SMTP credentials revoked"})
    assert _stored(runtime, inbox) is None
    assert api("GET", PATH).get_json()["active"] is False
    again = api("DELETE", PATH)
    assert again.status_code == 404 and again.get_json()["code"] == "not_found"

    for action in ("create", "rotate", "revoke"):
        [entry] = audit_entries(runtime, f"inbox.smtp_credentials_{action}")
        assert entry.resource_id == str(inbox.id) and entry.category == "inbox"
        assert entry.severity == ("warning" if action == "revoke" else "info")
        recorded = str(entry.before) + str(entry.after)
        assert secret not in recorded and "secret" not in recorded
        assert inbox.full_address in recorded


def test_who_may_read_create_and_revoke(api, client, mail_world, inbox):
    for who in ("lead", "team_member", "owner"):
        assert api("POST", PATH, who).status_code == 201, who
    for who in ("outsider", "stranger"):  # another org's inbox is not found
        for method in ("GET", "POST", "DELETE"):
            response = api(method, PATH, who)
            assert response.status_code == 404, (who, method)
            assert response.get_json()["code"] == "not_found"
    path = mail_world.path(PATH)
    viewer = make_key(client, mail_world, scopes=["team.inboxes.view"])
    read = client.get(path, headers=key_auth(viewer["raw_key"]))
    assert read.status_code == 200 and "secret" not in read.get_json()
    for method in ("post", "delete"):
        refused = getattr(client, method)(path, headers=key_auth(viewer["raw_key"]))
        assert refused.status_code == 403 and refused.get_json()["code"] == "forbidden"
    manager = make_key(client, mail_world, scopes=["team.inboxes.manage"])
    assert client.post(path, headers=key_auth(manager["raw_key"])).status_code == 201
    assert client.delete(path, headers=key_auth(manager["raw_key"])).status_code == 200


def test_credentials_go_with_their_inbox(api, runtime, inbox):
    assert api("POST", PATH).status_code == 201
    assert api("DELETE", "/inboxes/{inbox}").status_code == 200
    with runtime.db.session() as session:
        assert session.scalars(select(SmtpCredential)).first() is None
