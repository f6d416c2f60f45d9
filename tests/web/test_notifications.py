"""Notifications: created once per (event, user) by the fan-out, pushed on the user's channel
after commit, and read, marked and deleted by their owner only. Most tests here turn every
event on for their users first (`notify_of_everything`): new mail and new inboxes notify
nobody by default (tests/web/test_notification_preferences.py)."""

import json
import uuid

import dramatiq
import pytest
from sqlalchemy import func, select, text

from models.delivery.notifications import Notification, notify
from models.delivery.realtime import user_channel
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, Event
from models.identity.users import User
from models.mail.inboxes import remove_lapsed_inboxes
from tasks import start_worker
from tasks.events import enqueue_events
from tests.factories.delivery import make_event, notify_of_everything
from tests.factories.identity import auth_headers, make_user
from tests.factories.mail import lapse, make_inbox, make_mail_world
from tests.factories.tenancy import make_owned_team
from tests.tasks.conftest import drain, wait_until

PATH = "/api/v1/notifications"


def _count(runtime, user_id):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(Notification)
                              .where(Notification.user_id == user_id))


def test_the_inbox_creator_is_notified_once_and_the_notification_is_pushed_after_commit(
        committed_runtime):
    with committed_runtime.db.transaction() as session:
        team = make_owned_team(session, committed_runtime.settings)
        notify_of_everything(session, team.owner.id)
    creator = str(team.owner.id)
    subscription = committed_runtime.store.subscribe(user_channel(creator))
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        with committed_runtime.db.transaction() as session:
            event_id = make_event(session, team, EMAIL_RECEIVED, created_by=creator)
        wait_until(lambda: _count(committed_runtime, team.owner.id) == 1)
        channel, message = subscription.get(timeout=5)
        # At-least-once dispatch: the same event again adds nothing and pushes nothing.
        with committed_runtime.db.transaction() as session:
            session.get(Event, event_id).dispatched_at = None
        enqueue_events([event_id])
        drain(dramatiq.get_broker(), "events")
    finally:
        running.stop()
    assert _count(committed_runtime, team.owner.id) == 1
    assert channel == user_channel(creator)
    pushed = json.loads(message)
    assert pushed["type"] == EMAIL_RECEIVED
    assert pushed["data"]["title"] == ("New e-mail for qa-run-17@mail.example.com: "
                                       "Your code is 424242")
    assert pushed["data"]["data"]["subject"] == "Your code is 424242"
    assert "created_by" not in pushed["data"]["data"]
    assert subscription.get(timeout=0.3) is None
    subscription.close()


def _seed(runtime, user, names=(INBOX_CREATED, EMAIL_RECEIVED, INBOX_EXPIRED)):
    """One notification per event name for `user`, oldest first; their ids."""
    ids = []
    with runtime.db.transaction() as session:
        notify_of_everything(session, user.id)
        for name in names:
            event = Event(id=uuid.uuid4(), name=name, org_id=None, team_id=None,
                          data={"inbox_id": "i", "address": "a@x.example", "subject": "s",
                                "created_by": str(user.id)})
            session.add(event)
            session.flush()
            ids += [n.id for n in notify(session, [event])]
    return ids


def test_a_user_lists_marks_and_deletes_only_their_own_notifications(runtime, client):
    with runtime.db.transaction() as session:
        me, other = make_user(session), make_user(session)
        headers = auth_headers(session, runtime.settings, me)
    mine, theirs = _seed(runtime, me), _seed(runtime, other, (INBOX_CREATED,))

    listed = client.get(PATH, headers=headers).get_json()
    assert listed["total"] == 3
    assert [n["type"] for n in listed["data"]] == [INBOX_EXPIRED, EMAIL_RECEIVED, INBOX_CREATED]
    assert set(listed["data"][0]) == {"id", "type", "title", "data", "is_read", "read_at",
                                      "created_at"}
    assert listed["data"][0]["title"] == "Inbox a@x.example expired"

    read = client.patch(f"{PATH}/{mine[0]}/read", headers=headers)
    assert read.status_code == 200 and read.get_json()["is_read"] is True
    assert read.get_json()["read_at"].endswith("Z")
    assert client.get(f"{PATH}?unread_only=true", headers=headers).get_json()["total"] == 2
    assert client.post(f"{PATH}/mark-all-read", headers=headers).get_json() == {"updated": 2}
    assert client.get(f"{PATH}?unread_only=true", headers=headers).get_json()["total"] == 0

    for foreign in (theirs[0], uuid.uuid4()):
        assert client.patch(f"{PATH}/{foreign}/read", headers=headers).status_code == 404
        assert client.delete(f"{PATH}/{foreign}", headers=headers).status_code == 404
    deleted = client.delete(f"{PATH}/{mine[1]}", headers=headers)
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "Notification deleted"})
    assert client.delete(PATH, headers=headers).get_json() == {
        "message": "Notifications deleted", "deleted": 2}
    assert client.get(PATH, headers=headers).get_json()["total"] == 0
    assert _count(runtime, other.id) == 1
    assert client.get(PATH).status_code == 401


