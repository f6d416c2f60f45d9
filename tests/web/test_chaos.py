"""The chaos rules API: set the whole list, read it with its counters, clear it; for an inbox
and for a domain assignment (the template a catch-all copies); bad input is a 400 naming the
field with nothing changed; who may do what; every change audited."""

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from models.mail.chaos import fire, list_rules
from tests.apikey_helpers import key_auth, make_key
from tests.properties import property_settings
from tests.web.conftest import audit_entries

GREYLIST = {"stage": "rcpt", "action": "reply", "code": 451, "status": "4.7.1",
            "text": "Greylisted", "times": 2}
SLOW = {"stage": "data", "action": "delay", "delay_seconds": 2.5, "percent": 50}
ASSIGNMENT = "/orgs/{org}/teams/{team}/domains/{domain}/chaos"


def test_rules_are_set_read_with_their_counters_and_cleared(api, runtime, inbox):
    response = api("PUT", "/inboxes/{inbox}/chaos", json={"rules": [GREYLIST, SLOW,
                   {"stage": "rcpt", "action": "close", "times": 1},
                   {"stage": "data", "action": "reply", "code": 550, "percent": 10}]})
    assert response.status_code == 200, response.get_json()
    rules = response.get_json()["rules"]
    assert [{k: v for k, v in rule.items() if k != "id"} for rule in rules] == [
        {**GREYLIST, "fired": 0, "spent": False, "last_fired_at": None},
        {**SLOW, "fired": 0, "spent": False, "last_fired_at": None},
        {"stage": "rcpt", "action": "close", "times": 1, "fired": 0, "spent": False,
         "last_fired_at": None},
        {"stage": "data", "action": "reply", "code": 550, "status": "5.3.0",
         "text": "Chaos rule", "percent": 10, "fired": 0, "spent": False,
         "last_fired_at": None}]
    with runtime.db.transaction() as session:  # as mailin counts a firing
        assert fire(session, list_rules(session, inbox_id=inbox.id)[2].id)
        assert not fire(session, list_rules(session, inbox_id=inbox.id)[2].id)  # spent
    read = api("GET", "/inboxes/{inbox}/chaos").get_json()["rules"]
    assert (read[2]["fired"], read[2]["spent"]) == (1, True)
    assert read[2]["last_fired_at"].endswith("Z")
    [entry] = audit_entries(runtime, "inbox.chaos_set")
    assert entry.resource_id == str(inbox.id) and entry.resource_name == inbox.full_address
    assert entry.after["rules"][0] == {**GREYLIST}
    assert entry.category == "inbox"

    cleared = api("DELETE", "/inboxes/{inbox}/chaos")
    assert (cleared.status_code, cleared.get_json()) == (200, {"message": "Chaos rules cleared"})
    assert api("GET", "/inboxes/{inbox}/chaos").get_json() == {"rules": []}
    [entry] = audit_entries(runtime, "inbox.chaos_clear")
    assert len(entry.before["rules"]) == 4 and entry.after["rules"] == []


@pytest.mark.parametrize(("rule", "field"), [
    ({**GREYLIST, "code": 250}, "code"),
    ({**GREYLIST, "code": 600}, "code"),
    ({"stage": "rcpt", "action": "reply", "times": 1}, "code"),
    ({**GREYLIST, "status": "5.7.1"}, "status"),
    ({**GREYLIST, "text": "two\r\nlines"}, "text"),
    ({**SLOW, "delay_seconds": 61}, "delay_seconds"),
    ({**SLOW, "delay_seconds": 0}, "delay_seconds"),
    ({**SLOW, "percent": 101}, "percent"),
    ({**SLOW, "percent": -1}, "percent"),
    ({**GREYLIST, "times": 0}, "times"),
    ({**GREYLIST, "percent": 5}, "times"),  # both triggers
    ({"stage": "rcpt", "action": "close"}, "times"),  # neither
    ({**GREYLIST, "stage": "helo"}, "stage"),
    ({**GREYLIST, "action": "bounce"}, "action"),
])
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(api, runtime, inbox, rule,
                                                                 field):
    assert api("PUT", "/inboxes/{inbox}/chaos", json={"rules": [SLOW]}).status_code == 200
    response = api("PUT", "/inboxes/{inbox}/chaos", json={"rules": [SLOW, rule][1:]})
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error" and field in body["details"]["rules"]["0"], body
    assert [r["action"] for r in api("GET", "/inboxes/{inbox}/chaos").get_json()["rules"]] == [
        "delay"]


@pytest.mark.parametrize("path", ["/inboxes/{inbox}/chaos", ASSIGNMENT])
@pytest.mark.parametrize(("rule", "field"), [
    ({**GREYLIST, "code": 451.5}, "code"),
    ({**GREYLIST, "code": "451"}, "code"),
    ({**GREYLIST, "times": 2.5}, "times"),
    ({**GREYLIST, "times": True}, "times"),
    ({**SLOW, "percent": 50.5}, "percent"),
    ({**SLOW, "percent": False}, "percent"),
    ({**SLOW, "delay_seconds": 1e-9}, "delay_seconds"),
    ({**SLOW, "delay_seconds": 0.0005}, "delay_seconds"),
    ({**SLOW, "delay_seconds": 0.0015}, "delay_seconds"),
])
def test_what_cannot_be_kept_as_written_is_refused_not_rounded(api, inbox, path, rule, field):
    # Each of these was stored otherwise than written: 451.5 as 451, 50.5 as 50, true as 1
    # time, a delay of 1e-9 s as 0 (a delay that does not delay).
    response = api("PUT", path, "lead", json={"rules": [rule]})
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["code"] == "validation_error" and field in body["details"]["rules"]["0"], body
    assert api("GET", path, "lead").get_json() == {"rules": []}


