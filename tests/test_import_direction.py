"""The direction of imports, read from the source with `ast` (imports inside functions included):

- `models` imports none of the faces (web, tasks, mailin) nor Flask or Dramatiq;
- the adapters in `burnbox/` import nothing above them, except the `burnbox/cli` package, the
  one wiring module (the composition root of every process, and the operator's verbs);
- `tasks` and `mailin` do not import `web`;
- a context of `models` imports only itself, the core modules (the top-level modules of
  `models/`) and the contexts below it; the core imports no context. The one exception is
  `models/__init__.py`: it imports an entity of every context so that Alembic sees the whole
  metadata, and no module of `models` imports it.

The table of contexts in docs/architecture.md is checked against the same order: its rows, what
each may import, and the core row's modules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("burnbox", "models", "web", "tasks", "mailin")
FACES = ("web", "tasks", "mailin")
# Lowest first: a context may import the ones before it, never those after it.
CONTEXTS = ("platform", "identity", "tenancy", "domains", "mail", "delivery", "apikeys",
            "sso", "lifecycle", "admin", "analytics")
CORE = "core"
ORDER = (CORE, *CONTEXTS)
WIRING = "burnbox.cli"
METADATA = "models"


@dataclass(frozen=True)
class Import:
    """One imported name: `target` is the dotted module (for `from m import n`: `m.n`)."""

    module: str
    target: str
    path: Path
    line: int

    def refused(self, rule: str) -> str:
        """The violation as a test failure shows it."""
        return f"{self.path.as_posix()}:{self.line}: {self.module} imports {self.target} ({rule})"


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(root: Path, path: Path) -> Iterator[Import]:
    module = _module_name(root, path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            yield Import(module, target, path.relative_to(root), node.lineno)


def _context(module: str, core: set[str]) -> str | None:
    """The context of a module of `models` (CORE for a core module); None for the `models`
    package itself or anything else it names (an unknown context included)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "models":
        return None
    if parts[1] in core:
        return CORE
    return parts[1] if parts[1] in CONTEXTS else None


def violations(root: Path) -> list[str]:
    """Every import under `root` that goes the wrong way."""
    models = root / "models"
    core = {path.stem for path in models.glob("*.py") if path.stem != "__init__"}
    problems = [f"models/{path.name}: a context missing from the order"
                for path in sorted(models.iterdir())
                if path.is_dir() and (path / "__init__.py").exists()
                and path.name not in CONTEXTS]
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            problems.extend(filter(None, (_problem(item, core) for item in _imports(root, path))))
    return problems


def _problem(item: Import, core: set[str]) -> str:
    """The rule `item` breaks, or ""."""
    layer, top = item.module.split(".")[0], item.target.split(".")[0]
    if layer == "models":
        if top in FACES or top == "dramatiq" or top.startswith("flask"):
            return item.refused("models imports no face, Flask or Dramatiq")
        if top == "models" and item.module != METADATA:
            return _context_problem(item, core)
    elif layer == "burnbox":
        wiring = item.module == WIRING or item.module.startswith(WIRING + ".")
        if top in ("models", *FACES) and not wiring:
            return item.refused(f"only {WIRING} wires the layers above burnbox")
    elif layer in ("tasks", "mailin") and top == "web":
        return item.refused("tasks and mailin do not import web")
    return ""


def _context_problem(item: Import, core: set[str]) -> str:
    importer, imported = _context(item.module, core), _context(item.target, core)
    if imported is None:
        return item.refused("import a context's module, not the models package")
    if importer is None:
        return item.refused("a module outside every known context")
    if ORDER.index(imported) > ORDER.index(importer):
        return item.refused(f"{importer} may not import {imported}, a context above it")
    return ""


