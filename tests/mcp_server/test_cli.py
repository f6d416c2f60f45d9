"""`burnbox mcp` without the variables a client needs stops with one line saying which."""

from click.testing import CliRunner

from burnbox.cli import main


def test_burnbox_mcp_without_a_url_or_key_says_what_to_set():
    for env in ({"BURNBOX_URL": None, "BURNBOX_API": None, "BURNBOX_API_KEY": "bb_x"},
                {"BURNBOX_URL": "http://127.0.0.1:8080", "BURNBOX_API_KEY": None}):
        result = CliRunner(env=env).invoke(main, ["mcp"])
        assert result.exit_code == 1
        assert result.stderr.strip().splitlines()[-1].startswith(
            "Error: set BURNBOX_URL (or BURNBOX_API) and BURNBOX_API_KEY")