@pytest.mark.parametrize("path", ["/inboxes/{inbox}/chaos", ASSIGNMENT])
def test_whole_numbers_written_with_a_point_and_whole_milliseconds_are_kept(api, inbox, path):
    response = api("PUT", path, "lead", json={"rules": [
        {**GREYLIST, "code": 451.0, "times": 2.0},
        {**SLOW, "delay_seconds": 0.001, "percent": 50.0},
        {**SLOW, "delay_seconds": 0.1, "percent": 1}]})
    assert response.status_code == 200, response.get_json()
    kept = response.get_json()["rules"]
    assert [(rule.get("code"), rule.get("times"), rule.get("percent"), rule.get("delay_seconds"))
            for rule in kept] == [(451, 2, None, None), (None, None, 50, 0.001),
                                  (None, None, 1, 0.1)]


def test_a_body_that_is_not_a_list_of_rules_is_a_400(api, inbox):
    for body in ({}, {"rules": "x"}, {"rules": [{"stage": "rcpt", "action": "reply",
                                                 "code": "soon", "times": 1}]}):
        response = api("PUT", "/inboxes/{inbox}/chaos", json=body)
        assert response.status_code == 400, body
        assert "rules" in response.get_json()["details"]


def test_who_may_read_and_set_an_inboxs_rules(api, client, mail_world, inbox):
    body = {"rules": [GREYLIST]}
    for who in ("lead", "team_member", "owner"):
        assert api("PUT", "/inboxes/{inbox}/chaos", who, json=body).status_code == 200
    for who in ("outsider", "stranger"):  # another org's inbox is not found
        assert api("GET", "/inboxes/{inbox}/chaos", who).status_code == 404
        assert api("PUT", "/inboxes/{inbox}/chaos", who, json=body).status_code == 404
    viewer = make_key(client, mail_world, scopes=["team.inboxes.view"])
    path = mail_world.path("/inboxes/{inbox}/chaos")
    assert client.get(path, headers=key_auth(viewer["raw_key"])).status_code == 200
    assert client.put(path, json=body,
                      headers=key_auth(viewer["raw_key"])).status_code == 403
    manager = make_key(client, mail_world, scopes=["team.inboxes.manage"])
    assert client.delete(path, headers=key_auth(manager["raw_key"])).status_code == 200


def test_an_assignments_template_rules_need_domain_management(api, runtime, mail_world):
    body = {"rules": [GREYLIST]}
    assert api("PUT", ASSIGNMENT, "team_member", json=body).status_code == 403
    response = api("PUT", ASSIGNMENT, "lead", json=body)
    assert response.status_code == 200, response.get_json()
    assert api("GET", ASSIGNMENT, "team_member").get_json()["rules"][0]["code"] == 451
    [entry] = audit_entries(runtime, "domain_assignment.chaos_set")
    assert entry.resource_id == str(mail_world.ids["assignment"])
    assert entry.resource_name == mail_world.domain
    other = "/orgs/{org}/teams/{team}/domains/{other_domain}/chaos"  # not the team's domain
    assert api("GET", other, "lead").status_code == 404
    assert api("GET", ASSIGNMENT, "outsider").status_code == 404
    assert api("DELETE", ASSIGNMENT, "lead").get_json() == {"message": "Chaos rules cleared"}
    assert api("GET", ASSIGNMENT, "lead").get_json() == {"rules": []}
    assert len(audit_entries(runtime, "domain_assignment.chaos_clear")) == 1


FIELDS = {"stage": st.sampled_from(["rcpt", "data", "RCPT", ""]),
          "action": st.sampled_from(["reply", "delay", "close", "x"]),
          "code": st.integers(-10, 10**20) | st.sampled_from([421, 451, 550, 599]),
          "status": st.text(max_size=12) | st.sampled_from(["4.7.1", "5.1.1", "4.\u0663.1"]),
          "text": st.text(max_size=250),
          "delay_seconds": st.floats() | st.integers(-1, 10**6),
          "times": st.integers(-5, 10**12) | st.booleans() | st.none(),
          "percent": st.integers(-5, 200) | st.floats() | st.none()}
rules = st.lists(st.fixed_dictionaries({}, optional=FIELDS), max_size=3)


@property_settings(60, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])
@given(rules)
def test_any_rules_are_stored_or_refused_with_a_400_never_a_5xx(api, inbox, drawn):
    response = api("PUT", "/inboxes/{inbox}/chaos", json={"rules": drawn})
    assert response.status_code in (200, 400), response.get_json()
    if response.status_code == 200:
        for rule in response.get_json()["rules"]:
            if rule["action"] == "reply":  # what mailin will write on the wire
                line = f"{rule['code']} {rule['status']} {rule['text']}"
                assert line.isascii() and line.isprintable()


def _documented(name: str) -> Any:
    """The JSON block `chaos:<name>` of docs/mail.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "mail.md").read_text(encoding="utf-8")
    block = text[text.index(f"```json chaos:{name}\n") + len(f"```json chaos:{name}\n"):]
    return json.loads(block[:block.index("```")])


def test_the_documented_put_body_is_answered_with_the_documented_rules(api, inbox):
    response = api("PUT", "/inboxes/{inbox}/chaos", json=_documented("put"))
    assert response.status_code == 200, response.get_json()
    without_ids = [{key: value for key, value in rule.items() if key != "id"}
                   for rule in response.get_json()["rules"]]
    assert without_ids == [{key: value for key, value in rule.items() if key != "id"}
                           for rule in _documented("answer")["rules"]]
