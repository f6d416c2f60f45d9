"""The inbox caches (models.mail.caches) across processes: a polled inbox page, an e-mail's
detail and an inbox are answered without SQL while nothing about the inbox changed, and a
change committed by another process (mail arriving, an e-mail read or deleted, the inbox
extended or deleted, the caller removed from the team) is seen at its very next request.

Each "process" is an app on its own runtime: the same database and key-value store, caches of
its own, as two gunicorn workers or two hosts have. Only with Redis: without it nothing is
cached (web.context.inbox_caches), and the rest of the suite covers that path."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from models.mail.inboxes import Inbox
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email, make_inbox
from tests.statements import recorded

pytestmark = pytest.mark.postgres  # the caches need Redis (see the module docstring)

READ_SCOPES = ["team.view", "team.inboxes.view", "team.emails.view"]


@pytest.fixture
def polled(client, runtime, mail_world) -> dict[str, Any]:
    """An inbox of the world's lead with two e-mails, its paths, and the headers of the lead's
    JWT, of an API key of theirs and of the team's plain member."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
    email_ids = [make_email(runtime, inbox.full_address, subject=f"n{n}") for n in range(2)]
    key = make_key(client, mail_world, "lead", scopes=READ_SCOPES)
    return {"inbox": inbox, "address": inbox.full_address, "email_ids": email_ids,
            "emails": f"/api/v1/inboxes/{inbox.id}/emails",
            "email": f"/api/v1/emails/{email_ids[-1]}", "detail": f"/api/v1/inboxes/{inbox.id}",
            "jwt": mail_world.headers["lead"], "key": key_auth(key["raw_key"]),
            "member": mail_world.headers["team_member"]}


