"""MailHog's chaos monkey, Jim, as the chaos rules of a scope (`models.mail.chaos`).

Jim is a set of chances, each a float from 0 to 1; Burnbox's rules fire on a whole `percent`
of messages. Each chance Burnbox can act on becomes one rule (chances round to whole percents;
a chance that rounds to 0 makes no rule), in the order mailin meets them:

- `RejectSenderChance`: at the end of DATA, `550 5.1.0 Invalid sender` (Burnbox's rules
  answer RCPT or DATA, not MAIL; DATA refuses the message for every recipient, as a refused
  sender does);
- `RejectRecipientChance`: at RCPT, `550 5.1.1 Invalid recipient`;
- `DisconnectChance`: at the end of DATA, the connection closed (after a 421);
- `AcceptChance`: its complement, at RCPT: the connection closed.

`LinkSpeed*` (throttling) and `RejectAuthChance` have no rule in Burnbox: they are accepted and
read back as 0. Reading the rules back (`jim_of`) recognises the rules written above by their
shape and leaves every other rule out, so rules set through the native API do not show as Jim;
Jim is "on" while the scope has any rule at all, and switching it off clears them all.

The JSON is read as Go's `encoding/json` reads MailHog's `Jim` struct: field names matched
regardless of case, unknown fields ignored, a missing field 0, a wrong type an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from models.mail import chaos

FIELDS = ("DisconnectChance", "AcceptChance", "LinkSpeedAffect", "LinkSpeedMin",
          "LinkSpeedMax", "RejectSenderChance", "RejectRecipientChance", "RejectAuthChance")
# MailHog's own defaults (its command-line flags), what a POST without a readable body enables.
DEFAULTS: dict[str, float] = {
    "DisconnectChance": 0.005, "AcceptChance": 0.99, "LinkSpeedAffect": 0.1,
    "LinkSpeedMin": 1024, "LinkSpeedMax": 10240, "RejectSenderChance": 0.05,
    "RejectRecipientChance": 0.05, "RejectAuthChance": 0.05}

_SENDER = {"stage": chaos.DATA, "action": chaos.REPLY, "code": 550, "status": "5.1.0",
           "text": "Invalid sender"}
_RECIPIENT = {"stage": chaos.RCPT, "action": chaos.REPLY, "code": 550, "status": "5.1.1",
              "text": "Invalid recipient"}
_DISCONNECT = {"stage": chaos.DATA, "action": chaos.CLOSE}
_REFUSE = {"stage": chaos.RCPT, "action": chaos.CLOSE}


class JimError(ValueError):
    """A body Go would not decode into MailHog's Jim."""


def read_jim(body: Mapping[str, Any] | None) -> dict[str, float]:
    """The Jim a decoded JSON object describes (see the module's docstring); JimError for no
    object (None) or a field of the wrong type."""
    if body is None:
        raise JimError("not a JSON object")
    found = {key.lower(): value for key, value in body.items()}
    jim: dict[str, float] = {}
    for name in FIELDS:
        value = found.get(name.lower())
        if value is None:
            jim[name] = 0.0
            continue
        try:
            # A float64, as Go reads it: an integer too large for one is out of range there.
            number = float(value) if isinstance(value, int | float) else math.nan
        except OverflowError:
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise JimError(f"{name}: a number")
        jim[name] = number
    return jim


def _percent(chance: float) -> int:
    """A chance as the whole percent a rule fires on, within 0-100."""
    return round(min(1.0, max(0.0, chance)) * 100)


def rules_of(jim: Mapping[str, float]) -> list[dict[str, Any]]:
    """The chaos rules that act as `jim` does (see the module's docstring)."""
    wanted = ((_REFUSE, 1 - jim["AcceptChance"]), (_RECIPIENT, jim["RejectRecipientChance"]),
              (_SENDER, jim["RejectSenderChance"]), (_DISCONNECT, jim["DisconnectChance"]))
    return [{**shape, "percent": _percent(chance)} for shape, chance in wanted
            if _percent(chance) > 0]


def _matches(rule: chaos.ChaosRule, shape: Mapping[str, Any]) -> bool:
    return rule.percent is not None and all(getattr(rule, key) == value
                                            for key, value in shape.items())


def jim_of(rules: Sequence[chaos.ChaosRule]) -> dict[str, float]:
    """The Jim the scope's rules stand for, as MailHog's GET answers it (every field)."""
    def chance(shape: Mapping[str, Any]) -> float:
        return next((rule.percent / 100 for rule in rules if _matches(rule, shape)
                     and rule.percent is not None), 0.0)

    jim = dict.fromkeys(FIELDS, 0.0)
    jim.update(AcceptChance=1 - chance(_REFUSE), RejectRecipientChance=chance(_RECIPIENT),
               RejectSenderChance=chance(_SENDER), DisconnectChance=chance(_DISCONNECT))
    return jim
