"""S3 object storage against a real S3-compatible server (moto's, in this process), and the
behaviour every backend shares, run against both the filesystem and S3.

The filesystem-only behaviour (atomic files, symlinks, the root) is in test_storage.py.
"""

import io
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from burnbox.settings import Settings, SettingsError
from burnbox.storage import (
    FilesystemStorage,
    InvalidKey,
    S3Storage,
    StorageError,
    make_storage,
    s3_client,
)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_settings(settings: Settings, endpoint: str, **changes: str) -> Settings:
    """The test settings switched to the s3 backend on the moto server."""
    return settings.replace(**{
        "storage.backend": "s3", "storage.s3_endpoint_url": endpoint,
        "storage.s3_access_key": "testing", "storage.s3_secret_key": "testing",
        "storage.s3_addressing_style": "path", **changes,
    })


@pytest.fixture(scope="session")
def client(settings, s3_endpoint):
    """One S3 client for the session, made by the production factory (clients are slow to
    create and thread-safe to share)."""
    return s3_client(s3_settings(settings, s3_endpoint).storage)


@pytest.fixture
def bucket(client) -> str:
    """A new, empty bucket on the moto server."""
    name = f"burnbox-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_storage(client, bucket) -> S3Storage:
    return S3Storage(client, bucket)


@pytest.fixture(params=["fs", "s3"])
def storage(request, tmp_path):
    """Each backend in turn, built from settings the way the processes build it."""
    if request.param == "fs":
        return FilesystemStorage(tmp_path / "objects")
    return request.getfixturevalue("s3_storage")


# --- Behaviour every backend shares -------------------------------------------------------------


def test_an_object_put_is_read_back_byte_for_byte(storage):
    data = bytes(range(256)) * 1000
    storage.put("raw/2026/11/message.eml", data)
    assert storage.get("raw/2026/11/message.eml") == data


def test_an_empty_object_is_stored_and_read_back_empty(storage):
    storage.put("empty", b"")
    assert storage.get("empty") == b""


def test_put_replaces_an_existing_object(storage):
    storage.put("a/b.bin", b"first version")
    storage.put("a/b.bin", b"second")
    assert storage.get("a/b.bin") == b"second"


def test_a_deleted_object_is_gone_and_deleting_an_absent_one_is_not_an_error(storage):
    storage.put("x.txt", b"x")
    storage.delete("x.txt")
    storage.delete("never-stored.txt")
    with pytest.raises(FileNotFoundError):
        storage.get("x.txt")


def test_reading_an_absent_object_raises_file_not_found(storage):
    with pytest.raises(FileNotFoundError):
        storage.get("nothing/here")


def test_open_streams_an_object_in_blocks_and_refuses_an_absent_one_at_once(storage):
    data = bytes(range(256)) * 1000
    storage.put("raw/big.eml", data)
    with storage.open("raw/big.eml") as body:
        blocks = iter(lambda: body.read(8192), b"")
        assert b"".join(blocks) == data
    with pytest.raises(FileNotFoundError):
        storage.open("nothing/here")


def test_objects_under_different_keys_are_independent(storage):
    storage.put("m/1", b"one")
    storage.put("m/2", b"two")
    storage.delete("m/1")
    assert storage.get("m/2") == b"two"


def test_probe_succeeds_on_a_usable_storage_and_leaves_no_object_behind(storage):
    storage.probe()
    storage.probe()
    with pytest.raises(FileNotFoundError):
        storage.get(".probe")


def test_put_many_stores_every_object(storage):
    objects = [(f"batch/{n}", bytes([n]) * (n * 100)) for n in range(12)]
    storage.put_many(objects)
    assert [storage.get(key) for key, _ in objects] == [data for _, data in objects]


def test_put_many_that_fails_leaves_none_of_its_objects_behind(storage):
    objects = [("batch/a", b"a"), ("batch/b", b"b"), ("../escape", b"x"), ("batch/c", b"c")]
    with pytest.raises(InvalidKey):
        storage.put_many(objects)
    for key in ("batch/a", "batch/b", "batch/c"):
        with pytest.raises(FileNotFoundError):
            storage.get(key)


@pytest.mark.parametrize("key", [
    "", "../x", "/etc/passwd", "a/../b", "a//b", "./a", "a/.", "a/", "..", "a\\b", "a\x00b",
])
def test_every_backend_refuses_the_same_invalid_keys(storage, key):
    for operation in (lambda: storage.put(key, b"x"), lambda: storage.get(key),
                      lambda: storage.delete(key),
                      lambda: storage.signed_url(key, timedelta(minutes=1))):
        with pytest.raises(InvalidKey):
            operation()


# --- S3 only ------------------------------------------------------------------------------------


def test_the_settings_choose_s3_with_the_configured_bucket_and_prefix(settings, s3_endpoint,
                                                                       client, bucket):
    storage = make_storage(s3_settings(settings, s3_endpoint, **{
        "storage.s3_bucket": bucket, "storage.s3_prefix": "/burnbox/mail/"}))
    assert isinstance(storage, S3Storage)
    assert (storage.bucket, storage.prefix) == (bucket, "burnbox/mail/")
    storage.put("raw/1.eml", b"hello")
    assert client.get_object(Bucket=bucket, Key="burnbox/mail/raw/1.eml")["Body"].read() == b"hello"


