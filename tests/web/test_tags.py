"""Tags on e-mails: applied on arrival (X-Tags, plus-addresses of a capture session, the
team's rules) and carried by the event; set, added and taken off through the API; searched
with `tag:` and waited for with `tag=`; the team's tag cloud, renamed and deleted; limits and
bad input are 4xx that change nothing; other orgs' ids are 404."""

from __future__ import annotations

from sqlalchemy import select

from models.events import EMAIL_RECEIVED, Event
from models.mail.emails import WaitCriteria, inbox_scope, waited_emails
from models.mail.entities import Email
from models.mail.ingest.store import accept_message, store_messages
from models.mail.tag_entities import MAX_TAGS_PER_EMAIL, EmailTag, Tag, TagRule
from tests.factories.mail import make_email, message
from tests.web.conftest import audit_entries

TAGS = "/emails/{email}/tags"
TEAM_TAGS = "/orgs/{org}/teams/{team}/tags"
RULES = "/orgs/{org}/teams/{team}/tag-rules"


def _tagged_message(to: str, header: str, **options) -> bytes:
    return f"X-Tags: {header}\r\n".encode() + message(to, **options)


def _deliver(runtime, raw: bytes, recipients: list[str], envelope_to=None) -> list:
    [ids] = store_messages(runtime.db, runtime.storage, [accept_message(
        raw, mail_from="a@b.example", recipients=recipients, envelope_to=envelope_to)])
    return ids


def _email(runtime, email_id) -> Email:
    with runtime.db.session() as session:
        return session.get(Email, email_id)


def _received_event(runtime, email_id) -> dict:
    with runtime.db.session() as session:
        for event in session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)):
            if event.data["email_id"] == str(email_id):
                return event.data
    raise AssertionError("no email.received event")


def test_x_tags_and_a_captured_plus_address_tag_new_mail_and_its_event(runtime, inbox):
    raw = _tagged_message(inbox.full_address, "Signup, beta ,, not*valid, signup")
    [email_id] = _deliver(runtime, raw, [inbox.full_address],
                          envelope_to=["someone+checkout@shop.example"])
    assert _email(runtime, email_id).tags == ["beta", "checkout", "Signup"]
    assert _received_event(runtime, email_id)["tags"] == ["beta", "checkout", "Signup"]
    # An e-mail with no tags says so in its event too.
    [plain] = _deliver(runtime, message(inbox.full_address), [inbox.full_address])
    assert _email(runtime, plain).tags == []
    assert _received_event(runtime, plain)["tags"] == []


def test_a_tag_is_one_per_team_whatever_its_case_and_shows_as_first_written(runtime, inbox):
    first = _deliver(runtime, _tagged_message(inbox.full_address, "Checkout"),
                     [inbox.full_address])[0]
    second = _deliver(runtime, _tagged_message(inbox.full_address, "CHECKOUT"),
                      [inbox.full_address])[0]
    assert _email(runtime, first).tags == _email(runtime, second).tags == ["Checkout"]
    with runtime.db.session() as session:
        assert session.scalar(select(Tag.name).where(Tag.team_id == inbox.team_id)) == "Checkout"
        assert len(session.scalars(select(Tag).where(Tag.team_id == inbox.team_id)).all()) == 1


def _listed_tags(api) -> list:
    return [item["tags"] for item in api("GET", "/inboxes/{inbox}/emails").get_json()["data"]]


def test_a_change_of_tags_is_seen_by_the_next_read_of_a_cached_page(api, runtime, mail_world,
                                                                   inbox):
    # With Redis, a read-only request answers the inbox's first page and the e-mail from the
    # process's caches: a tag written, and a tag renamed, must move what they were read under.
    mail_world.ids["email"] = make_email(runtime, inbox.full_address)
    assert _listed_tags(api) == [[]] and api("GET", "/emails/{email}").get_json()["tags"] == []
    api("PUT", TAGS, json={"tags": ["first"]})
    assert _listed_tags(api) == [["first"]]
    assert api("GET", "/emails/{email}").get_json()["tags"] == ["first"]
    mail_world.ids["tag"] = api("GET", TEAM_TAGS).get_json()["tags"][0]["id"]
    api("PATCH", TEAM_TAGS + "/{tag}", "lead", json={"name": "renamed"})
    assert _listed_tags(api) == [["renamed"]]
    assert api("GET", "/emails/{email}").get_json()["tags"] == ["renamed"]
    api("DELETE", TEAM_TAGS + "/{tag}", "lead")
    assert _listed_tags(api) == [[]]


