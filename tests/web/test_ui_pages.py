"""The browser UI's server side (web/ui): its pages and client-side routes, the assets with
their cache headers, the CSP on every UI response, and the API's own 404s left alone."""

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from web.ui import STATIC

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", ["/", "/login", "/setup", "/session-limit", "/inboxes",
                                  "/inboxes/0b0e2b1c-1111-4c2b-9a55-0e3b7f2d9c11",
                                  "/emails/x", "/teams/a/b/keys", "/admin", "/admin/users",
                                  "/account", "/profile"])
def test_the_page_and_its_client_routes_answer_the_index_with_the_csp(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert b'<script type="module" src="/ui/static/js/app.js">' in response.data
    assert response.headers["Cache-Control"] == "no-cache"
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self';" in csp and "'unsafe-eval'" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["X-Frame-Options"] == "DENY"


def test_assets_are_cacheable_and_carry_the_csp(client):
    response = client.get("/ui/static/js/app.js")
    assert response.status_code == 200
    assert response.mimetype == "text/javascript"
    assert "max-age=3600" in response.headers["Cache-Control"]
    assert "Content-Security-Policy" in response.headers
    assert client.get("/ui/static/js/nothing.js").status_code == 404
    assert client.get("/ui/static/../__init__.py").status_code == 404


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_unknown_api_paths_and_other_paths_keep_the_json_404(client, method):
    for path in ("/api/v1/nothing", "/api/v1/inboxes/x/y/z", "/nothing-here"):
        response = client.open(path, method=method)
        assert response.status_code == 404
        assert response.get_json()["code"] == "not_found"


BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.mark.parametrize("path", ["/inboxs", "/nothing-here/at/all", "/Inboxes"])
def test_a_mistyped_page_address_gets_the_ui_with_a_404_in_a_browser(client, path):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert b'<script type="module" src="/ui/static/js/app.js">' in response.data
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v1/inboxes/x/y/z", "/api/nothing",
                                  "/ui/static/js/nothing.js"])
def test_api_paths_and_assets_keep_the_json_404_even_for_a_browser(client, path):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == 404
    assert response.get_json() == {"error": "resource not found", "code": "not_found"}


def test_a_client_that_does_not_ask_for_html_first_keeps_the_json_404(client):
    for accept in ("*/*", "application/json", "application/json, text/html;q=0.5"):
        response = client.get("/nothing-here", headers={"Accept": accept})
        assert response.status_code == 404
        assert response.get_json()["code"] == "not_found", accept
    assert client.post("/nothing-here", headers=BROWSER).get_json()["code"] == "not_found"


def test_no_page_of_the_ui_has_inline_script_or_inline_handlers():
    """The CSP forbids inline script; the page must not need it."""
    for page in STATIC.rglob("*.html"):
        text = page.read_text()
        assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", text)), page
        assert not re.search(r"\son[a-z]+=", text), page
    for module in STATIC.rglob("*.js"):
        assert "innerHTML" not in module.read_text(), module  # text is never parsed as markup


def test_every_ui_file_ships_in_the_package():
    """pyproject's package data names every file under web/ui/static (wheel and image)."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["web"]
    for path in STATIC.rglob("*"):
        if path.is_file():
            relative = path.relative_to(ROOT / "web").as_posix()
            assert any(fnmatch(relative, pattern) and relative.count("/") == pattern.count("/")
                       for pattern in patterns), relative


def test_the_page_tries_to_restore_a_session_only_after_a_cookie_sign_in(client, user):
    """A signed-out visitor's page makes no refresh call (it would be a 401 in the browser's
    console): the page is marked `data-session` only while the session hint cookie is there,
    which a cookie-mode sign-in sets and a logout drops."""
    assert b"data-session" not in client.get("/").data
    signed_in = client.post("/api/v1/auth/login", json={
        "email": "user@example.test", "password": "correct horse battery", "use_cookie": True})
    assert signed_in.status_code == 200
    hint = [line for line in signed_in.headers.getlist("Set-Cookie")
            if line.startswith("bb_session=")]
    assert len(hint) == 1 and "HttpOnly" in hint[0] and "Path=/;" in hint[0]
    page = client.get("/inboxes")
    assert b'<html lang="en" data-session>' in page.data
    assert page.headers["Vary"] == "Cookie" and "ETag" not in page.headers
    assert client.post("/api/v1/auth/logout", json={},
                       headers={"X-Burnbox-CSRF": "1"}).status_code == 200
    assert b"data-session" not in client.get("/").data


@pytest.mark.parametrize(("cookie", "mark"), [
    ("dark", b'<html lang="en" data-theme="dark">'),
    ("light", b'<html lang="en" data-theme="light">'),
    ("system", b'<html lang="en">'),
    ('dark"><script>alert(1)</script>', b'<html lang="en">'),
])
def test_the_page_is_marked_with_the_theme_cookie_only_for_light_or_dark(client, cookie, mark):
    """The theme the browser last showed paints the page from its first frame; any other value
    (system, or anything a cookie may hold) leaves the page to the device's preference."""
    client.set_cookie("bb_theme", cookie)
    page = client.get("/inboxes")
    assert mark in page.data
    assert b"<script>alert" not in page.data
    assert page.headers["Vary"] == "Cookie"