def test_events_without_a_creator_notify_nobody(runtime):
    with runtime.db.transaction() as session:
        event = Event(id=uuid.uuid4(), name=INBOX_CREATED, org_id=None, team_id=None,
                      data={"inbox_id": "i", "address": "demo@x.example"})
        session.add(event)
        session.flush()
        assert notify(session, [event]) == []


def test_an_event_whose_creator_deleted_their_account_notifies_nobody_and_still_dispatches(
        committed_runtime):
    with committed_runtime.db.transaction() as session:
        team = make_owned_team(session, committed_runtime.settings)
        gone = make_user(session).id
    with committed_runtime.db.transaction() as session:
        session.delete(session.get(User, gone))
    with committed_runtime.db.transaction() as session:
        event_id = make_event(session, team, EMAIL_RECEIVED, created_by=str(gone))
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        wait_until(lambda: _dispatched(committed_runtime, event_id))
        drain(dramatiq.get_broker(), "events")
    finally:
        running.stop()
    assert _count(committed_runtime, gone) == 0


def _dispatched(runtime, event_id):
    with runtime.db.session() as session:
        return session.get(Event, event_id).dispatched_at is not None


def test_the_inbox_code_names_the_creator_so_they_hear_of_its_creation_and_expiry(
        committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        notify_of_everything(session, world.users["lead"].id)
    creator = world.users["lead"]
    # Before the worker starts: the domain check it would run first marks the test domain
    # (which has no DNS records) failed, and an unverified domain takes no new inboxes.
    with committed_runtime.db.transaction() as session:
        inbox = make_inbox(session, committed_runtime.settings, world, role="lead")
        lapse(session, inbox.id)
    with committed_runtime.db.transaction() as session:
        assert remove_lapsed_inboxes(session, 10) == 1  # the cleanup's step
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        # Generous: the worker's threads may first sit in the domains' DNS checks.
        wait_until(lambda: _count(committed_runtime, creator.id) == 2, timeout=30)
    finally:
        running.stop()
    with committed_runtime.db.session() as session:
        told = {n.type: n for n in session.scalars(select(Notification))}
    # Two worker threads: the two events may be dispatched in either order.
    assert set(told) == {INBOX_CREATED, INBOX_EXPIRED}
    assert {n.user_id for n in told.values()} == {creator.id}
    assert told[INBOX_CREATED].title == f"Inbox {inbox.full_address} created"
    assert all("created_by" not in n.data for n in told.values())


def _event_for(user, name=EMAIL_RECEIVED, subject="s"):
    return Event(id=uuid.uuid4(), name=name, org_id=None, team_id=None,
                 data={"inbox_id": "i", "address": "a@x.example", "subject": subject,
                       "created_by": str(user.id)})


def test_the_notifications_of_several_events_come_back_in_their_order_each_once(runtime):
    with runtime.db.transaction() as session:
        me, other, gone = make_user(session), make_user(session), make_user(session)
        for user in (me, other, gone):
            notify_of_everything(session, user.id)
        events = [_event_for(me, subject="first"), _event_for(other, subject="second"),
                  _event_for(gone), _event_for(me, INBOX_EXPIRED)]
        session.add_all(events)
        session.delete(gone)
        session.flush()
        created = notify(session, events)
        assert [(n.user_id, n.event_id) for n in created] == [
            (me.id, events[0].id), (other.id, events[1].id), (me.id, events[3].id)]
        assert [n.title for n in created[:2]] == ["New e-mail for a@x.example: first",
                                                  "New e-mail for a@x.example: second"]
        assert notify(session, events) == [], "a second fan-out adds nothing"


@pytest.mark.postgres
def test_notifying_a_user_does_not_hold_off_another_notification_of_them(committed_runtime):
    # The user row is locked FOR KEY SHARE (it may not be deleted meanwhile), which conflicts
    # with no other fan-out: locked FOR NO KEY UPDATE, every dispatch notifying one user (all
    # the mail of one inbox) waited for the previous one's commit.
    with committed_runtime.db.transaction() as session:
        user = make_user(session)
        notify_of_everything(session, user.id)
        events = [_event_for(user), _event_for(user)]
        session.add_all(events)
    holder = committed_runtime.db.session()
    try:
        assert len(notify(holder, [holder.get(Event, events[0].id)])) == 1
        with committed_runtime.db.session() as other:
            other.execute(text("SET LOCAL lock_timeout = '1s'"))
            assert len(notify(other, [other.get(Event, events[1].id)])) == 1
            other.commit()
    finally:
        holder.rollback()
        holder.close()
