"""Object storage for attachments and raw messages, on the local filesystem.

Keys are relative slash-separated names chosen by Burnbox ("raw/<uuid>.eml"); a key can never
reach outside the storage root.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

from burnbox.settings import Settings


class StorageError(RuntimeError):
    """The object could not be stored or read."""


class InvalidKey(StorageError):
    """A key that is empty, absolute, or would leave the storage root."""


class ObjectStorage(Protocol):
    """Put, get and delete whole objects by key."""

    def put(self, key: str, data: bytes) -> None:
        """Store `data` durably under `key`, replacing any object there."""

    def get(self, key: str) -> bytes:
        """The object's bytes; raise FileNotFoundError when absent."""

    def delete(self, key: str) -> None:
        """Remove the object if present."""

    def probe(self) -> None:
        """Raise StorageError when the storage cannot be written and read."""


class FilesystemStorage:
    """ObjectStorage under one root folder; writes are atomic and fsynced before returning."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, key: str) -> Path:
        """The file behind `key`; raise InvalidKey unless it is strictly inside the root."""
        if not key or key.startswith("/") or "\\" in key or "\x00" in key:
            raise InvalidKey(f"invalid storage key {key!r}")
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise InvalidKey(f"invalid storage key {key!r}")
        path = self.root.joinpath(*parts)
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise InvalidKey(f"invalid storage key {key!r}")
        return path

    def put(self, key: str, data: bytes) -> None:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        return self.path_for(key).read_bytes()

    def delete(self, key: str) -> None:
        self.path_for(key).unlink(missing_ok=True)

    def probe(self) -> None:
        try:
            self.put(".probe", b"ok")
            if self.get(".probe") != b"ok":
                raise StorageError("storage returned different bytes")
            self.delete(".probe")
        except OSError as exc:
            raise StorageError(str(exc)) from exc


def make_storage(settings: Settings) -> ObjectStorage:
    """The storage the settings choose. Selection is deterministic: every process picks the same."""
    return FilesystemStorage(settings.storage_path)
