"""bench.ingest spreads a load over its client processes: every connection held by one, the
shares at most one apart, so a load of 1 is one connection (and a load need not divide)."""

import pytest

from bench.ingest import PROCESSES, share


@pytest.mark.parametrize("connections", [1, 2, PROCESSES, 8, 9, 64, 127])
def test_the_client_processes_hold_the_whole_load_in_shares_at_most_one_apart(connections):
    shares = [share(connections, index) for index in range(PROCESSES)]
    assert sum(shares) == connections
    assert max(shares) - min(shares) <= 1
