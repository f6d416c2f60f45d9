"""The direction of imports, read from the source with `ast` (imports inside functions included):

- `models` imports none of the faces (web, tasks, mailin) nor Flask or Dramatiq;
- the adapters in `burnbox/` import nothing above them, except the `burnbox/cli` package, the
  one wiring module (the composition root of every process, and the operator's verbs);
- `tasks` and `mailin` do not import `web`;
- `mcp_server` (the MCP face, an adapter over the REST API) imports no other face;
- `compat` (the Mailpit and MailHog faces) imports of the other faces only web's request
  machinery (authentication, permissions, the request's session), never its views, and the
  actors of `tasks` (which it sends, as web's views do); and only `web/__init__.py` (which
  registers the compat blueprints) imports `compat`;
- a context of `models` imports only itself, the core modules (the top-level modules of
  `models/`) and the contexts below it; the core imports no context. The one exception is
  `models/__init__.py`: it imports an entity of every context so that Alembic sees the whole
  metadata, and no module of `models` imports it;
- inside a context with sub-packages (`SUBPACKAGES`), the context's own top-level modules are its
  core: they import none of its sub-packages, and a sub-package imports that core, itself and the
  sub-packages before it;
- no module of `models` imports, through any chain of imports, itself (a circle), whether the
  imports run at module level or inside a function. Imports under `if TYPE_CHECKING:` never run
  (they name types for the type checker) and do not count.

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
PACKAGES = ("burnbox", "models", "web", "tasks", "mailin", "mcp_server", "compat")
FACES = ("web", "tasks", "mailin", "mcp_server", "compat")
# Lowest first: a context may import the ones before it, never those after it.
CONTEXTS = ("platform", "identity", "tenancy", "domains", "mail", "delivery", "apikeys",
            "sso", "lifecycle", "admin", "analytics")
# Inside a context, lowest first after the context's own top-level modules: mail's checks judge
# stored mail, and its ingest reads incoming mail (and asks the checks, the spam score).
SUBPACKAGES = {"mail": ("checks", "ingest")}
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


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The nodes under an `if TYPE_CHECKING:` block: never run."""
    return {node for block in ast.walk(tree) if isinstance(block, ast.If)
            and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
            for statement in block.body for node in ast.walk(statement)}


