"""Notification preferences: which events notify a user (by default an inbox's expiry and an
audit export, not new mail nor a new inbox), read and changed by the user only, and honoured by
the fan-out's one statement, so what is off is neither stored nor pushed."""

from __future__ import annotations

import uuid

import dramatiq
from sqlalchemy import func, select

from models.delivery.notification_preferences import DEFAULTS, NotificationPreference
from models.delivery.notifications import TITLES, Notification, notify
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, Event
from models.platform.audit_exports import EXPORT_READY
from tasks import start_worker
from tests.factories.delivery import make_event
from tests.factories.identity import auth_headers, make_user
from tests.factories.tenancy import make_owned_team
from tests.tasks.conftest import wait_until
from web import create_app

PATH = "/api/v1/notifications/preferences"
BY_DEFAULT = {EMAIL_RECEIVED: False, INBOX_CREATED: False, INBOX_EXPIRED: True,
              EXPORT_READY: True}


def _signed_in(runtime):
    with runtime.db.transaction() as session:
        user = make_user(session)
        return user, auth_headers(session, runtime.settings, user)


def test_every_event_that_notifies_has_a_default():
    assert set(DEFAULTS) == set(TITLES)


def test_a_new_user_is_told_of_expiries_and_exports_but_not_of_every_email(runtime, client):
    _user, headers = _signed_in(runtime)
    response = client.get(PATH, headers=headers)
    assert response.status_code == 200
    assert response.get_json() == BY_DEFAULT


def test_a_user_changes_some_choices_and_the_others_keep_theirs(runtime, client):
    user, headers = _signed_in(runtime)
    _other, other_headers = _signed_in(runtime)
    first = client.patch(PATH, json={EMAIL_RECEIVED: True, INBOX_EXPIRED: False},
                         headers=headers)
    assert first.status_code == 200
    assert first.get_json() == {**BY_DEFAULT, EMAIL_RECEIVED: True, INBOX_EXPIRED: False}
    second = client.patch(PATH, json={INBOX_EXPIRED: True}, headers=headers)
    assert second.get_json() == {**BY_DEFAULT, EMAIL_RECEIVED: True}
    assert client.get(PATH, headers=headers).get_json() == second.get_json()
    assert client.patch(PATH, json={}, headers=headers).get_json() == second.get_json()
    # Only the caller's own choices changed.
    assert client.get(PATH, headers=other_headers).get_json() == BY_DEFAULT
    with runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(NotificationPreference)
                              .where(NotificationPreference.user_id == user.id)) == 2


def test_a_bad_choice_is_a_400_that_changes_nothing(runtime, client):
    _user, headers = _signed_in(runtime)
    for body in ({EMAIL_RECEIVED: "yes"}, {EMAIL_RECEIVED: 1}, {EMAIL_RECEIVED: None},
                 {"email.deleted": True}, {"webhook.failed": False, EMAIL_RECEIVED: True},
                 [EMAIL_RECEIVED], "on"):
        response = client.patch(PATH, json=body, headers=headers)
        assert response.status_code == 400, body
        assert response.get_json()["code"] == "validation_error"
    assert client.get(PATH, headers=headers).get_json() == BY_DEFAULT


def test_only_a_signed_in_user_has_preferences(runtime, client):
    assert client.get(PATH).status_code == 401
    assert client.patch(PATH, json={EMAIL_RECEIVED: True}).status_code == 401


def _event(user, name):
    return Event(id=uuid.uuid4(), name=name, org_id=None, team_id=None,
                 data={"inbox_id": "i", "address": "a@x.example", "subject": "s",
                       "created_by": str(user.id), "entries": 3, "format": "csv"})


def test_the_fan_out_notifies_each_user_of_what_they_chose_only(runtime, client):
    default_user, _ = _signed_in(runtime)
    chooser, headers = _signed_in(runtime)
    client.patch(PATH, json={EMAIL_RECEIVED: True, INBOX_EXPIRED: False}, headers=headers)
    with runtime.db.transaction() as session:
        events = [_event(user, name) for user in (default_user, chooser) for name in BY_DEFAULT]
        session.add_all(events)
        session.flush()
        created = notify(session, events)
    told = {(row.user_id, row.type) for row in created}
    assert told == {(default_user.id, INBOX_EXPIRED), (default_user.id, EXPORT_READY),
                    (chooser.id, EMAIL_RECEIVED), (chooser.id, EXPORT_READY)}
    with runtime.db.session() as session:
        stored = {(n.user_id, n.type) for n in session.scalars(select(Notification))}
    assert stored == told


def test_a_dispatched_email_notifies_its_creator_only_once_they_turned_new_mail_on(
        committed_runtime):
    with committed_runtime.db.transaction() as session:
        team = make_owned_team(session, committed_runtime.settings)
        headers = auth_headers(session, committed_runtime.settings, team.owner)
    creator = str(team.owner.id)
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        with committed_runtime.db.transaction() as session:
            before = make_event(session, team, EMAIL_RECEIVED, created_by=creator)
        wait_until(lambda: _dispatched(committed_runtime, before))
        app = create_app(runtime=committed_runtime)
        app.config["TESTING"] = True
        turned = app.test_client().patch(PATH, json={EMAIL_RECEIVED: True}, headers=headers)
        assert turned.status_code == 200
        with committed_runtime.db.transaction() as session:
            after = make_event(session, team, EMAIL_RECEIVED, created_by=creator)
        wait_until(lambda: _dispatched(committed_runtime, after))
    finally:
        running.stop()
    with committed_runtime.db.session() as session:
        told = [n.event_id for n in session.scalars(select(Notification))]
    assert told == [after]


def _dispatched(runtime, event_id):
    with runtime.db.session() as session:
        return session.get(Event, event_id).dispatched_at is not None
