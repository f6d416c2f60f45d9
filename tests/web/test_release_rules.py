"""Auto-release rules: mail arriving over SMTP that an inbox's rule matches reaches a real SMTP
receiver (the relay) once, after storage, through the worker, with the release shown on the
e-mail; an assignment's rule covers the inboxes made through it; a release a guard refuses is
recorded failed; running the rules twice releases nothing twice; the API's permission, key
scopes, audit trail, other orgs' ids and bad input."""

import dataclasses
import smtplib
import uuid

import httpx
import pytest
from sqlalchemy import func, select

from models.domains.assignments import DomainAssignment
from models.mail import release_rules as rules
from models.mail.entities import Email
from models.mail.release import Release, set_allowed_recipients
from models.mail.tags import change_email_tags
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email, message
from tests.factories.tenancy import caller_of
from tests.release_helpers import release_settings
from tests.smtp_sink import SmtpSink
from tests.tasks.conftest import wait_until
from tests.tenancy import world_caller
from tests.web.conftest import audit_entries, mail_service
from web import create_app

INBOX_RULES = "/inboxes/{inbox}/release-rules"
ASSIGNMENT_RULES = "/orgs/{org}/teams/{team}/domains/{domain}/release-rules"
RULE = {"query": "subject:invoice", "recipients": ["qa@company.example"]}


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def _releases(runtime, email_id=None):
    with runtime.db.session() as session:
        query = select(Release).order_by(Release.created_at)
        if email_id is not None:
            query = query.where(Release.email_id == email_id)
        return list(session.scalars(query))


def test_new_mail_a_rule_matches_is_released_once_and_shown_on_the_email(committed_runtime,
                                                                            sink):
    runtime = dataclasses.replace(committed_runtime, settings=release_settings(
        committed_runtime.settings, sink.port))
    with mail_service(runtime) as service:
        web = httpx.Client(base_url=service.base + "/api/v1", headers=service.headers)
        made = web.post(f"/inboxes/{service.inbox.id}/release-rules", json=RULE)
        assert made.status_code == 201, made.json()
        rule = made.json()
        assert rule["inbox_id"] == str(service.inbox.id) and rule["assignment_id"] is None

        address = service.inbox.full_address
        with smtplib.SMTP(*service.smtp, timeout=10) as smtp:
            for subject in ("Your invoice 42", "Welcome aboard"):
                smtp.sendmail("shop@sender.example", [address],
                              message(address, subject=subject))
        wait_until(lambda: len(web.get(f"/inboxes/{service.inbox.id}/emails")
                               .json()["data"]) == 2)
        emails = {one["subject"]: one["id"]
                  for one in web.get(f"/inboxes/{service.inbox.id}/emails").json()["data"]}

        def released():
            return web.get(f"/emails/{emails['Your invoice 42']}/releases").json()["releases"]

        wait_until(lambda: released() and released()[0]["state"] != "queued")
        [done] = released()
        assert done["state"] == "sent" and done["rule_id"] == rule["id"]
        assert done["recipients"] == ["qa@company.example"]
        sink.wait_for(1)
        [envelope] = sink.envelopes
        assert envelope.rcpt_tos == ["qa@company.example"]
        assert web.get(f"/emails/{emails['Welcome aboard']}/releases").json()["releases"] == []

        # The worker runs the rules again (a redelivered message): nothing is released twice.
        with runtime.db.transaction() as session:
            again = rules.apply_release_rules(session, runtime.store, runtime.settings,
                                              [uuid.UUID(value) for value in emails.values()])
        assert again == [] and len(_releases(runtime)) == 1

    [asked] = [entry for entry in audit_entries(runtime, "email.release")
               if entry.after.get("rule_id") == rule["id"]]
    assert asked.actor_id is None and asked.after["recipients"] == ["qa@company.example"]
    assert asked.after["query"] == "subject:invoice"
    [created] = audit_entries(runtime, "email.release_rule_create")
    assert created.after["recipients"] == RULE["recipients"]


# --- what one transaction decides (no worker: the rules are run as the actor runs them) -----

@pytest.fixture
def ruled(runtime, mail_world, inbox, sink):
    """The API on a runtime whose release relay is `sink`, as mail_world's lead."""
    rt = dataclasses.replace(runtime, settings=release_settings(runtime.settings, sink.port))
    app = create_app(runtime=rt)
    app.config["TESTING"] = True
    client = app.test_client()
    return rt, client, world_caller(client, mail_world, "lead")


def _run_rules(runtime, *email_ids):
    with runtime.db.transaction() as session:
        return rules.apply_release_rules(session, runtime.store, runtime.settings,
                                         list(email_ids))


def _rule_count(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(rules.ReleaseRule))