def test_tags_are_set_added_and_taken_off_through_the_api(api, runtime, mail_world, inbox):
    mail_world.ids["email"] = make_email(runtime, inbox.full_address)
    put = api("PUT", TAGS, json={"tags": ["one", "Two words", "one"]})
    assert put.status_code == 200, put.get_json()
    assert put.get_json()["tags"] == ["one", "Two words"]
    added = api("POST", TAGS, json={"tags": ["three", "ONE"]})
    assert added.get_json()["tags"] == ["one", "three", "Two words"]
    removed = api("DELETE", TAGS + "/two%20WORDS")
    assert removed.status_code == 200 and removed.get_json()["tags"] == ["one", "three"]
    assert api("DELETE", TAGS + "/never-there").get_json()["tags"] == ["one", "three"]
    detail = api("GET", "/emails/{email}").get_json()
    assert detail["tags"] == ["one", "three"]
    [item] = api("GET", "/inboxes/{inbox}/emails").get_json()["data"]
    assert item["tags"] == ["one", "three"]
    cleared = api("PUT", TAGS, json={"tags": []})
    assert cleared.get_json()["tags"] == []
    with runtime.db.session() as session:
        assert session.scalars(select(EmailTag)).all() == []


def test_search_and_wait_find_mail_by_tag(api, runtime, mail_world, inbox):
    tagged = _deliver(runtime, _tagged_message(inbox.full_address, "Checkout Flow"),
                      [inbox.full_address])[0]
    make_email(runtime, inbox.full_address)

    def listed(q):
        response = api("GET", "/inboxes/{inbox}/emails", query_string={"q": q})
        assert response.status_code == 200, response.get_json()
        return [item["id"] for item in response.get_json()["data"]]

    assert listed('tag:"checkout flow"') == [str(tagged)]
    assert str(tagged) not in listed('-tag:"Checkout  Flow"') and len(listed("-tag:x")) == 2
    assert listed("tag:other") == []
    with runtime.db.session() as session:
        found = waited_emails(session, inbox_scope(inbox.id),
                              WaitCriteria(count=5, tag="CHECKOUT flow"))
        assert [email.id for email in found] == [tagged]


def test_team_rules_tag_matching_new_mail(api, runtime, mail_world, inbox):
    made = api("POST", RULES, "lead", json={"query": "subject:receipt", "tags": ["billing"]})
    assert made.status_code == 201, made.get_json()
    matching = make_email(runtime, inbox.full_address, subject="Your receipt")
    other = make_email(runtime, inbox.full_address, subject="Hello")
    assert _email(runtime, matching).tags == ["billing"]
    assert _email(runtime, other).tags == []
    assert _received_event(runtime, matching)["tags"] == ["billing"]
    [rule] = api("GET", RULES).get_json()["rules"]
    assert rule["query"] == "subject:receipt" and rule["tags"] == ["billing"]
    mail_world.ids["rule"] = rule["id"]
    changed = api("PATCH", RULES + "/{rule}", "lead", json={"tags": ["money"]})
    assert changed.status_code == 200 and changed.get_json()["tags"] == ["money"]
    assert api("DELETE", RULES + "/{rule}", "lead").status_code == 200
    assert api("GET", RULES).get_json()["rules"] == []
    assert {entry.action for entry in audit_entries(runtime, "tag_rule.create")} == {
        "tag_rule.create"}


def test_a_rule_is_checked_when_written(api):
    for body in ({"query": "tag:x", "tags": ["y"]}, {"query": "-is:tagged", "tags": ["y"]},
                 {"query": 'subject:"open', "tags": ["y"]}, {"query": "larger:1x", "tags": ["y"]},
                 {"query": "subject:x", "tags": []}, {"query": "subject:x", "tags": ["a*b"]},
                 {"query": "", "tags": ["y"]}):
        response = api("POST", RULES, "lead", json=body)
        assert response.status_code == 400, body
        assert response.get_json()["code"] == "validation_error"
    assert api("POST", RULES, "team_member",
               json={"query": "subject:x", "tags": ["y"]}).status_code == 403


