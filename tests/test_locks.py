"""The two locks: `requirements.lock` holds what runs (the image and `make run` install it),
`requirements-test.lock` that plus the test tools (`make test`); `make lock` writes both from
pyproject.toml. The production image once carried Playwright, moto, sympy, hypothesis and ruff,
about 365 of the venv's 603 MB, because one lock held everything."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# What pip-compile leaves out of a lock on purpose (every venv brings its own; pip-tools needs
# both).
UNPINNED = {"pip", "setuptools"}


def _pins(lock: str) -> dict[str, str]:
    """The lock's packages, by canonical name, with their versions."""
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / lock).read_text(), re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


def _closure(requirements: list[str]) -> set[str]:
    """Every distribution these requirements pull in on this interpreter, as the installed
    packages' own metadata says (extras and markers honoured)."""
    found: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in found:
            continue
        found.add(key)
        for text in metadata.distribution(name).requires or []:
            child = Requirement(text)
            wanted = ({"extra": extra} for extra in ("", *requirement.extras))
            if child.marker is None or any(child.marker.evaluate(env) for env in wanted):
                child.marker = None
                pending.append(child)
    return {key.split("[", 1)[0] for key in found} - UNPINNED


def test_the_runtime_lock_is_exactly_what_the_runtime_dependencies_pull_in():
    runtime = _pins("requirements.lock")
    needed = _closure(PYPROJECT["project"]["dependencies"])
    assert sorted(set(runtime) - needed) == [], "in the runtime lock, needed by nothing that runs"
    assert sorted(needed - set(runtime)) == [], "needed at run time, missing from the lock"


def test_no_test_tool_is_in_the_runtime_lock():
    runtime = _pins("requirements.lock")
    tools = {canonicalize_name(Requirement(text).name)
             for text in PYPROJECT["project"]["optional-dependencies"]["test"]}
    assert sorted(tools & set(runtime)) == []
    for heavy in ("playwright", "moto", "sympy", "hypothesis", "ruff", "pytest"):
        assert heavy not in runtime


def test_the_test_lock_holds_the_runtime_lock_at_the_same_versions():
    runtime, test = _pins("requirements.lock"), _pins("requirements-test.lock")
    assert {name: test.get(name) for name in runtime} == runtime
    assert _closure(PYPROJECT["project"]["optional-dependencies"]["test"]) <= set(test)
