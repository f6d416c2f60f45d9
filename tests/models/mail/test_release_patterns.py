"""Release recipient patterns: what parses, what matches, and that a pattern found within a
bound never names an address outside it (a property over generated patterns and addresses)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.errors import ValidationFailed
from models.mail.release_patterns import (
    allowed_by,
    checked_patterns,
    parse_address,
    parse_pattern,
)
from tests.properties import property_settings


def _matches(pattern, address):
    return parse_pattern(pattern).matches(parse_address(address))


def test_a_pattern_matches_its_domain_in_any_case_and_its_local_part_exactly():
    assert _matches("*@company.example", "qa@Company.EXAMPLE")
    assert _matches("qa@company.example", "qa@COMPANY.example")
    assert not _matches("qa@company.example", "QA@company.example")
    assert not _matches("*@company.example", "qa@mail.company.example")
    assert _matches("*@*.company.example", "qa@mail.company.example")
    assert not _matches("*@*.company.example", "qa@company.example")
    assert not _matches("*@company.example", "qa@evilcompany.example")
    assert not _matches("*@*.company.example", "qa@evilcompany.example")


@pytest.mark.parametrize("text", ["*", "*@*", "*@*.*", "q*@company.example", "*@company",
                                  "*@*company.example", "@company.example", "qa@", "qa",
                                  "*@company.example.", "*@-company.example", "\x00@a.example",
                                  "qa@\ud800.example", "a b@company.example", "*@" + "a" * 64
                                  + ".example"])
def test_what_is_not_a_pattern(text):
    assert parse_pattern(text) is None


def test_a_level_can_only_narrow_the_level_above():
    bound = [parse_pattern("*@company.example"), parse_pattern("*@*.lab.example")]
    assert [str(p) for p in checked_patterns(
        ["qa@Company.example", "*@company.example", "*@x.lab.example", "*@*.x.lab.example",
         "*@*.lab.example", "qa@company.example"], bound)] == [
        "qa@company.example", "*@company.example", "*@x.lab.example", "*@*.x.lab.example",
        "*@*.lab.example"]
    for wider in ("*@lab.example", "*@*.company.example", "*@other.example"):
        with pytest.raises(ValidationFailed) as refused:
            checked_patterns([wider], bound)
        assert refused.value.details == {
            "patterns": {wider: "outside the recipients allowed above this level"}}
    with pytest.raises(ValidationFailed):
        checked_patterns(["anything@company.example"], [])  # no bound: nothing is within it


def test_an_address_must_match_every_level():
    address = parse_address("qa@company.example")
    operator, org = [parse_pattern("*@company.example")], [parse_pattern("dev@company.example")]
    assert allowed_by(address, [operator])
    assert not allowed_by(address, [operator, org])
    assert not allowed_by(address, [[]])


labels = st.sampled_from(["a", "b", "lab", "company", "example"])
domains = st.lists(labels, min_size=2, max_size=4).map(".".join)
locals_ = st.sampled_from(["qa", "dev", "QA", "x.y"])
patterns = st.builds(lambda local, wild, domain: f"{local}@{'*.' if wild else ''}{domain}",
                     st.sampled_from(["*", "qa", "dev", "QA"]), st.booleans(), domains)
addresses = st.builds(lambda local, domain: f"{local}@{domain}", locals_, domains)


@property_settings(300)
@given(inner=patterns, outer=patterns, address=addresses)
def test_a_pattern_within_a_bound_names_no_address_outside_it(inner, outer, address):
    inner_pattern, outer_pattern = parse_pattern(inner), parse_pattern(outer)
    parsed = parse_address(address)
    if inner_pattern.within(outer_pattern) and inner_pattern.matches(parsed):
        assert outer_pattern.matches(parsed)


@property_settings(200)
@given(text=st.text(max_size=80))
def test_any_text_parses_or_is_refused_without_an_error(text):
    parse_pattern(text)
    parse_address(text)
