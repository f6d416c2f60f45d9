"""The router against the contract's route list and against the OpenAPI document, both ways.

`spec_routes.txt` lists every METHOD /path of the REST contract Burnbox implements (the routes
its clients call); `routes_not_yet_built.txt` the ones no
issue has built yet. A route is served or listed, never both; every served route is documented
with the same methods, and every documented operation is served, so the OpenAPI document
cannot drift from the router unnoticed.
"""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from openapi_spec_validator import OpenAPIV30SpecValidator, validate

HERE = Path(__file__).resolve().parent
IGNORED_METHODS = {"HEAD", "OPTIONS"}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
DOCS_PREFIX = "/api/v1/docs"
OPENAPI_PATH = "/api/v1/docs/openapi.json"


def _normalise(path):
    """One spelling for path parameters: Flask's <conv:name>, the lists' :name, OpenAPI's {name}."""
    path = re.sub(r"<(?:[^:<>]+:)?[^<>]+>", "{}", path)
    path = re.sub(r":[A-Za-z_][A-Za-z0-9_]*", "{}", path)
    return re.sub(r"\{[^{}]+\}", "{}", path)


def _read_routes(name):
    routes = set()
    for line in (HERE / name).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        method, path = line.split()
        routes.add((method, _normalise(path)))
    return routes


def _served(app):
    """(METHOD, path) of every rule of the app, without HEAD/OPTIONS and static files."""
    routes = set()
    for rule in app.url_map.iter_rules():
        # The browser UI's pages and assets are not API routes (tests/ui checks them).
        if rule.endpoint == "static" or rule.endpoint.startswith("ui."):
            continue
        for method in rule.methods - IGNORED_METHODS:
            routes.add((method, _normalise(rule.rule)))
    return routes


def _documented(document):
    return {(method.upper(), _normalise(path))
            for path, item in document["paths"].items()
            for method in item if method in HTTP_METHODS}


def _is_docs(route):
    return route[1] == DOCS_PREFIX or route[1].startswith(DOCS_PREFIX + "/")


@pytest.fixture
def full_app(make_app):
    """The app with every optional route switched on."""
    return make_app(**{"metrics.enabled": True})


@pytest.fixture
def document(full_app):
    response = full_app.test_client().get(OPENAPI_PATH)
    assert response.status_code == 200
    return response.get_json()


def test_the_route_lists_parse_and_every_unbuilt_route_is_a_spec_route():
    spec, unbuilt = _read_routes("spec_routes.txt"), _read_routes("routes_not_yet_built.txt")
    assert len(spec) > 150
    assert unbuilt - spec == set(), "listed as not yet built but not in spec_routes.txt"


def test_every_spec_route_is_served_or_listed_as_not_yet_built(full_app):
    spec, unbuilt = _read_routes("spec_routes.txt"), _read_routes("routes_not_yet_built.txt")
    missing = spec - unbuilt - _served(full_app)
    assert missing == set(), "spec routes neither served nor in routes_not_yet_built.txt"


def test_no_route_listed_as_not_yet_built_is_served(full_app):
    built = _read_routes("routes_not_yet_built.txt") & _served(full_app)
    assert built == set(), "served now: remove these lines from routes_not_yet_built.txt"


def test_the_metrics_route_is_served_only_when_enabled(app, full_app):
    assert ("GET", "/metrics") in _served(full_app)
    assert ("GET", "/metrics") not in _served(app)


def test_every_served_route_is_in_the_openapi_document_with_its_methods(full_app, document):
    served = {route for route in _served(full_app) if not _is_docs(route)}
    undocumented = served - _documented(document)
    assert undocumented == set(), "served but missing from the OpenAPI document"


def test_every_openapi_operation_is_served(full_app, document):
    unserved = _documented(document) - _served(full_app)
    assert unserved == set(), "in the OpenAPI document but not served"


def test_the_openapi_document_is_valid_openapi_3_0(document):
    assert document["openapi"].startswith("3.0.")
    validate(document, cls=OpenAPIV30SpecValidator)


class _References(HTMLParser):
    """Every href and src of a page."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        self.urls += [value for name, value in attrs if name in ("href", "src") and value]


def test_the_docs_page_uses_only_local_assets_and_they_are_served(client):
    response = client.get(DOCS_PREFIX)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    assert not re.search(r"https?://|//[a-z0-9]", html, re.IGNORECASE), "no CDN, no network"
    parser = _References()
    parser.feed(html)
    assert parser.urls, "the page references its script and style sheet"
    for url in parser.urls:
        assert url.startswith(DOCS_PREFIX + "/"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.data, url
    assert OPENAPI_PATH in html
    assert client.get(OPENAPI_PATH).status_code == 200
