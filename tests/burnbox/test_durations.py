"""Go-style durations: what parses, what is refused, and that formatting round-trips exactly."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbox.durations import DurationError, format_duration, parse_duration


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
])
def test_malformed_strings_are_refused(text):
    with pytest.raises(DurationError):
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
