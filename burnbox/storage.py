"""Object storage for attachments and raw messages: a local folder, or an S3-compatible bucket.

Keys are relative slash-separated names chosen by Burnbox ("raw/<uuid>.eml"), validated the same
way by every backend (`validate_key`); on the filesystem a key can never reach outside the root.
Which backend runs is decided by the settings alone (`make_storage`), never by what happens to
work at start-up, so every process reads what the others wrote (a fallback chosen at start-up
once let two processes pick different places, and mail one stored the other could not read).
"""

from __future__ import annotations

import ctypes
import io
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import IO, Any, Protocol

import boto3
from boto3.exceptions import S3UploadFailedError
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from burnbox.settings import Settings, SettingsError, StorageSettings

log = logging.getLogger(__name__)

# Folders a FilesystemStorage remembers as checked and created (then it starts over).
KNOWN_FOLDERS = 4096
# Concurrent PutObject requests of one put_many call on S3.
S3_CONCURRENT_PUTS = 8


class StorageError(RuntimeError):
    """The object could not be stored or read."""


class InvalidKey(StorageError):
    """A key that is empty, absolute, or would leave the storage root."""


class StorageUnavailable(StorageError):
    """The storage service could not be reached or is failing on its side (network errors,
    timeouts, 5xx answers): retrying later may succeed."""


class ObjectStorage(Protocol):
    """Put, get and delete whole objects by key. Every method raises InvalidKey for a key
    `validate_key` refuses; failures of the storage itself raise StorageError (or OSError on the
    filesystem)."""

    def put(self, key: str, data: bytes) -> None:
        """Store `data` durably under `key`, replacing any object there."""

    def put_file(self, key: str, source: IO[bytes]) -> None:
        """Store what `source` holds from its position to its end under `key`, as `put` does,
        read in blocks: a large object (an audit export) never sits in memory whole."""

    def put_many(self, objects: Sequence[tuple[str, bytes]]) -> None:
        """Store several new (key, data) objects at once, cheaper than `put` one by one (a
        single flush to disk on the filesystem, concurrent requests on S3). The keys must be
        new (ingest names each object with a fresh UUID): nothing may read them before this
        returns. Every object is durable when it returns; when it raises, none of them is left
        behind."""

    def get(self, key: str) -> bytes:
        """The object's bytes; raise FileNotFoundError when absent."""

    def open(self, key: str) -> IO[bytes]:
        """The object as a binary stream to read in blocks, so a large object never sits in
        memory whole; raise FileNotFoundError when absent (at once, not at the first read).
        The caller closes it."""

    def delete(self, key: str) -> None:
        """Remove the object if present."""

    def probe(self) -> None:
        """Raise StorageError, with a message for the operator, when the storage cannot be
        written and read."""

    def signed_url(self, key: str, expires: timedelta) -> str | None:
        """A URL that downloads the object without our credentials until `expires` from now,
        or None when the backend has no such URLs (the filesystem: the API streams the file)."""


def validate_key(key: str) -> list[str]:
    """The key's slash-separated parts; raise InvalidKey when it is empty, absolute, uses
    backslashes or NUL, or has empty, "." or ".." parts."""
    if not key or key.startswith("/") or "\\" in key or "\x00" in key:
        raise InvalidKey(f"invalid storage key {key!r}")
    parts = key.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidKey(f"invalid storage key {key!r}")
    return parts


def _load_syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2) where the platform has it (Linux), else None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    function = getattr(libc, "syncfs", None)
    if function is None:
        return None
    function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
    return function


_SYNCFS = _load_syncfs()


