"""Per-request access to the process runtime and a request-scoped database session."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, current_app, g, request
from flask.typing import ResponseReturnValue
from sqlalchemy.orm import Session

from burnbox.outages import unavailable_dependency
from models.caching import Revisions, declared_revisions
from models.db import enter_unit_of_work, has_writes, leave_unit_of_work
from models.mail.caches import InboxCaches, revisions_ahead
from models.platform.settings import PlatformCache, serve_platform_from
from models.runtime import Runtime
from web.routing import matched_view

EXTENSION = "burnbox"

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger(__name__)


def runtime() -> Runtime:
    """The runtime of the current app."""
    return current_app.extensions[EXTENSION]


def db() -> Session:
    """The request's database session, opened on first use and closed when the request ends.
    It is the request's unit of work: `UnitOfWorkApp` commits it when the view answers a
    success, and actors sent while it holds writes wait for that commit."""
    if "db" not in g:
        view = matched_view()
        rt = runtime()
        g.db = rt.db.session(read_only=getattr(view, READ_ONLY_MARK, False))
        g.db_unit = enter_unit_of_work(g.db)
        if rt.settings.redis.url:  # without Redis nothing is cached (models.platform.settings)
            serve_platform_from(g.db, PlatformCache.of(rt.caches), revisions)
    return g.db


READ_ONLY_MARK = "_reads_only"


def reads_only(view: F) -> F:
    """Mark a view that only reads: its request's session is read-only
    (`models.db.Database.session(read_only=True)`: no transaction round trips on PostgreSQL,
    and a write raises). For the hot GETs; apply it outermost, above every other decorator."""
    setattr(view, READ_ONLY_MARK, True)
    return view


def revisions() -> Revisions:
    """The revisions the request's per-process caches are checked against: every one read from
    the store in one round trip, on first use (models.caching)."""
    if "revisions" not in g:
        g.revisions = Revisions(runtime().store)
    return g.revisions


def inbox_caches() -> InboxCaches | None:
    """The process's inbox caches (models.mail.caches) bound to the request's revisions, for a
    read-only request when Redis is configured; None otherwise. A write reads the rows it
    changes; and without Redis a process's memory store is its own, so a change made by another
    process on the same database (`burnbox mailin` beside a second web worker) could not move
    the revision this process reads."""
    if not _reads_cached():
        return None
    return InboxCaches.bound(runtime().caches, revisions())


def read_inbox_ahead(inbox_id: uuid.UUID) -> None:
    """Say that the request is about inbox `inbox_id`, for a face whose path names the inbox
    otherwise than by `inbox_id` (a compat scope): `revisions_to_read` then reads its revision
    too. Call before the app's `before_request` functions run (a `url_value_preprocessor`)."""
    g.inbox_ahead = inbox_id


def revisions_to_read() -> list[str]:
    """Every revision the request's caches may check, for the rate limiter to read in its one
    round trip: the declared ones and, for a read-only request about an inbox or an e-mail
    (`inbox_id` or `email_id` in its path, or an inbox named by `read_inbox_ahead`), that
    inbox's own."""
    keys = declared_revisions()
    if _reads_cached():
        args = request.view_args or {}
        keys += revisions_ahead(runtime().caches,
                                inbox_id=args.get("inbox_id") or g.get("inbox_ahead"),
                                email_id=args.get("email_id"))
    return keys


def _reads_cached() -> bool:
    """Whether the request may read through the per-process inbox caches."""
    return bool(getattr(matched_view(), READ_ONLY_MARK, False) and runtime().settings.redis.url)


class UnitOfWorkApp(Flask):
    """Flask with the request's one commit point.

    The view's return value becomes the response; when its status is a success (below 400)
    the request's unit of work commits before the response leaves, and a failing commit is
    answered as any other error of the view (a lost database is a 503). A view that raises
    or answers an error commits nothing: `close_db` rolls its writes back, except a domain
    error that keeps its changes (`web.errors.handle_domain_error` commits those). Views never
    commit; a write that would otherwise be forgotten by a view is committed here."""

    def dispatch_request(self) -> ResponseReturnValue:
        """Run the view, then commit its unit of work when it answered a success."""
        response = self.make_response(super().dispatch_request())
        if response.status_code < 400:
            commit_db()
            # Named for the check in close_db, which runs once the request context is gone.
            g.unit_committed = f"{request.method} {request.path}"
        return response


def commit_db() -> None:
    """Commit the request's session, if the request opened one."""
    session = g.get("db")
    if session is not None:
        session.commit()


def flush_db() -> None:
    """Flush the request's session, if the request opened one (see web.api.Blueprint.response)."""
    session = g.get("db")
    if session is not None:
        session.flush()


class UncommittedWrites(RuntimeError):
    """A request answered a success, then wrote after its commit point: the write is lost."""


def close_db(_exc: BaseException | None = None) -> None:
    """Close (and so roll back anything uncommitted in) the request's session. A connection
    the database ended meanwhile is discarded instead: the request is answered already.

    A request that committed as a success and then wrote again (after-request work, a streamed
    body) has those writes rolled back here, since nothing commits them: in a test app that
    raises UncommittedWrites, failing the test; elsewhere it is logged as the error it is."""
    session = g.pop("db", None)
    if session is None:
        return
    leave_unit_of_work(g.pop("db_unit"))
    committed = g.pop("unit_committed", None)
    lost = committed is not None and has_writes(session)
    try:
        session.close()
    except Exception as exc:
        # The closing rollback of a connection the server ended (a restart while the request
        # ran) raises here, after the response was made: raised, it turned that response into
        # gunicorn's bare 500. Nothing is left to roll back on a dead connection.
        if unavailable_dependency(exc) is None:
            raise
        session.invalidate()
        log.warning("the request's database connection was lost before it closed",
                    extra={"reason": str(exc).splitlines()[0]})
    if lost:
        if current_app.testing:
            raise UncommittedWrites(f"the request wrote after its commit point: {committed}")
        log.error("a request wrote after its commit point; the write was rolled back",
                  extra={"request": committed})


def init_app(app: Flask, rt: Runtime) -> None:
    """Attach the runtime to the app and close request sessions on teardown."""
    app.extensions[EXTENSION] = rt
    app.teardown_appcontext(close_db)
