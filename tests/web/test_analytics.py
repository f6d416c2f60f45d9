"""The analytics endpoints: figures that survive the cleanup of the inboxes and e-mails they
counted, day boundaries and hours in a time zone, team figures adding up to the org's, the
shapes, permissions (API-key scope included), tenant isolation and bad parameters.

Mail arrives through the ingest (`make_email`); the time-zone and sum tests place mail in chosen
hours through `count_received` and `count_created`, the functions ingest and inbox creation
call."""

import uuid
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from burnbox.timeutil import utcnow
from models.mail.counters import Received, count_created, count_received
from models.mail.inboxes import remove_lapsed_inboxes
from tasks.analytics import roll_up_committing as roll_up
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import lapse, make_email, make_inbox
from tests.tenancy import world_caller
from web.views.analytics import DomainSeriesSchema, EmailsPerDaySchema, InsightsSchema

ORG = "/orgs/{org}/analytics"
TEAM = "/orgs/{org}/teams/{team}/analytics"
ORG_ROUTES = (ORG, ORG + "/emails-per-day", ORG + "/insights", ORG + "/domain-series")
TEAM_ROUTES = (TEAM, TEAM + "/emails-per-day", TEAM + "/insights")
COUNTED = ("total_emails", "total_emails_received", "total_inboxes_created", "total_storage_bytes",
           "top_sender_domains")


@pytest.fixture(params=["counters", "rollups"])
def api(request, client, mail_world, runtime):
    """GET an analytics route as a member of the mail world. Each test runs twice: reading the
    counters alone, and with every closed day rolled up just before each request (the answers
    must not differ)."""
    call = world_caller(client, mail_world, "owner")

    def get(template, who="owner", status=200, **query):
        if request.param == "rollups":
            with runtime.db.session() as session:
                roll_up(session, utcnow())
        response = call("GET", template, who=who, query_string=query)
        assert response.status_code == status, response.get_json()
        return response.get_json()

    return get


def _mail(session, world, team_id, at, *, sender="x.example", emails=1, size=100):
    for _ in range(emails):
        count_received(session, [Received(org_id=world.ids["org"], team_id=team_id,
                                          domain_id=world.ids["domain"], sender_domain=sender,
                                          received_at=at, size_bytes=size)])


def _counts(points):
    return [point["count"] for point in points]


