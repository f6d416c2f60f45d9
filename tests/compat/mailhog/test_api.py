"""The MailHog-compatible API route by route (compat.mailhog.views): MailHog's answers on a
scope's mail, the scope and its permissions, Jim as the scope's chaos rules, release only
through Burnbox's release path, and bad input that never reaches a 500 nor another tenant."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from hypothesis import given
from sqlalchemy import select

from compat.caches import InboxScopeReads
from compat.mailhog import jim as jims
from models.mail.chaos import ChaosRule
from models.mail.entities import Email
from tests.apikey_helpers import make_key
from tests.factories.mail import make_email, make_inbox
from tests.tenancy import world_caller
from tests.web.test_fuzz_inputs import FUZZ, bodies, query_values

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
EVERYTHING = ["team.emails.view", "team.emails.manage", "team.emails.release",
              "team.inboxes.view", "team.inboxes.manage", "team.domains.view",
              "team.domains.manage"]
TEN_KB = "x" * 10_240
# 10 kB of digits: more than Python converts to an int (4,300), and than any int64 holds.
TEN_KB_DIGITS = "9" * 10_240


def basic(key: str, user: str = "anyone") -> dict[str, str]:
    """HTTP Basic with the key as the password, as MailHog's clients send it."""
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode()}


@pytest.fixture
def inbox(runtime, mail_world):
    """An inbox of mail_world's team, made by its lead."""
    with runtime.db.transaction() as session:
        return make_inbox(session, runtime.settings, mail_world, role="lead")


@pytest.fixture
def api(client, mail_world):
    """The native API as mail_world's team lead (`api(method, path, who=...)`)."""
    return world_caller(client, mail_world, "lead")


@pytest.fixture
def key(client, mail_world) -> str:
    """A key of mail_world's team made by its lead, with every scope these tests use."""
    return make_key(client, mail_world, "lead", scopes=EVERYTHING)["raw_key"]


@pytest.fixture
def mailbox(runtime, mail_world, inbox):
    """The inbox with three e-mails, oldest first: plain, HTML, an attachment; their ids."""
    ids = [make_email(runtime, inbox.full_address, subject="First", mail_from="app@shop.example",
                      sender="Shop <app@shop.example>"),
           make_email(runtime, inbox.full_address, subject="Second", html="<p>second</p>",
                      text="Second body 771204\n"),
           make_email(runtime, inbox.full_address, subject="Third",
                      attachments=(("chart.png", "image/png", PNG),))]
    return ids


def decoded(response) -> Any:
    """A compat answer's JSON: MailHog says `text/json`, which Flask's test client does not
    read as JSON."""
    return json.loads(response.data)


def base(inbox) -> str:
    return f"/compat/mailhog/inboxes/{inbox.id}/api"


def test_v1_lists_every_message_newest_first_in_mailhogs_shape(client, key, inbox, mailbox):
    response = client.get(f"{base(inbox)}/v1/messages", headers=basic(key))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/json"
    items = decoded(response)
    assert [item["ID"] for item in items] == [str(i) for i in reversed(mailbox)]
    assert [item["Content"]["Headers"]["Subject"] for item in items] == [
        ["Third"], ["Second"], ["First"]]
    first = items[-1]
    assert first["From"] == {"Relays": None, "Mailbox": "app", "Domain": "shop.example",
                             "Params": ""}
    assert first["Raw"]["To"] == [inbox.full_address]
    assert first["Raw"]["From"] == "app@shop.example"
    assert first["Raw"]["Data"].startswith("From: ")


def test_v1_gets_one_message_and_its_download_is_the_stored_message(
        client, key, inbox, mailbox, runtime):
    one = client.get(f"{base(inbox)}/v1/messages/{mailbox[0]}", headers=basic(key))
    assert one.status_code == 200
    assert decoded(one)["ID"] == str(mailbox[0])
    download = client.get(f"{base(inbox)}/v1/messages/{mailbox[0]}/download",
                          headers=basic(key))
    assert download.status_code == 200
    assert download.mimetype == "message/rfc822"
    assert download.headers["Content-Disposition"] == f'attachment; filename="{mailbox[0]}.eml"'
    with runtime.db.session() as session:
        raw_key = session.get(Email, mailbox[0]).raw_key
    with runtime.storage.open(raw_key) as stored:
        assert download.data == stored.read()
    assert decoded(one)["Raw"]["Data"] == download.data.decode()


