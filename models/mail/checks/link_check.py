"""The link check: ask every link of an e-mail whether it answers, on demand.

Each link (the `links` found at ingest, models.mail.ingest.extract) gets a HEAD request, then a GET
when the server refuses HEAD (405 or 501); redirects are followed up to MAX_REDIRECTS hops, each
hop's host resolved and checked by the SSRF guard like a webhook target (burnbox.netguard: internal
addresses refused unless `webhooks.allow_private_targets`). A body is never read. At most
CONCURRENCY links are asked at once, each within LINK_TIMEOUT seconds, and the whole check within
TOTAL_TIMEOUT seconds: a link still unanswered then reports a timeout. Only the first MAX_LINKS
links are asked; the rest are counted in `skipped`.

The result is a plain JSON-ready dict, kept on the e-mail (`Email.link_check`) until the next
check replaces it: `{"checked_at", "elapsed_ms", "skipped", "links": [...]}`, each link
`{"href", "ok", "status", "method", "redirect_to", "final_url", "final_status", "redirects",
"elapsed_ms", "error"}` (see `LinkResult`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from burnbox import http_client
from burnbox.dns import outbound_resolver
from burnbox.netguard import AddressResolver, TargetRefused
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.mail.entities import Email

MAX_LINKS = 50
CONCURRENCY = 4
LINK_TIMEOUT = 5.0
TOTAL_TIMEOUT = 10.0
MAX_REDIRECTS = 5
# Statuses by which a server says it does not do HEAD: ask again with GET.
HEAD_REFUSED = frozenset({405, 501})
REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class LinkResult:
    """What one link answered. `status`, `method` and `redirect_to` (absolute) are the first
    answer's; `final_url` and `final_status` the last one's after following redirects (the same
    when there were none). `error` says why there is no answer (refused by the SSRF guard,
    timeout, connection failure, not an http(s) URL), with the statuses then None. `ok` is an
    answer below 400 at the end of the redirects."""

    href: str
    ok: bool
    status: int | None
    method: str | None
    redirect_to: str | None
    final_url: str
    final_status: int | None
    redirects: int
    elapsed_ms: int
    error: str | None


@dataclass(frozen=True)
class Outbound:
    """How to reach the links: the webhooks' SSRF allowance and the configured resolver."""

    allow_private: bool
    resolver: AddressResolver | None = None
    link_timeout: float = LINK_TIMEOUT
    total_timeout: float = TOTAL_TIMEOUT

    @classmethod
    def of(cls, settings: Settings) -> Outbound:
        """The webhooks' rules as the settings give them: `webhooks.allow_private_targets`,
        and the configured nameservers when there are any."""
        return cls(allow_private=settings.webhooks.allow_private_targets,
                   resolver=outbound_resolver(settings))


def _ask(url: str, outbound: Outbound, timeout: float) -> tuple[http_client.Reply, str]:
    """HEAD `url`, then GET when HEAD is refused; the reply and the method that made it."""
    reply = http_client.probe("HEAD", url, timeout=timeout,
                              allow_private=outbound.allow_private, resolver=outbound.resolver)
    if reply.status not in HEAD_REFUSED:
        return reply, "HEAD"
    return http_client.probe("GET", url, timeout=timeout, allow_private=outbound.allow_private,
                             resolver=outbound.resolver), "GET"


def check_link(href: str, outbound: Outbound, deadline: float) -> LinkResult:
    """Ask `href` (following redirects) before `deadline` (time.monotonic()); never raises
    for anything the target does."""
    started = time.monotonic()
    stop = min(deadline, started + outbound.link_timeout)
    url, first, hops, error = href, None, 0, None
    final: http_client.Reply | None = None
    while True:
        remaining = stop - time.monotonic()
        if remaining <= 0:
            error = "timeout"
            break
        try:
            final, method = _ask(url, outbound, remaining)
        except TargetRefused as exc:
            error = f"address refused: {exc}"
        except http_client.OutboundTimeout:
            error = "timeout"
        except http_client.OutboundError as exc:
            error = str(exc)
        except ValueError:  # a redirect (or a stored link) that is not an http(s) URL
            error = "not an http or https URL"
        if error is not None:
            break
        assert final is not None
        location = urljoin(url, final.location) if final.location else None
        if first is None:
            first = (final.status, method, location if final.status in REDIRECTS else None)
        if final.status not in REDIRECTS or location is None or hops >= MAX_REDIRECTS:
            break
        url, hops = location, hops + 1
    if error is not None:
        final = None
    status, method, redirect_to = first if first is not None else (None, None, None)
    final_status = final.status if final is not None else None
    return LinkResult(
        href=href, ok=final_status is not None and final_status < 400, status=status,
        method=method, redirect_to=redirect_to, final_url=url, final_status=final_status,
        redirects=hops, elapsed_ms=round((time.monotonic() - started) * 1000), error=error)


def check_links(hrefs: Sequence[str], outbound: Outbound) -> dict[str, Any]:
    """Ask the first MAX_LINKS of `hrefs`, CONCURRENCY at a time, all within
    `outbound.total_timeout`; the result as the module docstring describes (links in the order
    given; none at all for an e-mail without links)."""
    started = time.monotonic()
    deadline = started + outbound.total_timeout
    asked = list(hrefs[:MAX_LINKS])
    results: list[LinkResult] = []
    if asked:
        with ThreadPoolExecutor(max_workers=min(CONCURRENCY, len(asked)),
                                thread_name_prefix="link-check") as pool:
            # Each link in a copy of the caller's context, so the outbound guard
            # (burnbox.outbound_guard) sees a transaction the caller left open: a pool thread
            # starts with an empty context and would let it pass unseen.
            asks = [pool.submit(copy_context().run, check_link, href, outbound, deadline)
                    for href in asked]
            results = [ask.result() for ask in asks]
    return {"checked_at": utcnow().isoformat(),
            "elapsed_ms": round((time.monotonic() - started) * 1000),
            "skipped": len(hrefs) - len(asked),
            "links": [asdict(result) for result in results]}


def run_link_check(session: Session, email: Email, outbound: Outbound) -> dict[str, Any]:
    """Check the e-mail's links and keep the result with it (replacing the last one); an
    e-mail deleted during the check keeps nothing. The session must hold no writes: its
    transaction is ended before the first link is asked and the result written in a new one,
    which the caller commits.

    The links are asked between the two transactions because asking them takes up to
    TOTAL_TIMEOUT: inside the request's transaction, on SQLite, that held the one writer lock
    for as long, and every SMTP delivery and API write of every org waited behind it."""
    email_id, hrefs = email.id, [link["href"] for link in email.links or []]
    end_read_only_transaction(session)
    result = check_links(hrefs, outbound)
    session.execute(update(Email).where(Email.id == email_id).values(link_check=result))
    return result


# What reading the result answers before any check ran.
NO_LINK_CHECK: dict[str, Any] = {"checked_at": None, "elapsed_ms": 0, "skipped": 0, "links": []}


def last_link_check(session: Session, email: Email) -> dict[str, Any]:
    """The result kept by the last check of the e-mail; NO_LINK_CHECK when none ran."""
    return session.scalar(select(Email.link_check).where(Email.id == email.id)) or NO_LINK_CHECK
