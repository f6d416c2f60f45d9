"""The request's one commit point (web.context.UnitOfWorkApp): a view that answers a success has
its writes committed without committing itself; an error, raised or answered, keeps nothing but
what a domain error says must stand; a write after the commit point fails the test."""

import ast
import uuid
from pathlib import Path

import pytest
from flask import Response, stream_with_context
from sqlalchemy import select

from models.errors import Conflict
from models.tenancy.orgs import Org
from web.context import UncommittedWrites, db

VIEWS = Path(__file__).resolve().parents[2] / "web"


def _add_org(name: str) -> None:
    db().add(Org(name=name, slug=f"uow-{uuid.uuid4().hex[:12]}"))


def _org_names(runtime, name: str) -> list[str]:
    with runtime.db.transaction() as session:
        return list(session.scalars(select(Org.name).where(Org.name == name)))


@pytest.fixture
def uow_app(make_app):
    """An app with test routes that write an org and then end in each possible way."""
    app = make_app()

    def succeeds():
        _add_org("uow-success")
        return {"ok": True}, 201

    def answers_conflict():
        _add_org("uow-answered-error")
        return {"error": "no", "code": "conflict"}, 409

    def raises():
        _add_org("uow-raised")
        raise Conflict("refused")

    def raises_keeping_changes():
        _add_org("uow-kept")
        raise Conflict("refused, but the write stands", keeps_changes=True)

    def writes_while_streaming():
        def body():
            yield "first chunk"
            _add_org("uow-streamed")
            yield "second chunk"
        return Response(stream_with_context(body()))

    for view in (succeeds, answers_conflict, raises, raises_keeping_changes,
                 writes_while_streaming):
        app.add_url_rule(f"/test/{view.__name__}", view_func=view, methods=["POST"])
    return app


def test_a_view_answering_a_success_has_its_writes_committed_without_committing(uow_app,
                                                                                runtime):
    assert uow_app.test_client().post("/test/succeeds").status_code == 201
    assert _org_names(runtime, "uow-success") == ["uow-success"]


def test_a_view_answering_an_error_status_keeps_nothing(uow_app, runtime):
    assert uow_app.test_client().post("/test/answers_conflict").status_code == 409
    assert _org_names(runtime, "uow-answered-error") == []


def test_a_view_raising_a_domain_error_keeps_nothing(uow_app, runtime):
    response = uow_app.test_client().post("/test/raises")
    assert response.status_code == 409
    assert response.get_json() == {"error": "refused", "code": "conflict"}
    assert _org_names(runtime, "uow-raised") == []


def test_a_domain_error_that_keeps_its_changes_commits_them(uow_app, runtime):
    assert uow_app.test_client().post("/test/raises_keeping_changes").status_code == 409
    assert _org_names(runtime, "uow-kept") == ["uow-kept"]


def test_a_write_after_the_commit_point_fails_the_request_in_a_test_app(uow_app, runtime):
    with pytest.raises(UncommittedWrites, match="/test/writes_while_streaming"):
        response = uow_app.test_client().post("/test/writes_while_streaming")
        response.get_data()
        response.close()
    assert _org_names(runtime, "uow-streamed") == []


def test_no_view_commits_by_itself():
    """The app commits; a view that commits by hand splits the request's unit of work."""
    commits = []
    for path in sorted(VIEWS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "commit"):
                commits.append(f"{path.relative_to(VIEWS.parent)}:{node.lineno}")
    allowed = {"web/context.py"}  # commit_db: the one commit point, and what errors keep
    assert [place for place in commits if place.split(":")[0] not in allowed] == []