def test_a_mime_part_downloads_decoded_as_an_attachment_never_inline(
        client, key, inbox, mailbox):
    parts = decoded(client.get(f"{base(inbox)}/v1/messages/{mailbox[2]}",
                               headers=basic(key)))["MIME"]["Parts"]
    index = next(n for n, part in enumerate(parts)
                 if part["Headers"].get("Content-Type", [""])[0].startswith("image/png"))
    response = client.get(f"{base(inbox)}/v1/messages/{mailbox[2]}/mime/part/{index}/download",
                          headers=basic(key))
    assert response.status_code == 200
    assert response.data == PNG
    assert response.mimetype == "image/png"
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="{mailbox[2]}-part-{index}"')
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    for bad in ("99", "-1", "x", "1.0", TEN_KB, TEN_KB_DIGITS):
        missing = client.get(f"{base(inbox)}/v1/messages/{mailbox[2]}/mime/part/{bad}/download",
                             headers=basic(key))
        assert missing.status_code == 404, bad


def test_v2_pages_with_start_and_limit_as_mailhog_reads_them(client, key, inbox, mailbox):
    def page(query: str) -> dict:
        response = client.get(f"{base(inbox)}/v2/messages{query}", headers=basic(key))
        assert response.status_code == 200
        return decoded(response)

    everything = page("")
    assert (everything["total"], everything["count"], everything["start"]) == (3, 3, 0)
    second = page("?start=1&limit=1")
    assert (second["total"], second["count"], second["start"]) == (3, 1, 1)
    assert second["items"][0]["ID"] == str(mailbox[1])
    # What Go's ParseInt refuses, or a value below 1, leaves the defaults.
    for query in ("?start=-4&limit=0", "?start=x&limit=1_0", "?start=99999999999999999999",
                  f"?limit={TEN_KB}", f"?start={TEN_KB_DIGITS}", f"?limit={TEN_KB_DIGITS}",
                  "?start=%00"):
        assert page(query)["count"] == 3, query
    assert page("?start=3")["items"] == []


def test_v2_searches_from_to_and_containing(client, key, inbox, mailbox):
    def search(kind: str, query: str) -> list[str]:
        response = client.get(f"{base(inbox)}/v2/search", query_string={
            "kind": kind, "query": query}, headers=basic(key))
        assert response.status_code == 200, response.data
        assert decoded(response)["total"] == decoded(response)["count"]
        return [item["ID"] for item in decoded(response)["items"]]

    assert search("from", "app@shop") == [str(mailbox[0])]
    assert search("to", inbox.full_address) == [str(i) for i in reversed(mailbox)]
    assert search("containing", "771204") == [str(mailbox[1])]
    assert search("containing", 'quote " 100% _') == []
    assert search("containing", TEN_KB) == []
    for kind, query in (("subject", "x"), ("", "x"), ("from", "")):
        refused = client.get(f"{base(inbox)}/v2/search", query_string={
            "kind": kind, "query": query}, headers=basic(key))
        assert refused.status_code == 400 and refused.data == b""
    refused = client.get(f"{base(inbox)}/v2/search?kind=containing&query=a%00b",
                         headers=basic(key))
    assert refused.status_code == 400 and refused.mimetype == "text/plain"


def test_deleting_one_message_and_then_all_stays_in_the_scope(
        client, key, runtime, mail_world, inbox, mailbox):
    other = make_inbox_with_mail(runtime, mail_world)
    assert client.delete(f"{base(inbox)}/v1/messages/{mailbox[0]}",
                         headers=basic(key)).status_code == 200
    assert client.delete(f"{base(inbox)}/v1/messages/{mailbox[0]}",
                         headers=basic(key)).status_code == 404
    response = client.delete(f"{base(inbox)}/v1/messages", headers=basic(key))
    assert response.status_code == 200 and response.data == b""
    with runtime.db.session() as session:
        left = set(session.scalars(select(Email.inbox_id)))
    assert left == {other.id}


