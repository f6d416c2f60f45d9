"""Webhook deliveries made by mail ingest: a process's hand-offs (`tasks.setup_broker`) give
mail ingest `deliver_recorded` as its in-transaction step, so the deliveries of an e-mail's
event commit with the e-mail and their first attempts are handed over once it commits."""

from sqlalchemy import func, select

from models.delivery.webhooks import Webhook, WebhookDelivery, webhook_data
from models.events import EMAIL_RECEIVED, INBOX_CREATED, Event, NewEvent
from models.mail.ingest.store import accept_message, store_messages
from tests.factories.mail import make_inbox, message


def _hook(session, team_id, events, *, active=True):
    hook = Webhook(team_id=team_id, url="https://hooks.example.com/in", events=list(events),
                   secret="s" * 32, is_active=active)
    session.add(hook)
    session.flush()
    return hook.id


def _store(runtime, inbox, subject="Hooked"):
    """Store one message for `inbox` as mailin's committer does; what was handed over after
    the commit (delivery id -> webhook id, per commit) and the new e-mail's id."""
    handed_over = []
    runtime.db.handoffs.deliveries_committed = handed_over.append
    raw = message(inbox.full_address, subject=subject)
    try:
        [[email_id]] = store_messages(runtime.db, runtime.storage, [accept_message(
            raw, mail_from="a@b.example", recipients=[inbox.full_address])])
    finally:
        runtime.db.handoffs.deliveries_committed = None
    return handed_over, email_id


def test_mail_commits_the_deliveries_of_its_teams_subscribed_webhooks(runtime, mail_world):
    """Only the active webhooks of the e-mail's team subscribed to email.received get one, with
    the payload and times the fan-out would give it, handed over after the commit."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
        team = mail_world.ids["team"]
        subscribed = _hook(session, team, [EMAIL_RECEIVED, INBOX_CREATED])
        _hook(session, team, [INBOX_CREATED])  # not subscribed to mail
        _hook(session, team, [EMAIL_RECEIVED], active=False)
        _hook(session, mail_world.ids["other_team"], [EMAIL_RECEIVED])  # another team's
    handed_over, email_id = _store(runtime, inbox)
    with runtime.db.session() as session:
        event = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).one()
        [delivery] = session.scalars(select(WebhookDelivery)).all()
    assert (delivery.webhook_id, delivery.event_id, delivery.event) == (
        subscribed, event.id, EMAIL_RECEIVED)
    assert (delivery.state, delivery.attempts) == ("pending", 0)
    assert delivery.event_created_at == event.created_at
    assert delivery.payload == webhook_data(event)
    assert delivery.payload["email_id"] == str(email_id)
    assert handed_over == [{delivery.id: subscribed}]


def test_mail_for_a_team_without_webhooks_hands_no_delivery_over(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
        _hook(session, mail_world.ids["team"], [INBOX_CREATED])
    handed_over, _ = _store(runtime, inbox)
    with runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)) == 0
    assert handed_over == []


def test_a_delivery_carries_the_tags_the_email_got_on_arrival(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
        _hook(session, mail_world.ids["team"], [EMAIL_RECEIVED])
    raw = b"X-Tags: Signup, beta\r\n" + message(inbox.full_address)
    store_messages(runtime.db, runtime.storage, [accept_message(
        raw, mail_from="a@b.example", recipients=[inbox.full_address])])
    with runtime.db.session() as session:
        [delivery] = session.scalars(select(WebhookDelivery)).all()
    assert delivery.payload["tags"] == ["beta", "Signup"]


def test_an_email_event_recorded_before_tags_existed_is_delivered_with_none():
    old = NewEvent(EMAIL_RECEIVED, {"email_id": "e", "subject": "Before"})
    assert webhook_data(old)["tags"] == []
