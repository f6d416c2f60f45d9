"""The e-mail API through the real handlers: list and search, detail, inline parts and their
Content-ID, read state and the inbox counters, deletion (objects go after commit), mark-all-read,
attachment downloads, the raw source (byte for byte as sent over SMTP) and the files passthrough,
and who may do what."""

import email.policy
import json
import re
import smtplib
import uuid
from email.message import EmailMessage

import pytest
import requests
from sqlalchemy import select

from burnbox.storage import S3Storage, s3_client
from models.delivery.realtime import encode_message
from models.events import EMAIL_RECEIVED, Event
from models.mail.emails import email_summary
from models.mail.entities import OBJECTS_DISCARDED, Email
from tests.apikey_helpers import key_auth, make_key
from tests.burnbox import test_storage_s3
from tests.burnbox.test_storage_s3 import s3_settings
from tests.factories.mail import deliver, make_email, make_inbox, message

FIELD_KEYS = {"id", "inbox_id", "message_id", "from_address", "to_address", "subject",
              "snippet", "has_attachments", "is_read", "size_bytes", "received_at", "tags"}
SUMMARY_KEYS = FIELD_KEYS | {"thumbnail"}
DETAIL_KEYS = FIELD_KEYS | {"cc", "body_text", "body_html", "headers", "spam_score",
                              "expires_at", "attachments", "links", "codes", "auth_results",
                              "spam_reasons", "envelope_to", "spam_engine", "list_unsubscribe"}
ATTACHMENT_KEYS = {"id", "email_id", "filename", "content_type", "size_bytes", "content_id",
                   "inline", "checksums", "created_at", "has_thumbnail"}
PNG = bytes(range(256)) * 16
s3_endpoint = test_storage_s3.s3_endpoint  # the moto S3 server fixture of the storage tests


@pytest.fixture
def inbox(runtime, mail_world):
    with runtime.db.transaction() as session:
        return make_inbox(session, runtime.settings, mail_world, role="lead")


def test_the_list_shows_summaries_newest_first(api, runtime, inbox):
    first = make_email(runtime, inbox.full_address, subject="First")
    second = make_email(runtime, inbox.full_address, subject="Second")
    body = api("GET", f"/inboxes/{inbox.id}/emails").get_json()
    assert [item["id"] for item in body["data"]] == [str(second), str(first)]
    assert set(body["data"][0]) == SUMMARY_KEYS
    assert body["total"] == 2


def test_a_list_item_is_what_the_inbox_stream_sends(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, subject="Your code is 424242")
    [listed] = api("GET", f"/inboxes/{inbox.id}/emails").get_json()["data"]
    with runtime.db.session() as session:
        sent = encode_message(EMAIL_RECEIVED, email_summary(session.get(Email, email_id)))
    assert json.loads(sent)["data"] == listed


def test_search_finds_whole_words_in_subject_sender_and_body(api, runtime, inbox):
    code = make_email(runtime, inbox.full_address, subject="Verify your account",
                      text="Use code 734921 now.\n")
    other = make_email(runtime, inbox.full_address, subject="Weekly digest",
                       text="Nothing to see.\n", sender="News <news@digest.example>")

    def found(q):
        response = api("GET", f"/inboxes/{inbox.id}/emails", query_string={"q": q})
        assert response.status_code == 200, response.get_json()
        return [item["id"] for item in response.get_json()["data"]]

    assert found("734921") == [str(code)]
    assert found("VERIFY account") == [str(code)]
    assert found("digest") == [str(other)]
    assert found("nothing-here") == []
    assert found("(quote* AND") == []  # FTS syntax is text: nothing typed breaks the index
    assert sorted(found("   ")) == sorted([str(code), str(other)])


@pytest.mark.parametrize(("q", "fault"), [
    ('subject:"never closed', "unclosed quote at offset 8"),
    ("hello colour:red", "unknown operator colour: at offset 6"),
    ("after:2026-13-01", "bad date '2026-13-01' (YYYY-MM-DD) at offset 6"),
    ("is:starred", "unknown value is:starred at offset 3"),
    ("from: alice", "from: needs a value at offset 5"),
])
def test_a_malformed_search_is_a_validation_error_naming_the_offset(api, inbox, q, fault):
    response = api("GET", f"/inboxes/{inbox.id}/emails", query_string={"q": q})
    assert response.status_code == 400
    assert response.get_json() == {"error": f"invalid search query: {fault}",
                                   "code": "validation_error", "details": {"q": [fault]}}


