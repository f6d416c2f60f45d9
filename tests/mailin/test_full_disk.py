"""A full disk under object storage, made real: a small tmpfs mounted for the test and filled.
Mail is refused with `452 4.3.1` (not `451 4.3.0`), the log says the disk is full once, not per
message, and says so again only after space came back and ran out again; ingest resumes when
space is freed, with no restart. Skipped when this machine cannot mount a tmpfs (root is
needed)."""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import smtplib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from burnbox.outages import disk_full
from burnbox.storage import FilesystemStorage
from mailin.server import MailinThread
from mailin.store_process import StoreFailed
from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world, message

FULL = (452, b"4.3.1 Insufficient system storage, try again later")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of the test's own, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _fill(folder: Path) -> Path:
    """Fill the filesystem of `folder` to the last byte; the filler file."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (b"\0" * 65536, b"\0"):  # then the last bytes, one at a time
            try:
                while True:
                    os.write(descriptor, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(descriptor)
    return filler


def _send(server, address):
    with smtplib.SMTP(*server.address, timeout=10) as smtp:
        smtp.ehlo()
        smtp.mail("app@sender.example")
        assert smtp.rcpt(address)[0] == 250
        return smtp.data(message(address, text="Hi there.\n" * 200))


def _disk_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "mailin.full_disk"]


def test_a_full_disk_is_452_4_3_1_said_once_and_ingest_resumes_when_space_returns(
        committed_runtime, small_disk, caplog):
    caplog.set_level(logging.INFO)
    runtime = dataclasses.replace(committed_runtime,
                                  storage=FilesystemStorage(small_disk / "objects"))
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        address = make_inbox(session, runtime.settings, world).full_address
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        assert _send(server, address)[0] == 250
        filler = _fill(small_disk)
        for _ in range(3):
            assert _send(server, address) == FULL
        filler.unlink()
        assert _send(server, address)[0] == 250  # no restart: space is back
        _fill(small_disk)
        assert _send(server, address) == FULL
    finally:
        server.stop()
    lines = _disk_lines(caplog)
    assert len(lines) == 3, lines
    assert lines[0].startswith("the disk is full: mail is refused with 452 4.3.1")
    assert "No space left on device" in lines[0]
    assert lines[1] == "disk space is back: mail is stored again"
    assert lines[2].startswith("the disk is full")
    assert not [record for record in caplog.records if record.exc_info
                or "storing a message failed" in record.getMessage()]
    with runtime.db.session() as session:  # the acknowledged ones, readable
        keys = session.scalars(select(Email.raw_key)).all()
        assert session.scalar(select(func.count()).select_from(Email)) == 2
    assert all(runtime.storage.get(key) for key in keys)


def test_every_kind_of_full_disk_is_recognised_and_nothing_else(small_disk):
    _fill(small_disk)
    with pytest.raises(OSError) as storage_full:
        (small_disk / "object").write_bytes(b"x" * 10_000)
    assert disk_full(storage_full.value)
    database = sqlite3.connect(small_disk / "database.sqlite3")
    with pytest.raises(sqlite3.OperationalError) as database_full:
        database.execute("CREATE TABLE t (x BLOB)")
        database.execute("INSERT INTO t VALUES (zeroblob(100000))")
        database.commit()
    database.close()
    assert disk_full(database_full.value), database_full.value
    # What the store process reports is read the same way.
    assert disk_full(StoreFailed.of("OSError: [Errno 28] No space left on device", True))
    assert not disk_full(StoreFailed.of("IntegrityError: duplicate key", False))
    assert not disk_full(OSError(errno.EIO, "I/O error"))
    assert not disk_full(RuntimeError("anything else"))
