"""What the version checks of burnbox/patches are tested with."""

from __future__ import annotations

import importlib
from importlib import metadata
from types import ModuleType

import pytest

from burnbox.patches import UnprovedLibrary


@pytest.fixture
def refused_at(monkeypatch):
    """`refused_at(module, distribution, version)`: import `module` again with the
    installed `distribution` said to be `version` (the library's metadata, not our code),
    and return the refusal's message. The import stops at the check, before the module
    defines anything again, so the module in use stays as it was."""

    def refused(module: ModuleType, distribution: str, version: str) -> str:
        installed = metadata.version

        def said(name: str) -> str:
            return version if name == distribution else installed(name)

        monkeypatch.setattr(metadata, "version", said)
        with pytest.raises(UnprovedLibrary) as refusal:
            importlib.reload(module)
        monkeypatch.setattr(metadata, "version", installed)
        return str(refusal.value)

    return refused
