"""API-key rules below the HTTP layer: exact usage counting under concurrency and failure, the
expired-key cleanup rule, and the input rules on their own."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from burnbox.kv import RedisStore
from burnbox.settings import load_settings
from burnbox.timeutil import utcnow
from models.apikeys.keys import (
    ApiKey,
    clean_allowed_ips,
    delete_expired_keys,
    expiry_from,
    ip_allowed,
    new_raw_key,
    record_usage,
    taken_usage,
    write_usage,
)
from models.db import Database
from models.errors import ValidationFailed
from tests.apikey_helpers import flush
from tests.factories.apikeys import make_api_key
from tests.factories.tenancy import make_owned_team


def _row(runtime, key_id):
    with runtime.db.session() as session:
        return session.get(ApiKey, key_id)


def test_requests_counted_while_flushes_run_are_each_counted_exactly_once(committed_runtime):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        team = make_owned_team(session, runtime.settings, "Automation")
        keys = [make_api_key(session, team).id for _ in range(3)]
    done = threading.Event()
    errors = []

    def requests(key_id, ip):
        for _ in range(150):
            record_usage(runtime.store, key_id, ip)

    def flusher():
        try:
            while not done.is_set():
                flush(runtime)
        except Exception as exc:  # surfaced below, not swallowed
            errors.append(exc)

    background = threading.Thread(target=flusher)
    background.start()
    workers = [threading.Thread(target=requests, args=(key_id, f"192.0.2.{n}"))
               for n, key_id in enumerate(keys * 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    done.set()
    background.join(timeout=60)
    assert errors == []
    flush(runtime)
    for n, key_id in enumerate(keys):
        row = _row(runtime, key_id)
        assert row.request_count == 300
        assert row.last_used_ip == f"192.0.2.{n}" or row.last_used_ip == f"192.0.2.{n + 3}"
        assert row.last_used_at is not None


def test_a_failed_write_puts_the_usage_back_for_the_next_flush(runtime, tmp_path):
    with runtime.db.transaction() as session:
        team = make_owned_team(session, runtime.settings, "Automation")
        key_id = make_api_key(session, team).id
    for _ in range(7):
        record_usage(runtime.store, key_id, "198.51.100.1")
    # A real failure: a database that has no api_keys table.
    broken = Database(load_settings(environ={}, overrides={
        "database.url": f"sqlite:///{tmp_path / 'empty.db'}"}))
    with pytest.raises(Exception, match="api_keys"):
        flush(runtime, broken)
    broken.dispose()
    assert _row(runtime, key_id).request_count == 0
    record_usage(runtime.store, key_id, "198.51.100.2")
    assert flush(runtime) == 1
    row = _row(runtime, key_id)
    assert (row.request_count, row.last_used_ip) == (8, "198.51.100.2")


def test_usage_written_but_not_committed_goes_back_for_the_next_flush(runtime):
    with runtime.db.transaction() as session:
        team = make_owned_team(session, runtime.settings, "Automation")
        key_id = make_api_key(session, team).id
    for _ in range(3):
        record_usage(runtime.store, key_id, "198.51.100.1")
    # The write worked; the commit after it did not (the block raised before it committed).
    with (pytest.raises(ConnectionError), runtime.db.session() as session,
          taken_usage(runtime.store) as usages):
        write_usage(session, usages)
        raise ConnectionError("database gone before the commit")
    assert _row(runtime, key_id).request_count == 0
    assert flush(runtime) == 1
    assert _row(runtime, key_id).request_count == 3


def test_usage_of_a_key_deleted_meanwhile_is_dropped_quietly(runtime):
    with runtime.db.transaction() as session:
        team = make_owned_team(session, runtime.settings, "Automation")
        key_id = make_api_key(session, team).id
    record_usage(runtime.store, key_id, "198.51.100.1")
    with runtime.db.transaction() as session:
        session.delete(session.get(ApiKey, key_id))
    assert flush(runtime) == 1
    assert flush(runtime) == 0


def test_an_unreachable_store_loses_the_count_but_never_fails_the_request(caplog):
    record_usage(RedisStore("redis://127.0.0.1:1/0"), uuid.uuid4(), "192.0.2.1")
    assert "usage not counted" in caplog.text


def test_cleanup_deletes_expired_keys_only_and_keeps_revoked_rows(runtime):
    past, future = utcnow() - timedelta(seconds=1), utcnow() + timedelta(hours=1)
    with runtime.db.transaction() as session:
        team = make_owned_team(session, runtime.settings, "Automation")
        kept = {name: make_api_key(session, team, **fields).id for name, fields in {
            "active": {},
            "active, expiring later": {"expires_at": future},
            "disabled": {"is_active": False},
            "revoked": {"is_active": False, "revoked_at": past},
            "revoked and expired": {"is_active": False, "revoked_at": past, "expires_at": past},
        }.items()}
        removed = {name: make_api_key(session, team, **fields).id for name, fields in {
            "expired": {"expires_at": past},
            "disabled and expired": {"is_active": False, "expires_at": past},
        }.items()}
    with runtime.db.transaction() as session:
        assert delete_expired_keys(session) == 2
    with runtime.db.session() as session:
        left = set(session.scalars(select(ApiKey.id)))
    assert left == set(kept.values())
    assert not left & set(removed.values())
    with runtime.db.transaction() as session:
        assert delete_expired_keys(session) == 0


def test_a_raw_key_is_bb_and_64_lowercase_hex_and_never_repeats():
    keys = {new_raw_key() for _ in range(1000)}
    assert len(keys) == 1000
    assert all(len(key) == 67 and key.startswith("bb_") and key[3:] == key[3:].lower()
               and int(key[3:], 16) >= 0 for key in keys)


@pytest.mark.parametrize(("text", "delta"), [("720h", timedelta(hours=720)),
                                             ("90m", timedelta(minutes=90)),
                                             ("1h30m", timedelta(minutes=90)),
                                             ("1.5h", timedelta(minutes=90)),
                                             ("87600h", timedelta(days=3650))])
def test_expires_in_parses_go_durations_up_to_ten_years(text, delta):
    now = utcnow()
    assert expiry_from(text, now) == now + delta


@pytest.mark.parametrize("text", ["87601h", "0", "0s", "1y", "-5m", "", " "])
def test_expires_in_refuses_everything_else_naming_the_field(text):
    with pytest.raises(ValidationFailed) as raised:
        expiry_from(text, utcnow())
    assert list(raised.value.details) == ["expires_in"]


def test_an_allowlist_error_names_every_bad_entry():
    with pytest.raises(ValidationFailed) as raised:
        clean_allowed_ips(["192.0.2.1", "nope", "10.0.0.0/99"])
    assert raised.value.details == {"allowed_ips": [
        "not an IP address or CIDR range: 'nope'",
        "not an IP address or CIDR range: '10.0.0.0/99'"]}


@pytest.mark.parametrize(("allowed", "ip", "expected"), [
    ([], "anything", True),
    (["192.0.2.0/24"], "not an address", False),
    (["192.0.2.0/24"], "::ffff:192.0.2.9", True),
    (["::/0"], "192.0.2.9", False),
    (["0.0.0.0/0", "::/0"], "2001:db8::1", True),
])
def test_ip_allowed_matches_addresses_in_ranges_of_their_own_family(allowed, ip, expected):
    assert ip_allowed(allowed, ip) is expected