# Query values of any bytes (a lone surrogate arrives as its UTF-8 bytes, which the server
# reads as U+FFFD), and bodies of any JSON or none, as the native API's fuzzing sends them.
@pytest.mark.parametrize("path", ["/v2/search?kind=containing&query=", "/v2/search?kind=to&query=",
                                  "/v2/messages?start=", "/v2/messages?limit=",
                                  "/v1/messages/", "/v1/messages/0/mime/part/"])
def test_no_query_value_or_path_segment_gets_a_5xx(client, key, inbox, mailbox, path):
    @FUZZ
    @given(value=query_values)
    def send(value: bytes) -> None:
        answer = client.get(f"{base(inbox)}{path}{quote_from_bytes(value, safe='')}",
                            headers=basic(key))
        assert answer.status_code < 500, answer.data

    send()


@pytest.mark.parametrize(("method", "path", "fields"), [
    ("POST", "/v1/messages/{email}/release", ("Email", "Name", "Host", "Port", "Save")),
    ("POST", "/v2/jim", jims.FIELDS), ("PUT", "/v2/jim", jims.FIELDS)])
def test_no_body_gets_a_5xx(relayed, key, inbox, mailbox, method, path, fields):
    @FUZZ
    @given(body=bodies(fields))
    def send(body: bytes) -> None:
        answer = relayed.open(base(inbox) + path.format(email=mailbox[0]), method=method,
                              data=body, headers={**basic(key),
                                                  "Content-Type": "application/json"})
        assert answer.status_code < 500, answer.data

    send()


def make_inbox_with_mail(runtime, mail_world):
    """Another inbox of the same team, holding one e-mail."""
    with runtime.db.transaction() as session:
        other = make_inbox(session, runtime.settings, mail_world, role="lead")
    make_email(runtime, other.full_address, subject="Elsewhere")
    return other


def test_a_catch_all_scope_holds_every_inbox_of_its_assignment(
        client, key, runtime, mail_world, inbox, mailbox):
    other = make_inbox_with_mail(runtime, mail_world)
    scope = f"/compat/mailhog/catch-all/{mail_world.ids['assignment']}/api"
    listed = decoded(client.get(f"{scope}/v2/messages", headers=basic(key)))
    assert listed["total"] == 4
    assert {item["Raw"]["To"][0] for item in listed["items"]} == {
        inbox.full_address, other.full_address}
    foreign = f"/compat/mailhog/catch-all/{mail_world.ids['other_assignment']}/api"
    assert client.get(f"{foreign}/v2/messages", headers=basic(key)).status_code == 404


