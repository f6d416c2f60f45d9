"""The webhook endpoints: shapes, the secret shown once, URL and event rules naming what they
break, permissions, archived teams, audit, impact, the delivery log and stats."""

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from burnbox.timeutil import utcnow
from models.delivery.webhooks import (
    DeliveryLogEntry,
    Webhook,
    WebhookDelivery,
    create_webhook,
)
from models.platform.audit import AuditEntry
from models.tenancy.members import add_member
from models.tenancy.teams import add_team_member, set_archived
from tests.factories.identity import auth_headers, make_user
from tests.factories.tenancy import make_owned_team

SHAPE = {"id", "team_id", "url", "events", "is_active", "active", "failure_count", "created_at",
         "updated_at"}


@pytest.fixture
def owner(runtime, owned_team):
    with runtime.db.transaction() as session:
        return auth_headers(session, runtime.settings, owned_team.owner)


@pytest.fixture
def path(owned_team):
    return f"/api/v1/orgs/{owned_team.org_id}/teams/{owned_team.team_id}/webhooks"


def _create(client, path, headers, **body):
    return client.post(path, headers=headers, json={
        "url": "https://hooks.example.com/in", "events": ["email.received"], **body})


def test_a_created_webhook_shows_its_secret_once(client, path, owner, owned_team):
    created = _create(client, path, owner, events=["email.received", "inbox.expired"])
    assert created.status_code == 201
    body = created.get_json()
    assert set(body) == SHAPE | {"secret"}
    assert body["secret"].startswith("whsec_") and len(body["secret"]) == 6 + 64
    assert body["team_id"] == str(owned_team.team_id)
    assert body["events"] == ["email.received", "inbox.expired"]
    assert (body["is_active"], body["active"], body["failure_count"]) == (True, True, 0)
    assert body["created_at"].endswith("Z")

    listed = client.get(path, headers=owner).get_json()
    assert listed["total"] == 1 and set(listed["data"][0]) == SHAPE
    patched = client.patch(f"{path}/{body['id']}", headers=owner,
                           json={"is_active": False, "events": ["inbox.created"]})
    assert patched.status_code == 200 and set(patched.get_json()) == SHAPE
    assert (patched.get_json()["is_active"], patched.get_json()["events"]) == (False,
                                                                               ["inbox.created"])


def test_the_creator_may_choose_a_secret_of_1_to_128_printable_characters_shown_once(
        runtime, client, path, owner):
    chosen = "my-own-signing-secret-24"
    created = _create(client, path, owner, secret=chosen)
    assert created.status_code == 201
    assert created.get_json()["secret"] == chosen
    with runtime.db.session() as session:
        assert session.get(Webhook, uuid.UUID(created.get_json()["id"])).secret == chosen
    listed = client.get(path, headers=owner).get_json()
    assert chosen not in str(listed) and "secret" not in listed["data"][0]
    for secret in ("s", "short secret", "s" * 128, "ünïcode ✓"):
        created = _create(client, path, owner, secret=secret)
        assert created.status_code == 201, secret
        assert created.get_json()["secret"] == secret
    for secret in ("s" * 129, "", "tab\there", "new\nline", "nul\x00", "zero\u200bwidth",
                   "\x7f"):
        refused = _create(client, path, owner, secret=secret)
        assert refused.status_code == 400, secret
        assert refused.get_json()["code"] == "validation_error"
        assert set(refused.get_json()["details"]) == {"secret"}
    assert _create(client, path, owner, secret="s" * 129).get_json()["details"] == {
        "secret": ["a secret has 1 to 128 printable characters"]}
    assert client.get(path, headers=owner).get_json()["total"] == 5



def test_active_is_another_name_for_is_active(client, path, owner):
    created = _create(client, path, owner, active=False).get_json()
    assert (created["is_active"], created["active"]) == (False, False)
    patched = client.patch(f"{path}/{created['id']}", headers=owner, json={"active": True})
    assert (patched.get_json()["is_active"], patched.get_json()["active"]) == (True, True)
    same = client.patch(f"{path}/{created['id']}", headers=owner,
                        json={"active": False, "is_active": False})
    assert same.get_json()["is_active"] is False
    both = client.patch(f"{path}/{created['id']}", headers=owner,
                        json={"active": True, "is_active": False})
    assert (both.status_code, both.get_json()["code"]) == (400, "validation_error")
    assert "active" in both.get_json()["details"]
    assert _create(client, path, owner, active=True, is_active=False).status_code == 400