def _subjects(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [item["subject"] for item in response.get_json()["data"]]


@pytest.mark.parametrize("auth", ["jwt", "key"])
@pytest.mark.parametrize("read", ["emails", "email", "detail"])
def test_a_repeated_read_of_an_unchanged_inbox_sends_no_statement(client, engine, polled,
                                                                  read, auth):
    # The first read of an e-mail learns its inbox, whose revision the next one reads ahead
    # (before the rows, so nothing read before a change is kept after it) and fills the cache.
    for _ in range(2):
        client.get(polled[read], headers=polled[auth])
    with recorded(engine) as statements:
        response = client.get(polled[read], headers=polled[auth])
    assert response.status_code == 200, response.get_json()
    assert statements == []


def test_mail_stored_by_another_process_is_listed_at_the_next_poll(runtime, client,
                                                                   other_process, polled):
    assert _subjects(other_process.get(polled["emails"], headers=polled["jwt"])) == ["n1", "n0"]
    make_email(runtime, polled["address"], subject="arrived")  # mailin's store, committed
    assert _subjects(other_process.get(polled["emails"], headers=polled["jwt"])) == [
        "arrived", "n1", "n0"]
    inbox = other_process.get(polled["detail"], headers=polled["jwt"]).get_json()
    assert (inbox["email_count"], inbox["unread_count"]) == (3, 3)


def test_mail_arriving_in_another_inbox_leaves_this_inbox_s_entries_standing(
        runtime, client, engine, polled, mail_world):
    with runtime.db.transaction() as session:
        elsewhere = make_inbox(session, runtime.settings, mail_world, role="lead")
    client.get(polled["emails"], headers=polled["jwt"])
    make_email(runtime, elsewhere.full_address, subject="elsewhere")
    with recorded(engine) as statements:
        assert _subjects(client.get(polled["emails"], headers=polled["jwt"])) == ["n1", "n0"]
    assert statements == []


def test_an_email_marked_read_in_one_process_shows_read_in_another(client, other_process,
                                                                   polled):
    for path in (polled["emails"], polled["email"], polled["detail"]):
        assert other_process.get(path, headers=polled["jwt"]).status_code == 200
    marked = client.patch(polled["email"], json={"is_read": True}, headers=polled["jwt"])
    assert marked.status_code == 200, marked.get_json()
    assert other_process.get(polled["email"], headers=polled["jwt"]).get_json()["is_read"]
    listed = other_process.get(polled["emails"], headers=polled["jwt"]).get_json()["data"]
    assert [item["is_read"] for item in listed] == [True, False]
    assert other_process.get(polled["detail"], headers=polled["jwt"]
                             ).get_json()["unread_count"] == 1


def test_mark_all_read_in_one_process_shows_in_another(client, other_process, polled):
    assert other_process.get(polled["emails"], headers=polled["jwt"]).status_code == 200
    marked = client.post(polled["emails"] + "/mark-all-read", headers=polled["jwt"])
    assert marked.get_json() == {"marked": 2}
    listed = other_process.get(polled["emails"], headers=polled["jwt"]).get_json()["data"]
    assert [item["is_read"] for item in listed] == [True, True]


def test_an_email_deleted_in_one_process_is_gone_from_another(client, other_process, polled):
    for path in (polled["emails"], polled["email"]):
        assert other_process.get(path, headers=polled["jwt"]).status_code == 200
    assert client.delete(polled["email"], headers=polled["jwt"]).status_code == 200
    assert other_process.get(polled["email"], headers=polled["jwt"]).status_code == 404
    assert _subjects(other_process.get(polled["emails"], headers=polled["jwt"])) == ["n0"]


def test_an_inbox_deleted_in_one_process_is_gone_from_another(client, other_process, polled):
    for path in (polled["emails"], polled["email"], polled["detail"]):
        assert other_process.get(path, headers=polled["key"]).status_code == 200
    assert client.delete(polled["detail"], headers=polled["jwt"]).status_code == 200
    for path in (polled["emails"], polled["email"], polled["detail"]):
        assert other_process.get(path, headers=polled["key"]).status_code == 404, path


def test_an_inbox_extended_in_one_process_shows_its_new_expiry_in_another(client,
                                                                          other_process, polled):
    before = other_process.get(polled["detail"], headers=polled["jwt"]).get_json()["expires_at"]
    extended = client.post(polled["detail"] + "/extend", json={"duration": "5m"},
                           headers=polled["jwt"])
    assert extended.status_code == 200, extended.get_json()
    after = other_process.get(polled["detail"], headers=polled["jwt"]).get_json()["expires_at"]
    assert after == extended.get_json()["expires_at"] != before


def test_a_member_removed_from_the_team_in_one_process_is_refused_by_another(
        client, other_process, polled, mail_world):
    for path in (polled["emails"], polled["email"], polled["detail"]):
        assert other_process.get(path, headers=polled["member"]).status_code == 200
    member_id = mail_world.users["team_member"].id
    removed = client.delete(mail_world.path("/orgs/{org}/teams/{team}/members/") + str(member_id),
                            headers=mail_world.headers["lead"])
    assert removed.status_code == 200, removed.get_json()
    for path in (polled["emails"], polled["email"], polled["detail"]):
        assert other_process.get(path, headers=polled["member"]).status_code == 403, path


def test_a_write_naming_no_inbox_makes_every_process_read_every_inbox_again(
        runtime, client, engine, polled):
    client.get(polled["detail"], headers=polled["jwt"])
    with runtime.db.transaction() as session:  # by team, as a team's transfer writes them
        session.execute(update(Inbox).where(Inbox.team_id == polled["inbox"].team_id)
                        .values(unread_count=Inbox.unread_count))
    with recorded(engine) as statements:
        assert client.get(polled["detail"], headers=polled["jwt"]).status_code == 200
    assert any("FROM inboxes" in statement for statement in statements)


def test_a_large_email_is_read_from_the_database_each_time(runtime, client, engine, polled):
    email_id = make_email(runtime, polled["address"], subject="large", text="x" * 200_000)
    path = f"/api/v1/emails/{email_id}"
    assert client.get(path, headers=polled["jwt"]).status_code == 200
    with recorded(engine) as statements:
        response = client.get(path, headers=polled["jwt"])
    assert response.get_json()["body_text"].startswith("xxx")
    assert any("FROM emails" in statement for statement in statements)


def test_only_the_first_page_is_cached_and_pages_leave_the_standings_alone(client, engine,
                                                                          runtime, polled):
    second = polled["emails"] + "?per_page=1&page=2"
    for path in (polled["detail"], second, second):
        assert client.get(path, headers=polled["jwt"]).status_code == 200
    with recorded(engine) as statements:
        assert _subjects(client.get(second, headers=polled["jwt"])) == ["n0"]
    assert [s for s in statements if "FROM emails" in s], "a later page is read each time"
    assert not [s for s in statements if "FROM inboxes" in s], "the standing stays cached"


def test_a_page_of_long_subjects_weighs_by_its_text(runtime, polled):
    from models.mail.caches import InboxPages
    from models.mail.emails import list_emails

    make_email(runtime, polled["address"], subject="\N{SNOWMAN}" * 900)
    with runtime.db.session() as session:
        page = list_emails(session, polled["inbox"].id)
    assert InboxPages.of({}).weigh(page) > 4 * 900


def test_deleting_an_email_with_an_attachment_leaves_other_inboxes_entries_standing(
        runtime, client, engine, polled, mail_world):
    # Its attachments are deleted with it; they name their e-mail, not its inbox, and used to
    # move every inbox's revision.
    with runtime.db.transaction() as session:
        elsewhere = make_inbox(session, runtime.settings, mail_world, role="lead")
    attached = make_email(runtime, elsewhere.full_address,
                          attachments=(("a.txt", "text/plain", b"attached"),))
    for _ in range(2):
        client.get(polled["emails"], headers=polled["jwt"])
    assert client.delete(f"/api/v1/emails/{attached}", headers=polled["jwt"]).status_code == 200
    with recorded(engine) as statements:
        assert _subjects(client.get(polled["emails"], headers=polled["jwt"])) == ["n1", "n0"]
    assert statements == []


def test_a_revision_the_store_refused_moves_with_the_next_commit(runtime, client,
                                                                 other_process, polled,
                                                                 mail_world):
    # An outage of the store at the change leaves other processes serving their entries until
    # the next commit of the writer (or the entries' maximum age of 60 s).
    real = runtime.db.handoffs.revisions_moved
    refusals = []

    def refuse_once(keys: list[str]) -> None:
        if not refusals:
            refusals.append(keys)
            raise ConnectionError("the store is unreachable")
        real(keys)

    with runtime.db.transaction() as session:
        elsewhere = make_inbox(session, runtime.settings, mail_world, role="lead")
    assert other_process.get(polled["emails"], headers=polled["jwt"]).status_code == 200
    runtime.db.handoffs.revisions_moved = refuse_once
    try:
        make_email(runtime, polled["address"], subject="during")
        assert _subjects(other_process.get(polled["emails"], headers=polled["jwt"])) == [
            "n1", "n0"]  # the change was committed, its revision could not move
        make_email(runtime, elsewhere.full_address)  # a later commit, about another inbox
    finally:
        runtime.db.handoffs.revisions_moved = real
    assert refusals
    assert _subjects(other_process.get(polled["emails"], headers=polled["jwt"])) == [
        "during", "n1", "n0"]
