"""Security primitives: pinned-HS256 access tokens, argon2id hashing (off the gevent loop, with a
dummy hash on the current parameters), random tokens, and the outbound address guard."""

import subprocess
import sys
import textwrap
import time
import uuid
from datetime import timedelta

import jwt
import pytest

from burnbox.netguard import TargetRefused, resolve_target
from burnbox.security import (
    PasswordHasher,
    _dummy_hash,
    constant_time_equals,
    decode_access_token,
    encode_access_token,
    hash_token,
    new_token,
)
from tests.processes import ROOT

SECRET = "s" * 64
FAST = PasswordHasher(time_cost=1, memory_kib=1024, parallelism=1)


def _token(**changes):
    claims = {"sub": str(uuid.uuid4()), "sid": str(uuid.uuid4()), "iat": 1_700_000_000,
              "exp": 4_000_000_000, **changes}
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, SECRET,
                      algorithm="HS256"), claims


def test_an_access_token_carries_sub_sid_iat_and_exp():
    user_id, session_id = uuid.uuid4(), uuid.uuid4()
    token = encode_access_token(SECRET, user_id=user_id, session_id=session_id,
                                ttl=timedelta(minutes=15))
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    claims = decode_access_token(SECRET, token)
    assert (claims.user_id, claims.session_id) == (user_id, session_id)
    assert claims.expires_at - claims.issued_at == timedelta(minutes=15)
    assert set(jwt.decode(token, SECRET, algorithms=["HS256"])) == {"sub", "sid", "iat", "exp"}


@pytest.mark.parametrize("missing", ["sub", "sid", "iat", "exp"])
def test_a_token_missing_a_claim_is_invalid(missing):
    token, _ = _token(**{missing: None})
    with pytest.raises(ValueError, match="invalid access token"):
        decode_access_token(SECRET, token)


def test_only_hs256_is_accepted_whatever_the_header_says():
    _, claims = _token()
    for token in (jwt.encode(claims, SECRET, algorithm="HS512"),
                  jwt.encode(claims, None, algorithm="none")):
        with pytest.raises(ValueError):
            decode_access_token(SECRET, token)


def test_a_token_is_verified_once_and_its_expiry_checked_at_every_use(monkeypatch):
    verified = []
    real = jwt.decode

    def counted(*args, **kwargs):
        verified.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counted)
    expires = int(time.time()) + 1
    token, _ = _token(exp=expires)
    assert decode_access_token(SECRET, token).expires_at.timestamp() == expires
    decode_access_token(SECRET, token)
    assert verified == [1]  # the second use did not verify again
    with pytest.raises(ValueError, match="different secret"):
        decode_access_token("o" * 64, token)  # another secret: verified, and refused
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    with pytest.raises(ValueError, match="access token expired"):
        decode_access_token(SECRET, token)


def test_expired_tampered_and_foreign_tokens_are_invalid():
    expired, _ = _token(exp=1_700_000_001)
    with pytest.raises(ValueError, match="expired"):
        decode_access_token(SECRET, expired)
    good, _ = _token()
    header, _, signature = good.split(".")
    other, _ = _token()
    with pytest.raises(ValueError):
        decode_access_token(SECRET, ".".join([header, other.split(".")[1], signature]))
    with pytest.raises(ValueError):
        decode_access_token("another secret of enough length!!", good)
    with pytest.raises(ValueError):
        decode_access_token(SECRET, "garbage")


def test_an_empty_secret_signs_nothing_and_accepts_nothing():
    # A random key made up per process was the old fallback: every gunicorn worker then signed
    # with its own, and about half of all requests failed.
    with pytest.raises(ValueError, match=r"auth\.jwt_secret is empty"):
        encode_access_token("", user_id=uuid.uuid4(), session_id=uuid.uuid4(),
                            ttl=timedelta(minutes=1))
    token, _ = _token()
    with pytest.raises(ValueError, match=r"auth\.jwt_secret is empty"):
        decode_access_token("", token)


def test_a_well_formed_token_signed_with_another_secret_says_the_secret_changed():
    token, _ = _token()
    with pytest.raises(ValueError) as refused:
        decode_access_token("the secret after a restart, long enough", token)
    assert str(refused.value) == (
        "access token signed with a different secret: the server's secret changed")


@pytest.mark.parametrize("claims", [
    {"sub": "not a uuid"}, {"sid": None}, {"exp": "4000000000"},
])
def test_a_badly_signed_token_without_our_claims_is_just_invalid(claims):
    token, _ = _token(**claims)
    with pytest.raises(ValueError) as refused:
        decode_access_token("the secret after a restart, long enough", token)
    assert str(refused.value) == "invalid access token"