def test_figures_stay_after_the_cleanup_removes_the_inboxes_and_emails(
        api, runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    for subject in ("one", "two"):
        make_email(runtime, inbox.full_address, subject=subject)
    before = {route: api(route) for route in (*ORG_ROUTES, *TEAM_ROUTES)}
    org = before[ORG]
    assert (org["total_emails"], org["total_inboxes_created"], org["total_inboxes"]) == (2, 1, 1)
    assert org["top_sender_domains"] == [{"domain": "sender.example", "count": 2}]
    assert org["total_storage_bytes"] == org["storage_used_bytes"] > 0
    assert before[ORG + "/emails-per-day"]["data"][-1]["count"] == 2

    with runtime.db.transaction() as session:
        lapse(session, inbox.id)
        assert remove_lapsed_inboxes(session, 10) == 1

    after = {route: api(route) for route in before}
    for route in (*ORG_ROUTES[1:], *TEAM_ROUTES[1:]):
        assert after[route] == before[route], route
    for route in (ORG, TEAM):
        assert {k: after[route][k] for k in COUNTED} == {k: before[route][k] for k in COUNTED}
        assert (after[route]["total_inboxes"], after[route]["active_inboxes"]) == (0, 0)
    assert after[ORG]["storage_used_bytes"] == 0  # live: the objects are gone


def test_days_are_cut_at_midnight_of_the_time_zone(api, runtime, mail_world):
    new_york = ZoneInfo("America/New_York")
    midnight = datetime.combine(utcnow().astimezone(new_york).date(), time(), new_york)
    with runtime.db.transaction() as session:
        team = mail_world.ids["team"]
        _mail(session, mail_world, team, (midnight - timedelta(hours=1)).astimezone(UTC))
        _mail(session, mail_world, team, midnight.astimezone(UTC), emails=2)
        count_created(session, mail_world.ids["org"], team, mail_world.ids["domain"],
                      (midnight - timedelta(hours=1)).astimezone(UTC))

    local = api(ORG + "/emails-per-day", days=2, tz="America/New_York")["data"]
    assert [point["date"] for point in local] == [
        (midnight.date() - timedelta(days=1)).isoformat(), midnight.date().isoformat()]
    assert _counts(local) == [1, 2]
    assert [point["inboxes_created"] for point in local] == [1, 0]
    utc = api(ORG + "/emails-per-day", days=2)["data"]  # both hours are one UTC day
    assert sorted(_counts(utc)) == [0, 3]

    insights = api(ORG + "/insights", days=2, tz="America/New_York")
    assert {p["hour"]: p["count"] for p in insights["peak_hours"] if p["count"]} == {23: 1, 0: 2}
    assert len(insights["peak_hours"]) == 24
    assert _counts(insights["inboxes_per_day"]) == [1, 0]


def test_the_orgs_stored_time_zone_is_the_default_and_tz_overrides_it(api, runtime,
                                                                        mail_world, client):
    new_york = ZoneInfo("America/New_York")
    midnight = datetime.combine(utcnow().astimezone(new_york).date(), time(), new_york)
    with runtime.db.transaction() as session:
        _mail(session, mail_world, mail_world.ids["team"],
              (midnight - timedelta(hours=1)).astimezone(UTC))
    local = {route: api(route, days=2, tz="America/New_York")
             for route in (ORG + "/emails-per-day", ORG + "/insights", ORG + "/domain-series",
                           TEAM + "/emails-per-day", TEAM + "/insights")}
    utc = {route: api(route, days=2) for route in local}
    changed = client.patch(mail_world.path("/orgs/{org}/settings"),
                           json={"timezone": "America/New_York"},
                           headers=mail_world.headers["owner"])
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["effective"]["timezone"] == "America/New_York"
    for route, answer in local.items():
        assert api(route, days=2) == answer, route
        assert api(route, days=2, tz="UTC") == utc[route], route


def test_a_window_ends_today_zero_filled_and_drops_older_days(api, runtime, mail_world):
    now = utcnow()
    with runtime.db.transaction() as session:
        _mail(session, mail_world, mail_world.ids["team"], now - timedelta(days=3))
        _mail(session, mail_world, mail_world.ids["team"], now - timedelta(days=10))
    week = api(ORG + "/emails-per-day", days=7)["data"]
    assert len(week) == 7
    assert week[-1]["date"] == now.date().isoformat()
    assert _counts(week) == [0, 0, 0, 1, 0, 0, 0]
    assert len(api(ORG + "/emails-per-day")["data"]) == 30  # the default
    assert len(api(ORG + "/emails-per-day", days=365)["data"]) == 365


def test_team_figures_add_up_to_the_org(api, runtime, mail_world, client):
    created = client.post(mail_world.path("/orgs/{org}/teams"), json={"name": "Second"},
                          headers=mail_world.headers["owner"])
    assert created.status_code == 201, created.get_json()
    second = uuid.UUID(created.get_json()["id"])
    first = mail_world.ids["team"]
    now = utcnow()
    with runtime.db.transaction() as session:
        for team, offsets, sender in ((first, (0, 1, 26, 50), "a.example"),
                                      (second, (2, 26, 75), "b.example")):
            for hours in offsets:
                _mail(session, mail_world, team, now - timedelta(hours=hours), sender=sender,
                      emails=hours % 3 + 1)
                count_created(session, mail_world.ids["org"], team, mail_world.ids["domain"],
                              now - timedelta(hours=hours))
    teams = {"team": first, "second": second}

    def both(route, key, **query):
        org = api(ORG + route, **query)
        parts = [api(TEAM.replace("{team}", str(tid)) + route, **query) for tid in teams.values()]
        return org[key], [part[key] for part in parts]

    org, parts = both("/emails-per-day", "data", days=5, tz="Asia/Tokyo")
    for name in ("count", "inboxes_created", "storage_bytes"):
        columns = zip(*[[p[name] for p in part] for part in parts], strict=True)
        assert [p[name] for p in org] == [sum(column) for column in columns]
    assert sum(_counts(org)) == 16
    org, parts = both("/insights", "peak_hours", days=5)
    assert _counts(org) == [a + b for a, b in zip(*map(_counts, parts), strict=True)]
    org, parts = both("", "total_emails")
    assert org == sum(parts) == 16
    org, parts = both("", "total_inboxes_created")
    assert org == sum(parts) == 7
    series = api(ORG + "/domain-series", days=5)["data"]
    [domain] = series
    assert domain["domain"] == mail_world.domain
    assert domain["total"] == sum(_counts(domain["series"])) == 16
    assert _counts(domain["series"]) == _counts(api(ORG + "/emails-per-day", days=5)["data"])
    insights = api(ORG + "/insights", days=5)
    assert insights["top_senders"] == [{"domain": "a.example", "count": 9},
                                       {"domain": "b.example", "count": 7}]
    assert insights["domain_breakdown"] == [{"domain_id": str(mail_world.ids["domain"]),
                                             "domain": mail_world.domain, "count": 16}]


def test_shapes(api):
    org = api(ORG)
    assert set(org) == {"total_emails", "total_inboxes", "active_inboxes", "total_domains",
                        "total_teams", "total_members", "storage_used_bytes",
                        "top_sender_domains", "total_emails_received", "total_inboxes_created",
                        "total_storage_bytes"}
    assert (org["total_domains"], org["total_teams"], org["total_members"]) == (1, 1, 4)
    team = api(TEAM)
    assert set(team) == set(org) - {"total_domains", "total_teams", "storage_used_bytes"}
    assert team["total_members"] == 3  # the owner created it: lead, lead, member
    [point] = api(ORG + "/emails-per-day", days=1)["data"]
    assert set(point) == {"date", "count", "emails_received", "inboxes_created", "storage_bytes"}
    assert set(api(TEAM + "/insights")) == {"inboxes_per_day", "peak_hours", "domain_breakdown",
                                            "top_senders"}
    assert api(ORG + "/domain-series") == {"data": []}


@pytest.mark.parametrize("route", [*ORG_ROUTES, *TEAM_ROUTES])
def test_another_orgs_analytics_do_not_exist(api, mail_world, route):
    assert api(route, who="outsider", status=404)["code"] == "not_found"
    assert api(route, who="stranger", status=404)["code"] == "not_found"
    other = route.replace("{org}", "{other_org}").replace("{team}", "{other_team}")
    api(other, status=404)
    if "{team}" in route:
        api(route.replace("{team}", "{other_team}"), status=404)  # a team of another org


@pytest.mark.parametrize("route", TEAM_ROUTES)
def test_team_analytics_need_the_team_permission_and_take_api_keys_with_the_scope(
        api, client, mail_world, route):
    api(route, who="team_member")
    api(route, who="lead")
    assert api(route, who="org_member", status=403)["code"] == "forbidden"
    path = mail_world.path(route)
    scoped = make_key(client, mail_world, scopes=["team.analytics.view"])["raw_key"]
    unscoped = make_key(client, mail_world)["raw_key"]
    assert client.get(path, headers=key_auth(scoped)).status_code == 200
    assert client.get(path, headers=key_auth(unscoped)).status_code == 403


@pytest.mark.parametrize("route", ORG_ROUTES)
def test_org_analytics_are_for_members_and_refuse_api_keys(api, client, mail_world, route):
    api(route, who="org_member")
    scoped = make_key(client, mail_world, scopes=["team.analytics.view"])["raw_key"]
    assert client.get(mail_world.path(route), headers=key_auth(scoped)).status_code == 403


@pytest.mark.parametrize("query", [{"days": 0}, {"days": 366}, {"days": "x"}, {"days": -1},
                                   {"tz": "Mars/Olympus"}, {"tz": "../../etc/passwd"},
                                   {"tz": ""}])
@pytest.mark.parametrize("route", [ORG + "/emails-per-day", ORG + "/insights",
                                   ORG + "/domain-series", TEAM + "/emails-per-day",
                                   TEAM + "/insights"])
def test_bad_days_or_time_zone_is_a_400(api, route, query):
    assert api(route, status=400, **query)["code"] == "validation_error"


@pytest.mark.parametrize("route", [*ORG_ROUTES, *TEAM_ROUTES])
def test_every_route_is_documented_with_its_permission_parameters_and_answer(client, route):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    operation = paths["/api/v1" + route.replace("{org}", "{org_id}")
                      .replace("{team}", "{team_id}")]["get"]
    whose = "team" if "{team}" in route else "org"
    assert operation["x-required-permission"] == f"{whose}.analytics.view"
    assert operation["summary"].startswith(f"The {whose}'s")
    assert {"200", "401", "403", "404"} <= set(operation["responses"])
    query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    assert query == (set() if route in (ORG, TEAM) else {"days", "tz"})


@pytest.mark.parametrize(("route", "schema"), [
    (ORG + "/emails-per-day", EmailsPerDaySchema), (ORG + "/insights", InsightsSchema),
    (ORG + "/domain-series", DomainSeriesSchema), (TEAM + "/emails-per-day", EmailsPerDaySchema),
    (TEAM + "/insights", InsightsSchema)])
def test_the_answers_not_dumped_by_their_schema_are_exactly_what_it_would_write(
        api, runtime, mail_world, route, schema):
    """These routes return plain dicts (a schema's dump cost more than the figures): the same
    fields, ISO dates (Flask's own JSON would write RFC 822 dates), nothing more."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    make_email(runtime, inbox.full_address, subject="one")
    answer = api(route, days=3)
    assert schema().dump(schema().load(answer)) == answer  # load refuses unknown fields
    dates = [point["date"] for point in answer.get("data", [answer])[0].get(
        "series", answer.get("data") or answer["inboxes_per_day"])]
    assert dates == [(utcnow().date() - timedelta(days=n)).isoformat() for n in (2, 1, 0)]
