"""Platform settings: administrator overrides over the configured defaults, and the policy."""

from models.platform.settings import (
    PasswordPolicy,
    PlatformSettings,
    current_platform,
    lock_platform,
)


def test_without_a_row_the_configured_defaults_apply(runtime):
    with runtime.db.session() as session:
        platform = current_platform(session, runtime.settings)
    assert platform.registration_enabled is True
    assert platform.max_sessions_per_user == 5
    assert platform.password_policy == PasswordPolicy(
        min_length=8, max_length=128, require_uppercase=False, require_lowercase=False,
        require_digit=False, require_symbol=False)


def test_row_values_override_the_defaults_and_absent_keys_follow_them(runtime):
    with runtime.db.transaction() as session:
        row = lock_platform(session)
        # A key this version does not know, and a stored value out of bounds, are ignored.
        row.overrides = {"defaults.max_sessions_per_user": 2, "defaults.password_min_length": 12,
                         "defaults.password_require_digit": True, "defaults.unknown_rule": True,
                         "defaults.max_teams": -3}
    settings = runtime.settings.replace(**{"defaults.registration_enabled": False})
    with runtime.db.session() as session:
        platform = current_platform(session, settings)
    assert platform.max_sessions_per_user == 2
    assert platform.registration_enabled is False  # absent from the row: the configured value
    assert platform.overridden == {"max_sessions_per_user", "password_min_length",
                                   "password_require_number"}
    assert (platform.password_policy.min_length, platform.password_policy.require_digit,
            platform.password_policy.max_length) == (12, True, 128)


def test_locking_creates_the_row_once(runtime):
    with runtime.db.transaction() as session:
        lock_platform(session)
    with runtime.db.transaction() as session:
        lock_platform(session)
        assert session.query(PlatformSettings).count() == 1


def test_the_policy_names_every_rule_a_password_breaks():
    policy = PasswordPolicy(min_length=10, max_length=12, require_uppercase=True,
                            require_lowercase=True, require_digit=True, require_symbol=True)
    assert policy.problems("Abcdef1!xy") == []
    assert policy.problems("abc") == [
        "must be at least 10 characters", "must contain an upper-case letter",
        "must contain a digit", "must contain a character that is not a letter or digit"]
    assert policy.problems("ABCDEFGHIJ1!Z") == [
        "must be at most 12 characters", "must contain a lower-case letter"]