BROKEN_URLS = [
    ("ftp://hooks.example.com/", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("http://localhost/x", "localhost"),
    ("http://LOCALHOST./x", "localhost"),
    ("http://127.0.0.1:8080/x", "loopback"),
    ("http://[::1]/x", "loopback"),
    ("http://0.0.0.0/x", "unspecified"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
    ("http://2852039166/", "169.254.169.254"),  # the metadata address in decimal
    ("http://0x7f000001/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),  # IPv6 forms are judged by the IPv4 they carry
    ("http://[::ffff:169.254.169.254]/", "169.254.169.254"),
    ("http://[2002:a9fe:a9fe::]/", "169.254.169.254"),  # 6to4
    ("http://[::ffff:0.0.0.0]/", "unspecified"),
    ("http://127.0.0.1./x", "loopback"),
    ("http://0x7f.1/", "loopback"),
    # Unicode digits and dots are mapped (IDNA, NFKC) before the literal checks.
    ("http://①②⑦.⓪.⓪.①/h", "loopback"),
    ("http://１２７。０。０。１/", "loopback"),  # noqa: RUF001 (fullwidth on purpose)
    ("http://２１３０７０６４３３/", "loopback"),  # noqa: RUF001 (fullwidth on purpose)
    ("http://⑯⑨.②⑤④.⑯⑨.②⑤④/", "169.254.169.254"),
    ("http://①⓪.⓪.⓪.⑦/", "internal address"),
    ("http://10.0.0.7/", "internal address"),
    ("http://192.168.1.20/", "internal address"),
    ("http://[fd00::1]/", "internal address"),
    ("http://metadata.google.internal/", ".internal"),
    ("http://printer.local/", ".local"),
    ("http://app.localhost/", ".localhost"),
    ("http://user:pass@hooks.example.com/", "credentials"),
    ("http:///no-host", "no host"),
    ("hooks.example.com/in", "only http and https"),
]


def test_a_url_breaking_a_rule_is_a_400_naming_the_rule(make_app, path, owner):
    client = make_app(**{"webhooks.allow_private_targets": False}).test_client()
    for url, rule in BROKEN_URLS:
        response = _create(client, path, owner, url=url)
        assert response.status_code == 400, (url, response.get_json())
        body = response.get_json()
        assert body["code"] == "validation_error"
        assert rule in body["error"] and rule in body["details"]["url"][0], (url, body)


def test_update_applies_the_same_url_rules(make_app, path, owner):
    client = make_app(**{"webhooks.allow_private_targets": False}).test_client()
    hook = _create(client, path, owner).get_json()
    for url in ("http://127.0.0.1/", "http://①②⑦.⓪.⓪.①/h"):
        response = client.patch(f"{path}/{hook['id']}", headers=owner, json={"url": url})
        assert response.status_code == 400 and "loopback" in response.get_json()["error"]
    assert client.get(path, headers=owner).get_json()["data"][0]["url"] == hook["url"]


def test_private_targets_setting_relaxes_only_the_loopback_and_private_rules(make_app, path,
                                                                            owner):
    client = make_app(**{"webhooks.allow_private_targets": True}).test_client()
    for url in ("http://127.0.0.1:9000/in", "http://localhost:9000/in", "http://10.1.2.3/"):
        assert _create(client, path, owner, url=url).status_code == 201
    for url in ("http://169.254.169.254/", "http://0.0.0.0/", "http://svc.internal/",
                "http://[::ffff:169.254.169.254]/", "http://[::ffff:0.0.0.0]/",
                "http://⑯⑨.②⑤④.⑯⑨.②⑤④/"):
        assert _create(client, path, owner, url=url).status_code == 400, url


def test_urls_are_stored_normalised(client, path, owner):
    created = _create(client, path, owner, url="HTTPS://Bücher.Example:8443?q=1#frag").get_json()
    assert created["url"] == "https://xn--bcher-kva.example:8443/?q=1"


@pytest.mark.parametrize("events", [[], ["email.sent"], ["email.received", "nope"], "x"])
def test_events_must_be_among_the_three_names(client, path, owner, events):
    response = _create(client, path, owner, events=events)
    assert response.status_code == 400
    assert "events" in response.get_json()["details"]


def test_view_and_manage_permissions_are_checked(runtime, client, path, owner, owned_team):
    with runtime.db.transaction() as session:
        member = make_user(session)
        add_member(session, owned_team.org_access(session), user_id=member.id, role="member")
        add_team_member(session, owned_team.access(session), user_id=member.id, role="member")
        outsider = make_user(session)
        as_member = auth_headers(session, runtime.settings, member)
        as_outsider = auth_headers(session, runtime.settings, outsider)
    hook = _create(client, path, owner).get_json()
    assert client.get(path, headers=as_member).status_code == 200  # team.webhooks.view
    assert _create(client, path, as_member).status_code == 403  # no team.webhooks.manage
    assert client.delete(f"{path}/{hook['id']}", headers=as_member).status_code == 403
    assert client.get(path, headers=as_outsider).status_code == 404
    assert client.get(path).status_code == 401


def test_an_archived_team_refuses_new_webhooks(runtime, client, path, owner, owned_team):
    with runtime.db.transaction() as session:
        set_archived(session, owned_team.access(session), True)
    assert _create(client, path, owner).status_code == 409


def test_mutations_are_audited_and_the_impact_counts_webhooks(runtime, client, path, owner,
                                                              owned_team):
    hook = _create(client, path, owner).get_json()
    client.patch(f"{path}/{hook['id']}", headers=owner, json={"is_active": False})
    impact = client.get(f"/api/v1/orgs/{owned_team.org_id}/teams/{owned_team.team_id}/impact",
                        headers=owner).get_json()
    assert impact["webhooks"] == 1
    deleted = client.delete(f"{path}/{hook['id']}", headers=owner)
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "Webhook deleted"})
    assert client.delete(f"{path}/{hook['id']}", headers=owner).status_code == 404
    with runtime.db.session() as session:
        entries = session.scalars(select(AuditEntry).where(
            AuditEntry.resource_id == hook["id"]).order_by(AuditEntry.created_at)).all()
    assert [e.action for e in entries] == ["webhook.create", "webhook.update", "webhook.delete"]
    assert all("secret" not in (e.after or {}) for e in entries)


def test_another_teams_webhook_is_not_found(runtime, client, path, owner, owned_team):
    with runtime.db.transaction() as session:
        other = make_owned_team(session, runtime.settings, "Second")
        foreign = create_webhook(session, other.access(session),
                                 url="https://x.example.com/", events=["inbox.created"],
                                 allow_private=False)
    for method, suffix in (("patch", ""), ("delete", ""), ("get", "/deliveries"),
                           ("get", "/stats")):
        response = getattr(client, method)(f"{path}/{foreign.id}{suffix}", headers=owner,
                                           json={} if method == "patch" else None)
        assert response.status_code == 404


def test_the_log_lists_attempts_newest_first_and_the_stats_aggregate_them(
        runtime, client, path, owner):
    hook = _create(client, path, owner).get_json()
    assert client.get(f"{path}/{hook['id']}/stats", headers=owner).get_json() == {
        "total_deliveries": 0, "success_count": 0, "failure_count": 0, "success_rate": 0.0,
        "avg_response_time_ms": None, "last_delivery_at": None}
    now = utcnow()
    with runtime.db.transaction() as session:
        delivery = WebhookDelivery(id=uuid.uuid4(), webhook_id=uuid.UUID(hook["id"]),
                                   event_id=uuid.uuid4(), event="email.received", payload={},
                                   event_created_at=now, state="succeeded", attempts=3,
                                   due_at=now, created_at=now)
        session.add(delivery)
        session.flush()
        for attempt, (ok, status, ms) in enumerate([(False, 500, 40), (False, None, 1000),
                                                    (True, 200, 10)], 1):
            session.add(DeliveryLogEntry(
                id=uuid.uuid4(), delivery_id=delivery.id, webhook_id=delivery.webhook_id,
                event="email.received", attempt=attempt, success=ok, response_status=status,
                response_time_ms=ms, error=None if ok else "failed",
                created_at=now + timedelta(seconds=attempt)))
    log = client.get(f"{path}/{hook['id']}/deliveries?per_page=2", headers=owner).get_json()
    assert (log["total"], log["total_pages"]) == (3, 2)
    assert [entry["attempt"] for entry in log["data"]] == [3, 2]
    assert set(log["data"][0]) == {"id", "delivery_id", "webhook_id", "event", "attempt",
                                   "success", "response_status", "response_time_ms", "error",
                                   "created_at"}
    stats = client.get(f"{path}/{hook['id']}/stats", headers=owner).get_json()
    assert stats == {"total_deliveries": 3, "success_count": 1, "failure_count": 2,
                     "success_rate": 33.33, "avg_response_time_ms": 350.0,
                     "last_delivery_at": log["data"][0]["created_at"]}
