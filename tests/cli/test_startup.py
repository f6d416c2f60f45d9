"""`burnbox --help` and every verb's help import neither the application nor its libraries:
each command imports what it needs when it runs (bench/cli.py measures the time it saves)."""

import json
import subprocess
import sys

from burnbox.cli import main

HEAVY = ("flask", "sqlalchemy", "dramatiq", "alembic", "marshmallow", "models", "web", "tasks",
         "mailin", "redis", "psycopg")

PRINT_IMPORTED = """
import json, sys
from burnbox.cli import main
try:
    main(sys.argv[1:], prog_name="burnbox")
except SystemExit:
    pass
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})), file=sys.stderr)
"""


def _imported(*args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PRINT_IMPORTED, *args], capture_output=True,
                            text=True, timeout=60, check=True)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def test_help_imports_nothing_heavy_for_the_command_and_each_verb():
    verbs = [[]] + [[name] for name in main.commands]
    verbs += [[group, name] for group in ("inboxes", "emails", "keys", "analytics")
              for name in main.commands[group].commands]
    for verb in verbs:
        heavy = _imported(*verb, "--help") & set(HEAVY)
        assert not heavy, f"burnbox {' '.join(verb)} --help imports {sorted(heavy)}"
