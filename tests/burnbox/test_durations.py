"""Go-style durations: what parses, what is refused, and that formatting round-trips exactly."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbox.durations import (
    MAX_DURATION_LENGTH,
    DurationError,
    format_duration,
    parse_duration,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("90m", timedelta(minutes=90)),
    ("24h", timedelta(hours=24)),
    ("1h30m", timedelta(hours=1, minutes=30)),
    ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
    ("1.5s", timedelta(seconds=1, milliseconds=500)),
    ("1.5h", timedelta(minutes=90)),
    (".5s", timedelta(milliseconds=500)),
    ("500ms", timedelta(milliseconds=500)),
    ("250us", timedelta(microseconds=250)),
    ("250µs", timedelta(microseconds=250)),
    ("1500ns", timedelta(microseconds=2)),
    ("30m1h", timedelta(minutes=90)),
    ("0", timedelta(0)),
    ("0s", timedelta(0)),
    (" 10s ", timedelta(seconds=10)),
])
def test_go_style_strings_parse_to_the_expected_timedelta(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "10", "1.5", "-5m", "+5m", "1d", "1w", "h", "m10", "1h 30m", "1.2.3s", "10 s",
    "1H", "10sec", "five minutes", "1h-30m",
    "1" + "0" * 30 + "h",  # longer than a timedelta can hold
    "\uff11h", "\u0661h", "1\uff10m", "\u00b2s",  # fullwidth, Arabic-Indic, superscript digits
    ".h", "1..5s", "1ms5",
])
def test_malformed_strings_are_refused(text):
    with pytest.raises(DurationError):
        parse_duration(text)


def test_a_text_longer_than_the_cap_is_refused_by_its_length_before_it_is_read():
    # A valid-looking duration: without the cap, reading a number of this many digits costs
    # time quadratic in its length (900 kB once took 29 s of CPU).
    with pytest.raises(DurationError, match=f"longer than {MAX_DURATION_LENGTH} characters"):
        parse_duration("1" * 100_000 + "h")


def test_a_text_of_exactly_the_cap_still_parses():
    text = "1h" * (MAX_DURATION_LENGTH // 2)
    assert len(text) == MAX_DURATION_LENGTH
    assert parse_duration(text) == timedelta(hours=MAX_DURATION_LENGTH // 2)


_PARTS = st.tuples(st.integers(min_value=0, max_value=10**6),
                   st.sampled_from(["ns", "us", "µs", "ms", "s", "m", "h"]))
_MICROS = {"ns": 0.001, "us": 1, "µs": 1, "ms": 1_000, "s": 10**6, "m": 60 * 10**6,
           "h": 3_600 * 10**6}


@given(st.lists(_PARTS, min_size=1, max_size=6))
def test_any_sequence_of_parts_parses_to_the_sum_of_its_parts(parts):
    text = "".join(f"{number}{unit}" for number, unit in parts)
    micros = sum(number * _MICROS[unit] for number, unit in parts if unit != "ns")
    nanos = sum(number for number, unit in parts if unit == "ns")
    expected = timedelta(microseconds=micros) + timedelta(microseconds=nanos / 1000)
    if len(text) <= MAX_DURATION_LENGTH:
        assert abs(parse_duration(text) - expected) <= timedelta(microseconds=1)
    else:
        with pytest.raises(DurationError):
            parse_duration(text)


@given(st.text(min_size=MAX_DURATION_LENGTH + 1))
def test_every_text_over_the_cap_is_refused_for_its_length(text):
    with pytest.raises(DurationError, match="longer than"):
        parse_duration(text)


@pytest.mark.parametrize("value", [None, 10, 1.5, timedelta(seconds=1)])
def test_non_strings_are_refused(value):
    with pytest.raises(DurationError):
        parse_duration(value)


@pytest.mark.parametrize(("delta", "text"), [
    (timedelta(0), "0s"),
    (timedelta(seconds=10), "10s"),
    (timedelta(minutes=15), "15m0s"),
    (timedelta(hours=1, minutes=30), "1h30m0s"),
    (timedelta(days=30), "720h0m0s"),
    (timedelta(seconds=1, milliseconds=500), "1.5s"),
    (timedelta(milliseconds=1500), "1.5s"),
    (timedelta(milliseconds=250), "250ms"),
    (timedelta(microseconds=1500), "1.5ms"),
    (timedelta(microseconds=10), "10µs"),
    (timedelta(seconds=12, microseconds=345678), "12.345678s"),
    (timedelta(minutes=-5), "-5m0s"),
])
def test_timedeltas_format_the_way_go_prints_them(delta, text):
    assert format_duration(delta) == text


@given(st.timedeltas(min_value=timedelta(0)))
def test_formatting_then_parsing_gives_back_the_same_timedelta(delta):
    assert parse_duration(format_duration(delta)) == delta
