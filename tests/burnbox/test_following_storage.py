"""FollowingStorage: the storage of a process follows a configuration changed at run time;
objects written through the old one stay readable and deletable."""

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest

from burnbox.settings import StorageSettings
from burnbox.storage import FilesystemStorage, FollowingStorage


class Source:
    """The configuration in force, as a test changes it; `broken` makes reading it fail."""

    def __init__(self, config):
        self.config = config
        self.broken = False

    def __call__(self):
        if self.broken:
            raise ConnectionError("database down")
        return self.config


def _following(tmp_path, interval=timedelta(0)):
    first = StorageSettings(path=str(tmp_path / "one"))
    source = Source(first)
    following = FollowingStorage(first, lambda config: FilesystemStorage(Path(config.path)),
                                 source, interval)
    return following, source


def test_after_a_change_writes_go_to_the_new_storage_and_old_objects_stay_readable(tmp_path):
    following, source = _following(tmp_path)
    following.put("old/key", b"old")
    source.config = dataclasses.replace(source.config, path=str(tmp_path / "two"))
    following.put("new/key", b"new")
    assert (tmp_path / "two" / "new" / "key").read_bytes() == b"new"
    assert not (tmp_path / "one" / "new").exists()
    assert (following.get("old/key"), following.get("new/key")) == (b"old", b"new")
    with following.open("old/key") as old:  # streamed reads fall back the same way
        assert old.read() == b"old"
    with pytest.raises(FileNotFoundError):
        following.get("never/written")
    with pytest.raises(FileNotFoundError):
        following.open("never/written")
    following.delete("old/key")
    assert not (tmp_path / "one" / "old" / "key").exists()


def test_the_configuration_is_read_at_most_once_per_interval(tmp_path):
    following, source = _following(tmp_path, interval=timedelta(hours=1))
    following.put("a/first", b"1")  # the first use reads it
    source.config = dataclasses.replace(source.config, path=str(tmp_path / "two"))
    following.put("a/second", b"2")
    assert (tmp_path / "one" / "a" / "second").exists()


def test_a_configuration_that_cannot_be_read_keeps_the_storage_in_use(tmp_path):
    following, source = _following(tmp_path)
    source.broken = True
    following.put("a/key", b"x")
    assert following.get("a/key") == b"x"
    assert (tmp_path / "one" / "a" / "key").exists()
