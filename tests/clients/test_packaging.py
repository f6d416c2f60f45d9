"""Installing the client from the checkout, as the README says (`pip install ./clients/python`),
leaves the source tree as it was."""

import os
import shutil
import subprocess
import sys

from tests.processes import ROOT


def test_pip_install_of_the_client_leaves_no_build_folder_in_the_tree(tmp_path):
    source = tmp_path / "python"
    shutil.copytree(ROOT / "clients" / "python", source,
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    before = sorted(path.name for path in source.iterdir())
    # Offline: the build backend's requirement (setuptools) is this venv's own.
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(tmp_path / "site"), str(source)],
                   check=True, timeout=300, capture_output=True,
                   env={**os.environ, "PIP_NO_INDEX": "1"})
    assert (tmp_path / "site" / "burnbox_client" / "__init__.py").exists()
    assert sorted(path.name for path in source.iterdir()) == before
