"""Builders shared by the domain tests: users, orgs, callers, live inboxes on a domain, and a
check through real DNS."""

from __future__ import annotations

import uuid
from datetime import timedelta

from burnbox.dns import make_resolver
from burnbox.timeutil import utcnow
from models.domains.domains import MANUAL
from models.domains.verification import mx_target, observe, record_check
from models.identity.users import new_user
from models.mail.inboxes import Inbox
from models.platform.audit import Origin
from models.tenancy.access import Caller
from models.tenancy.orgs import create_org

MX_HOST = "mx.burnbox.test"


def add_user(session, *, admin=False, email=None):
    """A user (no password) added to the session."""
    user = new_user(email=email or f"u{uuid.uuid4().hex[:10]}@example.com", display_name="Tester",
                    password_hash=None, is_system_admin=admin)
    session.add(user)
    session.flush()
    return user


def add_org(session, owner, name="Acme"):
    """An org owned by `owner`."""
    org = create_org(session, name, owner.id)
    session.flush()
    return org


def add_live_inboxes(session, domain, team_id, count):
    """`count` live inboxes of team `team_id` (of the domain's org) on `domain`, as rows: the
    deletion rules only count them, so they skip the checks of creating one (a verified
    domain, an assignment)."""
    now = utcnow()
    for _ in range(count):
        local = uuid.uuid4().hex[:12]
        session.add(Inbox(id=uuid.uuid4(), address=local,
                          full_address=f"{local}@{domain.domain_name}", domain_id=domain.id,
                          domain_assignment_id=None, team_id=team_id, org_id=domain.org_id,
                          created_by=None, created_at=now, expires_at=now + timedelta(hours=1),
                          email_count=0, unread_count=0, read_token_hash=None))
    session.flush()


def caller_of(user):
    """The Caller that domain actions audit as."""
    return Caller(user_id=user.id, is_system_admin=user.is_system_admin,
                  origin=Origin(ip="127.0.0.1", user_agent="pytest"))


def dns_settings(settings, server, **changes):
    """`settings` pointed at the loopback DNS server, with a short timeout and MX_HOST."""
    return settings.replace(**{"dns.nameservers": (server.nameserver,),
                               "dns.timeout": timedelta(seconds=1),
                               "smtp.hostname": MX_HOST, **changes})


def run_check(session, settings, domain, trigger=MANUAL):
    """One verification check of `domain`, as the worker runs it, flushed."""
    observation = observe(make_resolver(settings), domain.domain_name)
    check = record_check(session, domain.id, observation, mx_target(settings), trigger)
    session.flush()
    return check


def zone(domain, *, txt=True, mx=True, spf=False, mx_host=MX_HOST, extra=""):
    """Zone-file text for `domain` publishing the chosen records."""
    lines = []
    if txt:
        lines.append(f'{domain.domain_name}. 300 IN TXT "{domain.verification_record}"')
    if spf:
        lines.append(f'{domain.domain_name}. 300 IN TXT "v=spf1 -all"')
    if mx:
        lines.append(f"{domain.domain_name}. 300 IN MX 10 {mx_host}.")
    return "\n".join(lines) + "\n" + extra
