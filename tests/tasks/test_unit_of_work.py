"""A message's one unit of work (tasks.broker): an actor's writes are committed when it returns,
without committing itself, and rolled back when it raises; a commit that fails is the actor's
failure, retried, the retry seeing nothing of the failed run; only the actors declared to commit
in steps commit before they return, and no actor module commits by hand. Run on the backend's
real broker and worker threads (the StubBroker on SQLite, Redis on PostgreSQL)."""

import ast
import threading
import uuid
from pathlib import Path

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import event, select
from sqlalchemy.orm import Session

import tasks
from models.errors import Conflict
from models.tenancy.orgs import Org
from tasks.broker import actor, commit_step, session, step_committing_actors
from tests.tasks.conftest import wait_until

TASKS = Path(__file__).resolve().parents[2] / "tasks"
QUEUE = "test_unit_of_work"

# The jobs that commit before they return, each for the reason its declaration gives; a new
# one is a decision made here, by name.
STEP_COMMITTING = {
    "roll_up_analytics",  # each batch of days before the next
    "flush_api_key_usage",  # inside the block that gives the usage back when the commit fails
    "cleanup",  # each step and each batch on its own
    "dispatch_events",  # a failed chunk's events one by one
    "export_audit",  # the claim before the long part, a failure before it propagates
    "deliver_webhook",  # the leases before any byte goes out
    "send_requested_attempt",  # the lease before any byte goes out
}

# Sessions whose next commit fails (the test's stand-in for a database lost at the commit).
FAIL_COMMIT = "test.fail_next_commit"
_runs: list[str] = []
_runs_lock = threading.Lock()


def _run(label: str) -> None:
    with _runs_lock:
        _runs.append(label)


def _add_org(name: str) -> None:
    session().add(Org(name=name, slug=f"uow-{uuid.uuid4().hex[:12]}"))


@actor(queue_name=QUEUE, max_retries=0)
def writes(name: str) -> None:
    """Writes an org and returns."""
    _add_org(name)


@actor(queue_name=QUEUE, max_retries=0)
def writes_then_raises(name: str) -> None:
    """Writes an org, sends a message about it, and fails."""
    _add_org(name)
    noted_by_uow.send(name)
    raise RuntimeError("the actor failed")


@actor(queue_name=QUEUE, max_retries=0)
def raises_keeping_changes(name: str) -> None:
    """Writes an org and refuses with a domain error whose changes stand."""
    _add_org(name)
    raise Conflict("refused, but the write stands", keeps_changes=True)


@actor(queue_name=QUEUE, max_retries=1, min_backoff=10, max_backoff=10)
def writes_once_failing_its_commit(name: str) -> None:
    """Writes an org and sends a message about it; on its first run its commit fails."""
    _add_org(name)
    noted_by_uow.send(name)
    with _runs_lock:
        first = _runs.count(f"wrote {name}") == 0
        _runs.append(f"wrote {name}")
    if first:
        session().info[FAIL_COMMIT] = True


@actor(queue_name=QUEUE, max_retries=0)
def commits_by_hand(name: str) -> None:
    """Commits a step without being declared to commit in steps."""
    _add_org(name)
    commit_step(session())


@actor(queue_name=QUEUE, max_retries=0, commits_in_steps="the test's first step stands")
def commits_a_step_then_raises(name: str) -> None:
    """Commits a first step, writes a second, and fails."""
    _add_org(f"{name}-step")
    commit_step(session())
    _add_org(f"{name}-after")
    raise RuntimeError("the second step failed")


@actor(queue_name=QUEUE, max_retries=0)
def noted_by_uow(name: str) -> None:
    """Notes that a message about `name` was processed."""
    _run(f"noted_by_uow {name}")


@pytest.fixture
def uow_worker(committed_runtime):
    """Worker threads on the backend's broker, with the commit-failing hook of `FAIL_COMMIT`."""
    def fail_marked(db: Session) -> None:
        if db.info.pop(FAIL_COMMIT, False):
            raise RuntimeError("the database was lost at the commit")

    event.listen(Session, "before_commit", fail_marked)
    running = tasks.start_worker(dramatiq.get_broker(), threads=2)
    yield dramatiq.get_broker()
    running.stop()
    event.remove(Session, "before_commit", fail_marked)
    _runs.clear()


