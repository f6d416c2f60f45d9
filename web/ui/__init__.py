"""The browser UI: a blueprint serving the single page at `/`, its client-side routes and its
static ES modules under `/ui/static/`. The page talks only to the public REST API and the
WebSocket streams; nothing here reads the database.

Every UI response carries `UI_CSP` (no inline script, no framing); see docs/ui.md.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, request, send_from_directory
from werkzeug.exceptions import NotFound

from web.auth import SESSION_HINT_COOKIE
from web.errors import handle_http_exception
from web.ratelimit import rate_exempt

STATIC = Path(__file__).parent / "static"

# Client-side routes (first path segment) answered with index.html so a reload or a shared
# link lands in the app. Listed one by one rather than a catch-all `/<path>`: a catch-all would
# turn an unknown `/api/v1/...` path into a page (or a 405) instead of the API's JSON 404.
SECTIONS = ('any(login, setup, "session-limit", inboxes, emails, teams, orgs, try, notifications, '
            'admin, account, profile)')

# style-src allows inline styles because a srcdoc frame inherits this policy and e-mail HTML is
# styled inline; scripts stay 'self' only. img-src allows http(s) for the same frame, where the
# frame's own meta policy blocks remote images until the reader asks for them (docs/ui.md).
UI_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data: blob: http: https:; connect-src 'self'; frame-src 'self'; "
          "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
ASSET_MAX_AGE = 3600
# The theme this browser last showed (set by js/theme.js, holding only the word): the page is
# marked with it as sent, so it is painted in the user's theme from the first frame. Any other
# value is ignored, and the page follows the device's preference.
THEME_COOKIE = "bb_theme"
FIXED_THEMES = ("light", "dark")

bp = Blueprint("ui", __name__)


@bp.after_request
def security_headers(response: Response) -> Response:
    """The UI's CSP and the headers that keep it out of frames and MIME sniffing."""
    response.headers["Content-Security-Policy"] = UI_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _index() -> Response:
    """The page; marked `data-session` when the browser holds the session hint cookie, so the
    page tries to restore a session only when there may be one (a signed-out visitor's page
    then makes no refresh call answered 401), and `data-theme` with the theme cookie's light
    or dark."""
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    marks = ""
    if request.cookies.get(SESSION_HINT_COOKIE):
        marks += " data-session"
    if (theme := request.cookies.get(THEME_COOKIE)) in FIXED_THEMES:
        marks += f' data-theme="{theme}"'
    page = page.replace('<html lang="en">', f'<html lang="en"{marks}>', 1)
    # no-cache: the page names the assets, so a new release is picked up at the next load. No
    # validator (ETag): a 304 could bring back the copy made before the sign-in, unmarked.
    response = Response(page, mimetype="text/html")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["Vary"] = "Cookie"
    return response


# Paths that are never a page, whoever asks: the API keeps its JSON envelope, a missing asset
# stays a plain 404.
NEVER_A_PAGE = ("/api/", "/ui/static/")


@bp.app_errorhandler(NotFound)
def not_found(exc: NotFound) -> Response:
    """An unknown path a browser navigates to (a mistyped address, an old link) gets the UI,
    whose router shows its own "Page not found", with status 404; it used to get the API's
    JSON envelope as raw text. Everything else (the API's paths, assets, a client that does
    not ask for HTML first) keeps the envelope."""
    wants_page = (request.method in ("GET", "HEAD") and not request.path.startswith(NEVER_A_PAGE)
                  and request.accept_mimetypes.best_match(["application/json", "text/html"])
                  == "text/html")
    if not wants_page:
        return handle_http_exception(exc)
    response = _index()
    response.status_code = 404
    return security_headers(response)


@bp.get("/")
@rate_exempt
def index() -> Response:
    """The single page."""
    return _index()


@bp.get(f"/<{SECTIONS}:section>")
@bp.get(f"/<{SECTIONS}:section>/<path:rest>")
@rate_exempt
def client_route(section: str, rest: str = "") -> Response:
    """A client-side route: the same page, whose router reads the path."""
    return _index()


@bp.get("/ui/static/<path:filename>")
@rate_exempt
def asset(filename: str) -> Response:
    """A static file of the UI (modules, style sheet, icon), cacheable for an hour."""
    return send_from_directory(STATIC, filename, max_age=ASSET_MAX_AGE)
