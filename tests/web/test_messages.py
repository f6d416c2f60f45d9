"""Putting an e-mail into an inbox over HTTP: stored as SMTP mail is (parsed, sanitised,
counted, its event recorded, codes and links found), the same limits, who may, and bad input
refused with nothing stored."""

import base64
import dataclasses
import json
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from burnbox.timeutil import utcnow
from models.events import EMAIL_RECEIVED, Event
from models.mail.entities import Attachment, Email
from models.mail.inboxes import Inbox
from tests.apikey_helpers import key_auth, make_key
from tests.web.conftest import audit_entries
from web import create_app

PATH = "/inboxes/{inbox}/messages"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
    "rkJggg==")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _count(runtime, model) -> int:
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(model))


def test_a_message_is_stored_as_smtp_mail_is(api, runtime, inbox):
    body = {
        "from": "Acme Shop <noreply@acme.test>", "to": ["Jörg <jorg@example.test>"],
        "cc": ["boss@example.test"], "subject": "Your code: 482913 ✓",
        "text": "Your code is 482913. Visit https://acme.test/verify?t=1",
        "html": '<p onclick="x()">Code <b>482913</b> <img src="cid:logo"> '
                '<a href="https://acme.test/verify?t=1">verify</a><script>evil()</script></p>',
        "attachments": [
            {"filename": "logo.png", "content": _b64(PNG), "content_id": "logo"},
            {"filename": "notes.txt", "content": _b64(b"hello\n")},
        ],
        "headers": {"Reply-To": "help@acme.test", "X-Campaign": "spring"},
        "tags": ["signup", "eu"],
    }
    response = api("POST", PATH, json=body)
    assert response.status_code == 201, response.get_json()
    email = response.get_json()
    assert email["inbox_id"] == str(inbox.id) and email["to_address"] == inbox.full_address
    assert email["from_address"] == "noreply@acme.test"
    assert email["subject"] == "Your code: 482913 ✓"
    assert email["cc"] == ["boss@example.test"]
    assert "482913" in email["codes"]
    assert "https://acme.test/verify?t=1" in [link["href"] for link in email["links"]]
    assert "<script" not in email["body_html"] and "onclick" not in email["body_html"]
    assert 'src="cid:logo"' in email["body_html"]
    headers = {one["name"]: one["value"] for one in email["headers"]}
    assert headers["X-Tags"] == "signup, eu" and headers["Reply-To"] == "help@acme.test"
    assert headers["X-Campaign"] == "spring" and headers["Message-ID"]
    assert headers["To"] == "Jörg <jorg@example.test>"
    parts = {part["filename"]: part for part in email["attachments"]}
    assert parts["logo.png"]["content_type"] == "image/png"
    assert (parts["logo.png"]["inline"], parts["logo.png"]["content_id"]) == (True, "logo")
    assert parts["notes.txt"]["content_type"] == "text/plain"
    assert parts["notes.txt"]["inline"] is False
    assert email["auth_results"]["status"] == "pending"

    download = api("GET", f"/emails/{email['id']}/attachments/{parts['logo.png']['id']}")
    assert download.status_code == 200 and download.data == PNG
    raw = api("GET", f"/inboxes/{{inbox}}/emails/{email['id']}/raw")
    assert raw.status_code == 200 and b"X-Tags: signup, eu\r\n" in raw.data

    with runtime.db.session() as session:
        stored = session.get(Inbox, inbox.id)
        assert (stored.email_count, stored.unread_count) == (1, 1)
        [event] = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
        assert event.data["email_id"] == email["id"]
        assert event.data["subject"] == "Your code: 482913 ✓"
    listed = api("GET", "/inboxes/{inbox}/emails").get_json()
    assert [item["id"] for item in listed["data"]] == [email["id"]]
    [entry] = audit_entries(runtime, "inbox.message_put")
    assert entry.resource_id == str(inbox.id) and email["id"] in str(entry.after)


def test_a_message_needs_only_a_sender(api, inbox):
    response = api("POST", PATH, json={"from": "a@b.test"})
    assert response.status_code == 201, response.get_json()
    email = response.get_json()
    headers = {one["name"]: one["value"] for one in email["headers"]}
    assert headers["To"] == inbox.full_address
    assert email["subject"] == "" and email["body_text"].strip() == ""
    assert email["attachments"] == []


def test_html_alone_keeps_its_inline_images(api, inbox):
    response = api("POST", PATH, json={
        "from": "a@b.test", "html": '<img src="cid:pic">',
        "attachments": [{"filename": "p.png", "content": _b64(PNG), "content_id": "pic"}]})
    assert response.status_code == 201, response.get_json()
    [part] = response.get_json()["attachments"]
    assert part["inline"] is True and part["content_id"] == "pic"


def _app_with(runtime, mail_world, **settings):
    """A client of an app whose settings differ by `settings`, and the world's inbox path."""
    changed = dataclasses.replace(runtime, settings=runtime.settings.replace(**settings))
    app = create_app(runtime=changed)
    app.config["TESTING"] = True
    return app.test_client(), mail_world.path(PATH), changed.settings


