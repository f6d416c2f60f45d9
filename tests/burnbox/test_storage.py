"""Filesystem-only object storage behaviour: atomic replacement by `put`, new files only by
`put_many`, the flush to disk, the root, and keys that can never leave it (what every backend
shares is in test_storage_s3.py, run on both)."""

import ctypes
import errno
import os

import pytest

from burnbox import storage as storage_module
from burnbox.settings import load_settings
from burnbox.storage import FilesystemStorage, InvalidKey, StorageError, make_storage


@pytest.fixture
def storage(tmp_path):
    return FilesystemStorage(tmp_path / "objects")


def test_put_replaces_an_existing_object_and_leaves_no_temporary_files(storage):
    storage.put("a/b.bin", b"first")
    storage.put("a/b.bin", b"second")
    assert storage.get("a/b.bin") == b"second"
    assert sorted(p.name for p in (storage.root / "a").iterdir()) == ["b.bin"]


def test_without_syncfs_put_many_fsyncs_each_file_and_each_folder_up_to_the_root(
        storage, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(storage_module, "_SYNCFS", None)
    monkeypatch.setattr(os, "fsync", fsync)
    storage.put_many([("mail/a/1", b"one"), ("mail/b/2", b"two")])
    assert (storage.get("mail/a/1"), storage.get("mail/b/2")) == (b"one", b"two")
    root = storage.root
    assert sorted(synced) == sorted(str(path) for path in (
        root / "mail/a/1", root / "mail/b/2", root / "mail/a", root / "mail/b", root / "mail",
        root))


def test_a_failed_flush_raises_and_removes_the_files_it_wrote(storage, monkeypatch):
    def failing_syncfs(fd):
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(storage_module, "_SYNCFS", failing_syncfs)
    with pytest.raises(OSError) as failed:
        storage.put_many([("mail/a/1", b"one"), ("mail/a/2", b"two")])
    assert failed.value.errno == errno.EIO
    assert list((storage.root / "mail/a").iterdir()) == []


def test_put_many_never_replaces_an_object_and_keeps_none_of_its_own_when_one_exists(storage):
    storage.put("mail/a/taken", b"first")
    with pytest.raises(FileExistsError):
        storage.put_many([("mail/a/new", b"new"), ("mail/a/taken", b"second")])
    assert storage.get("mail/a/taken") == b"first"
    assert sorted(path.name for path in (storage.root / "mail/a").iterdir()) == ["taken"]


def test_put_many_writes_no_temporary_files(storage):
    storage.put_many([("mail/a/1", b"one"), ("mail/a/2", b"two")])
    assert sorted(path.name for path in (storage.root / "mail/a").iterdir()) == ["1", "2"]


def test_put_many_makes_a_folder_again_when_it_was_removed_since(storage):
    storage.put_many([("mail/a/1", b"one")])
    storage.delete("mail/a/1")
    (storage.root / "mail/a").rmdir()
    storage.put_many([("mail/a/2", b"two")])
    assert storage.get("mail/a/2") == b"two"


def test_put_many_refuses_a_symlink_at_its_key_without_writing_through_it(storage, tmp_path):
    outside = tmp_path / "outside"
    (storage.root / "mail").mkdir(parents=True)
    (storage.root / "mail/link").symlink_to(outside)
    with pytest.raises(FileExistsError):
        storage.put_many([("mail/link", b"x")])
    assert not outside.exists()


def test_probe_succeeds_on_a_writable_root_and_leaves_nothing_behind(storage):
    storage.probe()
    assert list(storage.root.iterdir()) == []


def test_probe_raises_storage_error_when_the_root_cannot_be_created(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    with pytest.raises(StorageError):
        FilesystemStorage(blocker / "objects").probe()


@pytest.mark.parametrize("key", [
    "", "../x", "../../etc/passwd", "/etc/passwd", "a/../../b", "a/../b", "a//b", "./a", "a/.",
    "a/", "..", "a\\..\\b", "..\\x", "a\x00b", "a/\x00",
])
def test_keys_that_could_escape_the_root_are_invalid(storage, key):
    for operation in (lambda: storage.put(key, b"x"), lambda: storage.get(key),
                      lambda: storage.delete(key)):
        with pytest.raises(InvalidKey):
            operation()
    assert not storage.root.exists() or list(storage.root.rglob("*")) == []


def test_a_symlink_inside_the_root_cannot_lead_outside_it(storage, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    storage.root.mkdir(parents=True)
    (storage.root / "link").symlink_to(outside)
    with pytest.raises(InvalidKey):
        storage.put("link/file", b"x")
    assert list(outside.iterdir()) == []


def test_the_settings_choose_the_root_under_data_dir_unless_a_path_is_given(tmp_path):
    default = make_storage(load_settings(environ={"BURNBOX_DATA_DIR": str(tmp_path)}))
    assert default.root == (tmp_path / "objects").resolve()
    explicit = make_storage(load_settings(environ={"BURNBOX_STORAGE__PATH": str(tmp_path / "s")}))
    assert explicit.root == (tmp_path / "s").resolve()