def test_the_same_settings_choose_the_same_backend_whether_or_not_the_bucket_exists(
        settings, s3_endpoint):
    # Selection never depends on runtime state (or two processes could pick different places):
    # a missing bucket is reported, not quietly replaced by the filesystem.
    missing = s3_settings(settings, s3_endpoint, **{"storage.s3_bucket": "no-such-bucket"})
    assert isinstance(make_storage(missing), S3Storage)
    assert isinstance(make_storage(settings), FilesystemStorage)


def test_the_s3_backend_without_a_bucket_is_a_settings_error_naming_the_key(settings, s3_endpoint):
    with pytest.raises(SettingsError, match=r"storage\.s3_bucket"):
        make_storage(s3_settings(settings, s3_endpoint))


def test_an_unknown_backend_name_is_refused_when_the_settings_load(settings):
    with pytest.raises(SettingsError, match=r"storage\.backend"):
        settings.replace(**{"storage.backend": "gcs"})


def test_probe_names_a_missing_bucket_and_does_not_create_it(client):
    storage = S3Storage(client, "missing-bucket")
    with pytest.raises(StorageError, match=r"'missing-bucket'.*does not exist"):
        storage.probe()
    with pytest.raises(ClientError):
        client.head_bucket(Bucket="missing-bucket")


def test_probe_reports_an_unreachable_endpoint_as_a_storage_error(settings, bucket):
    storage = make_storage(s3_settings(settings, "http://127.0.0.1:9",
                                       **{"storage.s3_bucket": bucket}))
    with pytest.raises(StorageError, match="cannot be used"):
        storage.probe()


def test_reads_and_writes_in_a_missing_bucket_raise_storage_error_not_file_not_found(client):
    storage = S3Storage(client, "missing-bucket")
    with pytest.raises(StorageError):
        storage.put("a", b"x")
    with pytest.raises(StorageError):
        storage.get("a")


def test_prefixes_keep_two_storages_in_one_bucket_apart(client, bucket):
    first, second = S3Storage(client, bucket, "a"), S3Storage(client, bucket, "b")
    first.put("same-key", b"first")
    with pytest.raises(FileNotFoundError):
        second.get("same-key")


def test_a_prefix_that_could_escape_is_refused(client, bucket):
    with pytest.raises(InvalidKey):
        S3Storage(client, bucket, "a/../b")


def test_a_signed_url_downloads_the_object_without_credentials(s3_storage):
    data = b"%PDF-1.7 attachment bytes \x00\xff"
    s3_storage.put("att/1/report.pdf", data)
    response = requests.get(s3_storage.signed_url("att/1/report.pdf", timedelta(minutes=5)),
                            timeout=10)
    assert response.status_code == 200
    assert response.content == data


def s3_would_accept(url: str, at: datetime, secret: str = "testing") -> bool:
    """Whether S3 would serve a presigned GET URL at time `at`: its SigV4 signature matches the
    URL as given (bucket, key, lifetime) and `at` is within the signed lifetime.

    moto serves presigned URLs but checks neither the signature nor the expiry, so the check S3
    makes is made here, with botocore's own SigV4 primitives.
    """
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    signature = query.pop("X-Amz-Signature")
    request = AWSRequest(method="GET", url=urlunsplit(parts._replace(query=urlencode(query))),
                         headers={"host": parts.netloc})
    request.context["timestamp"] = query["X-Amz-Date"]
    access_key, _, region, service, _ = query["X-Amz-Credential"].split("/")
    lifetime = int(query["X-Amz-Expires"])
    auth = S3SigV4QueryAuth(Credentials(access_key, secret), service, region, expires=lifetime)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)),
                              request)
    signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return signature == expected and at <= signed_at + timedelta(seconds=lifetime)


def test_a_signed_url_is_valid_for_exactly_the_lifetime_asked_for(s3_storage):
    s3_storage.put("att/2/file.bin", b"secret")
    now = datetime.now(UTC)
    url = s3_storage.signed_url("att/2/file.bin", timedelta(minutes=5))
    assert s3_would_accept(url, now + timedelta(minutes=4, seconds=58))
    assert not s3_would_accept(url, now + timedelta(minutes=5, seconds=2))


def test_a_signed_url_cannot_be_bent_to_another_key_or_a_longer_life(s3_storage):
    url = s3_storage.signed_url("att/3/mine.bin", timedelta(seconds=60))
    now = datetime.now(UTC)
    assert s3_would_accept(url, now)
    assert not s3_would_accept(url.replace("mine.bin", "other.bin"), now)
    assert not s3_would_accept(url.replace("X-Amz-Expires=60", "X-Amz-Expires=6000"), now)
    assert not s3_would_accept(url, now, secret="another-secret")


def test_a_signed_url_lives_at_least_one_second(s3_storage):
    url = s3_storage.signed_url("att/4/file.bin", timedelta(milliseconds=10))
    assert dict(parse_qsl(urlsplit(url).query))["X-Amz-Expires"] == "1"


def test_the_filesystem_has_no_signed_urls_so_the_api_streams_its_files(tmp_path):
    storage = FilesystemStorage(tmp_path)
    storage.put("att/file.bin", b"x")
    assert storage.signed_url("att/file.bin", timedelta(minutes=5)) is None


def test_put_file_stores_a_stream_read_in_blocks_and_replaces_an_object(storage):
    body = bytes(range(256)) * 40_000  # 10 MB: several parts of an S3 multipart upload
    storage.put("exports/a.csv", b"old")
    storage.put_file("exports/a.csv", io.BytesIO(body))
    assert storage.get("exports/a.csv") == body