def drain(broker: dramatiq.Broker) -> None:
    """Wait until the test queue is processed; on the in-process broker, without raising the
    failures these tests make on purpose (its join raises them, Redis's never does)."""
    options = {"fail_fast": False} if isinstance(broker, StubBroker) else {}
    broker.join(QUEUE, timeout=10_000, **options)


def _orgs(rt, name: str) -> list[str]:
    with rt.db.session() as db:
        return list(db.scalars(select(Org.name).where(Org.name.startswith(name))))


def _name() -> str:
    return f"uow-{uuid.uuid4().hex[:8]}"


def test_an_actor_that_returns_has_its_writes_committed_without_committing(
        committed_runtime, uow_worker):
    name = _name()
    writes.send(name)
    drain(uow_worker)
    assert _orgs(committed_runtime, name) == [name]


def test_an_actor_that_raises_keeps_nothing_and_sends_nothing(committed_runtime, uow_worker):
    name = _name()
    writes_then_raises.send(name)
    drain(uow_worker)
    assert _orgs(committed_runtime, name) == []
    assert _runs == []  # its message waited for a commit that never came


def test_a_domain_error_that_keeps_its_changes_commits_them(committed_runtime, uow_worker):
    name = _name()
    raises_keeping_changes.send(name)
    drain(uow_worker)
    assert _orgs(committed_runtime, name) == [name]


def test_a_commit_that_fails_is_retried_and_the_retry_sees_nothing_of_the_failed_run(
        committed_runtime, uow_worker):
    name = _name()
    writes_once_failing_its_commit.send(name)
    wait_until(lambda: _runs.count(f"noted_by_uow {name}") == 1)
    drain(uow_worker)
    # Two runs, one commit: one org, and one message about it (the first run's never left).
    assert _runs.count(f"wrote {name}") == 2
    assert _runs.count(f"noted_by_uow {name}") == 1
    assert _orgs(committed_runtime, name) == [name]


def test_an_actor_not_declared_to_commit_in_steps_cannot_commit_one(committed_runtime,
                                                                     uow_worker):
    name = _name()
    commits_by_hand.send(name)
    drain(uow_worker)
    assert _orgs(committed_runtime, name) == []


def test_a_declared_step_stands_when_a_later_part_fails(committed_runtime, uow_worker):
    name = _name()
    commits_a_step_then_raises.send(name)
    drain(uow_worker)
    assert _orgs(committed_runtime, name) == [f"{name}-step"]


def _modules_of_actors() -> dict[str, str]:
    """The module (under tasks/) of every actor the tasks package declares, by actor name."""
    return {found.actor_name: found.fn.__module__.removeprefix("tasks.")
            for module in vars(tasks).values() if isinstance(module, type(tasks))
            for found in vars(module).values() if isinstance(found, dramatiq.Actor)}


def test_the_step_committing_jobs_are_the_named_ones():
    ours = {name: why for name, why in step_committing_actors().items()
            if name in _modules_of_actors()}
    assert set(ours) == STEP_COMMITTING
    assert all(why.strip() for why in ours.values())


def _calls(path: Path, name: str) -> list[int]:
    """The lines of `path` calling `.name(...)` or `name(...)`."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            called = node.func
            if ((isinstance(called, ast.Attribute) and called.attr == name)
                    or (isinstance(called, ast.Name) and called.id == name)):
                lines.append(node.lineno)
    return lines


def test_no_actor_module_commits_by_hand():
    """The message's unit of work commits (tasks/broker.py); an actor module that commits by
    hand splits it, and what it committed stays when a later part fails."""
    commits = [f"tasks/{path.name}:{line}" for path in sorted(TASKS.glob("*.py"))
               for line in _calls(path, "commit") if path.name != "broker.py"]
    assert commits == []


def test_only_the_modules_of_step_committing_jobs_commit_steps():
    modules = {_modules_of_actors()[name] for name in STEP_COMMITTING}
    stepping = {path.stem for path in TASKS.glob("*.py")
                if path.name != "broker.py" and _calls(path, "commit_step")}
    assert stepping <= modules