def test_the_platform_attachment_limits_apply(mail_world, runtime, inbox):
    client, path, _ = _app_with(runtime, mail_world, **{"defaults.attachments_enabled": False})
    response = client.post(path, headers=mail_world.headers["team_member"], json={
        "from": "a@b.test", "text": "see attached",
        "attachments": [{"filename": "a.txt", "content": _b64(b"x")}]})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["attachments"] == []
    assert response.get_json()["body_text"].startswith("see attached")


def test_the_smtp_size_limit_applies(mail_world, runtime, inbox):
    client, path, settings = _app_with(runtime, mail_world, **{"smtp.max_message_bytes": 2000})
    headers = mail_world.headers["team_member"]
    too_big = client.post(path, headers=headers, json={"from": "a@b.test", "text": "x " * 1500})
    assert too_big.status_code == 413, too_big.get_json()
    assert too_big.get_json()["code"] == "payload_too_large"
    # The body may exceed http.max_request_bytes by the size limit in base64, no more.
    limit = settings.http.max_request_bytes + 2000 * 4 // 3 + 4
    huge = client.post(path, headers=headers, data=json.dumps({"from": "a@b.test",
                                                                "text": "y" * limit}),
                       content_type="application/json")
    assert huge.status_code == 413 and huge.get_json()["code"] == "payload_too_large"
    assert _count(runtime, Email) == 0


def test_a_body_over_the_usual_request_limit_is_taken_up_to_the_smtp_limit(api, runtime,
                                                                           inbox):
    data = bytes(range(256)) * (runtime.settings.http.max_request_bytes // 256 + 1024)
    response = api("POST", PATH, json={"from": "a@b.test", "attachments": [
        {"filename": "big.bin", "content": _b64(data)}]})
    assert response.status_code == 201, response.get_json()
    [part] = response.get_json()["attachments"]
    assert part["size_bytes"] == len(data) > runtime.settings.http.max_request_bytes


def test_an_expired_inbox_takes_no_message(api, runtime, inbox):
    with runtime.db.transaction() as session:
        session.get(Inbox, inbox.id).expires_at = utcnow() - timedelta(seconds=1)
    response = api("POST", PATH, json={"from": "a@b.test"})
    assert response.status_code == 409 and response.get_json()["code"] == "conflict"
    assert _count(runtime, Email) == 0


def test_who_may_put_a_message(api, client, mail_world, inbox):
    for who in ("lead", "team_member", "owner"):
        assert api("POST", PATH, who, json={"from": "a@b.test"}).status_code == 201, who
    for who in ("outsider", "stranger"):
        response = api("POST", PATH, who, json={"from": "a@b.test"})
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    path = mail_world.path(PATH)
    viewer = make_key(client, mail_world, scopes=["team.inboxes.view", "team.emails.view"])
    refused = client.post(path, headers=key_auth(viewer["raw_key"]), json={"from": "a@b.test"})
    assert refused.status_code == 403 and refused.get_json()["code"] == "forbidden"
    manager = make_key(client, mail_world, scopes=["team.inboxes.manage"])
    allowed = client.post(path, headers=key_auth(manager["raw_key"]), json={"from": "a@b.test"})
    assert allowed.status_code == 201


BAD_BODIES = {
    "no sender": {"subject": "x"},
    "a NUL in the subject": {"from": "a@b.test", "subject": "a\x00b"},
    "a surrogate in the text": {"from": "a@b.test", "text": "a\udc80b"},
    "a line break in a header": {"from": "a@b.test", "headers": {"X-A": "a\r\nBcc: x@y.z"}},
    "not an address": {"from": "not an address"},
    "a recipient that is no address": {"from": "a@b.test", "to": ["nobody"]},
    "a non-ASCII local part": {"from": "jörg@b.test"},
    "a reserved header": {"from": "a@b.test", "headers": {"Content-Type": "text/html"}},
    "a header name with a colon": {"from": "a@b.test", "headers": {"X:A": "b"}},
    "a header name with a space": {"from": "a@b.test", "headers": {"X A": "b"}},
    "invalid base64": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "!!!not base64"}]},
    "unpadded base64": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "YWJj" + "ZA"}]},
    "a bad content type": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "", "content_type": "text"}]},
    "a content id with a space": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "", "content_id": "a b"}]},
    "a content id in angle brackets": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "", "content_id": "<a>"}]},
    "a multipart attachment": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "", "content_type": "multipart/mixed"}]},
    "a content type with parameters": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": "", "content_type": "text/plain; charset=x"}]},
    "10,000 attachments": {"from": "a@b.test", "attachments": [
        {"filename": "a", "content": ""}] * 10_000},
    "10,000 tags": {"from": "a@b.test", "tags": ["t"] * 10_000},
    "a tag with a comma": {"from": "a@b.test", "tags": ["a,b"]},
    "10,000 recipients": {"from": "a@b.test", "to": ["x@y.test"] * 10_000},
    "too many headers": {"from": "a@b.test",
                         "headers": {f"X-H{n}": "v" for n in range(100)}},
    "a subject too long": {"from": "a@b.test", "subject": "s" * 999},
    "not an object": ["from", "a@b.test"],
}


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_bad_input_is_a_400_and_stores_nothing(api, runtime, inbox, body):
    response = api("POST", PATH, json=body)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["code"] == "validation_error"
    assert _count(runtime, Email) == 0 and _count(runtime, Attachment) == 0
