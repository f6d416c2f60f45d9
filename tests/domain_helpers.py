"""DNS for the domain tests: settings pointed at the loopback DNS server, a check through it,
and the zone text a domain publishes."""

from __future__ import annotations

from datetime import timedelta

from burnbox.dns import make_resolver
from models.domains.domains import MANUAL
from models.domains.verification import mx_target, observe, record_check

MX_HOST = "mx.burnbox.test"


def dns_settings(settings, server, **changes):
    """`settings` pointed at the loopback DNS server, with a short timeout and MX_HOST."""
    return settings.replace(**{"dns.nameservers": (server.nameserver,),
                               "dns.timeout": timedelta(seconds=1),
                               "smtp.hostname": MX_HOST, **changes})


def run_check(session, settings, domain, trigger=MANUAL):
    """One verification check of `domain`, as the worker runs it, flushed: what the test
    wrote is committed first (into the test's outer transaction), since DNS is never asked
    inside a write transaction (burnbox.outbound_guard)."""
    session.commit()
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
