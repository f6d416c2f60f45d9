"""The Mailpit and MailHog faces against the native API, in the same run, on the embedded
backend: a list of 20 e-mails (Mailpit's `GET .../api/v1/messages?limit=20`, MailHog's
`GET .../api/v2/messages?limit=20`, against `GET /inboxes/:id/emails?per_page=20`) and an
e-mail's read (`GET .../api/v1/message/:id`, `GET .../api/v1/messages/:id`, against
`GET /emails/:id`), each with the same team API key (Basic for the faces, Bearer natively).
The target is a ratio of at least 0.8: a compat face may not cost much more than the native
path it stands on. Rates are per second of this thread's CPU (`time.thread_time`), which the
other processes' load on a shared machine does not inflate.

The Mailpit read does what Mailpit's does: it marks the message read (a write, where the
native GET only reads) and reads the raw message for the HTML as sent.
"""

from __future__ import annotations

import base64
import time

from bench.harness import Comparison, compare, embedded_runtime
from models.apikeys.keys import create_key
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.factories.tenancy import caller_of
from web import create_app

EMAILS = 20
TARGET = 0.8


def run() -> list[Comparison]:
    """Compare the Mailpit list and read with the native ones."""
    runtime = embedded_runtime()
    settings = runtime.settings
    with runtime.db.transaction() as session:
        world = make_mail_world(session, settings)
        inbox = make_inbox(session, settings, world, role="lead")
        lead = caller_of(world.users["lead"])
        org = resolve_org_access(session, load_grants(session), lead, world.ids["org"])
        issued = create_key(session, resolve_team_access(session, org, world.ids["team"]),
                            name="bench", scopes=["team.emails.view"])
    html = "<p>Your code is <b>482913</b>.</p>" * 20
    email_ids = [make_email(runtime, inbox.full_address, subject=f"Code {n}", html=html)
                 for n in range(EMAILS)]

    client = create_app(runtime=runtime).test_client()
    basic = base64.b64encode(f"ci:{issued.raw_key}".encode()).decode()
    compat_headers = {"Authorization": f"Basic {basic}"}
    native_headers = {"Authorization": f"Bearer {issued.raw_key}"}
    scope = f"/compat/mailpit/inboxes/{inbox.id}"
    mailhog = f"/compat/mailhog/inboxes/{inbox.id}/api"
    target = email_ids[0]

    def get(path: str, headers: dict[str, str]) -> None:
        response = client.get(path, headers=headers)
        assert response.status_code == 200, response.get_data(as_text=True)[:200]

    comparisons = [
        compare(f"mailpit list of {EMAILS} vs native list",
                lambda: get(f"{scope}/api/v1/messages?limit={EMAILS}", compat_headers),
                lambda: get(f"/api/v1/inboxes/{inbox.id}/emails?per_page={EMAILS}",
                            native_headers), rounds=7, clock=time.thread_time),
        compare("mailpit read (marks read) vs native read",
                lambda: get(f"{scope}/api/v1/message/{target}", compat_headers),
                lambda: get(f"/api/v1/emails/{target}", native_headers), rounds=7,
                clock=time.thread_time),
        compare(f"mailhog list of {EMAILS} vs native list",
                lambda: get(f"{mailhog}/v2/messages?limit={EMAILS}", compat_headers),
                lambda: get(f"/api/v1/inboxes/{inbox.id}/emails?per_page={EMAILS}",
                            native_headers), rounds=7, clock=time.thread_time),
        compare("mailhog read vs native read",
                lambda: get(f"{mailhog}/v1/messages/{target}", compat_headers),
                lambda: get(f"/api/v1/emails/{target}", native_headers), rounds=7,
                clock=time.thread_time),
    ]
    for comparison in comparisons:
        comparison.name += f" (target >= {TARGET})"
    return comparisons


if __name__ == "__main__":
    for result in run():
        print(result.line())