def test_tokens_are_256_random_bits_and_stored_as_sha256():
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    assert all(len(t) == 43 for t in tokens)
    token = next(iter(tokens))
    assert hash_token(token) == hash_token(token)
    assert len(hash_token(token)) == 64 and token not in hash_token(token)


def test_constant_time_equals_compares_values():
    assert constant_time_equals("abc", "abc")
    assert not constant_time_equals("abc", "abd")
    assert not constant_time_equals("abc", "abcd")


def test_passwords_are_hashed_with_argon2id_and_the_configured_parameters():
    stored = FAST.hash("hunter2 hunter2")
    assert stored.startswith("$argon2id$v=19$m=1024,t=1,p=1$")
    assert FAST.verify("hunter2 hunter2", stored)
    assert not FAST.verify("hunter3 hunter3", stored)
    assert FAST.hash("hunter2 hunter2") != stored


def test_a_hash_with_other_parameters_needs_a_rehash():
    stored = FAST.hash("pw")
    assert not FAST.needs_rehash(stored)
    assert PasswordHasher(time_cost=2, memory_kib=1024, parallelism=1).needs_rehash(stored)


def test_a_missing_or_unreadable_hash_never_verifies():
    assert FAST.verify("anything", None) is False
    assert FAST.verify("anything", "") is False
    assert FAST.verify("anything", "$2b$12$notanargonhash") is False


def test_the_dummy_hash_uses_the_current_parameters():
    """Unknown users are checked against a hash as costly as a real one: a cheaper dummy would
    answer faster for addresses without an account."""
    stronger = PasswordHasher(time_cost=2, memory_kib=2048, parallelism=2)
    assert _dummy_hash(FAST).startswith("$argon2id$v=19$m=1024,t=1,p=1$")
    assert _dummy_hash(stronger).startswith("$argon2id$v=19$m=2048,t=2,p=2$")
    assert stronger.verify("x", None) is False


GEVENT_PROBE = textwrap.dedent("""
    from gevent import monkey
    monkey.patch_all()
    import time
    import gevent
    from burnbox.security import PasswordHasher

    hasher = PasswordHasher(time_cost=3, memory_kib=32768, parallelism=1)
    ticks = []

    def ticker():
        while True:
            ticks.append(time.monotonic())
            gevent.sleep(0.002)

    def ticks_during(work):
        before = len(ticks)
        work()
        return len(ticks) - before

    loop = gevent.spawn(ticker)
    gevent.sleep(0.01)
    offloaded = ticks_during(lambda: hasher.hash("password"))
    inline = ticks_during(lambda: hasher._scheme().hash("password"))
    loop.kill()
    print(offloaded, inline)
""")


@pytest.mark.slow
def test_under_gevent_hashing_runs_in_the_thread_pool_and_other_greenlets_keep_running():
    result = subprocess.run([sys.executable, "-c", GEVENT_PROBE], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    offloaded, inline = map(int, result.stdout.split())
    assert inline <= 1  # the control: run on the loop, the hash freezes every greenlet
    assert offloaded >= 5


FIRST_USE_PROBE = textwrap.dedent("""
    from burnbox.security import PasswordHasher
    print(PasswordHasher(time_cost=1, memory_kib=1024, parallelism=1).verify("pw", None))
""")


def test_the_first_check_of_a_fresh_process_may_be_one_without_a_stored_hash():
    # A fresh interpreter: passlib loads its argon2 backend once per process, on first use.
    result = subprocess.run([sys.executable, "-c", FIRST_USE_PROBE], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "False"), result.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "10.0.0.8", "172.16.4.4",
                                  "192.168.1.1", "169.254.169.254", "fc00::1", "0.0.0.0", "::",
                                  "::ffff:127.0.0.1", "224.0.0.1"])
def test_outbound_calls_refuse_internal_addresses(host):
    with pytest.raises(TargetRefused):
        resolve_target(host, 25, allow_private=False)


def test_internal_addresses_are_allowed_when_the_setting_says_so():
    assert resolve_target("127.0.0.1", 25, allow_private=True) == "127.0.0.1"


def test_a_public_address_is_returned_for_connecting():
    assert resolve_target("93.184.216.34", 587, allow_private=False) == "93.184.216.34"


def test_a_host_that_does_not_resolve_is_refused():
    with pytest.raises(TargetRefused, match="cannot resolve"):
        resolve_target("no-such-host.invalid", 25, allow_private=True)
