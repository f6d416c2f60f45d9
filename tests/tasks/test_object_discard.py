"""Stored objects of mail that goes with a bigger delete: a domain (forced, lapsed, in bulk), a
team, an org, and the transfers whose inboxes the cleanup removes afterwards. Mail arrives over
SMTP, the delete goes through the API on a committed database, and the worker's fan-out deletes
the objects; objects still used by another org's copy of a message stay. Deletes that keep the
inboxes (an account, a domain assignment) keep every object. The keys of a team with many
e-mails are handed over in bounded memory."""

from __future__ import annotations

import smtplib
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from burnbox.timeutil import utcnow
from mailin.server import MailinThread
from models.domains.domains import Domain
from models.events import Event
from models.lifecycle.teams import delete_team
from models.mail.entities import KEYS_PER_EVENT, OBJECTS_DISCARDED, Attachment, Email
from models.mail.inboxes import Inbox
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tasks.cleanup import cleanup
from tests.factories.identity import auth_headers, make_user
from tests.factories.mail import (
    MailWorld,
    lapse,
    make_inbox,
    make_inbox_rows,
    make_mail_world,
    message,
)
from tests.factories.tenancy import caller_of
from tests.tasks.conftest import drain
from web import create_app

LOGO = bytes(range(256)) * 8
PLAN = b"%PDF-1.4 the plan\n" * 64


@dataclass
class Scene:
    """Org A's inboxes `doomed` (team T, domain D) and org B's `keeper`, with mail received over
    SMTP: `keys[subject]` are the stored objects of each message."""

    world: MailWorld
    client: Any
    doomed: list[Inbox]
    keeper: Inbox
    sysadmin: dict[str, str] = field(default_factory=dict)
    keys: dict[str, set[str]] = field(default_factory=dict)

    def call(self, method: str, template: str, who: str = "owner", **kwargs: Any) -> Any:
        headers = self.sysadmin if who == "sysadmin" else self.world.headers[who]
        return self.client.open(self.world.path(template), method=method, headers=headers,
                                **kwargs)


def _objects(runtime) -> set[str]:
    root = Path(runtime.storage.root)
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def _send(runtime, mails: list[tuple[list[str], bytes]]) -> None:
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        with smtplib.SMTP(*server.address, timeout=10) as smtp:
            for recipients, raw in mails:
                assert smtp.sendmail("shop@sender.example", recipients, raw) == {}
    finally:
        server.stop()


def _keys_by_subject(runtime) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    with runtime.db.session() as session:
        for email in session.scalars(select(Email)):
            found = keys.setdefault(email.subject, set())
            found.add(email.raw_key)
            found.update(part.storage_key for part in email.attachments)
    return keys


def _scene(runtime, broker) -> Scene:
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        doomed = [make_inbox(session, runtime.settings, world),
                  make_inbox(session, runtime.settings, world, role="lead")]
        keeper = make_inbox(session, runtime.settings, world, assignment="other_assignment",
                            role="outsider")
        admin = make_user(session, "root", is_system_admin=True)
        sysadmin = auth_headers(session, runtime.settings, admin)
    both = [inbox.full_address for inbox in doomed]
    _send(runtime, [
        # One message to both orgs: its objects must outlive org A's copies.
        ([*both, keeper.full_address],
         message(both[0], subject="Shared", attachments=(("logo.png", "image/png", LOGO),))),
        # Org A only, twice over (two inboxes share the objects), and once more to one inbox.
        (both, message(both[0], subject="Doomed", attachments=(
            ("plan.pdf", "application/pdf", PLAN), ("logo.png", "image/png", LOGO)))),
        ([both[0]], message(both[0], subject="Doomed alone")),
        ([keeper.full_address], message(keeper.full_address, subject="Kept",
                                        attachments=(("logo.png", "image/png", LOGO),))),
    ])
    # The e-mails' own events (notifications of the inbox creators) are handled before anything
    # is deleted, as they would be long before anyone deletes a team in real life.
    drain(broker, "events")
    client = create_app(runtime=runtime).test_client()
    scene = Scene(world=world, client=client, doomed=doomed, keeper=keeper, sysadmin=sysadmin,
                  keys=_keys_by_subject(runtime))
    assert _objects(runtime) == set().union(*scene.keys.values())
    assert len(scene.keys["Doomed"]) == 3
    return scene


