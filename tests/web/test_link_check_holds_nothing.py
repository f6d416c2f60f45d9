"""A link check waits on other people's servers with no transaction open: while one of its
links holds the request, another org's API write and an SMTP delivery go through (on the
embedded default every write transaction holds SQLite's one writer lock, so a check that asked
its links inside its request's transaction made all of them wait until it ended)."""

from __future__ import annotations

import smtplib
import threading

import requests

from tests.factories.mail import deliver, message
from tests.receiver import Answer


def test_while_a_link_holds_the_check_another_org_writes_and_receives_mail(live, delivering,
                                                                          receiver):
    runtime, world = live.runtime, delivering.world
    held = f"http://127.0.0.1:{receiver.port}/held"
    receiver.by_path["/held"] = Answer(hold=True)
    [email_id] = deliver(runtime.db, runtime.storage,
                         message(delivering.inbox.full_address, text=f"Confirm: {held}\n"),
                         recipients=[delivering.inbox.full_address])
    checked: dict[str, requests.Response] = {}
    check_done = threading.Event()

    def check() -> None:
        checked["response"] = requests.post(f"{live.base}/api/v1/emails/{email_id}/link-check",
                                            headers=world.headers["team_member"], timeout=60)
        check_done.set()

    checking = threading.Thread(target=check)
    checking.start()
    try:
        receiver.wait_for(1)  # the check is now waiting on the held link

        created = requests.post(f"{live.base}/api/v1/inboxes",
                                json={"domain_assignment_id": str(world.ids["other_assignment"])},
                                headers=world.headers["outsider"], timeout=60)
        assert created.status_code == 201, created.text
        address = created.json()["full_address"]
        with smtplib.SMTP(*delivering.smtp, timeout=60) as client:
            refused = client.sendmail("shop@sender.example", [address], message(address))
        assert refused == {}  # 250: stored and committed

        # Both answered while the link still waits: before the fix they could only go
        # through once the check's transaction ended, after its link gave up.
        assert not check_done.is_set()
        assert [request.path for request in receiver.requests] == ["/held"]
    finally:
        receiver.released.set()
        checking.join(60)
    response = checked["response"]
    assert response.status_code == 200, response.text
    [link] = response.json()["links"]
    assert link["href"] == held
    stored = requests.get(f"{live.base}/api/v1/emails/{email_id}/link-check",
                          headers=world.headers["team_member"], timeout=10)
    assert stored.json() == response.json()
