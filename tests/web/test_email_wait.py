"""Waiting for e-mail (`GET /inboxes/:id/emails/wait`, `GET /orgs/:id/teams/:tid/emails/wait`)
on a real threaded server, with mail sent over real SMTP and fanned out by worker threads: mail
already there answers at once, mail arriving during the wait wakes it, the filters, `after`,
`count`, the timeout answer, and who may wait."""

import threading
import time

import pytest
import requests

from mailin.server import MailinThread
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.metrics_scrape import counted
from tests.processes import wait_until
from tests.web.conftest import Delivering
from web import waits

pytestmark = pytest.mark.slow


def _wait(live, path, headers, **params):
    """GET `path` (/api/v1/...) with `params`; the status and the JSON body."""
    response = requests.get(f"{live.base}{path}", params=params, headers=headers,
                            timeout=60)
    return response.status_code, response.json()


def _inbox_wait(live, delivering, who="team_member", **params):
    return _wait(live, f"/api/v1/inboxes/{delivering.inbox.id}/emails/wait",
                 delivering.world.headers[who], **params)


def _later(action, delay=0.5):
    """Run `action` on a thread after `delay` seconds (once the wait has begun); the thread."""
    thread = threading.Timer(delay, action)
    thread.start()
    return thread


def _stored(live, delivering, count):
    """Wait (by listing) until the fixture's inbox holds `count` e-mails; their list items."""
    listed = []

    def enough():
        listed[:] = requests.get(f"{live.base}/api/v1/inboxes/{delivering.inbox.id}/emails",
                                 headers=delivering.world.headers["lead"],
                                 timeout=5).json()["data"]
        return len(listed) >= count

    wait_until(enough)
    return listed


def test_mail_already_there_answers_at_once_with_the_email_detail(live, delivering):
    delivering.send("Your code is 111111")
    _stored(live, delivering, 1)
    status, body = _inbox_wait(live, delivering, timeout="20s")
    assert status == 200, body
    assert body["timed_out"] is False
    [email] = body["emails"]
    assert email["subject"] == "Your code is 111111"
    detail = requests.get(f"{live.base}/api/v1/emails/{email['id']}",
                          headers=delivering.world.headers["lead"], timeout=5).json()
    # The worker stores the authentication results after the message (docs/mail-checks.md):
    # they may have gone from pending to done between the two reads.
    assert email["auth_results"]["status"] in ("pending", "done")
    assert ({**email, "auth_results": None} == {**detail, "auth_results": None})


def test_mail_arriving_during_the_wait_answers_it(live, delivering):
    sender = _later(lambda: delivering.send("Welcome aboard"))
    status, body = _inbox_wait(live, delivering, timeout="30s")
    sender.join()
    assert status == 200, body
    assert body["timed_out"] is False
    assert [email["subject"] for email in body["emails"]] == ["Welcome aboard"]


def test_count_waits_for_that_many_and_answers_them_oldest_first(live, delivering):
    def send_two():
        delivering.send("first")
        delivering.send("second")

    sender = _later(send_two)
    status, body = _inbox_wait(live, delivering, count=2, timeout="30s")
    sender.join()
    assert status == 200, body
    assert body["timed_out"] is False
    assert [email["subject"] for email in body["emails"]] == ["first", "second"]


def test_after_counts_only_mail_received_after_that_email_or_moment(live, delivering):
    delivering.send("old news")
    [old] = _stored(live, delivering, 1)
    sender = _later(lambda: delivering.send("fresh"))
    status, body = _inbox_wait(live, delivering, after=old["id"], timeout="30s")
    sender.join()
    assert status == 200, body
    assert [email["subject"] for email in body["emails"]] == ["fresh"]

    newest = body["emails"][0]["received_at"]
    status, body = _inbox_wait(live, delivering, after=newest, timeout="1s")
    assert (status, body) == (200, {"emails": [], "timed_out": True})
    status, body = _inbox_wait(live, delivering, after=old["received_at"], timeout="1s")
    assert [email["subject"] for email in body["emails"]] == ["fresh"]


@pytest.mark.parametrize("after", ["yesterday", "0b6b3c1e-5f0e-4d3a-9c1e-2f4a5b6c7d8e"])
def test_an_after_that_is_neither_a_moment_nor_an_email_of_the_inbox_is_a_400(
        live, delivering, after):
    status, body = _inbox_wait(live, delivering, after=after, timeout="1s")
    assert status == 400 and body["code"] == "validation_error"
    assert "after" in body["details"]