def test_an_assignments_rule_covers_the_inboxes_made_through_it(ruled, mail_world, inbox):
    runtime, _, api = ruled
    made = api("POST", ASSIGNMENT_RULES, json={"query": "tag:billing",
                                               "recipients": ["qa@company.example"]})
    assert made.status_code == 201, made.get_json()
    assert made.get_json()["assignment_id"] == str(mail_world.ids["assignment"])
    assert api("GET", ASSIGNMENT_RULES).get_json()["rules"] == [made.get_json()]
    assert api("GET", INBOX_RULES).get_json()["rules"] == []

    tagged = make_email(runtime, inbox.full_address, subject="Bill", text="x")
    plain = make_email(runtime, inbox.full_address, subject="Bill")
    with runtime.db.transaction() as session:
        change_email_tags(session, session.get(Email, tagged), inbox.team_id, ["billing"])
    [queued] = _run_rules(runtime, tagged, plain)
    assert queued.state == "queued"
    [release] = _releases(runtime, tagged)
    assert str(release.rule_id) == made.get_json()["id"] and _releases(runtime, plain) == []


def test_a_release_a_guard_refuses_is_recorded_failed_on_the_email(ruled, mail_world, inbox):
    runtime, _, api = ruled
    assert api("POST", INBOX_RULES, json=RULE).status_code == 201
    # The team's list narrows after the rule was made: the rule's recipient is no longer
    # allowed, and its release says so instead of leaving.
    with runtime.db.transaction() as session:
        set_allowed_recipients(session, caller_of(mail_world.users["owner"]), runtime.settings,
                               org_id=mail_world.ids["org"], team_id=mail_world.ids["team"],
                               patterns=["dev@company.example"])
    email_id = make_email(runtime, inbox.full_address, subject="Invoice 7")
    [refused] = _run_rules(runtime, email_id)
    assert refused.state == "failed"
    [shown] = api("GET", f"/emails/{email_id}/releases").get_json()["releases"]
    assert shown["state"] == "failed" and shown["attempts"] == 0
    assert shown["relay_reply"].startswith("not released: these recipients are not allowed")
    [failed] = audit_entries(runtime, "email.release_failed")
    assert failed.after["rule_id"] == shown["rule_id"]
    assert _run_rules(runtime, email_id) == []  # refused once is released never


def test_a_rules_releases_count_in_the_teams_budget(runtime, mail_world, inbox, sink):
    rt = dataclasses.replace(runtime, settings=release_settings(
        runtime.settings, sink.port, **{"release.rate_limit": "1/hour"}))
    app = create_app(runtime=rt)
    app.config["TESTING"] = True
    api = world_caller(app.test_client(), mail_world, "lead")
    assert api("POST", INBOX_RULES, json=RULE).status_code == 201
    first = make_email(rt, inbox.full_address, subject="Invoice 1")
    second = make_email(rt, inbox.full_address, subject="Invoice 2")
    states = [made.state for made in _run_rules(rt, first, second)]
    assert states == ["queued", "failed"]
    [spent] = _releases(rt, second)
    assert "at most 1 recipients per hour" in spent.relay_reply
    manual = api("POST", f"/emails/{first}/release", json={"recipients": ["qa@company.example"]})
    assert manual.status_code == 429


# --- the API --------------------------------------------------------------------------------

def test_rules_are_changed_and_deleted_audited(ruled, mail_world):
    runtime, _, api = ruled
    rule = api("POST", INBOX_RULES, json=RULE).get_json()
    path = INBOX_RULES + f"/{rule['id']}"
    changed = api("PATCH", path, json={"query": "from:shop.example"})
    assert changed.status_code == 200
    assert changed.get_json()["query"] == "from:shop.example"
    assert changed.get_json()["recipients"] == RULE["recipients"]
    gone = api("DELETE", path)
    assert gone.status_code == 200 and gone.get_json() == {"message": "Release rule deleted"}
    assert api("DELETE", path).status_code == 404
    [update] = audit_entries(runtime, "email.release_rule_update")
    assert update.before["query"] == "subject:invoice"
    assert update.after["query"] == "from:shop.example" and update.severity == "warning"
    [delete] = audit_entries(runtime, "email.release_rule_delete")
    assert delete.before["query"] == "from:shop.example"


def test_only_holders_of_the_release_permission_change_rules(ruled, mail_world):
    runtime, client, api = ruled
    assert api("POST", INBOX_RULES, who="team_member", json=RULE).status_code == 403
    assert api("POST", ASSIGNMENT_RULES, who="team_member", json=RULE).status_code == 403
    rule = api("POST", INBOX_RULES, json=RULE).get_json()
    # Reading them is for whoever reads the mail: people see where it may go.
    assert api("GET", INBOX_RULES, who="team_member").get_json()["rules"][0]["id"] == rule["id"]
    assert api("GET", ASSIGNMENT_RULES, who="team_member").status_code == 200
    assert api("PATCH", INBOX_RULES + f"/{rule['id']}", who="team_member",
               json={"query": "x"}).status_code == 403
    assert api("DELETE", INBOX_RULES + f"/{rule['id']}", who="team_member").status_code == 403

    path = mail_world.path(INBOX_RULES)
    reader = make_key(client, mail_world, scopes=["team.emails.view"])
    refused = client.post(path, json=RULE, headers=key_auth(reader["raw_key"]))
    assert refused.status_code == 403 and refused.get_json()["code"] == "forbidden"
    assert client.get(path, headers=key_auth(reader["raw_key"])).status_code == 200
    releaser = make_key(client, mail_world, scopes=["team.emails.release"])
    assert client.post(path, json=RULE,
                       headers=key_auth(releaser["raw_key"])).status_code == 201
    assert _rule_count(runtime) == 2


