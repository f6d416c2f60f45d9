"""Jim as chaos rules (compat.mailhog.jim): each chance Burnbox can act on is one rule of a
whole percent, the rules read back as the Jim they stand for, and bodies are read as Go reads
MailHog's struct."""

from __future__ import annotations

import pytest

from compat.mailhog import jim as jims
from models.mail.chaos import ChaosRule, check_rules


def rows(rules: list[dict]) -> list[ChaosRule]:
    """The rules as the chaos module keeps them (checked, then rows)."""
    return [ChaosRule(position=n, fired=0, **columns)
            for n, columns in enumerate(check_rules(rules))]


def test_mailhogs_defaults_become_the_rules_they_can_be():
    rules = jims.rules_of(jims.DEFAULTS)
    # DisconnectChance 0.005 rounds to 0 percent: no rule.
    assert [(rule["stage"], rule["action"], rule.get("code"), rule["percent"])
            for rule in rules] == [("rcpt", "close", None, 1), ("rcpt", "reply", 550, 5),
                                   ("data", "reply", 550, 5)]
    assert jims.jim_of(rows(rules)) == {
        "DisconnectChance": 0.0, "AcceptChance": 0.99, "LinkSpeedAffect": 0.0,
        "LinkSpeedMin": 0.0, "LinkSpeedMax": 0.0, "RejectSenderChance": 0.05,
        "RejectRecipientChance": 0.05, "RejectAuthChance": 0.0}


def test_chances_outside_0_to_1_are_bounded_and_every_chance_reads_back():
    jim = jims.read_jim({"AcceptChance": 1, "rejectsenderchance": 7, "DisconnectChance": -1,
                         "RejectRecipientChance": 0.333})
    rules = jims.rules_of(jim)
    assert [rule["percent"] for rule in rules] == [33, 100]
    back = jims.jim_of(rows(rules))
    assert (back["AcceptChance"], back["RejectRecipientChance"], back["RejectSenderChance"],
            back["DisconnectChance"]) == (1.0, 0.33, 1.0, 0.0)


def test_rules_that_are_not_jims_are_left_out_of_jim():
    native = rows([{"stage": "rcpt", "action": "reply", "code": 451, "percent": 50},
                   {"stage": "data", "action": "delay", "delay_seconds": 2, "times": 1}])
    assert jims.jim_of(native) == {**dict.fromkeys(jims.FIELDS, 0.0), "AcceptChance": 1.0}


@pytest.mark.parametrize("body", [None, {"AcceptChance": "1"}, {"DisconnectChance": True},
                                  {"LinkSpeedMax": [1]}, {"RejectAuthChance": float("inf")},
                                  {"AcceptChance": 10**4000}])
def test_what_go_would_not_decode_is_refused(body):
    with pytest.raises(jims.JimError):
        jims.read_jim(body)


def test_a_field_left_out_or_null_is_zero_and_unknown_fields_are_ignored():
    assert jims.read_jim({"AcceptChance": None, "Other": "x"}) == dict.fromkeys(jims.FIELDS, 0.0)
