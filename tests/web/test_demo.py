"""The public try-it mode: off means 404 on the inbox routes and `{"enabled": false}` from the
status; on, anyone creates an inbox in the demo
assignment and reads its mail, in full, with the read token (stored only hashed), and nothing
else with it; rate limited per IP; it works on an operator-trusted domain with no DNS."""

import uuid

import pytest
from sqlalchemy import select

from burnbox.security import hash_token
from models.admin.bootstrap import BootstrapRequest, run_bootstrap
from models.mail.inboxes import Inbox
from models.platform.audit import Origin
from tests.factories.mail import make_email, make_inbox

INBOX_PATHS = ("/api/v1/try/inbox", f"/api/v1/try/inbox/{uuid.uuid4()}/emails",
               f"/api/v1/try/inbox/{uuid.uuid4()}/emails/{uuid.uuid4()}")
HTML = '<p>Your code is <b>482913</b>. <a href="https://shop.example/confirm?t=abc">Confirm</a></p>'



@pytest.fixture
def demo(make_app, mail_world):
    app = make_app(**{"demo.enabled": True,
                      "demo.assignment_id": str(mail_world.ids["assignment"]),
                      "demo.ttl": "15m"})
    return app.test_client()


def test_with_the_demo_mode_off_every_inbox_route_is_404(client):
    for method, path in zip(("POST", "GET", "GET"), INBOX_PATHS, strict=True):
        response = client.open(path, method=method)
        assert response.status_code == 404, path
        assert response.get_json()["code"] == "not_found"


def test_with_the_demo_mode_off_the_status_still_answers_that_it_is_off(client):
    response = client.get("/api/v1/try/status")
    assert response.status_code == 200
    assert response.get_json() == {"enabled": False}


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


def test_a_misconfigured_assignment_reads_as_off_and_creates_nothing(make_app):
    client = make_app(**{"demo.enabled": True, "demo.assignment_id": "not-a-uuid"}).test_client()
    assert client.get("/api/v1/try/status").get_json() == {"enabled": False}
    assert client.post("/api/v1/try/inbox").status_code == 404


def _demo_inbox(demo):
    body = demo.post("/api/v1/try/inbox").get_json()
    return body, {"X-Read-Token": body["read_token"]}


def test_the_token_reads_an_email_of_its_inbox_in_full(demo, runtime):
    inbox, headers = _demo_inbox(demo)
    email_id = make_email(runtime, inbox["full_address"], subject="Your code",
                          text="Your code is 482913.\nConfirm: https://shop.example/confirm?t=abc\n",
                          html=HTML)
    response = demo.get(f"/api/v1/try/inbox/{inbox['id']}/emails/{email_id}", headers=headers)
    assert response.status_code == 200, response.get_json()
    email = response.get_json()
    assert email["subject"] == "Your code"
    assert "482913" in email["body_text"]
    assert 'href="https://shop.example/confirm?t=abc"' in email["body_html"]
    assert {"headers", "attachments", "cc"} <= set(email)
    # Reading it does not mark it read: the token changes nothing.
    assert email["is_read"] is False


def test_the_token_reads_nothing_but_its_own_inbox(demo, runtime, mail_world):
    mine, my_headers = _demo_inbox(demo)
    theirs, their_headers = _demo_inbox(demo)
    their_email = make_email(runtime, theirs["full_address"])
    team_email = make_email(runtime, _team_inbox(runtime, mail_world))
    for email_id in (their_email, team_email):
        path = f"/api/v1/try/inbox/{mine['id']}/emails/{email_id}"
        assert demo.get(path, headers=my_headers).status_code == 404
    assert demo.get(f"/api/v1/try/inbox/{theirs['id']}/emails/{their_email}",
                    headers=my_headers).status_code == 404
    assert demo.get(f"/api/v1/try/inbox/{theirs['id']}/emails/{their_email}",
                    headers=their_headers).status_code == 200
    # It is no credential for the API itself.
    bearer = {"Authorization": f"Bearer {mine['read_token']}"}
    assert demo.get(f"/api/v1/emails/{their_email}", headers=bearer).status_code == 401
    assert demo.get(f"/api/v1/inboxes/{mine['id']}/emails", headers=bearer).status_code == 401


def test_the_demo_works_on_a_trusted_local_domain(make_app, runtime):
    with runtime.db.transaction() as session:
        done = run_bootstrap(session, runtime.settings, BootstrapRequest(
            email="admin@burnbox.test", org_name="Demo", team_name="Try it",
            domain_name="burnbox.test", password="correct horse battery"), Origin())
        assignment_id = str(done.assignment.id)
    demo = make_app(**{"demo.enabled": True, "demo.assignment_id": assignment_id}).test_client()
    assert demo.get("/api/v1/try/status").get_json()["domain"] == "burnbox.test"
    inbox, headers = _demo_inbox(demo)
    assert inbox["full_address"].endswith("@burnbox.test")
    email_id = make_email(runtime, inbox["full_address"], subject="Welcome")
    email = demo.get(f"/api/v1/try/inbox/{inbox['id']}/emails/{email_id}", headers=headers)
    assert email.get_json()["subject"] == "Welcome"


def _team_inbox(runtime, mail_world):
    """The address of an ordinary (not demo) inbox of the demo team."""
    with runtime.db.transaction() as session:
        return make_inbox(session, runtime.settings, mail_world).full_address