def _write_atomically(path: Path, source: IO[bytes]) -> Path:
    """Copy `source` to a temporary file beside `path` and rename it into place: readers see
    the old object or the new one, never part of one. The rename replaces a symlink at `path`
    rather than following it. Not yet flushed to disk."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(source, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _create(path: Path, data: bytes) -> None:
    """Create `path` with `data`, refusing to replace anything there (a symlink included).
    Written in place, with no temporary name: a new key is read by nobody until its writer
    says so. Not yet flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        path.unlink(missing_ok=True)  # ours: O_EXCL created it
        raise
    finally:
        os.close(fd)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _probe_round_trip(storage: ObjectStorage) -> None:
    """Write, read back and delete a probe object; raise StorageError when any step fails.

    The key is unique per call, so processes probing the same storage at once do not delete
    each other's probe."""
    key = f".probe-{uuid.uuid4().hex}"
    try:
        storage.put(key, b"ok")
        if storage.get(key) != b"ok":
            raise StorageError("storage returned different bytes")
        storage.delete(key)
    except OSError as exc:
        raise StorageError(str(exc)) from exc


class FilesystemStorage:
    """ObjectStorage under one root folder. `put` writes under a temporary name and renames
    into place (a reader never sees half an object); `put_many` creates its new files in
    place. Both flush the files and their directory entries to disk before returning (once for
    the whole set), so they survive a crash."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Folders already checked to lie inside the root and created: ingest writes into the
        # same few hundred a day, and checking one (`resolve`) costs a system call per part.
        self._folders: set[Path] = set()

    def path_for(self, key: str) -> Path:
        """The file behind `key`; raise InvalidKey unless it is strictly inside the root."""
        path = self.root.joinpath(*validate_key(key))
        self._check_inside(key, path)
        return path

    def put(self, key: str, data: bytes) -> None:
        self.put_file(key, io.BytesIO(data))

    def put_file(self, key: str, source: IO[bytes]) -> None:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._flush([_write_atomically(path, source)])

    def put_many(self, objects: Sequence[tuple[str, bytes]]) -> None:
        written: list[Path] = []
        try:
            for key, data in objects:
                *folder_parts, name = validate_key(key)
                folder = self._made_folder(key, folder_parts)
                path = folder / name
                try:
                    _create(path, data)
                except FileNotFoundError:  # the folder was removed since we made it
                    folder.mkdir(parents=True, exist_ok=True)
                    _create(path, data)
                written.append(path)
            self._flush(written)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise

    def _made_folder(self, key: str, parts: Sequence[str]) -> Path:
        """The folder `parts` of `key`, checked to lie inside the root and created, once per
        folder while it is remembered."""
        folder = self.root.joinpath(*parts)
        if folder not in self._folders:
            self._check_inside(key, folder)
            folder.mkdir(parents=True, exist_ok=True)
            if len(self._folders) >= KNOWN_FOLDERS:
                self._folders.clear()
            self._folders.add(folder)
        return folder

    def _check_inside(self, key: str, path: Path) -> None:
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise InvalidKey(f"invalid storage key {key!r}")

    def _flush(self, paths: Sequence[Path]) -> None:
        """Make the files and every directory entry leading to them durable. On Linux one
        syncfs(2) of the root's filesystem does it for any number of files (measured: a batch
        of 20 small files costs half the CPU and a third of the wait of 20 fsyncs); elsewhere
        each file and each directory between it and the root is fsynced."""
        if _SYNCFS is not None:
            fd = os.open(self.root, os.O_RDONLY)
            try:
                if _SYNCFS(fd) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, os.strerror(error), str(self.root))
            finally:
                os.close(fd)
            return
        folders: set[Path] = set()
        for path in paths:
            _fsync_path(path)
            folders.update(folder for folder in path.parents if folder.is_relative_to(self.root))
        for folder in sorted(folders, key=lambda folder: -len(folder.parts)):
            _fsync_path(folder)

    def get(self, key: str) -> bytes:
        return self.path_for(key).read_bytes()

    def open(self, key: str) -> IO[bytes]:
        return self.path_for(key).open("rb")

    def delete(self, key: str) -> None:
        self.path_for(key).unlink(missing_ok=True)

    def probe(self) -> None:
        _probe_round_trip(self)

    def signed_url(self, key: str, expires: timedelta) -> str | None:
        """None: local files have no URL of their own; the API streams them (GET /files)."""
        self.path_for(key)
        return None


class S3Storage:
    """ObjectStorage in one bucket of an S3-compatible service, every key under `prefix`.

    S3 writes are atomic and durable once PutObject returns. The bucket must exist: probe()
    reports a missing one and nothing creates it, so no two processes can race to set up
    different places and store mail the other cannot read. Service and network errors raise
    StorageError: StorageUnavailable when the service gave no answer or a 5xx one.
    """

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        prefix = prefix.strip("/")
        self.prefix = "/".join(validate_key(prefix)) + "/" if prefix else ""

    def object_name(self, key: str) -> str:
        """The bucket's name for `key`; raise InvalidKey for a key validate_key refuses."""
        return self.prefix + "/".join(validate_key(key))

    def put(self, key: str, data: bytes) -> None:
        name = self.object_name(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=name, Body=data)
        except (BotoCoreError, ClientError) as exc:
            raise self._failure("store", name, exc) from exc

    def put_file(self, key: str, source: IO[bytes]) -> None:
        """A managed upload: multipart for a large object, so it is sent in parts as read."""
        name = self.object_name(key)
        try:
            self.client.upload_fileobj(source, self.bucket, name)
        except (BotoCoreError, ClientError, S3UploadFailedError) as exc:
            raise self._failure("store", name, exc) from exc

    def put_many(self, objects: Sequence[tuple[str, bytes]]) -> None:
        if len(objects) <= 1:
            for key, data in objects:
                self.put(key, data)
            return
        # Each PutObject is a network round trip: send them concurrently (the client is
        # thread-safe); on any failure delete the ones that were stored.
        with ThreadPoolExecutor(min(S3_CONCURRENT_PUTS, len(objects))) as pool:
            futures = [(key, pool.submit(self.put, key, data)) for key, data in objects]
        failures = [future.exception() for _, future in futures if future.exception()]
        if failures:
            for key, future in futures:
                if future.exception() is None:
                    self.delete(key)
            raise failures[0]  # type: ignore[misc]

    def get(self, key: str) -> bytes:
        with self.open(key) as body:
            return body.read()

    def open(self, key: str) -> IO[bytes]:
        """The GetObject body, read from the connection as the caller reads it."""
        name = self.object_name(key)
        try:
            body: IO[bytes] = self.client.get_object(Bucket=self.bucket, Key=name)["Body"]
        except (BotoCoreError, ClientError) as exc:
            if _error_code(exc) == "NoSuchKey":
                raise FileNotFoundError(f"no object {name!r} in bucket {self.bucket!r}") from exc
            raise self._failure("read", name, exc) from exc
        return body

    def delete(self, key: str) -> None:
        name = self.object_name(key)
        try:
            # S3 deletes are idempotent: an absent key is not an error.
            self.client.delete_object(Bucket=self.bucket, Key=name)
        except (BotoCoreError, ClientError) as exc:
            raise self._failure("delete", name, exc) from exc

    def probe(self) -> None:
        where = f"bucket {self.bucket!r} at {self.client.meta.endpoint_url}"
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (BotoCoreError, ClientError) as exc:
            if _error_code(exc) in ("404", "NoSuchBucket", "NotFound"):
                raise StorageError(
                    f"{where} does not exist; create it first (Burnbox never creates buckets)"
                ) from exc
            raise StorageError(f"{where} cannot be used: {exc}") from exc
        _probe_round_trip(self)

    def signed_url(self, key: str, expires: timedelta) -> str | None:
        """A presigned GET URL, valid for `expires` (whole seconds, at least one)."""
        return self.client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": self.object_name(key)},
            ExpiresIn=max(1, int(expires.total_seconds())),
        )

    def _failure(self, action: str, name: str, exc: Exception) -> StorageError:
        message = f"could not {action} {name!r} in bucket {self.bucket!r}: {exc}"
        if isinstance(exc, BotoCoreError) or _error_status(exc) >= 500:
            return StorageUnavailable(message)
        return StorageError(message)


