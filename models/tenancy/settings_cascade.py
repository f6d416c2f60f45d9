"""The settings cascade: platform -> org -> domain -> team -> domain assignment.

Each level may store overrides of a few keys (as JSON on its row: `orgs.settings`,
`teams.settings`, and the domain and assignment rows of the domains context). `resolve` combines
the levels of one place in the hierarchy:

- `inbox_default_ttl`: the most specific level that sets it wins, clamped to the effective max.
- `inbox_max_ttl` and the limits (`max_domains`, `max_teams`, `max_inboxes_per_domain`): a level
  can only tighten what the levels above allow, so the effective value is the smallest one set.
  A limit of 0 means "no limit" at that level (like `defaults.max_sessions_per_user`).
- `enforce_sso` (org level only): a flag a level can switch on, never off; in force when the
  platform (`sso.enforce_sso`) or the org sets it (see models.sso.enforcement).

The platform level is the `defaults.*` configuration. Writes are validated against the levels
above (`validate_layer`), so a user gets a clear 400 instead of a value that is silently clamped;
resolution clamps anyway, because the levels above can change later.

This module reads the platform and org levels (`org_layers`, `effective_settings`); each higher
level is read by the module that owns its row (`models.tenancy.teams.team_layer`,
`models.domains.domains.domain_layer`), and `models.domains.assignments.domain_settings` loads
the domain, team and assignment levels in order and combines them with `resolve`
(`assignment_settings` takes them from an assignment loaded with its domain and team).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from burnbox.durations import DurationError, format_duration, parse_duration
from burnbox.settings import Settings
from burnbox.timeutil import time_zone
from models.errors import NotFound, ValidationFailed
from models.platform.settings import live_settings
from models.tenancy.orgs import Org

ORG = "org"
DOMAIN = "domain"
TEAM = "team"
ASSIGNMENT = "assignment"
# Least to most specific; the platform (configuration) comes before all of them.
LEVELS = (ORG, DOMAIN, TEAM, ASSIGNMENT)

DURATION = "duration"
LIMIT = "limit"
FLAG = "flag"
ZONE = "zone"
# How a key combines across levels: the most specific value, or the tightest one.
MOST_SPECIFIC = "most_specific"
TIGHTEST = "tightest"


@dataclass(frozen=True)
class Key:
    """One cascaded setting: its kind, how levels combine it, and where it may be set."""

    kind: str
    combine: str
    levels: tuple[str, ...]
    help: str


KEYS: Mapping[str, Key] = {
    "inbox_default_ttl": Key(DURATION, MOST_SPECIFIC, LEVELS,
                             "lifetime of an inbox created without a ttl (Go duration)"),
    "inbox_max_ttl": Key(DURATION, TIGHTEST, LEVELS,
                         "longest inbox lifetime, extensions included (Go duration)"),
    "max_domains": Key(LIMIT, TIGHTEST, (ORG,), "domains an org may register (0: no limit)"),
    "max_teams": Key(LIMIT, TIGHTEST, (ORG,), "teams an org may have (0: no limit)"),
    "max_inboxes_per_domain": Key(LIMIT, TIGHTEST, LEVELS,
                                  "active inboxes per domain (0: no limit)"),
    "enforce_sso": Key(FLAG, TIGHTEST, (ORG,),
                       "refuse password sign-in to users of the e-mail domains SSO-mapped into "
                       "the org"),
    "timezone": Key(ZONE, MOST_SPECIFIC, (ORG,),
                    "IANA time zone of the org's analytics days when a request names none"),
}
# The platform's time zone: analytics days are UTC days unless the org (or the request) says.
PLATFORM_ZONE = "UTC"


@dataclass(frozen=True)
class EffectiveSettings:
    """The resolved values for one place in the hierarchy (limits: 0 means no limit)."""

    inbox_default_ttl: timedelta
    inbox_max_ttl: timedelta
    max_domains: int
    max_teams: int
    max_inboxes_per_domain: int
    enforce_sso: bool
    timezone: str = PLATFORM_ZONE

    def as_json(self) -> dict[str, Any]:
        """The values as JSON: durations as Go-style strings."""
        return {name: format_duration(value) if isinstance(value, timedelta) else value
                for name, value in dataclasses.asdict(self).items()}


def platform_layer(session: Session, settings: Settings) -> dict[str, Any]:
    """The platform level: the `defaults.*` configuration under the administrator's overrides
    (PUT /admin/platform), read now so a change reaches every process at once."""
    live = live_settings(session, settings)
    defaults = live.defaults
    return {"inbox_default_ttl": defaults.inbox_ttl, "inbox_max_ttl": defaults.inbox_max_ttl,
            "max_domains": defaults.max_domains, "max_teams": defaults.max_teams,
            "max_inboxes_per_domain": defaults.max_inboxes_per_domain,
            "enforce_sso": live.sso.enforce_sso, "timezone": PLATFORM_ZONE}


def stored_layer(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A level's stored overrides (durations as strings) as a typed layer for `resolve`;
    unknown keys are dropped."""
    values: dict[str, Any] = {}
    for name, value in stored.items():
        key = KEYS.get(name)
        if key is None or value is None:
            continue
        values[name] = {DURATION: parse_duration, FLAG: bool, ZONE: str}.get(key.kind, int)(value)
    return values