def test_every_import_goes_the_right_way():
    assert violations(ROOT) == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_checker_finds_every_kind_of_wrong_import(tmp_path):
    _write(tmp_path, {
        "models/__init__.py": "from models.admin.stats import x\n",
        "models/db.py": "from models.identity.users import User\n",
        "models/identity/__init__.py": "",
        "models/identity/users.py": "def later():\n    from models.tenancy import orgs\n",
        "models/tenancy/__init__.py": "",
        "models/tenancy/orgs.py": "from models.identity.users import User\nimport flask_sock\n",
        "models/tenancy/teams.py": "from . import orgs\nfrom ..mail import inboxes\n",
        "models/admin/__init__.py": "",
        "models/admin/stats.py": "from models import Base, db\nimport dramatiq\n",
        "models/reports/__init__.py": "",
        "burnbox/__init__.py": "",
        "burnbox/cli/__init__.py": "def serve():\n    import web\n    from tasks import clock\n",
        "burnbox/cli/inboxes.py": "from models.mail import inboxes\n",
        "burnbox/clinic.py": "from models.db import Base\n",
        "burnbox/kv.py": "from models.db import Base\n",
        "web/__init__.py": "from models.tenancy.orgs import Org\nfrom tasks import broker\n",
        "tasks/__init__.py": "def send():\n    from web.context import db\n",
        "mailin/__init__.py": "import web.api\n",
    })
    problems = [problem.split(": ", 1)[1] for problem in violations(tmp_path)]
    assert problems == [
        "a context missing from the order",
        "burnbox.clinic imports models.db.Base (only burnbox.cli wires the layers above burnbox)",
        "burnbox.kv imports models.db.Base (only burnbox.cli wires the layers above burnbox)",
        "models.admin.stats imports models.Base "
        "(import a context's module, not the models package)",
        "models.admin.stats imports dramatiq (models imports no face, Flask or Dramatiq)",
        "models.db imports models.identity.users.User "
        "(core may not import identity, a context above it)",
        "models.identity.users imports models.tenancy.orgs "
        "(identity may not import tenancy, a context above it)",
        "models.tenancy.orgs imports flask_sock (models imports no face, Flask or Dramatiq)",
        "models.tenancy.teams imports models.mail.inboxes "
        "(tenancy may not import mail, a context above it)",
        "tasks imports web.context.db (tasks and mailin do not import web)",
        "mailin imports web.api (tasks and mailin do not import web)",
    ]


ARCHITECTURE = ROOT / "docs" / "architecture.md"
SPAN = re.compile(r"core … (\w+)")


def _contexts_table(text: str) -> list[tuple[str, str, str]]:
    """The rows of the table under "## Contexts": (context, holds, may import), the context's
    name without its backticks or the core's "(`models/*.py`)"."""
    section = text.split("\n## Contexts\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("| ").split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| context |")]
    return [(name.split(" (")[0].strip("`"), holds, imports.strip())
            for name, holds, imports in rows]


def _may_import(cell: str) -> tuple[str, ...]:
    """The contexts a "may import" cell names: "no context", a list, or "core … X" (every
    context from core to X)."""
    if cell == "no context":
        return ()
    span = SPAN.match(cell)
    if span:
        return ORDER[:ORDER.index(span.group(1)) + 1]
    return tuple(name.strip() for name in cell.split(","))


def test_the_architecture_docs_table_lists_the_contexts_in_the_checkers_order():
    # The doc is where someone adding a context or a core module looks first: it had fallen
    # behind (no `analytics` row, core modules left out) while this checker moved on.
    rows = _contexts_table(ARCHITECTURE.read_text(encoding="utf-8"))
    assert [name for name, _, _ in rows] == list(ORDER)
    # Each row may import exactly the rows above it.
    assert [_may_import(imports) for _, _, imports in rows] == [
        ORDER[:place] for place in range(len(ORDER))]
    modules = {path.stem for path in (ROOT / "models").glob("*.py") if path.stem != "__init__"}
    assert set(re.findall(r"`([a-z_]+)`", rows[0][1])) == modules  # the core row names its modules