def _delete_domain(runtime, scene: Scene) -> None:
    assert scene.call("DELETE", "/orgs/{org}/domains/{domain}?force=true").status_code == 200


def _delete_lapsed_domain(runtime, scene: Scene) -> None:
    # No active inbox left, so no force is needed; the lapsed ones still cascade.
    with runtime.db.transaction() as session:
        lapse(session, *(inbox.id for inbox in scene.doomed))
    assert scene.call("DELETE", "/orgs/{org}/domains/{domain}").status_code == 200


def _bulk_delete_domain(runtime, scene: Scene) -> None:
    response = scene.call("POST", "/orgs/{org}/domains/bulk-delete", json={
        "domain_ids": [str(scene.world.ids["domain"])], "force": True})
    assert response.status_code == 200, response.get_json()
    assert [item["status"] for item in response.get_json()["results"]] == ["ok"]


def _delete_team(runtime, scene: Scene) -> None:
    assert scene.call("DELETE", "/orgs/{org}/teams/{team}").status_code == 200


def _delete_org(runtime, scene: Scene) -> None:
    # The owner has no password: the signed-in session confirms.
    assert scene.call("DELETE", "/orgs/{org}", json={}).status_code == 200


def _transfer_team(runtime, scene: Scene) -> None:
    response = scene.call("POST", "/orgs/{org}/teams/{team}/transfer", "sysadmin",
                          json={"target_org_id": str(scene.world.ids["other_org"])})
    assert response.status_code == 200, response.get_json()


def _transfer_domain(runtime, scene: Scene) -> None:
    response = scene.call("POST", "/orgs/{org}/domains/{domain}/transfer", "sysadmin",
                          json={"target_org_id": str(scene.world.ids["other_org"])})
    assert response.status_code == 200, response.get_json()


def _run_cleanup(broker) -> None:
    cleanup.send()
    drain(broker, "clock", "events")


DELETES: dict[str, tuple[Callable[[Any, Scene], None], bool]] = {
    # name: (the delete, whether the cleanup removes the inboxes afterwards)
    "domain_forced": (_delete_domain, False),
    "domain_with_lapsed_inboxes": (_delete_lapsed_domain, False),
    "domain_bulk_delete": (_bulk_delete_domain, False),
    "team": (_delete_team, False),
    "org": (_delete_org, False),
    "team_transfer": (_transfer_team, True),
    "domain_transfer": (_transfer_domain, True),
}


@pytest.mark.parametrize("path", list(DELETES))
def test_every_delete_that_removes_inboxes_discards_their_objects_after_commit(
        committed_runtime, broker, worker, path):
    runtime = committed_runtime
    scene = _scene(runtime, broker)
    delete, then_cleanup = DELETES[path]

    delete(runtime, scene)
    drain(broker, "events")
    if then_cleanup:
        _run_cleanup(broker)
    drain(broker, "events")  # the discard events

    with runtime.db.session() as session:
        assert all(session.get(Inbox, inbox.id) is None for inbox in scene.doomed)
        assert session.get(Inbox, scene.keeper.id) is not None
        assert sorted(email.subject for email in session.scalars(select(Email))) == [
            "Kept", "Shared"]
    # Org B's copy of "Shared" still uses the raw message and the logo it shares with org A.
    assert _objects(runtime) == scene.keys["Shared"] | scene.keys["Kept"]


def _delete_account(runtime, scene: Scene) -> None:
    # The creator of doomed[0] goes; their inboxes stay with the team (created_by is cleared).
    response = scene.call("DELETE", "/auth/me", "team_member", json={})
    assert response.status_code == 200, response.get_json()


def _remove_assignment(runtime, scene: Scene) -> None:
    # The inboxes live out their lifetime without the assignment.
    response = scene.call("DELETE", "/orgs/{org}/teams/{team}/domains/{domain}")
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize("delete", [_delete_account, _remove_assignment],
                         ids=["account", "domain_assignment"])
def test_deletes_that_keep_the_inboxes_keep_their_mail_and_objects(committed_runtime, broker,
                                                                    worker, delete):
    runtime = committed_runtime
    scene = _scene(runtime, broker)
    before = _objects(runtime)

    delete(runtime, scene)
    drain(broker, "events")
    _run_cleanup(broker)  # nothing has lapsed: the cleanup leaves them be
    drain(broker, "events")

    with runtime.db.session() as session:
        assert all(session.get(Inbox, inbox.id) is not None for inbox in scene.doomed)
        assert session.scalar(select(func.count()).select_from(Email)) == 7
        assert session.scalar(select(func.count()).select_from(Event)
                              .where(Event.name == OBJECTS_DISCARDED)) == 0
    assert _objects(runtime) == before


