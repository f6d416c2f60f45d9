"""The `burnbox` command: the composition root of every process, and the operator's verbs.

`serve` runs everything in one process on the embedded default (SQLite, in-process broker, bus
and store): a threaded HTTP server with WebSockets, Dramatiq worker threads, the clock and the SMTP
server. `web`, `worker`, `clock`, `mailin` and `release` are the Procfile's processes.

Start-up: every module of this package imports only click at its top, and each command imports
what it needs (the settings, the application, its libraries) inside its own function, so
`burnbox --help` and a verb's help start in a few times a bare click program's time
(`bench/cli.py` measures it; tests/cli/test_startup.py checks what `--help` imports).

The operator's verbs live in the modules beside this one (`inboxes`, `emails`, `keys`, `send`);
`errors` makes every failure an operator can fix one line, `ready` checks (or migrates) the
schema, `acting` says who a verb acts as. The package is the one wiring module: the only part
of `burnbox/` that imports models, web, tasks and mailin; every other adapter here imports none
of them (tests/test_import_direction.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from burnbox.cli import agents, analytics, emails, inboxes, keys
from burnbox.cli.accounts import set_password
from burnbox.cli.bootstrap import bootstrap, report_bootstrap
from burnbox.cli.errors import CommandGroup
from burnbox.cli.ready import SchemaCommand, wait_for_schema
from burnbox.cli.ready import load as _settings
from burnbox.cli.send import send

if TYPE_CHECKING:
    from types import FrameType

    from burnbox.settings import Settings
    from mcp_server.http import McpHttpThread

ROOT = Path(__file__).resolve().parents[2]


@click.group(cls=CommandGroup)
@click.version_option(package_name="burnbox")
def main() -> None:
    """Burnbox: disposable e-mail inboxes for teams."""


for _verbs in (inboxes.group, emails.group, keys.group, analytics.group, send, bootstrap,
               set_password, agents.mcp_stdio, agents.mcp_http):
    main.add_command(_verbs)


@main.command()
@click.option("--host", help="HTTP bind address (http.host)")
@click.option("--port", type=int, help="HTTP port (http.port)")
@click.option("--smtp-host", help="SMTP bind address (smtp.host)")
@click.option("--smtp-port", type=int, help="SMTP port (smtp.port)")
def serve(host: str | None, port: int | None, smtp_host: str | None,
          smtp_port: int | None) -> None:
    """Run web, workers, clock and SMTP in one process (the embedded default)."""
    import logging

    from werkzeug.serving import make_server

    import tasks
    from burnbox.gc_tuning import tune_collector
    from burnbox.serving import EmbeddedRequestHandler
    from mailin.self_signed import with_self_signed
    from mailin.server import MailinThread
    from models.runtime import Runtime
    from models.schema import upgrade_counted
    from tasks.clock import Clock, after_outage_jobs, default_jobs
    from tasks.wiring import PROCESS_TIMEOUT_MS, waiting_pools
    from web import create_app

    settings = _settings(**{"http.host": host, "http.port": port, "smtp.host": smtp_host,
                            "smtp.port": smtp_port})
    # STARTTLS on a laptop too: a self-signed certificate in the data folder when none is set.
    settings = with_self_signed(settings)
    runtime = Runtime.from_settings(settings)
    # The single-machine mode migrates on start; the Procfile deploy does it in `release`.
    # One line for all of it: Alembic's own (two, then one per migration) buried the banner.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    revision, applied = upgrade_counted(runtime.db.engine)
    logging.getLogger("burnbox").info("database ready at revision %s%s", revision,
             f" ({applied} migrations applied)" if applied else "",
             extra={"revision": revision, "migrations_applied": applied})
    if settings.bootstrap.enabled:
        report_bootstrap(settings)
    broker = tasks.setup_broker(runtime)
    worker = tasks.start_worker(broker, settings.worker.threads, waiting_pools(settings),
                                PROCESS_TIMEOUT_MS)
    stop = threading.Event()
    clock = Clock(runtime.store, default_jobs(settings), settings.clock.tick,
                  after_outage_jobs(settings), sent_level=logging.DEBUG)
    clock_thread = threading.Thread(target=clock.run_forever, args=(stop,), name="clock",
                                    daemon=True)
    clock_thread.start()
    try:
        mailin = MailinThread(runtime).start_and_wait()
    except OSError as exc:
        stop.set()
        worker.stop()
        _smtp_port_unusable(settings, exc)
    mcp_http = _start_mcp_http(settings)
    # A port in use here is already one line: werkzeug says so and exits.
    http = make_server(settings.http.host, settings.http.port, create_app(runtime=runtime),
                       threaded=True, request_handler=EmbeddedRequestHandler)
    http.daemon_threads = True
    tune_collector()  # set up: what exists now lives as long as the process

    def shutdown(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=http.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    smtp_host_, smtp_port_ = mailin.address
    click.echo(f"Burnbox is running (data in {Path(settings.data_dir).resolve()})\n"
               f"  UI       http://{settings.http.host}:{http.server_port}/\n"
               f"  API      http://{settings.http.host}:{http.server_port}/api/v1\n"
               f"  API docs http://{settings.http.host}:{http.server_port}/api/v1/docs\n"
               f"  SMTP     smtp://{smtp_host_}:{smtp_port_}\n"
               + (f"  MCP      http://{settings.mcp.host}:{settings.mcp.port}/mcp\n"
                  if mcp_http else "")
               + "Press Ctrl+C to stop.", err=True)
    try:
        http.serve_forever()
    finally:
        stop.set()
        if mcp_http:
            mcp_http.stop()
        mailin.stop()
        worker.stop()
        runtime.db.dispose()
        click.echo("Burnbox stopped.", err=True)


def _start_mcp_http(settings: Settings) -> McpHttpThread | None:
    """The MCP server's HTTP transport in a thread, unless `mcp.port` is 0. A port it cannot
    listen on is a warning, not the end of `serve`: MCP over HTTP is optional there (and
    `burnbox mcp`, over stdio, needs no port)."""
    if not settings.mcp.port:
        return None
    import logging

    from burnbox.cli.agents import quiet_client_logs
    from mcp_server.http import McpHttpThread

    quiet_client_logs()
    try:
        return McpHttpThread(settings).start()
    except OSError as exc:
        logging.getLogger("burnbox").warning(
            "MCP over HTTP not started: %s (mcp.port chooses another port, 0 none)", exc)
        return None


def _smtp_port_unusable(settings: Settings, exc: OSError) -> NoReturn:
    """End `serve` with one line for an SMTP port it cannot listen on (another Burnbox
    running is the usual cause), instead of a traceback. (For HTTP, werkzeug says it.)"""
    from burnbox.cli.errors import fail

    why = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    fail(f"cannot listen for SMTP on {settings.smtp.host}:{settings.smtp.port}: {why} (is "
         "another Burnbox running? --smtp-port chooses another port)")


@main.command()
@click.option("--host", help="HTTP bind address (http.host)")
@click.option("--port", type=int, help="HTTP port (http.port)")
def web(host: str | None, port: int | None) -> None:
    """Run the web process: gunicorn with gevent workers (gunicorn.conf.py), bound to http.host
    and http.port."""
    _settings(**{"http.host": host, "http.port": port})
    # The web app's library patches checked here, where a refusal is one line: in gunicorn's
    # worker it would be a traceback and a worker restarted again and again.
    import burnbox.patches.dramatiq  # noqa: F401
    # gunicorn.conf.py reads the settings again after the exec: the flags reach it as the
    # environment forms, which rank just below them.
    for name, value in (("BURNBOX_HTTP__HOST", host), ("BURNBOX_HTTP__PORT", port)):
        if value is not None:
            os.environ[name] = str(value)
    _exec("gunicorn", "-c", str(ROOT / "gunicorn.conf.py"), "web:create_app()")


@main.command()
@click.option("--processes", type=int, default=None, help="worker processes (default: cores)")
def worker(processes: int | None) -> None:
    """Run Dramatiq worker processes on the Redis broker: in each, `worker.threads` threads for
    the general queues, `worker.delivery_threads` for webhook delivery and
    `worker.authentication_threads` for the authentication results of new mail."""
    settings = _settings()
    if settings.embedded:
        raise click.ClickException("the worker process needs redis.url (REDIS_URL); "
                                   "use `burnbox serve` for the embedded mode")
    _serve_metrics(settings, settings.worker.metrics_port)  # before tasks imports the metrics
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    from tasks.wiring import PROCESS_TIMEOUT_MS, general_queues

    # Dramatiq's own logging.basicConfig handler, next to ours, wrote every line twice (once as
    # text, once as JSON). Skipping it and running its command in this process, where logging is
    # already ours, sends its supervisor's lines (start, stop, a crashed worker) through our
    # handler too; the worker processes set ours up again in tasks.boot.
    # The waiting queues are left out here: tasks.boot runs each on a pool of its own.
    args = ["tasks.boot", "--threads", str(settings.worker.threads), "--skip-logging",
            "--queues", *general_queues()]
    if processes:
        args += ["--processes", str(processes)]
    # How often an idle worker thread wakes to see whether it is being stopped, and how long an
    # idle Redis consumer waits for a wake token (tasks.redis_broker) before it looks again. It
    # was 100 ms while the consumers polled, when a pause of 1 s held the first message after a
    # quiet spell up to a second per actor hop; with wake tokens the 100 ms only woke an idle
    # worker's threads ten times a second each (60 ms of CPU a second for the two processes
    # of `burnbox worker`, 29 at 1 s). A consumer holding a delayed message, or full, still
    # looks every 100 ms at most (burnbox.patches.dramatiq.HELD_PAUSE_MS).
    os.environ.setdefault("dramatiq_worker_timeout", str(PROCESS_TIMEOUT_MS))
    sys.exit(dramatiq_main(make_argument_parser().parse_args(args)))


@main.command()
def clock() -> None:
    """Run the clock: enqueue periodic jobs (safe to run twice)."""
    settings = _settings()
    _serve_metrics(settings, settings.clock.metrics_port)  # before tasks imports the metrics
    import tasks
    from models.runtime import Runtime
    from tasks.clock import Clock, after_outage_jobs, default_jobs

    runtime = Runtime.from_settings(settings)
    tasks.setup_broker(runtime)
    stop = _stop_event()
    if wait_for_schema(runtime.db.engine, stop):
        Clock(runtime.store, default_jobs(settings), settings.clock.tick,
              after_outage_jobs(settings)).run_forever(stop)


@main.command()
@click.option("--processes", type=click.IntRange(min=1), default=None,
              help="SMTP processes sharing the port (default: the smtp.processes setting; "
                   "unset, one per core in the scaled mode)")
def mailin(processes: int | None) -> None:
    """Run the SMTP ingest server."""
    from mailin.supervisor import serve_forked, smtp_processes

    settings = _settings()
    _serve_metrics(settings, settings.smtp.metrics_port)
    count = processes or smtp_processes(settings)
    if count == 1:
        _serve_mailin(settings)
    else:
        serve_forked(settings.smtp.host, settings.smtp.port, count,
                     lambda sock: _serve_mailin(settings, sock))


def _serve_mailin(settings: Settings, sock: socket.socket | None = None) -> None:
    from mailin.server import run
    from models.runtime import Runtime

    # No broker here: this process only reads (recipient look-ups); its store process commits
    # the mail and hands the events to the broker (mailin.store_process).
    run(Runtime.from_settings(settings), sock)


def _serve_metrics(settings: Settings, port: int) -> None:
    """Give the process group (this process and those it starts: SMTP, store and worker
    processes) its own metric files and serve them, merged, on metrics.host:`port`, when
    metrics are enabled. Runs before anything imports prometheus_client, which picks file or
    memory storage on import. For `mailin --processes N` the listener is a thread of the
    supervising parent, which forks its children afterwards: the thread only reads metric
    files and takes no lock a child needs."""
    if not settings.metrics.enabled or not port:
        return
    from burnbox.metrics_files import use_own_multiprocess_dir

    use_own_multiprocess_dir()
    from burnbox.metrics import start_listener

    start_listener(settings, port)


@main.command()
def migrate() -> None:
    """Migrate the database to the newest schema."""
    _migrate(_settings())


@main.command()
def release() -> None:
    """The release step: migrate (then bootstrap, when bootstrap.enabled). Under honcho it
    then idles, because honcho stops every process
    as soon as one exits."""
    settings = _settings()
    _migrate(settings)
    if settings.bootstrap.enabled:
        report_bootstrap(settings)
    if os.environ.get("HONCHO_PROCESS_NAME"):
        _wait_for_signal()


@main.command("create-admin", cls=SchemaCommand)
@click.option("--email", required=True, help="the administrator's e-mail address")
@click.option("--display-name", default="Administrator", show_default=True)
@click.option("--org", "org_name", default="My Organization", show_default=True,
              help="name of the first org, created only while setup is incomplete")
@click.option("--domain", "domain_name", default=None,
              help="register this domain in the first org (only while setup is incomplete)")
@click.option("--team", "team_name", default=None,
              help="create this team in the first org, the admin its lead (only while setup "
                   "is incomplete)")
@click.password_option(help="the password (prompted for when omitted)")
def create_admin(email: str, display_name: str, org_name: str, domain_name: str | None,
                 team_name: str | None, password: str) -> None:
    """Create a system administrator; before setup, this completes setup (with a first org,
    and optionally its first domain and team)."""
    from models.admin.setup import create_admin as add_admin
    from models.db import Database
    from models.errors import DomainError
    from models.platform.audit import CLI, Origin

    settings = _settings()
    database = Database(settings)
    try:
        # The command is the face: the transaction commits when the action returns.
        with database.transaction() as session:
            admin, org = add_admin(session, settings, email=email, password=password,
                                   display_name=display_name, org_name=org_name,
                                   domain_name=domain_name, team_name=team_name,
                                   origin=Origin(user_agent="burnbox create-admin",
                                                 channel=CLI))
    except DomainError as exc:
        raise click.ClickException(f"{exc.message} {exc.details or ''}".strip()) from exc
    finally:
        database.dispose()
    click.echo(f"system administrator {admin.email} created ({admin.id})")
    if org is not None:
        click.echo(f"setup completed with the org {org.name!r} ({org.slug})")


@main.command("config-example")
def config_example() -> None:
    """Print the example configuration file with every key and its default."""
    from burnbox.settings import render_example

    click.echo(render_example(), nl=False)


@main.command("secrets-key")
def secrets_key() -> None:
    """Print a new key for secrets.encryption_keys (BURNBOX_SECRETS__ENCRYPTION_KEYS)."""
    from burnbox.secretbox import new_key

    click.echo(new_key())


def _stop_event() -> threading.Event:
    """An event set by SIGTERM or SIGINT."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _wait_for_signal() -> None:
    stop = _stop_event()
    while not stop.wait(3600):
        pass


def _migrate(settings: Settings) -> None:
    from models.db import make_engine
    from models.schema import upgrade

    engine = make_engine(settings)
    upgrade(engine)
    engine.dispose()
    click.echo("database is at the newest schema", err=True)


def _exec(*args: str) -> None:
    """Replace this process with another program from the same environment."""
    program = shutil.which(args[0], path=str(Path(sys.executable).parent)) or shutil.which(args[0])
    if program is None:
        raise click.ClickException(f"{args[0]} is not installed")
    os.execv(program, [program, *args[1:]])  # noqa: S606 (a fixed program from our environment)
