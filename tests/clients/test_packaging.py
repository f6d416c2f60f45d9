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


def test_an_editable_build_of_either_project_prints_no_setuptools_notice(tmp_path):
    """`make install` installs both projects editable: setuptools printed boxed deprecation
    notices for a table-form `project.license` and an "Editable installation" notice for the
    top-level package folders, on every install."""
    for project in (ROOT, ROOT / "clients" / "python"):
        hook = ("import sys, tidy_setuptools; "
                f"tidy_setuptools.build_editable({str(tmp_path / project.name)!r})")
        backend = ROOT / "clients" / "python" / "build_backend"
        result = subprocess.run([sys.executable, "-c", hook], cwd=project, check=True,
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PYTHONPATH": str(backend)})
        assert "Editable installation" not in result.stderr, result.stderr
        assert "deprecated" not in result.stderr.lower(), result.stderr
        assert list((tmp_path / project.name).glob("*.whl"))
