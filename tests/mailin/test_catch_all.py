"""Catch-all domain assignments over real SMTP and the real API: mail to any valid address of a
caught domain creates its inbox with the first message (inbox.created, the assignment's TTL),
in the transaction that stores it; the domain's inbox limit answers 452 4.2.2 and makes
nothing; an invalid local part 550 5.1.3; an expired address is created anew; two first
messages at once make one inbox; the setting is audited, one catch-all per domain; waiting by
an address that has no inbox yet answers when the first message creates it."""

import smtplib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from sqlalchemy import func, select

from mailin.server import MailinThread
from models.events import INBOX_CREATED, Event
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.platform.audit import AuditEntry
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import lapse, make_inbox, make_mail_world, message
from web import create_app

ASSIGNMENT = "/orgs/{org}/teams/{team}/domains/{domain}"


@pytest.fixture
def mail(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
    runtime = committed_runtime
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    app = create_app(runtime=runtime)
    app.config["TESTING"] = True
    yield SimpleNamespace(runtime=runtime, server=server, world=world, client=app.test_client())
    server.stop()


def _catch_all(mail, on=True, who="owner", **extra):
    return mail.client.patch(mail.world.path(ASSIGNMENT), headers=mail.world.headers[who],
                             json={"catch_all": on, **extra})


def _send(mail, *recipients, subject="Hello"):
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        return smtp.sendmail("app@sender.example", list(recipients),
                             message(recipients[0], subject=subject))


def _inbox(mail, address):
    with mail.runtime.db.session() as session:
        return session.scalars(select(Inbox).where(Inbox.full_address == address)).first()


def _emails(mail, address):
    with mail.runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(Email)
                              .where(Email.to_address == address))


def test_without_catch_all_an_unknown_address_is_still_refused(mail):
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        _send(mail, f"nobody@{mail.world.domain}")
    assert refused.value.recipients[f"nobody@{mail.world.domain}"][0] == 550


def test_the_first_message_creates_the_inbox_and_is_stored_with_it(mail):
    answer = _catch_all(mail)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["catch_all"] is True
    address = f"signup-42@{mail.world.domain}"
    assert _send(mail, address, subject="Welcome") == {}
    inbox = _inbox(mail, address)
    assert inbox is not None and inbox.created_by is None
    assert inbox.team_id == mail.world.ids["team"]
    assert (inbox.email_count, _emails(mail, address)) == (1, 1)
    with mail.runtime.db.session() as session:
        created = session.scalars(select(Event).where(Event.name == INBOX_CREATED)).all()
        audited = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "domain_assignment.update")).all()
    assert [event.data["address"] for event in created] == [address]
    assert audited[-1].after["catch_all"] is True and audited[-1].before["catch_all"] is False
    # The second message goes to the same inbox.
    assert _send(mail, address) == {}
    assert _emails(mail, address) == 2
    got = mail.client.get(f"/api/v1/inboxes/by-address/{address.upper()}",
                          headers=mail.world.headers["team_member"])
    assert got.status_code == 200 and got.get_json()["id"] == str(inbox.id)


def test_an_invalid_local_part_is_refused_with_5_1_3(mail):
    _catch_all(mail)
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        _send(mail, f"x@{mail.world.domain}")  # one character: not a valid alias
    code, text = refused.value.recipients[f"x@{mail.world.domain}"]
    assert code == 550 and text.startswith(b"5.1.3")


def test_a_full_domain_answers_452_4_2_2_and_makes_nothing(mail):
    answer = _catch_all(mail, settings={"max_inboxes_per_domain": 1})
    assert answer.status_code == 200, answer.get_json()
    assert _send(mail, f"first@{mail.world.domain}") == {}
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        _send(mail, f"second@{mail.world.domain}")
    code, text = refused.value.recipients[f"second@{mail.world.domain}"]
    assert code == 452 and text.startswith(b"4.2.2")
    assert _inbox(mail, f"second@{mail.world.domain}") is None


