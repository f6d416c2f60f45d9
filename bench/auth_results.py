"""Time from the SMTP 250 to complete authentication results (SPF, DKIM, DMARC, ARC), p50/p99.

`python -m bench.auth_results [count]`: the embedded shape in this process (SQLite, the
in-process broker, mailin's thread, two worker threads), its DNS answered by a loopback server
(tests/dns_server.py) that publishes the signing key, SPF and DMARC records. Messages signed by
dkimpy are sent one after another over SMTP; for each, the time from its 250 until its e-mail's
results are stored (the database polled every millisecond). A figure, not a ratio: it is not in
`python -m bench`'s list. The result is in docs/mail-checks.md.
"""

from __future__ import annotations

import smtplib
import statistics
import sys
import tempfile
import time

import dramatiq
from sqlalchemy import select

import tasks
from burnbox.settings import load_settings
from mailin.server import MailinThread
from models.mail.entities import Email
from models.runtime import Runtime
from models.schema import upgrade
from tests.dns_server import ZoneServer
from tests.factories.mail import make_inbox, make_mail_world
from tests.models.mail.checks.test_authentication import HERE, publish, signed


def measure(count: int) -> list[float]:
    """Seconds from each message's 250 to its stored results."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    dns = ZoneServer()
    dns.start()
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    publish(dns, key)
    settings = load_settings(environ={}, overrides={
        "data_dir": tempfile.mkdtemp(prefix="burnbox-bench-auth-"), "log.level": "WARNING",
        "auth.jwt_secret": "bench-" + "x" * 40, "dns.nameservers": (dns.nameserver,),
        "dns.timeout": "2s"})
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    tasks.setup_broker(runtime)
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, settings, make_mail_world(session, settings), ttl="1h")
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    workers = tasks.start_worker(dramatiq.get_broker(), threads=2)
    delays = []
    try:
        with smtplib.SMTP(*server.address, local_hostname=HERE.helo, timeout=10) as client:
            for n in range(count):
                raw = signed(key, body=f"Order {n}.\r\n")
                client.sendmail(HERE.mail_from, [inbox.full_address], raw)
                accepted = time.perf_counter()
                delays.append(_until_done(runtime, f"Order {n}.") - accepted)
    finally:
        workers.stop()
        server.stop()
        dns.stop()
        runtime.db.dispose()
    return delays


def _until_done(runtime: Runtime, snippet: str) -> float:
    """When the e-mail whose text is `snippet` has its results (perf_counter)."""
    query = select(Email.auth_results).where(Email.snippet == snippet)
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        with runtime.db.session() as session:
            if session.scalar(query) is not None:
                return time.perf_counter()
        time.sleep(0.001)
    raise TimeoutError(f"no results for {snippet!r} within 30 s")


def main() -> None:
    """Print p50 and p99 of the delays of `count` messages (argv[1], 200 by default)."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    delays = sorted(measure(count))
    p50 = statistics.median(delays)
    p99 = delays[min(len(delays) - 1, round(0.99 * (len(delays) - 1)))]
    print(f"250 -> authentication results, {count} messages, DNS on loopback: "
          f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {delays[-1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