def test_the_detail_has_the_codes_and_links_found_at_ingest(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, subject="Your sign-in code",
                          text="Your code is 482913.\nOr use https://app.example/magic?t=1\n",
                          html='<p>Code 482913 or <a href="https://app.example/magic?t=1">sign '
                               'in</a></p>')
    detail = api("GET", f"/emails/{email_id}").get_json()
    assert detail["codes"] == ["482913"]
    assert detail["links"] == [{"href": "https://app.example/magic?t=1", "text": "sign in"}]
    found = api("GET", f"/inboxes/{inbox.id}/emails", query_string={"q": "code:482913"})
    assert [item["id"] for item in found.get_json()["data"]] == [str(email_id)]


def test_the_detail_has_bodies_headers_attachments_and_expiry(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, html="<p>Hello <i>you</i></p>",
                          attachments=(("p.png", "image/png", PNG),))
    detail = api("GET", f"/emails/{email_id}").get_json()
    assert set(detail) == DETAIL_KEYS
    assert "<i>you</i>" in detail["body_html"]
    [attachment] = detail["attachments"]
    assert set(attachment) == ATTACHMENT_KEYS
    assert attachment["email_id"] == str(email_id)
    assert detail["expires_at"].endswith("Z")
    assert all(set(header) == {"name", "value"} for header in detail["headers"])


def test_an_inline_image_shows_the_content_id_its_html_refers_to(api, client, runtime, inbox):
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "a@b.example", inbox.full_address, "Logo"
    mail["Message-ID"] = "<inline-1@sender.example>"
    mail.set_content("See the logo.\n")
    mail.add_alternative('<p><img src="cid:logo.1@sender.example" alt="logo"></p>',
                         subtype="html")
    mail.get_payload()[1].add_related(PNG, maintype="image", subtype="png",
                                      cid="<logo.1@sender.example>")
    mail.add_attachment(b"%PDF-1.4\n", maintype="application", subtype="pdf",
                        filename="plan.pdf")
    [email_id] = deliver(runtime.db, runtime.storage, mail.as_bytes(policy=email.policy.SMTP),
                         recipients=[inbox.full_address])

    detail = api("GET", f"/emails/{email_id}").get_json()
    assert 'src="cid:logo.1@sender.example"' in detail["body_html"]
    image, plan = detail["attachments"]
    assert (image["content_type"], image["content_id"], image["inline"]) == (
        "image/png", "logo.1@sender.example", True)
    assert (plan["filename"], plan["content_id"], plan["inline"]) == ("plan.pdf", None, False)
    assert api("GET", f"/emails/{email_id}/attachments/{image['id']}").data == PNG
    schema = client.get("/api/v1/docs/openapi.json").get_json()["components"]["schemas"][
        "Attachment"]
    assert {"content_id", "inline"} <= set(schema["required"])
    assert schema["properties"]["content_id"]["nullable"] is True


def test_marking_read_and_unread_keeps_the_inbox_counters(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address)
    make_email(runtime, inbox.full_address)

    def counters():
        body = api("GET", f"/inboxes/{inbox.id}").get_json()
        return body["email_count"], body["unread_count"]

    assert counters() == (2, 2)
    response = api("PATCH", f"/emails/{email_id}", json={"is_read": True})
    assert response.status_code == 200 and response.get_json()["is_read"] is True
    api("PATCH", f"/emails/{email_id}", json={"is_read": True})  # twice changes nothing
    assert counters() == (2, 1)
    api("PATCH", f"/emails/{email_id}", json={"is_read": False})
    assert counters() == (2, 2)
    for mistyped in ("maybe", 0, 1, "true"):  # 0 passed as false once
        assert api("PATCH", f"/emails/{email_id}", json={"is_read": mistyped}).status_code == 400
    assert counters() == (2, 2)


