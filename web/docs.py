"""The API documentation page at /api/v1/docs: Swagger UI served from the installed package,
so it works without any CDN or network access."""

from __future__ import annotations

from flask import Blueprint, Response, send_from_directory
from swagger_ui_bundle import swagger_ui_path

from web.ratelimit import rate_exempt

bp = Blueprint("docs", __name__, url_prefix="/api/v1/docs")

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Burnbox API</title>
  <link rel="stylesheet" href="/api/v1/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/v1/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({url: "/api/v1/docs/openapi.json", dom_id: "#swagger-ui"});
  </script>
</body>
</html>
"""


@bp.get("")
@rate_exempt
def page() -> Response:
    """The Swagger UI page for the OpenAPI document."""
    return Response(PAGE, mimetype="text/html")


@bp.get("/assets/<path:filename>")
@rate_exempt
def asset(filename: str) -> Response:
    """A Swagger UI static file from the swagger-ui-bundle package."""
    return send_from_directory(swagger_ui_path, filename, max_age=86400)
