"""Password checks and the lockout, on both key-value stores and without one."""

import time
from datetime import timedelta

import pytest

from burnbox.kv import RedisStore
from models.errors import RateLimited
from models.identity.credentials import check_password
from models.identity.users import password_hasher


@pytest.fixture
def stored(settings):
    return password_hasher(settings).hash("right password")


def test_the_threshold_locks_and_the_lock_expires(any_store, settings, stored):
    strict = settings.replace(**{"auth.lockout_threshold": 2,
                                 "auth.lockout_duration": timedelta(seconds=1)})
    email = "lockout-model@example.test"
    assert not check_password(any_store, strict, email, stored, "wrong")
    assert not check_password(any_store, strict, email, stored, "wrong")
    with pytest.raises(RateLimited):
        check_password(any_store, strict, email, stored, "right password")
    time.sleep(1.1)
    assert check_password(any_store, strict, email, stored, "right password")


def test_a_threshold_of_zero_never_locks(any_store, settings, stored):
    relaxed = settings.replace(**{"auth.lockout_threshold": 0})
    for _ in range(15):
        check_password(any_store, relaxed, "never-locked@example.test", stored, "wrong")
    assert check_password(any_store, relaxed, "never-locked@example.test", stored,
                          "right password")


def test_without_the_store_checks_still_work_unlocked(settings, stored):
    dead = RedisStore("redis://127.0.0.1:1/0")
    strict = settings.replace(**{"auth.lockout_threshold": 1})
    assert not check_password(dead, strict, "a@example.test", stored, "wrong")
    assert check_password(dead, strict, "a@example.test", stored, "right password")
