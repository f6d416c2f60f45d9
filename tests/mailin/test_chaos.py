"""Chaos rules at a running mailin, over real SMTP: replies at RCPT and DATA for the next N
messages or a percentage, delays, closed connections; a refused message is not stored, a
retried one is stored once; other recipients of the transaction are unaffected at RCPT; a
rule set in the database applies to the very next transaction (the revision moved)."""

import smtplib
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from sqlalchemy import func, select

from mailin.chaos import REREAD_SECONDS
from mailin.server import MailinThread
from models.caching import CHAOS_REVISION_KEY
from models.domains.assignments import DomainAssignment
from models.mail.chaos import (
    ChaosRule,
    copy_assignment_rules,
    fire,
    list_rules,
    set_assignment_rules,
    set_inbox_rules,
)
from models.mail.entities import Email
from models.mail.inboxes import Inbox, remove_inboxes
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import caller_of


@pytest.fixture
def mail(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world, alias="retry")
        other = make_inbox(session, committed_runtime.settings, world, alias="calm")
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    yield SimpleNamespace(runtime=committed_runtime, server=server, world=world, inbox=inbox,
                          other=other)
    server.stop()


def _rules(mail, *rules, inbox=None):
    with mail.runtime.db.transaction() as session:
        target = session.get(Inbox, (inbox or mail.inbox).id)
        set_inbox_rules(session, caller_of(mail.world.users["owner"]), target, list(rules))


def _send(mail, *recipients, subject="Hello"):
    """sendmail's answer: the refused recipients (an exception when all are refused)."""
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        return smtp.sendmail("app@sender.example", list(recipients),
                             message(recipients[0], subject=subject))


def _stored(mail, inbox=None):
    with mail.runtime.db.session() as session:
        target = session.get(Inbox, (inbox or mail.inbox).id)
        emails = session.scalar(select(func.count()).select_from(Email)
                                .where(Email.inbox_id == target.id))
        return emails, target.email_count


def _fired(mail, inbox=None):
    with mail.runtime.db.session() as session:
        return [(rule.fired, rule.spent)
                for rule in list_rules(session, inbox_id=(inbox or mail.inbox).id)]


def test_a_4xx_at_rcpt_for_the_next_two_then_the_retry_is_stored_once(mail):
    assert _send(mail, mail.inbox.full_address, subject="before") == {}  # no rule yet
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 451, "status": "4.7.1",
                  "text": "Greylisted, try again", "times": 2})
    for _ in range(2):  # at once: the rule's revision moved
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            _send(mail, mail.inbox.full_address)
        assert refused.value.recipients[mail.inbox.full_address] == (
            451, b"4.7.1 Greylisted, try again")
    assert _send(mail, mail.inbox.full_address) == {}  # the sender's retry
    assert _stored(mail) == (2, 2)  # "before" and the retry, once
    assert _fired(mail) == [(2, True)]


def test_a_5xx_at_data_refuses_the_message_and_stores_nothing(mail):
    _rules(mail, {"stage": "data", "action": "reply", "code": 554, "times": 1})
    with pytest.raises(smtplib.SMTPDataError) as refused:
        _send(mail, mail.inbox.full_address)
    assert (refused.value.smtp_code, refused.value.smtp_error) == (554, b"5.3.0 Chaos rule")
    assert _stored(mail) == (0, 0)
    assert _fired(mail) == [(1, True)]


def test_percent_0_never_fires_and_percent_100_always_does(mail):
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 450, "percent": 0})
    assert _send(mail, mail.inbox.full_address) == {}
    assert _fired(mail) == [(0, False)]
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 450, "percent": 100})
    for _ in range(3):
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            _send(mail, mail.inbox.full_address)
    assert _fired(mail) == [(3, False)]
    assert _stored(mail) == (1, 1)


def test_a_delay_holds_the_reply_then_the_message_is_stored(mail):
    _rules(mail, {"stage": "rcpt", "action": "delay", "delay_seconds": 0.4, "times": 1},
           {"stage": "data", "action": "delay", "delay_seconds": 0.3, "times": 1})
    started = time.monotonic()
    assert _send(mail, mail.inbox.full_address) == {}
    assert time.monotonic() - started >= 0.7
    assert _stored(mail) == (1, 1)
    assert _fired(mail) == [(1, True), (1, True)]