def test_mark_all_read_returns_how_many_changed(api, runtime, inbox):
    first = make_email(runtime, inbox.full_address)
    for _ in range(2):
        make_email(runtime, inbox.full_address)
    api("PATCH", f"/emails/{first}", json={"is_read": True})
    response = api("POST", f"/inboxes/{inbox.id}/emails/mark-all-read")
    assert response.get_json() == {"marked": 2}
    assert api("GET", f"/inboxes/{inbox.id}").get_json()["unread_count"] == 0


def test_reading_mail_with_the_view_scope_includes_marking_it_read(client, mail_world, runtime,
                                                                    inbox):
    email_id = make_email(runtime, inbox.full_address)
    make_email(runtime, inbox.full_address)
    key = make_key(client, mail_world, "lead", scopes=["team.emails.view"])

    def call(method, path, **kwargs):
        return client.open(f"/api/v1{path}", method=method, headers=key_auth(key["raw_key"]),
                           **kwargs)

    marked = call("PATCH", f"/emails/{email_id}", json={"is_read": True})
    assert (marked.status_code, marked.get_json()["is_read"]) == (200, True)
    assert call("PATCH", f"/emails/{email_id}", json={"is_read": False}).status_code == 200
    all_read = call("POST", f"/inboxes/{inbox.id}/emails/mark-all-read")
    assert (all_read.status_code, all_read.get_json()) == (200, {"marked": 2})
    refused = call("DELETE", f"/emails/{email_id}")  # deleting is managing
    assert (refused.status_code, refused.get_json()["error"]) == (403, "insufficient scope")


def test_deleting_an_email_updates_counters_and_discards_its_objects_after_commit(api, runtime,
                                                                                 inbox):
    email_id = make_email(runtime, inbox.full_address, attachments=(("p.png", "image/png", PNG),))
    deleted = api("DELETE", f"/emails/{email_id}")
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "Email deleted"})
    assert api("GET", f"/emails/{email_id}").status_code == 404
    assert api("GET", f"/inboxes/{inbox.id}").get_json()["email_count"] == 0
    with runtime.db.session() as session:
        [discard] = session.scalars(select(Event).where(Event.name == OBJECTS_DISCARDED)).all()
    assert len(discard.data["keys"]) == 2


def test_deleting_every_email_of_an_inbox_empties_it_and_keeps_the_inbox(api, runtime, inbox):
    make_email(runtime, inbox.full_address, attachments=(("p.png", "image/png", PNG),))
    read = make_email(runtime, inbox.full_address)
    make_email(runtime, inbox.full_address)
    api("PATCH", f"/emails/{read}", json={"is_read": True})
    deleted = api("DELETE", f"/inboxes/{inbox.id}/emails")
    assert (deleted.status_code, deleted.get_json()) == (
        200, {"message": "Emails deleted", "deleted": 3})
    assert api("GET", f"/inboxes/{inbox.id}/emails").get_json()["total"] == 0
    after = api("GET", f"/inboxes/{inbox.id}").get_json()
    assert (after["email_count"], after["unread_count"]) == (0, 0)
    with runtime.db.session() as session:
        discards = session.scalars(select(Event).where(Event.name == OBJECTS_DISCARDED)).all()
    # Three raw messages and one attachment, handed to the worker once the delete committed.
    assert sum(len(event.data["keys"]) for event in discards) == 4
    again = api("DELETE", f"/inboxes/{inbox.id}/emails")
    assert again.get_json() == {"message": "Emails deleted", "deleted": 0}


def test_deleting_every_email_leaves_the_other_inboxes_alone(api, runtime, mail_world, inbox):
    with runtime.db.transaction() as session:
        other = make_inbox(session, runtime.settings, mail_world, role="lead")
    kept = make_email(runtime, other.full_address)
    make_email(runtime, inbox.full_address)
    assert api("DELETE", f"/inboxes/{inbox.id}/emails").get_json()["deleted"] == 1
    assert api("GET", f"/emails/{kept}").status_code == 200
    assert api("GET", f"/inboxes/{other.id}").get_json()["email_count"] == 1


