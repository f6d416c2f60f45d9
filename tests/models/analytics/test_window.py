"""How a UTC hour falls into a local day and hour: the arithmetic shortcut agrees with the zone
database on every day of two years, in zones with summer time, half- and quarter-hour offsets
and a half-hour summer shift."""

from datetime import UTC, date, datetime, time, timedelta

import pytest

from models.analytics.window import Window, zone


@pytest.mark.parametrize("name", ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata",
                                  "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe",
                                  "Pacific/Chatham"])
def test_each_utc_hour_is_in_the_local_day_and_hour_of_its_first_instant(name):
    tz = zone(name)
    window = Window(first=date(2025, 1, 1), last=date(2026, 12, 31), tz=tz)
    for day in window.dates:
        expected = tuple((moment.date(), moment.hour) for moment in (
            datetime.combine(day, time(hour), UTC).astimezone(tz) for hour in range(24)))
        assert window.local_hours(day) == expected, day
        runs = window.runs(day, "date")
        assert [slot for slot, first, end in runs for _ in range(first, end)] == [
            local_date for local_date, _ in expected]


def test_a_utc_day_is_cut_where_local_midnight_falls():
    day = date(2026, 1, 1)
    kiritimati = Window(first=day, last=day, tz=zone("Pacific/Kiritimati"))  # UTC+14
    assert kiritimati.runs(day, "date") == ((day, 0, 10), (day + timedelta(days=1), 10, 24))
    new_york = Window(first=day, last=day, tz=zone("America/New_York"))  # UTC-5 in January
    assert new_york.runs(day, "date") == ((day - timedelta(days=1), 0, 5), (day, 5, 24))
    assert [slot for slot, _, _ in new_york.runs(day, "hour")] == [*range(19, 24), *range(19)]


@pytest.mark.parametrize(("name", "edges"), [
    ("UTC", (0, 0)), ("Europe/Paris", (22, 24)), ("America/New_York", (0, 5)),
    ("Asia/Kolkata", (19, 24)), ("Pacific/Auckland", (0, 12)), ("America/St_Johns", (0, 4))])
def test_the_hours_outside_each_days_main_date_lie_within_the_edges(name, edges):
    """A reader of the rollups reads a day's total and only these hours for its dates: every
    hour outside the day's main run, on every day of a year with both of the zone's offsets."""
    window = Window(first=date(2025, 1, 1), last=date(2025, 12, 31), tz=zone(name))
    assert window.edges(window.first, window.last) == edges
    start, end = edges
    for day in window.dates:
        main, others = window.date_runs(day)
        runs = window.runs(day, "date")
        [main_run] = [run for run in runs if run not in others]
        assert main_run[0] == main
        assert main_run[2] - main_run[1] == max(end - first for _, first, end in runs)
        assert all(start <= first and last <= end for _, first, last in others), day