def test_an_expired_address_is_created_anew(mail):
    _catch_all(mail)
    address = f"again@{mail.world.domain}"
    _send(mail, address)
    old = _inbox(mail, address)
    with mail.runtime.db.transaction() as session:
        lapse(session, old.id)
    assert _send(mail, address) == {}
    new = _inbox(mail, address)
    assert new.id != old.id and new.email_count == 1


def test_two_first_messages_at_once_make_one_inbox_with_both(mail):
    _catch_all(mail)
    address = f"race@{mail.world.domain}"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: _send(mail, address, subject=f"m{n}"), range(8)))
    assert answers == [{}] * 8
    with mail.runtime.db.session() as session:
        inboxes = session.scalars(select(Inbox).where(Inbox.full_address == address)).all()
    assert len(inboxes) == 1 and inboxes[0].email_count == 8
    assert _emails(mail, address) == 8


def test_one_catch_all_per_domain_and_never_read_only(mail):
    assert _catch_all(mail, access_level="read_only").status_code == 400
    assert _catch_all(mail, who="team_member").status_code in (403, 404)
    assert _catch_all(mail).status_code == 200
    assert _catch_all(mail, False).get_json()["catch_all"] is False


def test_a_wait_by_address_answers_when_the_first_message_creates_the_inbox(mail):
    _catch_all(mail)
    address = f"later@{mail.world.domain}"
    answers = {}

    def wait():
        answers["wait"] = mail.client.get(
            f"/api/v1/inboxes/by-address/{address}/emails/wait?timeout=10s",
            headers=mail.world.headers["team_member"])

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    _send(mail, address, subject="Your code is 123456")
    waiter.join(15)
    body = answers["wait"].get_json()
    assert answers["wait"].status_code == 200, body
    assert body["timed_out"] is False
    assert [email["subject"] for email in body["emails"]] == ["Your code is 123456"]


def test_a_wait_by_address_answers_another_orgs_address_as_it_answers_an_unknown_one(mail):
    _catch_all(mail)
    with mail.runtime.db.transaction() as session:
        live = make_inbox(session, mail.runtime.settings, mail.world).full_address
    key = make_key(mail.client, mail.world, "outsider", team="/orgs/{other_org}/teams/{other_team}",
                   scopes=["team.emails.view"])
    addresses = {
        "another org's live inbox": live,
        "another org's catch-all domain": f"anyone@{mail.world.domain}",
        "a domain nobody serves": "anyone@nowhere.example",
        "an unknown address of the caller's own domain": f"nobody@{mail.world.other_domain}",
    }
    for headers in (mail.world.headers["outsider"], key_auth(key["raw_key"])):
        answers = {}
        for what, address in addresses.items():
            response = mail.client.get(
                f"/api/v1/inboxes/by-address/{address}/emails/wait?timeout=1s", headers=headers)
            answers[what] = (response.status_code, response.get_json())
        assert set(map(repr, answers.values())) == {repr((404, {
            "error": "no inbox or catch-all domain of yours receives mail at this address",
            "code": "not_found"}))}, answers
    # The team itself waits at both (the timeout answers: no mail came).
    for address in (live, f"anyone@{mail.world.domain}"):
        response = mail.client.get(f"/api/v1/inboxes/by-address/{address}/emails/wait"
                                   "?timeout=1ms", headers=mail.world.headers["team_member"])
        assert response.status_code == 200, response.get_json()


def test_a_wait_by_address_is_404_outside_the_team_and_for_refused_addresses(mail):
    _catch_all(mail)
    outsider = mail.client.get(
        f"/api/v1/inboxes/by-address/x1@{mail.world.domain}/emails/wait?timeout=1s",
        headers=mail.world.headers["outsider"])
    assert outsider.status_code == 404
    _catch_all(mail, False)
    refused = mail.client.get(
        f"/api/v1/inboxes/by-address/x1@{mail.world.domain}/emails/wait?timeout=1s",
        headers=mail.world.headers["team_member"])
    assert refused.status_code == 404
    missing = mail.client.get(f"/api/v1/inboxes/by-address/x1@{mail.world.domain}",
                              headers=mail.world.headers["team_member"])
    assert missing.status_code == 404