def _error_code(exc: Exception) -> str | None:
    """The S3 error code of a failed call ("NoSuchKey", "404"...); None for network errors."""
    return exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None


def _error_status(exc: Exception) -> int:
    """The HTTP status of a failed S3 call; 0 when there was no answer."""
    if not isinstance(exc, ClientError):
        return 0
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def s3_client(config: StorageSettings) -> Any:
    """A boto3 S3 client for the storage settings; creating it contacts nothing.

    Empty access keys leave boto3 to its standard credential chain (environment, profile,
    instance role). Its own session keeps the client clear of boto3's shared default session.
    """
    session = boto3.session.Session(
        aws_access_key_id=config.s3_access_key or None,
        aws_secret_access_key=config.s3_secret_key or None,
        region_name=config.s3_region or None,
    )
    return session.client(
        "s3",
        endpoint_url=config.s3_endpoint_url or None,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": config.s3_addressing_style},
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
        ),
    )


def make_storage(settings: Settings) -> ObjectStorage:
    """The storage `storage.backend` names. Selection depends on the settings alone, so every
    process picks the same; raise SettingsError when the s3 backend has no bucket."""
    if settings.storage.backend == "s3":
        if not settings.storage.s3_bucket:
            raise SettingsError("setting storage.s3_bucket: required when storage.backend is s3")
        return S3Storage(s3_client(settings.storage), settings.storage.s3_bucket,
                         settings.storage.s3_prefix)
    return FilesystemStorage(settings.storage_path)


