"""The settings cascade: how levels combine, what a level may set, and where the values come
from."""

import uuid
from datetime import timedelta

import pytest

from models.errors import NotFound, ValidationFailed
from models.tenancy.org_actions import add_org
from models.tenancy.settings_cascade import (
    ORG,
    TEAM,
    effective_settings,
    org_layers,
    platform_layer,
    resolve,
    validate_layer,
)
from models.tenancy.teams import create_team, team_layer
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of, org_access

MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)
PLATFORM = {"inbox_default_ttl": 10 * MINUTE, "inbox_max_ttl": 24 * HOUR, "max_domains": 5,
            "max_teams": 0, "max_inboxes_per_domain": 100, "enforce_sso": False}


def test_the_most_specific_default_ttl_wins():
    settings = resolve([PLATFORM, {"inbox_default_ttl": HOUR}, {"inbox_default_ttl": 2 * HOUR}])
    assert settings.inbox_default_ttl == 2 * HOUR


def test_a_level_can_only_tighten_the_max_ttl_and_the_default_follows_it():
    settings = resolve([PLATFORM, {"inbox_max_ttl": 2 * HOUR},
                        {"inbox_max_ttl": 48 * HOUR, "inbox_default_ttl": 5 * HOUR}])
    assert (settings.inbox_max_ttl, settings.inbox_default_ttl) == (2 * HOUR, 2 * HOUR)


def test_limits_take_the_tightest_value_where_zero_means_no_limit():
    settings = resolve([PLATFORM, {"max_domains": 0, "max_teams": 3,
                                   "max_inboxes_per_domain": 500},
                        {"max_inboxes_per_domain": 20}])
    assert (settings.max_domains, settings.max_teams, settings.max_inboxes_per_domain) == (
        5, 3, 20)


def test_the_platform_level_is_the_defaults_configuration(runtime, settings):
    configured = settings.replace(**{"defaults.inbox_ttl": "15m", "defaults.max_teams": 7})
    with runtime.db.session() as session:
        layer = platform_layer(session, configured)
    assert (layer["inbox_default_ttl"], layer["max_teams"]) == (15 * MINUTE, 7)
    assert resolve([layer]).as_json()["inbox_default_ttl"] == "15m0s"


def test_validation_keeps_good_values_as_given_and_drops_nulls():
    above = resolve([PLATFORM])
    clean = validate_layer(ORG, {"inbox_max_ttl": " 90m ", "max_teams": 2,
                                 "inbox_default_ttl": None}, above)
    assert clean == {"inbox_max_ttl": "90m", "max_teams": 2}


@pytest.mark.parametrize(("level", "values", "bad"), [
    (TEAM, {"max_teams": 1}, "max_teams"),  # an org-only key
    (ORG, {"colour": "red"}, "colour"),
    (ORG, {"inbox_max_ttl": "25h"}, "inbox_max_ttl"),
    (ORG, {"inbox_default_ttl": "-5m"}, "inbox_default_ttl"),
    (ORG, {"inbox_default_ttl": 600}, "inbox_default_ttl"),
    (ORG, {"max_domains": 6}, "max_domains"),  # above the platform's 5
    (ORG, {"max_domains": 0}, "max_domains"),  # "no limit" would lift the platform's
    (ORG, {"max_inboxes_per_domain": 1.5}, "max_inboxes_per_domain"),
])
def test_validation_names_every_bad_key(level, values, bad):
    with pytest.raises(ValidationFailed) as raised:
        validate_layer(level, values, resolve([PLATFORM]))
    assert bad in raised.value.details


def test_the_org_and_team_levels_are_read_from_their_rows(runtime):
    with runtime.db.transaction() as session:
        owner = make_user(session, "owner")
        org = add_org(session, caller_of(owner), "Cascade")
        org.settings = {"inbox_max_ttl": "3h", "max_inboxes_per_domain": 50}
        team = create_team(session, runtime.settings, org_access(session, owner, org.id),
                           name="Cascaders")
        team.settings = {"inbox_default_ttl": "20m", "max_inboxes_per_domain": 10}
        other = add_org(session, caller_of(owner), "Elsewhere")
    with runtime.db.session() as session:
        for_org = effective_settings(session, runtime.settings, org.id)
        for_team = resolve([*org_layers(session, runtime.settings, org.id),
                            team_layer(session, org.id, team.id)])
        assert (for_org.inbox_max_ttl, for_org.inbox_default_ttl) == (3 * HOUR, 10 * MINUTE)
        assert (for_team.inbox_default_ttl, for_team.max_inboxes_per_domain) == (
            20 * MINUTE, 10)
        with pytest.raises(NotFound):
            team_layer(session, other.id, team.id)
        with pytest.raises(NotFound):
            effective_settings(session, runtime.settings, uuid.uuid4())


def test_enforce_sso_can_be_switched_on_by_an_org_never_off():
    assert resolve([PLATFORM, {"enforce_sso": True}]).enforce_sso is True
    assert resolve([{**PLATFORM, "enforce_sso": True}, {"enforce_sso": False}]).enforce_sso is True
    assert validate_layer(ORG, {"enforce_sso": True}, resolve([PLATFORM])) == {"enforce_sso": True}
    with pytest.raises(ValidationFailed):
        validate_layer(ORG, {"enforce_sso": "yes"}, resolve([PLATFORM]))
