"""`burnbox --help` and every verb's help import neither the application nor its libraries:
each command imports what it needs when it runs (bench/cli.py measures the time it saves)."""

from burnbox.cli import main
from tests.cli.conftest import HEAVY, imported


def test_help_imports_nothing_heavy_for_the_command_and_each_verb():
    verbs = [[]] + [[name] for name in main.commands]
    verbs += [[group, name] for group in ("inboxes", "emails", "keys", "analytics")
              for name in main.commands[group].commands]
    for verb in verbs:
        heavy = imported(*verb, "--help") & set(HEAVY)
        assert not heavy, f"burnbox {' '.join(verb)} --help imports {sorted(heavy)}"