@pytest.mark.parametrize(("who", "status"), [("owner", 200), ("lead", 200), ("team_member", 200),
                                             ("org_member", 403), ("outsider", 404),
                                             ("stranger", 404)])
def test_who_may_delete_every_email_of_an_inbox(api, runtime, inbox, who, status):
    email_id = make_email(runtime, inbox.full_address)
    assert api("DELETE", f"/inboxes/{inbox.id}/emails", who).status_code == status
    # A refusal changes nothing; another org's inbox is not even found.
    assert api("GET", f"/emails/{email_id}").status_code == (404 if status == 200 else 200)


@pytest.mark.parametrize(("scopes", "status"), [(["team.emails.manage"], 200),
                                                (["team.emails.view"], 403)])
def test_an_api_key_deletes_every_email_with_the_manage_scope(api, client, runtime, mail_world,
                                                              inbox, scopes, status):
    make_email(runtime, inbox.full_address)
    key = make_key(client, mail_world, "lead", scopes=scopes)
    response = client.delete(f"/api/v1/inboxes/{inbox.id}/emails",
                             headers=key_auth(key["raw_key"]))
    assert response.status_code == status
    left = api("GET", f"/inboxes/{inbox.id}").get_json()["email_count"]
    assert left == (0 if status == 200 else 1)


def test_deleting_every_email_is_documented_with_its_permission(client):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    operation = paths["/api/v1/inboxes/{inbox_id}/emails"]["delete"]
    assert operation["x-required-permission"] == "team.emails.manage"
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    name = schema["$ref"].rsplit("/", 1)[-1]
    properties = client.get("/api/v1/docs/openapi.json").get_json()["components"]["schemas"][name]
    assert set(properties["required"]) == {"message", "deleted"}


def test_attachments_download_with_a_safe_disposition(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address,
                          attachments=(("../../évil name.png", "image/png", PNG),))
    [attachment] = api("GET", f"/emails/{email_id}").get_json()["attachments"]
    response = api("GET", f"/emails/{email_id}/attachments/{attachment['id']}")
    assert response.status_code == 200
    assert response.data == PNG
    assert response.headers["Content-Type"] == "image/png"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    disposition = response.headers["Content-Disposition"]
    assert re.fullmatch(r"""attachment; filename="[ -~]+"; filename\*=UTF-8''[^\s/"]+""",
                        disposition), disposition
    assert "/" not in disposition.split("filename", 1)[1]
    missing = api("GET", f"/emails/{email_id}/attachments/{uuid.uuid4()}")
    assert missing.status_code == 404


def test_on_s3_downloads_redirect_to_a_signed_url_that_serves_the_bytes(make_app, runtime,
                                                                          mail_world, inbox,
                                                                          settings, s3_endpoint):
    client = s3_client(s3_settings(settings, s3_endpoint).storage)
    bucket = f"burnbox-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    storage = S3Storage(client, bucket)
    email_id = make_email(runtime, inbox.full_address, storage=storage,
                          attachments=(("p.png", "image/png", PNG),))
    app = make_app(storage=storage).test_client()
    headers = mail_world.headers["team_member"]
    [attachment] = app.get(f"/api/v1/emails/{email_id}", headers=headers).get_json()["attachments"]
    response = app.get(f"/api/v1/emails/{email_id}/attachments/{attachment['id']}",
                       headers=headers)
    assert response.status_code == 302
    assert requests.get(response.headers["Location"], timeout=10).content == PNG


def test_the_files_passthrough_serves_objects_to_readers_of_their_inbox(api, runtime,
                                                                        mail_world, inbox):
    email_id = make_email(runtime, inbox.full_address, attachments=(("p.png", "image/png", PNG),))
    with runtime.db.session() as session:
        email = session.get(Email, email_id)
        raw_key, part_key = email.raw_key, email.attachments[0].storage_key
    raw = api("GET", "/files", query_string={"key": raw_key})
    assert raw.status_code == 200
    assert raw.headers["Content-Type"].startswith("message/rfc822")
    assert api("GET", "/files", query_string={"key": part_key}).data == PNG
    for who in ("outsider", "stranger"):
        assert api("GET", "/files", who, query_string={"key": raw_key}).status_code == 404
    assert api("GET", "/files", query_string={"key": "../../etc/passwd"}).status_code == 404
    assert api("GET", "/files").status_code == 400


