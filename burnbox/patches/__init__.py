"""Where Burnbox reaches past a library's public surface: one module per library, each holding
every private name of that library the code touches, and nothing else.

Each module states the versions it was proved on (`PROVED_ON`, a version specifier) and
checks the installed version when it is imported (`require`): on any other version it raises
`UnprovedLibrary`, and the process refuses to start with that one sentence (the `burnbox`
commands show it as `Error: ...`, never a traceback). pyproject.toml bounds each library
below its next minor version, and tests/burnbox/patches holds an oracle test per patch: the
patched behaviour against the library's own, or the private name's shape as the patch relies
on it. Each patch says what it buys, as measured, beside it (docs/performance.md has the
figures): one that buys nothing goes.

- `aiosmtpd`: the SMTP session's hot path (session copies, plain paths) and
  what mailin's own DATA needs of aiosmtpd's.
- `dramatiq`: one deadline thread per process, a second worker pool on one broker, and the
  Redis consumer that `tasks.redis_broker` wakes.
"""

from __future__ import annotations

from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version


class UnprovedLibrary(RuntimeError):
    """An installed library (or Python) at a version a patch of ours was not proved on."""


def require(distribution: str, proved_on: str, installed: str | None = None) -> str:
    """The installed version of `distribution` (or `installed`, when the caller read it
    itself: Python's own); raise UnprovedLibrary, naming both, when `proved_on` (a version
    specifier such as ">=1.4.6,<1.5") does not hold it."""
    version = installed or metadata.version(distribution)
    if Version(version) not in SpecifierSet(proved_on):
        raise UnprovedLibrary(
            f"{distribution} {version} is installed, but Burnbox's patches of it were proved "
            f"only on {distribution}{proved_on}: install a version in that range "
            f"(requirements.lock pins one)")
    return version
