"""The log of refused recipients: a line each while the burst lasts, then one summary line
when the window ends, written by a timer of the running loop."""

import asyncio
import logging

from mailin.refusals import RefusalLog
from models.mail.ingest.store import UNKNOWN_DOMAIN, UNKNOWN_INBOX


def test_a_flood_is_summed_up_in_one_line_when_its_window_ends(caplog):
    caplog.set_level(logging.INFO, logger="mailin.refusals")

    async def flood() -> None:
        refusals = RefusalLog(window=0.3, burst=2)
        for n in range(50):
            refusals.refused(UNKNOWN_DOMAIN if n % 5 else UNKNOWN_INBOX, f"192.0.2.{n % 3}",
                             "spam.example" if n % 5 else "burnbox.test")
        await asyncio.sleep(0.6)

    asyncio.run(flood())
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "refused mail for burnbox.test from 192.0.2.0: no such inbox",
        "refused mail for spam.example from 192.0.2.1: the domain is not served here",
        "refused 48 more recipients in 0.3 s without a line each (the domain is not served "
        "here: 39, no such inbox: 9); from 3 client addresses (most: 192.0.2.2), for 2 "
        "domains (most: spam.example)"]


def test_a_new_window_logs_lines_again(caplog):
    caplog.set_level(logging.INFO, logger="mailin.refusals")
    clock = [0.0]

    async def two_windows() -> None:
        refusals = RefusalLog(window=10, burst=1, clock=lambda: clock[0])
        for moment in (0.0, 5.0, 11.0):
            clock[0] = moment
            refusals.refused(UNKNOWN_INBOX, "192.0.2.1", "burnbox.test")

    asyncio.run(two_windows())
    assert [record.getMessage() for record in caplog.records] == [
        "refused mail for burnbox.test from 192.0.2.1: no such inbox",
        "refused 1 more recipients in 10 s without a line each (no such inbox: 1); from 1 "
        "client addresses (most: 192.0.2.1), for 1 domains (most: burnbox.test)",
        "refused mail for burnbox.test from 192.0.2.1: no such inbox"]