def test_another_orgs_inbox_assignment_and_rule_are_not_found(ruled, mail_world, runtime):
    rt, _, api = ruled
    rule = api("POST", INBOX_RULES, json=RULE).get_json()
    for method, path in [("GET", INBOX_RULES), ("POST", INBOX_RULES),
                         ("PATCH", INBOX_RULES + f"/{rule['id']}"),
                         ("DELETE", INBOX_RULES + f"/{rule['id']}")]:
        answer = api(method, path, who="outsider", json=RULE)
        assert answer.status_code == 404, (method, path, answer.get_json())
    other_team = "/orgs/{other_org}/teams/{other_team}/domains/{other_domain}/release-rules"
    assert api("GET", other_team, who="outsider").status_code == 200
    assert api("PATCH", other_team + f"/{rule['id']}", who="outsider",
               json={"query": "x"}).status_code == 404  # a rule of another owner
    assert api("GET", "/orgs/{org}/teams/{team}/domains/{other_domain}/release-rules"
               ).status_code == 404  # a domain the team has no assignment of
    assert _rule_count(rt) == 1


@pytest.mark.parametrize("body", [
    {"query": "subject:a\x00b", "recipients": ["qa@company.example"]},
    {"query": "subject:\ud800", "recipients": ["qa@company.example"]},
    {"query": "x" * 10_000, "recipients": ["qa@company.example"]},
    {"query": "before:2026-13-99", "recipients": ["qa@company.example"]},
    {"query": "", "recipients": ["qa@company.example"]},
    {"query": 7, "recipients": ["qa@company.example"]},
    {"query": "subject:a", "recipients": []},
    {"query": "subject:a", "recipients": "qa@company.example"},
    {"query": "subject:a", "recipients": ["qa@company.example\x00"]},
    {"query": "subject:a", "recipients": ["not an address"]},
    {"query": "subject:a", "recipients": [f"u{n}@company.example" for n in range(10_000)]},
    {"query": "subject:a"},
], ids=["nul", "surrogate", "10kB", "malformed", "empty", "number", "no-recipients",
        "recipients-string", "nul-recipient", "not-an-address", "10000-recipients",
        "missing"])
def test_bad_rules_are_a_4xx_and_change_nothing(ruled, body):
    runtime, _, api = ruled
    answer = api("POST", INBOX_RULES, json=body)
    assert answer.status_code in (400, 422), answer.get_json()
    assert answer.get_json()["code"] == "validation_error"
    assert _rule_count(runtime) == 0


def test_recipients_no_allow_list_allows_are_refused(ruled):
    runtime, _, api = ruled
    answer = api("POST", INBOX_RULES, json={"query": "subject:a",
                                            "recipients": ["me@gmail.example"]})
    assert answer.status_code == 403
    assert answer.get_json()["details"]["recipients"] == ["me@gmail.example"]
    assert _rule_count(runtime) == 0


def test_an_inbox_has_at_most_max_rules(ruled, mail_world, inbox):
    runtime, _, api = ruled
    owner = rules.RuleOwner(inbox.org_id, inbox.team_id, inbox_id=inbox.id)
    with runtime.db.transaction() as session:
        caller = caller_of(mail_world.users["owner"])
        for n in range(rules.MAX_RULES):
            rules.create_release_rule(session, caller, runtime.settings, owner,
                                      f"subject:n{n}", ["qa@company.example"])
    answer = api("POST", INBOX_RULES, json=RULE)
    assert answer.status_code == 409 and answer.get_json()["code"] == "conflict"
    assert _rule_count(runtime) == rules.MAX_RULES


def test_an_assignments_rules_go_with_it(ruled, mail_world):
    runtime, _, api = ruled
    assert api("POST", ASSIGNMENT_RULES, json=RULE).status_code == 201
    with runtime.db.transaction() as session:
        session.delete(session.get(DomainAssignment, mail_world.ids["assignment"]))
    assert _rule_count(runtime) == 0


def test_without_a_relay_no_rule_is_made(runtime, mail_world, inbox):
    api = world_caller(create_app(runtime=runtime).test_client(), mail_world, "lead")
    answer = api("POST", INBOX_RULES, json=RULE)
    assert answer.status_code == 409 and "release.relay" in answer.get_json()["error"]
    assert _rule_count(runtime) == 0