def _imports(root: Path, path: Path, *, run_only: bool = False) -> Iterator[Import]:
    """Every import of the module at `path`; with `run_only`, those that run (not under
    `if TYPE_CHECKING:`)."""
    module = _module_name(root, path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    never_run = _type_checking_only(tree) if run_only else set()
    for node in ast.walk(tree):
        if node in never_run:
            continue
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
    problems += [f"models/{path.parent.name}/{path.name}: a sub-package missing from the order"
                 for path in sorted(models.glob("*/*"))
                 if path.is_dir() and (path / "__init__.py").exists()
                 and path.name not in SUBPACKAGES.get(path.parent.name, ())]
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
    elif layer == "mcp_server" and top in FACES and top != layer:
        return item.refused("the MCP server imports no other face")
    elif layer == "compat" and top in FACES and (
            top not in ("web", "compat", "tasks") or item.target.startswith("web.views")):
        return item.refused("compat imports web's request machinery and tasks' actors, "
                            "no other face")
    if top == "compat" and layer != "compat" and item.module != "web":
        return item.refused("only web/__init__.py registers the compat faces")
    return ""


def _context_problem(item: Import, core: set[str]) -> str:
    importer, imported = _context(item.module, core), _context(item.target, core)
    if imported is None:
        return item.refused("import a context's module, not the models package")
    if importer is None:
        return item.refused("a module outside every known context")
    if ORDER.index(imported) > ORDER.index(importer):
        return item.refused(f"{importer} may not import {imported}, a context above it")
    if importer == imported and importer in SUBPACKAGES:
        return _subpackage_problem(item, SUBPACKAGES[importer])
    return ""


def _subpackage(module: str, subpackages: tuple[str, ...]) -> str:
    """The sub-package of a module of a context with sub-packages: "" for the context's own
    top-level modules (its core)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[2] in subpackages else ""


def _subpackage_problem(item: Import, subpackages: tuple[str, ...]) -> str:
    context = item.module.split(".")[1]
    importer, imported = (_subpackage(name, subpackages) for name in (item.module, item.target))
    order = ("", *subpackages)
    if order.index(imported) > order.index(importer):
        below = f"{context}.{importer}" if importer else f"{context}'s own modules"
        return item.refused(f"{below} may not import {context}.{imported}, a sub-package above it")
    return ""


def test_every_import_goes_the_right_way():
    assert violations(ROOT) == []


def _modules(root: Path) -> dict[str, Path]:
    """Every module of `models` under `root` by its dotted name (packages included)."""
    return {_module_name(root, path): path for path in sorted((root / "models").rglob("*.py"))}


def _imported_module(target: str, modules: dict[str, Path]) -> str | None:
    """The module an import names (`m.n` is module `m.n`, or name `n` of module `m`)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def circles(root: Path) -> list[list[str]]:
    """Every set of modules of `models` that import one another round a circle (each a strongly
    connected component of the import graph, sorted), counting the imports that run. Packages'
    `__init__` modules are left out: `models/__init__.py` imports a module of every context for
    Alembic and nothing imports it, the others hold only a docstring."""
    modules = _modules(root)
    graph = {name: sorted({found for item in _imports(root, path, run_only=True)
                           if (found := _imported_module(item.target, modules))
                           and found != name and modules[found].name != "__init__.py"})
             for name, path in modules.items() if path.name != "__init__.py"}
    found: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:  # Tarjan's algorithm
        index[name] = low[name] = len(index)
        stack.append(name)
        for imported in graph[name]:
            if imported not in index:
                visit(imported)
                low[name] = min(low[name], low[imported])
            elif imported in stack:
                low[name] = min(low[name], index[imported])
        if low[name] == index[name]:
            component = [stack.pop()]
            while component[-1] != name:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for name in graph:
        if name not in index:
            visit(name)
    return sorted(found)


def test_no_module_of_models_imports_itself_round_a_circle():
    # A circle is tied by an import inside a function ("imported here: X builds on this
    # module"), and then every module on it depends on every other: mail's inboxes, chaos
    # rules, e-mails, catch-all and ingest were one, tied by the inboxes' page of addresses.
    assert circles(ROOT) == []


def test_the_circle_finder_counts_imports_inside_functions_and_not_type_checking_ones(tmp_path):
    _write(tmp_path, {
        "models/__init__.py": "from models.mail.inboxes import Inbox\n",
        "models/mail/__init__.py": "",
        "models/mail/entities.py": "from typing import TYPE_CHECKING\n"
                                   "if TYPE_CHECKING:\n    from models.mail.inboxes import Inbox\n",
        "models/mail/inboxes.py": "from models.mail.entities import Email\n"
                                  "def page():\n    from models.mail.ingest.store import route\n",
        "models/mail/ingest/__init__.py": "",
        "models/mail/ingest/store.py": "from models.mail.ingest.catchall import CatchAll\n",
        "models/mail/ingest/catchall.py": "from models.mail import inboxes\n",
        "models/mail/counters.py": "import models.mail.entities\n",
    })
    assert circles(tmp_path) == [["models.mail.inboxes", "models.mail.ingest.catchall",
                                  "models.mail.ingest.store"]]


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
        "mcp_server/__init__.py": "from models.mail.ingest.sanitise import html_to_text\n",
        "mcp_server/tools.py": "from web.views import emails\nfrom mcp_server import envelope\n",
        "compat/__init__.py": "",
        "compat/scopes.py": "from web.auth import presented_key\nfrom web.views import inboxes\n"
                            "from tasks.release import deliver_release\nimport mailin.server\n",
        "web/views/inboxes.py": "from compat import scopes\n",
        "models/mail/__init__.py": "",
        "models/mail/inboxes.py": "def page():\n    from models.mail.ingest.store import x\n",
        "models/mail/checks/__init__.py": "",
        "models/mail/checks/spam.py": "from models.mail.ingest import parse\n"
                                      "from models.mail.entities import Email\n",
        "models/mail/ingest/__init__.py": "",
        "models/mail/ingest/parse.py": "from models.mail.checks.spam import spam_score\n",
        "models/mail/outgoing/__init__.py": "",
    })
    problems = [problem.split(": ", 1)[1] for problem in violations(tmp_path)]
    assert problems == [
        "a context missing from the order",
        "a sub-package missing from the order",
        "burnbox.clinic imports models.db.Base (only burnbox.cli wires the layers above burnbox)",
        "burnbox.kv imports models.db.Base (only burnbox.cli wires the layers above burnbox)",
        "models.admin.stats imports models.Base "
        "(import a context's module, not the models package)",
        "models.admin.stats imports dramatiq (models imports no face, Flask or Dramatiq)",
        "models.db imports models.identity.users.User "
        "(core may not import identity, a context above it)",
        "models.identity.users imports models.tenancy.orgs "
        "(identity may not import tenancy, a context above it)",
        "models.mail.checks.spam imports models.mail.ingest.parse "
        "(mail.checks may not import mail.ingest, a sub-package above it)",
        "models.mail.inboxes imports models.mail.ingest.store.x "
        "(mail's own modules may not import mail.ingest, a sub-package above it)",
        "models.tenancy.orgs imports flask_sock (models imports no face, Flask or Dramatiq)",
        "models.tenancy.teams imports models.mail.inboxes "
        "(tenancy may not import mail, a context above it)",
        "web.views.inboxes imports compat.scopes (only web/__init__.py registers the compat "
        "faces)",
        "tasks imports web.context.db (tasks and mailin do not import web)",
        "mailin imports web.api (tasks and mailin do not import web)",
        "mcp_server.tools imports web.views.emails (the MCP server imports no other face)",
        "compat.scopes imports web.views.inboxes (compat imports web's request machinery and "
        "tasks' actors, no other face)",
        "compat.scopes imports mailin.server (compat imports web's request machinery and "
        "tasks' actors, no other face)",
    ]


