"""The callers' cache: the session or API key behind a credential, with its user, per process.

Authenticating a request reads the credential's row and its user: one statement on every
request, the dearest part of a small read. A process keeps them in a `CallerCache` under the
*callers revision* (models.caching), which every committed write to users, sessions or API keys
moves, and so does deleting a row whose deletion cascades into them (an org, a team). A revoked
session or key, a disabled account, a renamed user: every process sees it at its next request.

What is cached is rows, never verdicts: the checks (revoked, expired, disabled, the key's IP
allowlist) run on every request against the cached rows, so an expiry needs no write to apply.
A cached user is given to the request with `attach`, which puts a copy into the request's
session without a query; the request reads and changes it as it would one it had read."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from models.caching import CALLERS_REVISION_KEY, RevisionedCache, kept_in
from models.identity.users import User


class CallerCache(RevisionedCache[Any]):
    """The process's cached credentials (sessions by id, API keys by hash) with their users."""

    KEY = "identity.callers"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> CallerCache:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, lambda: cls(CALLERS_REVISION_KEY))


def attach(session: Session, user: User) -> User:
    """A cached `user` (a `models.db.detached_copy`) as an entity of `session`, without a
    query; the one the session holds already, when it read the user itself."""
    return session.merge(user, load=False)