def test_deleting_a_team_with_many_emails_hands_their_keys_over_in_bounded_memory(
        committed_runtime):
    runtime = committed_runtime
    world, expected = _team_with_mail(runtime, inbox_count=2_000, email_count=10)

    tracemalloc.start()
    try:
        _delete_the_team(runtime, world)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    events = _discard_events(runtime)
    assert sorted(key for event in events for key in event) == sorted(expected)  # each key once
    assert all(len(event) <= KEYS_PER_EVENT for event in events)
    # One batch of keys at a time takes about 0.6 MB; all 40 000 at once took 5.3 MB.
    assert peak < 2 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize("extra, event_count", [(0, 1), (1, 2)],
                         ids=["one_batch", "one_key_more"])
def test_a_delete_hands_over_each_key_once_either_side_of_a_batch(committed_runtime, extra,
                                                                  event_count):
    # Up to one batch of keys is read in one plain query; one key more and the delete streams
    # them all again: neither side may drop or repeat a key.
    runtime = committed_runtime
    world, expected = _team_with_mail(runtime, inbox_count=1, email_count=KEYS_PER_EVENT // 2,
                                      raw_only=extra)

    _delete_the_team(runtime, world)

    events = _discard_events(runtime)
    assert len(expected) == KEYS_PER_EVENT + extra
    assert sorted(key for event in events for key in event) == sorted(expected)
    assert len(events) == event_count


def _team_with_mail(runtime, *, inbox_count: int, email_count: int,
                    raw_only: int = 0) -> tuple[Any, set[str]]:
    """A mail world whose team has `inbox_count` inboxes of `email_count` e-mails each (an
    attachment apiece, but for `raw_only` more e-mails with none), committed; and the keys of
    their objects."""
    now = utcnow()
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inboxes = make_inbox_rows(session, session.get(Domain, world.ids["domain"]),
                                  world.ids["team"], inbox_count,
                                  assignment_id=world.ids["assignment"], created_at=now,
                                  email_count=email_count)
        emails, parts = _bulk_mail(inboxes, now)
        plain, _ = _bulk_mail([{**inboxes[0], "email_count": raw_only}], now)
        session.execute(insert(Email), emails + plain)
        session.execute(insert(Attachment), parts)
    return world, {row["raw_key"] for row in emails + plain} | {row["storage_key"] for row in parts}


def _delete_the_team(runtime, world) -> None:
    with runtime.db.transaction() as session:
        grants = load_grants(session)
        org = resolve_org_access(session, grants, caller_of(world.users["owner"]),
                                 world.ids["org"])
        delete_team(session, resolve_team_access(session, org, world.ids["team"]))
    with runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(Email)) == 0


def _discard_events(runtime) -> list[list[str]]:
    """The keys of each discard event, in no particular order."""
    with runtime.db.session() as session:
        events = session.scalars(select(Event).where(Event.name == OBJECTS_DISCARDED)).all()
        return [event.data["keys"] for event in events]


def _bulk_mail(inboxes: list[dict], now: datetime) -> tuple[list[dict], list[dict]]:
    """Rows of the e-mails the inbox rows claim (their email_count), received `now`; every
    e-mail has a raw message and one attachment of its own (the objects need not exist)."""
    email_rows, part_rows = [], []
    for inbox in inboxes:
        for _ in range(inbox["email_count"]):
            email_id = message_id = uuid.uuid4()
            prefix = f"mail/{now:%Y/%m/%d}/{message_id}"
            email_rows.append({
                "id": email_id, "inbox_id": inbox["id"], "message_id": "", "from_address": "",
                "to_address": inbox["full_address"], "cc": [], "subject": "", "snippet": "",
                "body_text": "", "body_html": "", "headers": [], "spam_score": 0.0,
                "size_bytes": 10, "has_attachments": True, "is_read": False,
                "raw_key": f"{prefix}/raw.eml", "received_at": now})
            part_rows.append({
                "id": uuid.uuid4(), "email_id": email_id, "position": 1, "filename": "a.bin",
                "content_type": "application/octet-stream", "size_bytes": 1,
                "storage_key": f"{prefix}/1-a.bin", "created_at": now})
    return email_rows, part_rows
