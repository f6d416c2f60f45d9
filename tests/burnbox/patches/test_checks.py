"""The version check every patch module runs at import (burnbox.patches.require), and how the
`burnbox` commands show its refusal: one sentence, exit code 1, no traceback."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest
from click.testing import CliRunner

from burnbox.cli import main
from burnbox.patches import UnprovedLibrary, require


def test_a_version_inside_the_proved_range_is_taken():
    assert require("aiosmtpd", ">=1.0", installed="1.4.6") == "1.4.6"
    assert require("aiosmtpd", metadata.version("aiosmtpd").join((">=", ""))) == metadata.version(
        "aiosmtpd")


@pytest.mark.parametrize("version", ["1.5.0", "1.4.5", "2.0.0a1"])
def test_a_version_outside_the_proved_range_is_refused_naming_both(version):
    with pytest.raises(UnprovedLibrary) as refusal:
        require("aiosmtpd", ">=1.4.6,<1.5", installed=version)
    assert str(refusal.value).startswith(
        f"aiosmtpd {version} is installed, but Burnbox's patches of it were proved only on "
        "aiosmtpd>=1.4.6,<1.5")


def test_a_command_refuses_an_unproved_library_with_one_line(monkeypatch, tmp_path):
    installed = metadata.version
    monkeypatch.setattr(metadata, "version",
                        lambda name: "3.0.0" if name == "dramatiq" else installed(name))
    # Imported afresh by the command, as in a new process (the module in use is put back).
    monkeypatch.delitem(sys.modules, "burnbox.patches.dramatiq")
    result = CliRunner().invoke(main, ["web"], env={"BURNBOX_DATA_DIR": str(tmp_path)})
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1:] == [
        "Error: dramatiq 3.0.0 is installed, but Burnbox's patches of it were proved only on "
        "dramatiq>=2.2,<2.3: install a version in that range (requirements.lock pins one)"]