class FollowingStorage:
    """ObjectStorage that follows a configuration which may change while the process runs (an
    administrator's PUT /admin/config/storage): at most every `interval` it asks `source` for
    the storage settings in force and, when they changed, builds the new adapter with `build`.

    Writes go to the newest adapter. Reads (and signed URLs) try the newest, then the older
    ones this process used, newest first: another process may write through the old adapter
    until its own next look, and such an object must not be stranded. Deletes reach every
    adapter. When `source` fails (the database is down) the adapter in use stays in use: the
    storage must not fail because its configuration could not be re-read."""

    def __init__(self, initial: StorageSettings, build: Callable[[StorageSettings], ObjectStorage],
                 source: Callable[[], StorageSettings], interval: timedelta) -> None:
        self._build = build
        self._source = source
        self._interval = interval.total_seconds()
        self._adapters: list[tuple[StorageSettings, ObjectStorage]] = [(initial, build(initial))]
        self._checked = 0.0

    def _newest(self) -> ObjectStorage:
        now = time.monotonic()
        if now - self._checked >= self._interval:
            self._checked = now
            try:
                wanted = self._source()
            except Exception:  # any failure to read the configuration keeps the current one
                log.warning("storage configuration not re-read; keeping the current storage",
                            exc_info=True)
                wanted = self._adapters[-1][0]
            if wanted != self._adapters[-1][0]:
                log.info("storage configuration changed; new objects go to the new storage")
                self._adapters.append((wanted, self._build(wanted)))
        return self._adapters[-1][1]

    def _all(self) -> list[ObjectStorage]:
        newest = self._newest()
        return [newest, *(adapter for _, adapter in reversed(self._adapters[:-1]))]

    def put(self, key: str, data: bytes) -> None:
        self._newest().put(key, data)

    def put_file(self, key: str, source: IO[bytes]) -> None:
        self._newest().put_file(key, source)

    def put_many(self, objects: Sequence[tuple[str, bytes]]) -> None:
        self._newest().put_many(objects)

    def get(self, key: str) -> bytes:
        with self.open(key) as body:
            return body.read()

    def open(self, key: str) -> IO[bytes]:
        adapters = self._all()
        for adapter in adapters[:-1]:
            try:
                return adapter.open(key)
            except FileNotFoundError:
                continue
        return adapters[-1].open(key)

    def delete(self, key: str) -> None:
        for adapter in self._all():
            adapter.delete(key)

    def probe(self) -> None:
        self._newest().probe()

    def signed_url(self, key: str, expires: timedelta) -> str | None:
        return self._newest().signed_url(key, expires)
