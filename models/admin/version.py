"""What is running (`GET /admin/version`): the release, the source commit, the Python version,
and the migration revision of the database beside the newest one this code knows."""

from __future__ import annotations

import platform
from pathlib import Path

from alembic.runtime.migration import MigrationContext
from sqlalchemy.orm import Session

import burnbox
from models.schema import ROOT, heads

UNKNOWN = "unknown"


def git_commit(root: Path = ROOT) -> str:
    """The commit of the checkout the code runs from (read from `.git`, no `git` program
    needed), else UNKNOWN (an installed package or an image built without `.git`)."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: ".git" names the real folder
            git = (root / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        loose = git / ref
        if loose.is_file():
            return loose.read_text().strip()
        common = git / "commondir"
        base = (git / common.read_text().strip()).resolve() if common.is_file() else git
        if (base / ref).is_file():
            return (base / ref).read_text().strip()
        for line in (base / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    except (OSError, IndexError):
        pass
    return UNKNOWN


def version_info(session: Session) -> dict[str, str | None]:
    """`{version, git_commit, python_version, migration_revision, migration_head}`: the
    database's revision (None before the first migration) and the code's newest one; they
    differ while a release step has not run."""
    current = MigrationContext.configure(session.connection()).get_current_heads()
    return {"version": burnbox.__version__, "git_commit": git_commit(),
            "python_version": platform.python_version(),
            "migration_revision": ",".join(current) or None,
            "migration_head": ",".join(heads())}