@pytest.mark.parametrize(("who", "status"), [("owner", 200), ("lead", 200), ("team_member", 200),
                                             ("org_member", 403), ("outsider", 404),
                                             ("stranger", 404)])
def test_who_may_read_an_email(api, runtime, inbox, who, status):
    email_id = make_email(runtime, inbox.full_address)
    assert api("GET", f"/emails/{email_id}", who).status_code == status
    assert api("GET", f"/inboxes/{inbox.id}/emails", who).status_code == status


def test_unknown_emails_are_404(api):
    assert api("GET", f"/emails/{uuid.uuid4()}").status_code == 404
    assert api("PATCH", f"/emails/{uuid.uuid4()}", json={"is_read": True}).status_code == 404


def test_every_email_operation_declares_one_permission(client):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    declared = {(method, path): operation.get("x-required-permission")
                for path, item in paths.items()
                if path.startswith(("/api/v1/emails", "/api/v1/files"))
                for method, operation in item.items() if method != "parameters"}
    assert declared == {
        ("get", "/api/v1/emails/{email_id}"): "team.emails.view",
        ("get", "/api/v1/emails/{email_id}/html-source"): "team.emails.view",
        ("patch", "/api/v1/emails/{email_id}"): "team.emails.view",
        ("delete", "/api/v1/emails/{email_id}"): "team.emails.manage",
        ("get", "/api/v1/emails/{email_id}/attachments/{attachment_id}"): "team.emails.view",
        ("get", "/api/v1/emails/{email_id}/attachments/{attachment_id}/thumbnail"):
            "team.emails.view",
        ("get", "/api/v1/emails/{email_id}/html-check"): "team.emails.view",
        ("get", "/api/v1/emails/{email_id}/link-check"): "team.emails.view",
        ("post", "/api/v1/emails/{email_id}/link-check"): "team.emails.view",
        ("put", "/api/v1/emails/{email_id}/tags"): "team.emails.view",
        ("post", "/api/v1/emails/{email_id}/tags"): "team.emails.view",
        ("delete", "/api/v1/emails/{email_id}/tags/{name}"): "team.emails.view",
        ("post", "/api/v1/emails/{email_id}/release"): "team.emails.release",
        ("get", "/api/v1/emails/{email_id}/releases"): "team.emails.view",
        ("get", "/api/v1/files"): "team.emails.view",
    }


def test_the_list_built_without_the_schema_is_what_the_schema_would_write(api, runtime, inbox):
    """The list answers with `page_response` for speed; its body must stay the schema's."""
    from models.mail.emails import list_emails
    from web.pagination import page_schema
    from web.views.emails import EmailSummarySchema

    make_email(runtime, inbox.full_address, subject="With a part",
               attachments=(("a.png", "image/png", PNG),))
    make_email(runtime, inbox.full_address, subject="Plain")
    body = api("GET", f"/inboxes/{inbox.id}/emails?per_page=1&page=2").get_json()
    with runtime.db.session() as session:
        page = list_emails(session, inbox.id, page=2, per_page=1)
    assert body == page_schema(EmailSummarySchema)().dump(page)
    assert body["total"] == 2 and body["total_pages"] == 2 and body["data"][0]["has_attachments"]


def test_a_page_past_the_end_still_gives_the_exact_total(api, runtime, inbox):
    """The total comes with the rows (a window count); a page without rows counts apart."""
    for n in range(3):
        make_email(runtime, inbox.full_address, subject=f"n{n}")
    body = api("GET", f"/inboxes/{inbox.id}/emails?per_page=2&page=5").get_json()
    assert (body["data"], body["total"], body["total_pages"]) == ([], 3, 2)
    body = api("GET", f"/inboxes/{inbox.id}/emails?per_page=2&page=2").get_json()
    assert (len(body["data"]), body["total"]) == (1, 3)