def test_the_tag_cloud_counts_and_a_tag_is_renamed_and_deleted(api, runtime, mail_world,
                                                              inbox):
    first = _deliver(runtime, _tagged_message(inbox.full_address, "alpha, beta"),
                     [inbox.full_address])[0]
    second = _deliver(runtime, _tagged_message(inbox.full_address, "alpha"),
                      [inbox.full_address])[0]
    cloud = api("GET", TEAM_TAGS).get_json()["tags"]
    assert [(tag["name"], tag["count"]) for tag in cloud] == [("alpha", 2), ("beta", 1)]
    mail_world.ids["tag"] = cloud[0]["id"]
    assert api("PATCH", TEAM_TAGS + "/{tag}", json={"name": "x"}).status_code == 403
    taken = api("PATCH", TEAM_TAGS + "/{tag}", "lead", json={"name": "BETA"})
    assert taken.status_code == 409
    renamed = api("PATCH", TEAM_TAGS + "/{tag}", "lead", json={"name": "Zeta"})
    assert renamed.status_code == 200 and renamed.get_json()["count"] == 2
    assert _email(runtime, first).tags == ["beta", "Zeta"]
    assert _email(runtime, second).tags == ["Zeta"]
    deleted = api("DELETE", TEAM_TAGS + "/{tag}", "lead")
    assert deleted.get_json() == {"message": "Tag deleted", "untagged": 2}
    assert _email(runtime, first).tags == ["beta"] and _email(runtime, second).tags == []
    assert [entry.action for entry in audit_entries(runtime, "tag.rename")] == ["tag.rename"]


def test_bad_tags_are_refused_and_change_nothing(api, runtime, mail_world, inbox):
    mail_world.ids["email"] = make_email(runtime, inbox.full_address)
    api("PUT", TAGS, json={"tags": ["kept"]})
    for tags in (["x"] * 10_000, [f"t{n}" for n in range(MAX_TAGS_PER_EMAIL + 1)],
                 ["a\x00b"], ["\udc80"], ["x" * 65], [""], ["semi;colon"], "kept", [7]):
        response = api("PUT", TAGS, json={"tags": tags})
        assert response.status_code == 400, (tags, response.get_json())
        assert response.get_json()["code"] == "validation_error"
    more = [f"t{n}" for n in range(MAX_TAGS_PER_EMAIL)]
    assert api("POST", TAGS, json={"tags": more}).status_code == 400  # 21 with "kept"
    assert _email(runtime, mail_world.ids["email"]).tags == ["kept"]


def test_other_orgs_cannot_see_or_tag(api, runtime, mail_world, inbox):
    mail_world.ids["email"] = make_email(runtime, inbox.full_address)
    for who in ("outsider", "stranger"):
        assert api("PUT", TAGS, who, json={"tags": ["x"]}).status_code == 404, who
        assert api("GET", TEAM_TAGS, who).status_code == 404, who
        assert api("POST", RULES, who, json={"query": "a", "tags": ["b"]}).status_code == 404
    assert _email(runtime, mail_world.ids["email"]).tags == []


def test_a_rule_the_syntax_cannot_read_is_skipped_and_the_mail_stored(runtime, inbox):
    # Rules are checked when written; one stored otherwise (by an older version, by hand)
    # must not turn every message of the team into a 451.
    with runtime.db.transaction() as session:
        session.add(TagRule(team_id=inbox.team_id, query='subject:"never closed', tags=["x"]))
        session.add(TagRule(team_id=inbox.team_id, query="subject:hello", tags=["hi"]))
    [email_id] = _deliver(runtime, message(inbox.full_address, subject="Hello"),
                          [inbox.full_address])
    assert _email(runtime, email_id).tags == ["hi"]


def test_an_email_keeps_its_first_tags_past_the_limit(runtime, inbox):
    names = ", ".join(f"t{n:02}" for n in range(MAX_TAGS_PER_EMAIL + 5))
    [email_id] = _deliver(runtime, _tagged_message(inbox.full_address, names),
                          [inbox.full_address])
    assert _email(runtime, email_id).tags == [f"t{n:02}" for n in range(MAX_TAGS_PER_EMAIL)]
