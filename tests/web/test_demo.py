"""The public try-it mode: off means 404 everywhere; on, anyone creates an inbox in the demo
assignment and reads its mail with the read token (stored only hashed), rate limited per IP."""

import uuid

import pytest
from sqlalchemy import select

from burnbox.security import hash_token
from models.mail.inboxes import Inbox
from tests.factories.mail import make_email

PATHS = ("/api/v1/try/status", "/api/v1/try/inbox", f"/api/v1/try/inbox/{uuid.uuid4()}/emails")


@pytest.fixture
def demo(make_app, mail_world):
    app = make_app(**{"demo.enabled": True,
                      "demo.assignment_id": str(mail_world.ids["assignment"]),
                      "demo.ttl": "15m"})
    return app.test_client()


def test_with_the_demo_mode_off_every_demo_endpoint_is_404(client):
    for method, path in zip(("GET", "POST", "GET"), PATHS, strict=True):
        response = client.open(path, method=method)
        assert response.status_code == 404, path
        assert response.get_json()["code"] == "not_found"


def test_the_status_names_the_domain_and_lifetime(demo, mail_world):
    assert demo.get("/api/v1/try/status").get_json() == {
        "enabled": True, "domain": mail_world.domain, "ttl": "15m0s"}


def test_anyone_creates_a_demo_inbox_and_reads_it_with_the_token(demo, runtime, mail_world):
    response = demo.post("/api/v1/try/inbox")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    token = body.pop("read_token")
    assert len(token) >= 43  # 256 random bits, URL-safe base64
    assert body["full_address"].endswith("@" + mail_world.domain)
    assert body["created_by"] is None
    with runtime.db.session() as session:
        stored = session.get(Inbox, uuid.UUID(body["id"]))
        assert stored.read_token_hash == hash_token(token)
        assert token not in str(session.scalars(select(Inbox.read_token_hash)).all())

    make_email(runtime, body["full_address"], subject="Hi demo")
    path = f"/api/v1/try/inbox/{body['id']}/emails"
    listing = demo.get(path, headers={"X-Read-Token": token})
    assert listing.status_code == 200
    assert [item["subject"] for item in listing.get_json()["data"]] == ["Hi demo"]


def test_a_missing_or_wrong_token_or_a_non_demo_inbox_is_404(demo, runtime, mail_world):
    body = demo.post("/api/v1/try/inbox").get_json()
    path = f"/api/v1/try/inbox/{body['id']}/emails"
    assert demo.get(path).status_code == 404
    assert demo.get(path, headers={"X-Read-Token": "guess"}).status_code == 404
    other = demo.post("/api/v1/try/inbox").get_json()
    assert demo.get(path, headers={"X-Read-Token": other["read_token"]}).status_code == 404


def test_demo_endpoints_count_in_the_demo_bucket(make_app, mail_world):
    client = make_app(**{"demo.enabled": True,
                         "demo.assignment_id": str(mail_world.ids["assignment"]),
                         "rate_limits.demo": "2/minute"}).test_client()
    statuses = [client.get("/api/v1/try/status").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_a_misconfigured_assignment_is_404_not_500(make_app):
    client = make_app(**{"demo.enabled": True, "demo.assignment_id": "not-a-uuid"}).test_client()
    assert client.get("/api/v1/try/status").status_code == 404
    assert client.post("/api/v1/try/inbox").status_code == 404
