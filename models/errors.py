"""Domain errors: each carries the HTTP status and the error code of docs/architecture.md
("HTTP contracts"); web turns them into the `{"error", "code"}` envelope, tasks let them
propagate, mailin maps them to SMTP replies.
An error raised with `keeps_changes` asks the face to commit before answering it."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base of every error a domain action raises on purpose."""

    status = 400
    code = "validation_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None,
                 extra: dict[str, Any] | None = None, keeps_changes: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        # Fields merged into the error body next to error and code (e.g. the session-limit data).
        self.extra = extra or {}
        # True when the action refused but what it wrote must stand (a failed sign-in's audit
        # entry, the session revoked for a reused refresh token): the face commits before it
        # answers the error, where it rolls back for any other.
        self.keeps_changes = keeps_changes


class ValidationFailed(DomainError):
    """The input breaks a rule; nothing was changed."""

    status, code = 400, "validation_error"


class Unauthenticated(DomainError):
    """No credentials, or credentials that are invalid, expired or revoked."""

    status, code = 401, "unauthenticated"


class Forbidden(DomainError):
    """The caller is known but lacks the permission."""

    status, code = 403, "forbidden"


class NotFound(DomainError):
    """The resource does not exist or is not visible to the caller (no existence leak)."""

    status, code = 404, "not_found"


class Conflict(DomainError):
    """The change collides with existing state (a duplicate, a protected last owner...)."""

    status, code = 409, "conflict"


class RateLimited(DomainError):
    """Too many requests in the current window."""

    status, code = 429, "rate_limited"
