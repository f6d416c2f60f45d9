"""The web UI with much mail (issue #38): an inbox of 10,000 e-mails in a real browser
(Playwright driving Debian's Chromium) against a real `burnbox serve` (SQLite), each figure a
ratio to a static page of the same size served by the same process (the UI's own static file
route), measured in interleaved rounds of one run.

- first list paint: from the navigation to the inbox page until its first row is drawn, against
  loading the static copy of that page as it was drawn (same bytes, no script);
- switching e-mails: from pressing `j` until the next e-mail's subject is in the reading pane,
  against loading the static copy of the pane's e-mail as drawn;
- paging: from pressing "Older" until the next 50 rows are drawn, against the same static page.

The mail is one message sent over SMTP, copied 9,999 times in the database while the server is
stopped (its caches then start empty), so filling takes seconds. Run alone with
`python -m bench.ui`; BURNBOX_BENCH_UI_EMAILS and BURNBOX_BENCH_UI_ROUNDS change the size and
the rounds. Needs /usr/bin/chromium (BURNBOX_TEST_CHROMIUM names another).
"""

from __future__ import annotations

import os
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.harness import Comparison
from tests.ui.conftest import CHROMIUM, PASSWORD, admin_token, send_mail, serve, sign_in
from web.ui import STATIC

EMAILS = int(os.environ.get("BURNBOX_BENCH_UI_EMAILS", "10000"))
ROUNDS = int(os.environ.get("BURNBOX_BENCH_UI_ROUNDS", "5"))
SETTINGS = {"BURNBOX_BOOTSTRAP__ENABLED": "true", "BURNBOX_BOOTSTRAP__ADMIN_PASSWORD": PASSWORD,
            "BURNBOX_RATE_LIMITS__AUTHENTICATED": "100000/minute",
            "BURNBOX_RATE_LIMITS__REFRESH": "100000/minute"}
# The static copies live beside the UI's files while the benchmark runs (removed after).
BASELINE_PAGE = "bench-baseline-list.html"
BASELINE_EMAIL = "bench-baseline-email.html"


def _fill(data: Path, inbox_id: str, count: int) -> None:
    """Copy the inbox's one e-mail until it holds `count`, one second apart, newest first, and
    set the inbox's counters to match (the server is stopped meanwhile)."""
    with sqlite3.connect(data / "burnbox.db") as db:
        for _ in range(300):
            row = db.execute("SELECT id FROM emails WHERE inbox_id = ?", (inbox_id,)).fetchone()
            if row:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the first e-mail never arrived")
        columns = [info[1] for info in db.execute("PRAGMA table_info(emails)")]
        copied = {"id": "lower(hex(randomblob(16)))", "message_id": "message_id || n",
                  "subject": "'Order ' || n", "is_read": "0",
                  "received_at": "datetime(received_at, '-' || n || ' seconds')"}
        values = ", ".join(copied.get(name, name) for name in columns)
        db.execute(f"""WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq
                       WHERE n < ?)
                       INSERT INTO emails ({", ".join(columns)})
                       SELECT {values} FROM emails, seq WHERE emails.id = ?""",
                   (count - 1, row[0]))
        db.execute("UPDATE inboxes SET email_count = ?, unread_count = ? WHERE id = ?",
                   (count, count, inbox_id))


def _ms(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def run() -> list[Comparison]:
    """Fill an inbox, then measure the three figures against their static baselines."""
    if not Path(CHROMIUM).exists():
        print(f"skipped: no browser at {CHROMIUM}")
        return []
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with serve(tmp, **SETTINGS) as served:
            inbox = served.api("POST", "/inboxes", token=admin_token(served),
                               json={"domain": "burnbox.test", "alias": "many"}).json()
            send_mail(served, inbox["full_address"], "Order 0",
                      "Your code is 424242. https://acme.example/orders/1\n" * 20,
                      sender="Acme Shop <shop@acme.example>")
            _fill(tmp / "data", inbox["id"].replace("-", ""), EMAILS)
        try:
            with serve(tmp, **SETTINGS) as served, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                     args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                return _measure(page, served, inbox)
        finally:
            for name in (BASELINE_PAGE, BASELINE_EMAIL):
                (STATIC / name).unlink(missing_ok=True)


def _static_copy(page) -> str:
    """The page as drawn, without its script: same markup and style sheet, nothing run."""
    return re.sub(r"<script\b[^>]*>.*?</script>", "", page.content(), flags=re.DOTALL)


def _measure(page, served, inbox) -> list[Comparison]:
    """The rounds: each candidate, then its baseline (alternating which goes first)."""
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    inbox_url = f"{served.base}/inboxes/{inbox['id']}"
    first_row = page.locator(".emails li[data-id]").first
    pane_heading = page.locator(".reader h2")

    def open_list() -> None:
        page.goto(inbox_url)
        first_row.wait_for()

    open_list()
    total = page.locator(".pager").inner_text()
    assert f"{EMAILS:,}".replace(",", "") in total.replace(",", ""), total
    # The static copies, as the page drew them: the list page, and the pane with one e-mail.
    # Without the app's script: a copy that ran it would also refresh the session on load.
    (STATIC / BASELINE_PAGE).write_text(_static_copy(page), encoding="utf-8")
    first_row.locator("a").click()
    pane_heading.wait_for()
    (STATIC / BASELINE_EMAIL).write_text(_static_copy(page), encoding="utf-8")

    def static(name: str) -> Callable[[], None]:
        def load() -> None:
            page.goto(f"{served.base}/ui/static/{name}?{time.monotonic_ns()}")
            page.locator("h1").first.wait_for()
        return load

    def switch() -> float:
        subject = pane_heading.inner_text()
        started = time.perf_counter()
        page.keyboard.press("j")
        page.locator(".reader h2", has_not_text=subject).wait_for()
        return (time.perf_counter() - started) * 1000

    def older() -> float:
        page.goto(inbox_url)
        first_row.wait_for()
        shown = first_row.get_attribute("data-id")
        started = time.perf_counter()
        page.get_by_role("button", name="Older").click()
        page.locator(f".emails li[data-id]:first-child:not([data-id='{shown}'])").wait_for()
        return (time.perf_counter() - started) * 1000

    figures: dict[str, list[float]] = {name: [] for name in (
        "list", "list_base", "switch", "switch_base", "page", "page_base")}
    baseline = static(BASELINE_PAGE)
    for round_number in range(ROUNDS):
        pairs = [("list", lambda: _ms(open_list)), ("list_base", lambda: _ms(baseline)),
                 ("page", older), ("page_base", lambda: _ms(baseline))]
        if round_number % 2:
            pairs = [pairs[1], pairs[0], pairs[3], pairs[2]]
        for name, measure in pairs:
            figures[name].append(measure())
        # Switching: open the first e-mail, then press j ten times (each a measurement).
        page.goto(inbox_url)
        first_row.locator("a").click()
        pane_heading.wait_for()
        figures["switch"] += [switch() for _ in range(10)]
        figures["switch_base"] += [_ms(static(BASELINE_EMAIL)) for _ in range(3)]
    median = {name: statistics.median(values) for name, values in figures.items()}
    return [
        Comparison(f"first list paint, {EMAILS} e-mails (vs static)", median["list"],
                   median["list_base"], "ms"),
        Comparison("switch e-mails in the pane, j (vs static)", median["switch"],
                   median["switch_base"], "ms"),
        Comparison(f"next page of 50, {EMAILS} e-mails (vs static)", median["page"],
                   median["page_base"], "ms"),
    ]


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