# --- the raw source: GET /inboxes/:id/emails/:emailId/raw (a Burnbox extension) ----------------
def test_the_raw_source_is_the_bytes_sent_over_smtp(live, delivering):
    address = delivering.inbox.full_address
    sent = message(address, subject="Raw", html="<p>Hi</p>",
                   attachments=(("p.png", "image/png", PNG),))
    with smtplib.SMTP(*delivering.smtp, timeout=10) as client:
        client.sendmail("shop@sender.example", [address], sent)
    headers = delivering.world.headers["lead"]
    inbox_url = f"{live.base}/api/v1/inboxes/{delivering.inbox.id}"
    waited = requests.get(f"{inbox_url}/emails/wait", params={"timeout": "20s"},
                          headers=headers, timeout=30).json()
    [email] = waited["emails"]
    response = requests.get(f"{inbox_url}/emails/{email['id']}/raw", headers=headers, timeout=10)
    assert response.status_code == 200
    assert response.content == sent
    assert response.headers["Content-Type"] == "message/rfc822"
    assert response.headers["Content-Disposition"] == f'attachment; filename="{email["id"]}.eml"'
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_raw_source_is_found_only_through_the_emails_own_inbox(api, runtime, mail_world,
                                                                   inbox):
    email_id = make_email(runtime, inbox.full_address)
    with runtime.db.transaction() as session:
        other = make_inbox(session, runtime.settings, mail_world, role="lead")
    found = api("GET", f"/inboxes/{inbox.id}/emails/{email_id}/raw")
    assert found.status_code == 200
    # Streamed from storage in blocks, never read whole into memory first.
    assert found.is_streamed
    # Both inboxes are readable, but the e-mail is not the other inbox's.
    wrong = api("GET", f"/inboxes/{other.id}/emails/{email_id}/raw")
    assert wrong.status_code == 404
    assert wrong.get_json()["error"] == "email not found"
    assert api("GET", f"/inboxes/{inbox.id}/emails/{uuid.uuid4()}/raw").status_code == 404


@pytest.mark.parametrize(("who", "status"), [("lead", 200), ("team_member", 200),
                                             ("org_member", 403), ("outsider", 404),
                                             ("stranger", 404)])
def test_who_may_read_the_raw_source(api, runtime, inbox, who, status):
    email_id = make_email(runtime, inbox.full_address)
    assert api("GET", f"/inboxes/{inbox.id}/emails/{email_id}/raw", who).status_code == status


@pytest.mark.parametrize(("scopes", "status"), [(["team.emails.view"], 200),
                                                (["team.inboxes.view"], 403)])
def test_an_api_key_needs_the_view_scope(client, runtime, mail_world, inbox, scopes, status):
    email_id = make_email(runtime, inbox.full_address)
    key = make_key(client, mail_world, scopes=scopes)
    response = client.get(f"/api/v1/inboxes/{inbox.id}/emails/{email_id}/raw",
                          headers=key_auth(key["raw_key"]))
    assert response.status_code == status


def test_the_operation_is_documented_with_its_permission(client):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    operation = paths["/api/v1/inboxes/{inbox_id}/emails/{email_id}/raw"]["get"]
    assert operation["x-required-permission"] == "team.emails.view"
    assert "message/rfc822" in operation["responses"]["200"]["content"]


def test_on_s3_the_raw_source_still_comes_from_the_api(make_app, runtime, mail_world, inbox,
                                                       settings, s3_endpoint):
    """No redirect to the bucket: it would lose the promised headers, and the UI may fetch
    only its own origin."""
    client = s3_client(s3_settings(settings, s3_endpoint).storage)
    bucket = f"burnbox-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    storage = S3Storage(client, bucket)
    email_id = make_email(runtime, inbox.full_address, storage=storage, subject="On s3")
    app = make_app(storage=storage).test_client()
    response = app.get(f"/api/v1/inboxes/{inbox.id}/emails/{email_id}/raw",
                       headers=mail_world.headers["team_member"])
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "message/rfc822"
    with runtime.db.session() as session:
        stored = storage.get(session.get(Email, email_id).raw_key)
    assert response.data == stored and b"Subject: On s3" in stored