@pytest.mark.parametrize("stage", ["rcpt", "data"])
def test_close_ends_the_connection_after_a_421_and_nothing_is_stored(mail, stage):
    _rules(mail, {"stage": stage, "action": "close", "times": 1})
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        smtp.ehlo()
        smtp.mail("app@sender.example")
        if stage == "rcpt":
            assert smtp.rcpt(mail.inbox.full_address) == (
                421, b"4.4.2 Closing connection (chaos rule)")
        else:
            assert smtp.rcpt(mail.inbox.full_address)[0] == 250
            assert smtp.data(message(mail.inbox.full_address))[0] == 421
        with pytest.raises(smtplib.SMTPServerDisconnected):
            smtp.noop()
    assert _stored(mail) == (0, 0)
    assert _send(mail, mail.inbox.full_address) == {}  # spent: the next one goes through


def test_a_rcpt_rule_refuses_its_recipient_only(mail):
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 452, "times": 1})
    refused = _send(mail, mail.other.full_address, mail.inbox.full_address)
    assert refused == {mail.inbox.full_address: (452, b"4.3.0 Chaos rule")}
    assert _stored(mail, mail.other) == (1, 1)
    assert _stored(mail) == (0, 0)


def test_a_data_rule_refuses_the_message_for_every_recipient(mail):
    # One reply to DATA speaks for all recipients: storing it for the other one and answering
    # 4xx would store it there twice once the sender retries.
    _rules(mail, {"stage": "data", "action": "reply", "code": 451, "times": 1})
    with pytest.raises(smtplib.SMTPDataError):
        _send(mail, mail.other.full_address, mail.inbox.full_address)
    assert (_stored(mail), _stored(mail, mail.other)) == ((0, 0), (0, 0))
    assert _send(mail, mail.other.full_address, mail.inbox.full_address) == {}
    assert (_stored(mail), _stored(mail, mail.other)) == ((1, 1), (1, 1))


def test_cleared_rules_stop_at_once(mail):
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 451, "percent": 100})
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        _send(mail, mail.inbox.full_address)
    _rules(mail)
    assert _send(mail, mail.inbox.full_address) == {}


def test_an_assignments_rules_are_copied_to_a_new_inbox_with_counters_at_zero(mail):
    with mail.runtime.db.transaction() as session:
        assignment = session.get(DomainAssignment, mail.world.ids["assignment"])
        set_assignment_rules(session, caller_of(mail.world.users["owner"]), assignment, [
            {"stage": "rcpt", "action": "reply", "code": 451, "times": 1},
            {"stage": "data", "action": "delay", "delay_seconds": 0.1, "percent": 50}])
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world, alias="caught")
        assert copy_assignment_rules(session, mail.world.ids["assignment"], inbox.id) == 2
    with mail.runtime.db.session() as session:
        copied = list_rules(session, inbox_id=inbox.id)
        template = list_rules(session, assignment_id=mail.world.ids["assignment"])
        assert [(r.stage, r.action, r.code, r.delay_ms, r.times, r.percent, r.fired)
                for r in copied] == [("rcpt", "reply", 451, None, 1, None, 0),
                                     ("data", "delay", None, 100, None, 50, 0)]
        assert len(template) == 2 and all(r.inbox_id is None for r in template)
        assert session.scalar(select(func.count()).select_from(ChaosRule)) == 4
    with pytest.raises(smtplib.SMTPRecipientsRefused):  # the copy fires, the template never
        _send(mail, inbox.full_address)
    assert _send(mail, inbox.full_address) == {}


def test_a_times_rule_fires_exactly_times_whoever_counts(mail):
    # Several mailin processes share a rule: the counting UPDATE only matches while it is not
    # spent, so concurrent firings never exceed `times`.
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 451, "times": 5})
    with mail.runtime.db.session() as session:
        [rule] = list_rules(session, inbox_id=mail.inbox.id)

    def fire_once(_):
        with mail.runtime.db.transaction() as session:
            return fire(session, rule.id)

    with ThreadPoolExecutor(4) as pool:
        fired = list(pool.map(fire_once, range(20)))
    assert fired.count(True) == 5
    assert _fired(mail) == [(5, True)]