ARCHITECTURE = ROOT / "docs" / "architecture.md"
SPAN = re.compile(r"core … (\w+)")


def _contexts_table(text: str) -> list[tuple[str, str, str]]:
    """The rows of the table under "## Contexts": (context, holds, may import), the context's
    name without its backticks or the core's "(`models/*.py`)"."""
    section = text.split("\n## Contexts\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return _rows(section, "| context |")


def _rows(section: str, header: str) -> list[tuple[str, str, str]]:
    """The rows of the first table in `section` whose header row starts with `header`."""
    rows = [line.strip("| ").split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith(header)]
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


def test_the_architecture_docs_table_lists_mails_sub_packages_in_the_checkers_order():
    section = ARCHITECTURE.read_text(encoding="utf-8").split("\n### Inside mail\n", 1)[1]
    rows = _rows(section.split("\n#", 1)[0], "| part |")
    assert [name for name, _, _ in rows] == [CORE, *SUBPACKAGES["mail"]]
    # The core row names every top-level module of mail.
    modules = {path.stem for path in (ROOT / "models" / "mail").glob("*.py")
               if path.stem != "__init__"}
    assert set(re.findall(r"`([a-z_]+)`", rows[0][1])) - {"normalise_address"} == modules
    for (name, holds, _), package in zip(rows[1:], SUBPACKAGES["mail"], strict=True):
        modules = {path.stem for path in (ROOT / "models" / "mail" / package).glob("*.py")
                   if path.stem != "__init__"}
        assert modules <= set(re.findall(r"`([a-z_]+)`", holds)), name
