"""The client's build backend: setuptools, minus the folders it leaves in the source tree.

`pip install ./clients/python` builds the wheel in place, and setuptools writes `build/` and
`burnbox_client.egg-info/` beside the sources; a checkout then shows a stray `build/` folder
after the README's own install step. This backend runs setuptools' and removes those two
folders again when the build made them (one that was there before is left alone).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (every other hook is setuptools' own)

LEFT_BEHIND = ("build", "burnbox_client.egg-info")


def build_wheel(wheel_directory: str, config_settings: dict | None = None,
                metadata_directory: str | None = None) -> str:
    """setuptools' wheel, then the folders it wrote here removed."""
    fresh = [Path(name) for name in LEFT_BEHIND if not Path(name).exists()]
    try:
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        for folder in fresh:
            shutil.rmtree(folder, ignore_errors=True)
