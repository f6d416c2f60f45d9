"""The error and pagination envelopes on every kind of error and on a real list query; the body
of actions with nothing else to return; malformed ids in any path."""

import re
import uuid

from flask.views import MethodView
from marshmallow import Schema, fields
from sqlalchemy import select

from models.events import Event, record_event
from models.pagination import paginate
from web.api import Blueprint
from web.context import db
from web.pagination import PageArgsSchema, page_schema


def test_unknown_route_is_a_404_envelope(client):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.get_json() == {"error": "resource not found", "code": "not_found"}


def test_wrong_method_is_a_405_envelope_with_allow(client):
    response = client.delete("/healthz")
    assert response.status_code == 405
    assert response.get_json()["code"] == "method_not_allowed"
    assert "GET" in response.headers["Allow"]


class _ItemSchema(Schema):
    id = fields.UUID()
    name = fields.String()


class _CreateSchema(Schema):
    name = fields.String(required=True)
    count = fields.Integer()


def _probe_app(make_app):
    """A fresh app with a small list/create/fail resource, built like every real one."""
    app = make_app()
    blp = Blueprint("probe", __name__, url_prefix="/api/v1/probe")

    @blp.route("")
    class Probe(MethodView):
        @blp.arguments(PageArgsSchema, location="query")
        @blp.response(200, page_schema(_ItemSchema))
        def get(self, args):
            query = select(Event).order_by(Event.created_at, Event.id)
            return paginate(db(), query, args["page"], args["per_page"])

        @blp.arguments(_CreateSchema)
        @blp.response(201, _ItemSchema)
        def post(self, body):
            event = record_event(db(), "probe", {"name": body["name"]})
            db().commit()
            return {"id": event.id, "name": body["name"]}

    @blp.route("/boom")
    class Boom(MethodView):
        @blp.response(200)
        def get(self):
            raise RuntimeError("secret internals: password=hunter2")

    app.extensions["flask-smorest"]["apis"][""]["ext_obj"].register_blueprint(blp)
    return app


def test_validation_error_is_a_400_with_field_details(make_app):
    client = _probe_app(make_app).test_client()
    response = client.post("/api/v1/probe", json={"count": "many", "extra": 1})
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert set(body["details"]) == {"name", "count", "extra"}


def test_malformed_json_is_a_400(make_app):
    client = _probe_app(make_app).test_client()
    response = client.post("/api/v1/probe", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"


def test_oversized_body_is_a_413_envelope(make_app):
    app = _probe_app(make_app)
    client = app.test_client()
    limit = app.config["MAX_CONTENT_LENGTH"]
    response = client.post("/api/v1/probe", data=b"x" * (limit + 1),
                           content_type="application/json")
    assert response.status_code == 413
    assert response.get_json() == {"error": "request body too large", "code": "payload_too_large"}


def test_unexpected_exception_is_a_500_without_internals(make_app):
    client = _probe_app(make_app).test_client()
    response = client.get("/api/v1/probe/boom")
    assert response.status_code == 500
    assert response.get_json() == {"error": "internal server error", "code": "internal_error"}
    assert b"hunter2" not in response.data


def test_list_uses_the_pagination_envelope(make_app):
    client = _probe_app(make_app).test_client()
    for n in range(25):
        assert client.post("/api/v1/probe", json={"name": f"n{n}"}).status_code == 201
    first = client.get("/api/v1/probe").get_json()
    totals = (first["total"], first["page"], first["per_page"], first["total_pages"])
    assert totals == (25, 1, 20, 2)
    assert len(first["data"]) == 20
    second = client.get("/api/v1/probe?page=2").get_json()
    assert len(second["data"]) == 5
    assert {i["id"] for i in first["data"]}.isdisjoint({i["id"] for i in second["data"]})


def test_per_page_above_the_maximum_is_clamped(make_app):
    client = _probe_app(make_app).test_client()
    body = client.get("/api/v1/probe?per_page=1000").get_json()
    assert body["per_page"] == 100


def test_bad_page_values_are_400(make_app):
    client = _probe_app(make_app).test_client()
    for query in ("page=0", "page=abc", "per_page=0", "per_page=-5", "per_page=1.5",
                  "page=99999999999999999999"):  # an offset no database integer holds
        response = client.get(f"/api/v1/probe?{query}")
        assert response.status_code == 400, query
        assert response.get_json()["code"] == "validation_error"


def test_every_response_has_a_request_id(client):
    response = client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert response.headers["X-Request-ID"] == "abc-123"
    assert len(client.get("/healthz").headers["X-Request-ID"]) == 32


def _schema(document, schema):
    """`schema` with its $ref followed."""
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_no_operation_answers_204_and_every_delete_answers_a_message(client):
    document = client.get("/api/v1/docs/openapi.json").get_json()
    deletes = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert "204" not in operation["responses"], (method, path)
            if method == "delete" and not path.startswith("/compat/"):  # peers answer theirs
                deletes += 1
                ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
                assert "message" in _schema(document, ok)["properties"], path
    assert deletes >= 15


_UUID_PARAMETER = re.compile(r"<uuid:([a-z_]+)>")


def test_a_malformed_uuid_in_any_path_is_a_400_naming_it_and_a_404_never(app, client):
    checked = 0
    for rule in app.url_map.iter_rules():
        names = _UUID_PARAMETER.findall(rule.rule)
        for name in names:
            path = re.sub(r"<uuid:([a-z_]+)>", lambda m, bad=name: (
                "not-a-uuid" if m.group(1) == bad else str(uuid.uuid4())), rule.rule)
            path = re.sub(r"<[^>]+>", "x", path)
            base_url = "ws://localhost" if rule.websocket else "http://localhost"
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                response = client.open(path, method=method, base_url=base_url)
                assert response.status_code == 400, (method, path)
                assert response.get_json() == {
                    "error": f"validation failed: {name}", "code": "validation_error",
                    "details": {name: ["Not a valid UUID."]}}, (method, path)
                checked += 1
    assert checked > 50