def resolve(layers: list[Mapping[str, Any]]) -> EffectiveSettings:
    """Combine typed layers, the platform's first (it sets every key)."""
    values = dict(layers[0])
    for layer in layers[1:]:
        for name, value in layer.items():
            key = KEYS[name]
            if key.combine == MOST_SPECIFIC:
                values[name] = value
            elif key.kind == FLAG:
                values[name] = values[name] or value
            elif key.kind == LIMIT:
                values[name] = _tighter_limit(values[name], value)
            else:
                values[name] = min(values[name], value)
    values["inbox_default_ttl"] = min(values["inbox_default_ttl"], values["inbox_max_ttl"])
    return EffectiveSettings(**values)


def _tighter_limit(current: int, candidate: int) -> int:
    """The stricter of two limits, where 0 means none."""
    if current == 0 or candidate == 0:
        return current or candidate
    return min(current, candidate)


def org_layers(session: Session, settings: Settings, org_id: uuid.UUID
               ) -> list[Mapping[str, Any]]:
    """The platform and org levels, the first layers of every resolution; NotFound when the
    org does not exist."""
    org = session.get(Org, org_id)
    if org is None:
        raise NotFound("org not found")
    return org_row_layers(session, settings, org)


def org_row_layers(session: Session, settings: Settings, org: Org) -> list[Mapping[str, Any]]:
    """`org_layers` of an org row the caller has read already (the permission check does):
    only the platform level is read."""
    return [platform_layer(session, settings), stored_layer(org.settings or {})]


def effective_settings(session: Session, settings: Settings, org_id: uuid.UUID
                       ) -> EffectiveSettings:
    """The settings in force for an org as a whole; NotFound when it does not exist."""
    return resolve(org_layers(session, settings, org_id))


def validate_layer(level: str, values: Mapping[str, Any],
                   above: EffectiveSettings) -> dict[str, Any]:
    """Check overrides for `level` against the levels `above`; return them as stored (None
    values dropped: they mean "inherit"). Raise ValidationFailed naming every bad key."""
    errors: dict[str, list[str]] = {}
    clean: dict[str, Any] = {}
    typed: dict[str, Any] = {}
    for name, value in values.items():
        key = KEYS.get(name)
        if key is None or level not in key.levels:
            errors[name] = [f"not a setting of the {level} level"]
        elif value is None:
            continue
        elif key.kind == ZONE:
            problem = _zone_problem(value)
            if problem:
                errors[name] = [problem]
            else:
                clean[name] = value
        elif key.kind == DURATION:
            problem = _duration_problem(value)
            if problem:
                errors[name] = [problem]
            else:
                clean[name], typed[name] = value.strip(), parse_duration(value)
        elif key.kind == FLAG:
            if isinstance(value, bool):
                clean[name] = typed[name] = value
            else:
                errors[name] = ["must be true or false"]
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            errors[name] = ["must be a whole number, 0 or more (0: no limit)"]
        else:
            clean[name] = typed[name] = value
    _check_against_above(typed, above, errors)
    if errors:
        raise ValidationFailed("invalid settings: " + ", ".join(sorted(errors)), details=errors)
    return clean


def _zone_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be an IANA time zone name such as 'Europe/Paris'"
    try:
        time_zone(value)
    except ValueError as exc:
        return str(exc)
    return None


def _duration_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a duration string such as '10m' or '24h'"
    try:
        parsed = parse_duration(value)
    except DurationError as exc:
        return str(exc)
    return None if parsed > timedelta(0) else "must be longer than 0s"


def _check_against_above(typed: Mapping[str, Any], above: EffectiveSettings,
                         errors: dict[str, list[str]]) -> None:
    """Note values that exceed what the levels above allow."""
    max_ttl = typed.get("inbox_max_ttl")
    if max_ttl is not None and max_ttl > above.inbox_max_ttl:
        errors.setdefault("inbox_max_ttl", []).append(
            f"must not exceed {format_duration(above.inbox_max_ttl)}")
    ceiling = min(max_ttl or above.inbox_max_ttl, above.inbox_max_ttl)
    default_ttl = typed.get("inbox_default_ttl")
    if default_ttl is not None and default_ttl > ceiling:
        errors.setdefault("inbox_default_ttl", []).append(
            f"must not exceed the max ttl {format_duration(ceiling)}")
    for name in ("max_domains", "max_teams", "max_inboxes_per_domain"):
        allowed = getattr(above, name)
        value = typed.get(name)
        if value is not None and allowed and (value == 0 or value > allowed):
            errors.setdefault(name, []).append(f"must be between 1 and {allowed}")