def test_no_key_a_wrong_key_another_teams_scope_and_a_missing_scope_are_refused(
        client, key, runtime, mail_world, inbox, mailbox):
    url = f"{base(inbox)}/v2/messages"
    for headers in ({}, basic("bb_" + "0" * 64), {"Authorization": "Basic !!!"},
                    {"Authorization": "Bearer nope"}):
        refused = client.get(url, headers=headers)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"] == 'Basic realm="Burnbox"'
        assert refused.mimetype == "text/plain"
    assert client.get(url, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    with runtime.db.transaction() as session:
        foreign = make_inbox(session, runtime.settings, mail_world, role="outsider",
                             assignment="other_assignment")
    answers = [client.get(f"/compat/mailhog/inboxes/{scope_id}/api/v2/messages",
                          headers=basic(key))
               for scope_id in (foreign.id, uuid.uuid4(), "not-a-uuid", TEN_KB, "%00",
                                "%ED%A0%80")]
    assert {(answer.status_code, answer.data) for answer in answers} == {
        (404, b"404 page not found\n")}


def test_a_key_without_the_permission_gets_403_and_changes_nothing(
        client, runtime, mail_world, inbox, mailbox):
    reader = make_key(client, mail_world, "lead", scopes=["team.emails.view"])["raw_key"]
    for method, path in (("DELETE", "/v1/messages"), ("DELETE", f"/v1/messages/{mailbox[0]}"),
                         ("POST", f"/v1/messages/{mailbox[0]}/release"), ("POST", "/v2/jim"),
                         ("GET", "/v2/outgoing-smtp")):
        refused = client.open(base(inbox) + path, method=method, headers=basic(reader),
                              json={"Email": "qa@company.example"})
        assert refused.status_code == 403, path
        assert refused.mimetype == "text/plain"
    with runtime.db.session() as session:
        assert len(session.scalars(select(Email.id)).all()) == 3
        assert session.scalars(select(ChaosRule.id)).all() == []


def test_message_ids_that_are_not_the_scopes_are_404_and_change_nothing(
        client, key, runtime, mail_world, inbox, mailbox):
    with runtime.db.transaction() as session:
        foreign = make_inbox(session, runtime.settings, mail_world, role="outsider",
                             assignment="other_assignment")
    theirs = make_email(runtime, foreign.full_address, subject="Theirs")
    for message_id in (theirs, uuid.uuid4(), "nope", TEN_KB, "%00", "%ED%A0%80", "..%2F.."):
        for method, suffix in (("GET", ""), ("DELETE", ""), ("GET", "/download"),
                               ("GET", "/mime/part/0/download"), ("POST", "/release")):
            answer = client.open(f"{base(inbox)}/v1/messages/{message_id}{suffix}",
                                 method=method, headers=basic(key), json={"Email": "a@b.c"})
            assert answer.status_code == 404, (message_id, method, suffix, answer.data)
    with runtime.db.session() as session:
        assert len(session.scalars(select(Email.id)).all()) == 4


def test_jim_is_the_inboxs_chaos_rules(client, key, runtime, inbox, api):
    jim = f"{base(inbox)}/v2/jim"
    assert client.get(jim, headers=basic(key)).status_code == 404
    assert client.delete(jim, headers=basic(key)).status_code == 404
    assert client.put(jim, headers=basic(key), json={}).status_code == 404
    # No readable body: MailHog's defaults.
    assert client.post(jim, headers=basic(key), data="not json").status_code == 201
    defaults = decoded(client.get(jim, headers=basic(key)))
    assert defaults == {"DisconnectChance": 0.0, "AcceptChance": 0.99, "LinkSpeedAffect": 0.0,
                        "LinkSpeedMin": 0.0, "LinkSpeedMax": 0.0, "RejectSenderChance": 0.05,
                        "RejectRecipientChance": 0.05, "RejectAuthChance": 0.0}
    assert client.post(jim, headers=basic(key), json={}).status_code == 400
    changed = client.put(jim, headers=basic(key), json={
        "rejectrecipientchance": 0.25, "DisconnectChance": 1, "AcceptChance": 1,
        "Unknown": "ignored"})
    assert changed.status_code == 200
    assert decoded(client.get(jim, headers=basic(key)))["RejectRecipientChance"] == 0.25
    native = api("GET", f"/inboxes/{inbox.id}/chaos").get_json()["rules"]
    assert [(rule["stage"], rule["action"], rule.get("code"), rule["percent"])
            for rule in native] == [("rcpt", "reply", 550, 25), ("data", "close", None, 100)]
    for bad in ({"AcceptChance": "high"}, {"DisconnectChance": True}, [1], "x"):
        assert client.put(jim, headers=basic(key), json=bad).status_code == 400
    for text in ('{"AcceptChance": NaN}', '{"AcceptChance": 1' + "0" * 4000 + "}",
                 '{"AcceptChance": 1' + "0" * 5000 + "}"):
        assert client.put(jim, headers=basic(key), data=text).status_code == 400
    assert client.delete(jim, headers=basic(key)).status_code == 200
    assert client.get(jim, headers=basic(key)).status_code == 404
    assert api("GET", f"/inboxes/{inbox.id}/chaos").get_json()["rules"] == []


def test_a_catch_all_scopes_jim_is_its_assignments_template_rules(
        client, key, mail_world, api):
    jim = f"/compat/mailhog/catch-all/{mail_world.ids['assignment']}/api/v2/jim"
    # As Go decodes it, a field left out is 0: AcceptChance 1 keeps connections accepted.
    assert client.post(jim, headers=basic(key), json={"RejectSenderChance": 0.5,
                                                      "AcceptChance": 1}).status_code == 201
    native = api("GET", "/orgs/{org}/teams/{team}/domains/{domain}/chaos").get_json()["rules"]
    assert [(rule["stage"], rule["code"], rule["text"], rule["percent"]) for rule in native] == [
        ("data", 550, "Invalid sender", 50)]


def test_release_without_a_relay_and_outgoing_smtp_without_one(client, key, inbox, mailbox):
    refused = client.post(f"{base(inbox)}/v1/messages/{mailbox[0]}/release",
                          headers=basic(key), json={"Email": "qa@company.example"})
    assert refused.status_code == 409 and refused.mimetype == "text/plain"
    listed = client.get(f"{base(inbox)}/v2/outgoing-smtp", headers=basic(key))
    assert listed.status_code == 200 and decoded(listed) == {}


@pytest.fixture
def relayed(make_app):
    """A client of an app with a release relay that logs in (on a closed port: these tests
    only queue releases, no worker delivers them)."""
    return make_app(**{
        "release.relay": "own", "release.relay_host": "127.0.0.1", "release.relay_port": 9,
        "release.relay_tls": "none", "release.allowed_recipients": ("*@company.example",),
        "release.relay_username": "relay-user", "release.relay_password": "s3cret"}
    ).test_client()


def test_release_goes_through_burnboxs_guards_whatever_host_it_names(
        relayed, key, runtime, inbox, mailbox):
    url = f"{base(inbox)}/v1/messages/{mailbox[0]}/release"
    for body in ("not json", "[]", '{"Email": 5}', '{"Email": "a\\u0000b"}',
                 '{"Email": "\\ud800"}', '{"Email": "qa@company.example", "Name": "other"}'):
        refused = relayed.post(url, headers={**basic(key), "Content-Type": "application/json"},
                               data=body)
        assert refused.status_code == 400, body
    outside = relayed.post(url, headers=basic(key), json={"email": "someone@elsewhere.example",
                                                           "host": "127.0.0.1", "port": "25"})
    assert outside.status_code == 403
    queued = relayed.post(url, headers=basic(key), json={
        "Email": "qa@company.example", "Host": "smtp.attacker.example", "Port": "25",
        "Username": "u", "Password": "p", "Mechanism": "PLAIN", "Name": "burnbox"})
    assert queued.status_code == 200 and queued.data == b""
    listed = decoded(relayed.get(f"{base(inbox)}/v2/outgoing-smtp", headers=basic(key)))
    assert listed == {"burnbox": {"Name": "burnbox", "Save": False, "Email": "",
                                  "Host": "127.0.0.1", "Port": "9", "Username": "",
                                  "Password": "", "Mechanism": ""}}


def test_a_polled_list_and_message_show_new_and_deleted_mail_at_once(
        client, key, runtime, inbox, mailbox):
    """On PostgreSQL + Redis the inbox scope's reads are kept per process under the inbox's
    revision: a new message and a deletion must show on the very next poll."""
    def listed() -> list[str]:
        return [item["ID"] for item in decoded(client.get(f"{base(inbox)}/v2/messages",
                                                          headers=basic(key)))["items"]]

    def read(email_id) -> int:
        return client.get(f"{base(inbox)}/v1/messages/{email_id}", headers=basic(key)
                          ).status_code

    assert listed() == listed() == [str(i) for i in reversed(mailbox)]
    assert read(mailbox[0]) == read(mailbox[0]) == 200
    kept = InboxScopeReads.of(runtime.caches).peek((inbox.id, ("mailhog page", 0, 50)))
    assert (kept is not None) == bool(runtime.settings.redis.url)
    new = make_email(runtime, inbox.full_address, subject="Fourth")
    assert listed()[0] == str(new)
    assert client.delete(f"{base(inbox)}/v1/messages/{mailbox[0]}",
                         headers=basic(key)).status_code == 200
    assert str(mailbox[0]) not in listed()
    assert read(mailbox[0]) == 404
