"""Users and account tokens: address normalisation, names, single-use expiring tokens."""

from datetime import timedelta

import pytest

from models.errors import ValidationFailed
from models.identity.users import (
    RESET_PASSWORD,
    VERIFY_EMAIL,
    clean_display_name,
    consume_account_token,
    issue_account_token,
    new_user,
    normalise_email,
)


def test_addresses_are_stored_trimmed_and_lower_case():
    assert normalise_email("  Jane.Doe@Example.COM ") == "jane.doe@example.com"


@pytest.mark.parametrize("address", ["", "jane", "jane@", "@example.com", "ja ne@example.com",
                                     "jane@example", "a@b@example.com", "x" * 250 + "@ex.com"])
def test_malformed_addresses_are_refused(address):
    with pytest.raises(ValidationFailed):
        normalise_email(address)


def test_display_names_are_trimmed_and_must_be_printable():
    assert clean_display_name("  Jane  ") == "Jane"
    with pytest.raises(ValidationFailed):
        clean_display_name("bell\x07")


def test_a_new_user_has_every_field_set():
    user = new_user(email="A@Example.com", display_name="A", password_hash=None)
    assert (user.email, user.is_system_admin, user.email_verified, user.timezone,
            user.max_sessions) == ("a@example.com", False, False, "UTC", None)
    assert user.created_at == user.updated_at


def test_an_account_token_works_once_and_only_for_its_purpose(runtime, user):
    with runtime.db.transaction() as session:
        token = issue_account_token(session, user.id, VERIFY_EMAIL, timedelta(hours=1))
    with runtime.db.transaction() as session:
        assert consume_account_token(session, token, RESET_PASSWORD) is None
        assert consume_account_token(session, token, VERIFY_EMAIL).id == user.id
    with runtime.db.transaction() as session:
        assert consume_account_token(session, token, VERIFY_EMAIL) is None


def test_an_expired_account_token_does_not_work(runtime, user):
    with runtime.db.transaction() as session:
        token = issue_account_token(session, user.id, VERIFY_EMAIL, timedelta(seconds=-1))
    with runtime.db.transaction() as session:
        assert consume_account_token(session, token, VERIFY_EMAIL) is None


def test_issuing_a_token_retires_earlier_unused_ones_of_the_same_purpose(runtime, user):
    with runtime.db.transaction() as session:
        reset = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
        verify = issue_account_token(session, user.id, VERIFY_EMAIL, timedelta(hours=1))
        newer = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
    with runtime.db.transaction() as session:
        assert consume_account_token(session, reset, RESET_PASSWORD) is None
        assert consume_account_token(session, verify, VERIFY_EMAIL) is not None
        assert consume_account_token(session, newer, RESET_PASSWORD) is not None