def test_the_timeout_answers_200_with_what_was_found_and_timed_out(live, delivering):
    delivering.send("only one")
    _stored(live, delivering, 1)
    status, body = _inbox_wait(live, delivering, timeout="1s", subject="nothing like it")
    assert (status, body) == (200, {"emails": [], "timed_out": True})
    status, body = _inbox_wait(live, delivering, timeout="1s", count=2)
    assert status == 200 and body["timed_out"] is True
    assert [email["subject"] for email in body["emails"]] == ["only one"]


@pytest.mark.parametrize(("params", "field"), [
    ({"timeout": "forever"}, "timeout"),
    ({"timeout": "0s"}, "timeout"),
    ({"timeout": "6m"}, "timeout"),  # beyond wait.max_timeout (5m)
    ({"count": "0"}, "count"),
    ({"count": "51"}, "count"),
])
def test_bad_wait_parameters_are_a_400_naming_the_field(live, delivering, params, field):
    status, body = _inbox_wait(live, delivering, **params)
    assert status == 400 and body["code"] == "validation_error", body
    assert field in body["details"]


def test_from_and_subject_filters_skip_mail_that_does_not_match(live, delivering):
    def send_mixed():
        delivering.send("Your code is 222222", sender="Newsletter <news@other.example>")
        delivering.send("Weekly digest", sender="Shop <orders@shop.example>")
        delivering.send("Your code is 333333", sender="Shop <ORDERS@shop.example>")

    sender = _later(send_mixed)
    status, body = _inbox_wait(live, delivering, timeout="30s", subject="your CODE",
                               **{"from": "orders@shop"})
    sender.join()
    assert status == 200, body
    assert [email["subject"] for email in body["emails"]] == ["Your code is 333333"]


def test_q_matches_as_the_list_search_does(live, delivering):
    delivering.send("Sign-in code 424242")
    delivering.send("Receipt 9001")
    _stored(live, delivering, 2)
    _status, body = _inbox_wait(live, delivering, timeout="1s", q="9001")
    assert [email["subject"] for email in body["emails"]] == ["Receipt 9001"]


def test_mailin_wakes_the_waits_by_itself_without_the_worker_fan_out(live, monkeypatch):
    """Mailin publishes each new e-mail on the channels of its inbox and its team right after
    its commit, so a wait answers as soon as the mail is stored rather than after the worker's
    fan-out. Here no event reaches a worker at all: without mailin's publish both waits would
    sleep until their deadline (20 s) before looking again."""
    monkeypatch.setattr(live.runtime.db.handoffs, "events_committed", None)
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)
    server = MailinThread(live.runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        quiet = Delivering(world, inbox, server.address)
        for path in (f"/api/v1/inboxes/{inbox.id}/emails/wait",
                     world.path("/orgs/{org}/teams/{team}/emails/wait")):
            subject = f"announced to {path}"
            sender = _later(lambda subject=subject: quiet.send(subject))
            started = time.monotonic()
            status, body = _wait(live, path, world.headers["team_member"], timeout="20s",
                                 subject=subject)
            sender.join()
            assert status == 200, body
            assert [email["subject"] for email in body["emails"]] == [subject]
            assert time.monotonic() - started < 10
    finally:
        server.stop()


def test_mail_committed_while_the_wait_subscribes_answers_it_at_once(live, monkeypatch):
    """Mail committed after the wait's permission check read the inbox and before the wait
    subscribed is published to nobody here: its first look must still see it (on SQLite a
    read sees the snapshot its transaction's first read took), or it sleeps until its
    deadline. No event reaches a worker, whose fan-out would wake the wait anyway."""
    monkeypatch.setattr(live.runtime.db.handoffs, "events_committed", None)
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)
    hub = waits.hub

    class StoringFirst:
        """The process's subscriber, with the mail committed just before a listener joins."""

        def add(self, listener):
            make_email(live.runtime, inbox.full_address, subject="between")
            hub().add(listener)

        def remove(self, listener):
            hub().remove(listener)

    monkeypatch.setattr(waits, "hub", StoringFirst)
    started = time.monotonic()
    status, body = _wait(live, f"/api/v1/inboxes/{inbox.id}/emails/wait",
                         world.headers["team_member"], timeout="10s")
    assert status == 200, body
    assert body["timed_out"] is False
    assert [email["subject"] for email in body["emails"]] == ["between"]
    assert time.monotonic() - started < 5