def test_an_open_connection_reads_new_rules_again_after_a_second(mail):
    greylist = {"stage": "rcpt", "action": "reply", "code": 451, "times": 5}
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        assert smtp.sendmail("app@sender.example", [mail.inbox.full_address],
                             message(mail.inbox.full_address)) == {}
        _rules(mail, greylist)
        # A new connection sees the rule at once ...
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            _send(mail, mail.inbox.full_address)
        # ... the open one once REREAD_SECONDS have passed since it read the rules.
        time.sleep(REREAD_SECONDS + 0.1)
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            smtp.sendmail("app@sender.example", [mail.inbox.full_address],
                          message(mail.inbox.full_address))
    assert _fired(mail) == [(2, False)]


def _catch_all_with_rules(mail, *rules):
    """Make the world's assignment catch-all with template `rules`."""
    with mail.runtime.db.transaction() as session:
        assignment = session.get(DomainAssignment, mail.world.ids["assignment"])
        assignment.catch_all = True
        set_assignment_rules(session, caller_of(mail.world.users["owner"]), assignment,
                             list(rules))


@pytest.mark.parametrize(("rule", "refused"), [
    ({"stage": "rcpt", "action": "reply", "code": 450, "percent": 100},
     smtplib.SMTPRecipientsRefused),
    ({"stage": "data", "action": "reply", "code": 452, "percent": 100}, smtplib.SMTPDataError)])
def test_a_catch_all_inboxs_copied_rules_apply_from_its_second_message_at_once(mail, rule,
                                                                                refused):
    # The first message creates the inbox with a copy of the assignment's rules; the very
    # next ones, on the same connection or a new one, are subject to them. They were not for
    # about 2 s: the process kept the address's catch-all answer (no inbox, so no rules) and
    # an open connection the rules it had read before the inbox existed.
    _catch_all_with_rules(mail, rule)
    address = f"caught-{rule['stage']}@{mail.world.domain}"
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        assert smtp.sendmail("app@sender.example", [address], message(address)) == {}
        for _ in range(2):  # the same connection
            with pytest.raises(refused):
                smtp.sendmail("app@sender.example", [address], message(address))
        with pytest.raises(refused):  # a new connection
            _send(mail, address)
    with mail.runtime.db.session() as session:
        inbox = session.scalars(select(Inbox).where(Inbox.full_address == address)).one()
    assert _stored(mail, inbox) == (1, 1)
    assert _fired(mail, inbox) == [(3, False)]


def test_deleting_an_inbox_keeps_the_rules_revision_and_the_other_rules_apply(mail):
    # A test suite deletes an inbox per test. Its rules go with it by a cascade, under an id
    # no inbox will hold again: moving the revision made every connection read them again.
    store = mail.runtime.store
    _rules(mail, {"stage": "rcpt", "action": "reply", "code": 550, "status": "5.7.1",
                  "text": "Still refused", "percent": 100}, inbox=mail.other)
    with mail.runtime.db.transaction() as session:
        doomed = make_inbox(session, mail.runtime.settings, mail.world, alias="doomed")
    _rules(mail, {"stage": "data", "action": "reply", "code": 451, "percent": 100},
           inbox=doomed)
    assert _send(mail, mail.inbox.full_address) == {}  # the process reads the rules
    before = store.get(CHAOS_REVISION_KEY)
    with mail.runtime.db.transaction() as session:
        remove_inboxes(session, [session.get(Inbox, doomed.id)], expired=False)
    assert store.get(CHAOS_REVISION_KEY) == before
    with mail.runtime.db.transaction() as session:  # a rule written still moves it
        session.get(ChaosRule, list_rules(session, inbox_id=mail.other.id)[0].id).fired = 1
    assert store.get(CHAOS_REVISION_KEY) != before
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        _send(mail, mail.other.full_address)
    assert refused.value.recipients[mail.other.full_address][0] == 550
    with pytest.raises(smtplib.SMTPRecipientsRefused):  # gone: unknown, not its old rule
        _send(mail, doomed.full_address)
