"""Burnbox's build backend (the server's and the client's): setuptools, quieter and tidier.

- `pip install ./clients/python` builds the wheel in place, and setuptools writes `build/` and
  `<name>.egg-info/` beside the sources; a checkout then showed a stray `build/` folder after
  the README's own install step. `build_wheel` runs setuptools' and removes the folders of
  those names that the build made (one that was there before is left alone).
- `pip install -e` (what `make install` does for both) made setuptools print a boxed
  "Editable installation. Please be careful with folders in your working directory..." notice
  on every install: a notice it gives every project whose packages sit at the top of the tree
  instead of under `src/`, for a risk our layout does not have (the tests import from the
  checkout on purpose). `build_editable` is setuptools' with that one notice, setuptools'
  `InformationOnly`, not shown; its deprecation warnings still are.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (every other hook is setuptools' own)
from setuptools.warnings import InformationOnly


def _made_by_the_build() -> set[Path]:
    """The folders setuptools may leave here: `build/` and each `*.egg-info/`."""
    return {Path("build"), *Path().glob("*.egg-info")}


def build_wheel(wheel_directory: str, config_settings: dict | None = None,
                metadata_directory: str | None = None) -> str:
    """setuptools' wheel, then the folders it wrote here removed."""
    before = {path for path in _made_by_the_build() if path.exists()}
    try:
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        for folder in _made_by_the_build() - before:
            shutil.rmtree(folder, ignore_errors=True)


def build_editable(wheel_directory: str, config_settings: dict | None = None,
                   metadata_directory: str | None = None) -> str:
    """setuptools' editable wheel, without its notice about top-level package folders."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InformationOnly)
        return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