def test_the_wait_holds_no_database_connection(live, delivering):
    sender = _later(lambda: delivering.send("late"), delay=2)
    waiting = threading.Thread(target=_inbox_wait, args=(live, delivering),
                               kwargs={"timeout": "30s"})
    waiting.start()
    time.sleep(1)  # the request has looked once and is asleep on its channel by now
    in_use = sum(engine.pool.checkedout() for engine in live.runtime.db.engines)
    in_progress = counted("burnbox_wait_requests_in_progress")
    sender.join()
    waiting.join()
    assert in_use == 0
    # The sleeping request counts as a wait in progress, and stops counting once answered.
    assert in_progress == 1
    assert counted("burnbox_wait_requests_in_progress") == 0


def test_another_orgs_inbox_or_team_is_a_404_and_a_user_outside_the_inbox_403_or_404(
        live, delivering):
    world = delivering.world
    with live.runtime.db.transaction() as session:
        theirs = make_inbox(session, live.runtime.settings, world, role="outsider",
                            assignment="other_assignment")
    status, body = _wait(live, f"/api/v1/inboxes/{theirs.id}/emails/wait", world.headers["lead"],
                         timeout="1s")
    assert status == 404 and body["code"] == "not_found"
    status, _ = _inbox_wait(live, delivering, who="outsider", timeout="1s")
    assert status == 404
    status, _ = _wait(live, world.path("/orgs/{other_org}/teams/{other_team}/emails/wait"),
                      world.headers["lead"], timeout="1s")
    assert status == 404
    status, _ = _wait(live, world.path("/orgs/{org}/teams/{other_team}/emails/wait"),
                      world.headers["lead"], timeout="1s")
    assert status == 404


def _key(live, world, scopes):
    response = requests.post(f"{live.base}{world.path('/orgs/{org}/teams/{team}/api-keys')}",
                             json={"name": "ci", "scopes": scopes},
                             headers=world.headers["lead"], timeout=5)
    assert response.status_code == 201, response.text
    return {"Authorization": f"Bearer {response.json()['raw_key']}"}


def test_an_api_key_needs_the_emails_view_scope(live, delivering):
    world = delivering.world
    delivering.send("for the key")
    _stored(live, delivering, 1)
    inbox_path = f"/api/v1/inboxes/{delivering.inbox.id}/emails/wait"
    team_path = world.path("/orgs/{org}/teams/{team}/emails/wait")
    narrow = _key(live, world, ["team.view"])
    for path in (inbox_path, team_path):
        status, body = _wait(live, path, narrow, timeout="1s")
        assert status == 403 and body["code"] == "forbidden", body
    viewer = _key(live, world, ["team.emails.view"])
    for path in (inbox_path, team_path):
        status, body = _wait(live, path, viewer, timeout="5s")
        assert status == 200 and [e["subject"] for e in body["emails"]] == ["for the key"]


def test_the_team_wait_wakes_for_mail_to_any_inbox_of_the_team(live, delivering):
    world = delivering.world
    with live.runtime.db.transaction() as session:
        second = make_inbox(session, live.runtime.settings, world, role="lead")
    sender = _later(lambda: delivering.send("to the second inbox", to=second.full_address))
    status, body = _wait(live, world.path("/orgs/{org}/teams/{team}/emails/wait"),
                         world.headers["team_member"], timeout="30s")
    sender.join()
    assert status == 200, body
    assert body["timed_out"] is False
    [email] = body["emails"]
    assert (email["subject"], email["inbox_id"]) == ("to the second inbox", str(second.id))


def test_the_openapi_document_declares_the_permission_of_both_waits(live):
    document = requests.get(f"{live.base}/api/v1/docs/openapi.json", timeout=5).json()
    for path in ("/api/v1/inboxes/{inbox_id}/emails/wait",
                 "/api/v1/orgs/{org_id}/teams/{team_id}/emails/wait"):
        assert document["paths"][path]["get"]["x-required-permission"] == "team.emails.view"



def test_q_takes_the_search_syntax_and_a_malformed_query_is_a_400(live, delivering):
    delivering.send("Sign-in code 424242")
    delivering.send("Receipt 9001", sender="Shop <orders@shop.example>")
    _stored(live, delivering, 2)
    _status, body = _inbox_wait(live, delivering, timeout="1s",
                                q='subject:"receipt 9001" -from:alice is:unread')
    assert [email["subject"] for email in body["emails"]] == ["Receipt 9001"]
    status, body = _inbox_wait(live, delivering, timeout="1s", q='subject:"open')
    assert status == 400, body
    assert "offset" in body["error"]
