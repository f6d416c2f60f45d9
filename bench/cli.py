"""The `burnbox` command's start-up and its data verbs, each against a bare click program in the
same run.

Help: `burnbox --help` and every verb's help against a bare click program (one group, one
command) started by the same interpreter, in CPU time per start (user + system, from the
kernel's accounting of waited-for children: the load other processes put on the machine
stretches wall time, not that). Target: at most 4 times the bare program.

Data verbs: `inboxes list`, `inboxes create`, `emails list ADDRESS` and `emails show ID` over
HTTP with a team API key (the way they go with `burnbox.env` exported), against a bare click
program that makes the same HTTP requests with `http.client` and prints the JSON, on
- the embedded default: `burnbox serve` on a fresh data folder;
- the scaled deployment: `burnbox web` (gunicorn, 2 gevent workers) on PostgreSQL + Redis, when
  BURNBOX_BENCH_DATABASE_URL and BURNBOX_BENCH_REDIS_URL are set (the database named there is
  emptied).
Each is started RUNS times as a new process, as a person's terminal does, alternating which
goes first; the figure is the median wall time (target: at most 600 ms), and the ratio the
verb's median over the bare program's. The database path of `inboxes list` (`--team`, how the
verbs went before) is measured too, for scale.

`python -m bench.cli` runs it alone; the ratios are candidate over baseline, so lower is better.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.events import Shape, fresh_runtime, running, start
from bench.harness import Comparison, compare_rounds
from bench.ingest import postgres_database
from tests.processes import free_port, process_env, wait_for_http

BURNBOX = str(Path(sys.executable).parent / "burnbox")
BARE = """
import click

@click.group()
def main():
    "A bare click program."

@main.command()
def verb():
    "A command."

main()
"""
# The bare program of the data verbs: each argument is one request, METHOD PATH [JSON BODY];
# a path may name a field of the previous answer ({id}), as `emails list ADDRESS` looks the
# inbox up first.
BARE_REQUESTS = """
import http.client, json, os, sys
from urllib.parse import urlsplit

import click

@click.command()
@click.argument("requests", nargs=-1)
def main(requests):
    "Make the requests with the key and print the last answer."
    url = urlsplit(os.environ["BURNBOX_API"])
    answer = {}
    for request in requests:
        method, path, *body = request.split(" ", 2)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        connection.request(method, url.path + path.format(**answer),
                           body=body[0].encode() if body else None,
                           headers={"Authorization": "Bearer " + os.environ["BURNBOX_API_KEY"],
                                    "Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        if response.status >= 400:
            sys.exit(f"{method} {path}: {response.status} {answer}")
    click.echo(json.dumps(answer, indent=2))

main()
"""
STARTS = 10  # process starts per round (help)
RUNS = int(os.environ.get("BURNBOX_BENCH_CLI_RUNS", "15"))  # starts of each data verb
DATABASE_RUNS = 3  # starts of the database path, for scale
TARGET_MS = 600.0
KEY_SCOPES = ["team.view", "team.inboxes.view", "team.inboxes.create", "team.emails.view"]
CODE_MAIL = "Your verification code is 482913.\nConfirm: https://shop.example/confirm?t=abc\n"


@dataclass
class Line:
    """A report line of this benchmark."""

    text: str

    def line(self) -> str:
        return self.text


def _cpu_ms(argv: list[str]) -> float:
    """The mean CPU time, in ms, of STARTS runs of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(STARTS):
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used * 1000 / STARTS


def _verbs() -> list[list[str]]:
    """Every verb of the command, nested ones included, as arguments."""
    from burnbox.cli import main

    verbs: list[list[str]] = [[]]
    for name, command in sorted(main.commands.items()):
        verbs.append([name])
        for sub in sorted(getattr(command, "commands", {})):
            verbs.append([name, sub])
    return verbs


def help_comparisons() -> list[Comparison]:
    """`burnbox [VERB] --help` vs the bare program's `--help`, CPU ms per start."""
    bare = [sys.executable, "-c", BARE, "--help"]
    return [compare_rounds(f"burnbox {' '.join([*verb, '--help'])} (target <= 4x)",
                           lambda verb=verb: _cpu_ms([BURNBOX, *verb, "--help"]),
                           lambda: _cpu_ms(bare), rounds=3, unit="ms")
            for verb in _verbs()]


# -- the data verbs -------------------------------------------------------------------------

@dataclass
class Seeded:
    """What the verbs are run on: a team key, its domain, an inbox with a few e-mails."""

    key: str
    domain: str
    address: str
    email_id: str


def seed(shape: Shape) -> Seeded:
    """Migrate the (emptied, for PostgreSQL) database; commit a team with an inbox of five
    e-mails and a key of its lead's."""
    from bench.read_world import lead_key
    from tests.factories.mail import make_email, make_inbox, make_mail_world

    runtime = fresh_runtime(shape)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, shape.settings)
        inbox = make_inbox(session, shape.settings, world, role="lead", ttl="24h")
        key = lead_key(session, world, "bench", KEY_SCOPES)
        address = inbox.full_address
    email_ids = [make_email(runtime, address, subject=f"Your code {n}", text=CODE_MAIL)
                 for n in range(5)]
    runtime.db.dispose()
    return Seeded(key=key, domain=world.domain, address=address, email_id=str(email_ids[-1]))


@contextlib.contextmanager
def deployment(shape: Shape) -> Iterator[str]:
    """The shape's web serving on a free port: `burnbox serve` (embedded) or `burnbox web`
    with two gunicorn workers (scaled); its API address."""
    port = free_port()
    if shape.scaled:
        process = start([BURNBOX, "web"], shape.env(PORT=str(port), WEB_CONCURRENCY="2"))
    else:
        # The clock of `burnbox serve` re-checks the seeded domain's DNS, which no real server
        # knows (it would mark it failed, and inboxes could not be created on it): ask a port
        # where nothing answers instead, a lookup error, which keeps the domain verified.
        process = start([BURNBOX, "serve"], shape.env(
            BURNBOX_HTTP__PORT=str(port), BURNBOX_SMTP__PORT=str(free_port()),
            BURNBOX_DNS__NAMESERVERS=f"127.0.0.1:{free_port()}"))
    with running([process]):
        wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
        yield f"http://127.0.0.1:{port}/api/v1"


@dataclass
class Start:
    """One start of a program: its wall time and the CPU time it used, in ms."""

    wall_ms: float
    cpu_ms: float


def _start(argv: list[str], env: dict[str, str]) -> Start:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=120, check=False)
    wall = (time.perf_counter() - started) * 1000
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} failed: {done.stderr.decode()[-800:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Start(wall_ms=wall, cpu_ms=cpu * 1000)


def _medians(candidate: list[str], baseline: list[str], env: dict[str, str],
             runs: int) -> tuple[Start, Start]:
    """The median wall and CPU ms of `runs` starts of each, alternating which goes first."""
    timed: tuple[list[Start], list[Start]] = ([], [])
    for number in range(runs):
        order = ((0, candidate), (1, baseline)) if number % 2 else ((1, baseline), (0, candidate))
        for index, argv in order:
            timed[index].append(_start(argv, env))
    return _median(timed[0]), _median(timed[1])


def _median(starts: list[Start]) -> Start:
    return Start(wall_ms=statistics.median(start.wall_ms for start in starts),
                 cpu_ms=statistics.median(start.cpu_ms for start in starts))


def verb_comparisons(shape: Shape) -> list[Comparison | Line]:
    """Each data verb against the bare program on `shape` (module docstring)."""
    seeded = seed(shape)
    bare = [sys.executable, "-c", BARE_REQUESTS]
    create = json.dumps({"domain": seeded.domain})
    verbs = {
        "inboxes list": (["inboxes", "list"], ["GET /inboxes"]),
        "inboxes create": (["inboxes", "create"], [f"POST /inboxes {create}"]),
        "emails list ADDRESS": (["emails", "list", seeded.address],
                                [f"GET /inboxes/by-address/{seeded.address}",
                                 "GET /inboxes/{id}/emails"]),
        "emails show ID": (["emails", "show", seeded.email_id],
                           [f"GET /emails/{seeded.email_id}"]),
    }
    results: list[Comparison | Line] = []
    with deployment(shape) as api:
        env = process_env(**shape.env(), BURNBOX_API=api, BURNBOX_API_KEY=seeded.key,
                          BURNBOX_DOMAIN=seeded.domain)
        # As on a person's machine, the modules' bytecode is written once and read after (a
        # sandbox's PYTHONDONTWRITEBYTECODE made every start compile Burnbox's own modules).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for argv, requests in verbs.values():  # the first start of each warms the caches
            _start([BURNBOX, *argv], env)
            _start([*bare, *requests], env)
        for name, (argv, requests) in verbs.items():
            verb, plain = _medians([BURNBOX, *argv], [*bare, *requests], env, RUNS)
            results.append(Comparison(f"{shape.name}: burnbox {name} (p50 wall, target <= "
                                      f"{TARGET_MS:.0f} ms)", verb.wall_ms, plain.wall_ms, "ms"))
            results.append(Comparison(f"{shape.name}: burnbox {name} (p50 CPU)", verb.cpu_ms,
                                      plain.cpu_ms, "ms"))
        database = [_start([BURNBOX, "inboxes", "list", "--team", "org-a/team-t"], env)
                    for _ in range(DATABASE_RUNS)]
        results.append(Line(
            f"{shape.name}: burnbox inboxes list --team (the database path, as every data verb "
            f"went before): p50 wall {_median(database).wall_ms:.0f} ms, "
            f"CPU {_median(database).cpu_ms:.0f} ms"))
    shutil.rmtree(shape.data_dir, ignore_errors=True)
    return results


def run() -> list[Comparison | Line]:
    """The help comparisons, then the data verbs on the embedded default and, when configured,
    the scaled deployment."""
    results: list[Comparison | Line] = [*help_comparisons()]
    results += verb_comparisons(Shape(database="", redis_url=""))
    database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
    scaled = Shape(database=(postgres_database(database) or "") if database else "")
    if scaled.scaled:
        results += verb_comparisons(scaled)
    else:
        shutil.rmtree(scaled.data_dir, ignore_errors=True)
        results.append(Line("cli data verbs, PostgreSQL + Redis: skipped (set "
                            "BURNBOX_BENCH_DATABASE_URL and BURNBOX_BENCH_REDIS_URL)"))
    load = os.getloadavg()[0]
    results.append(Line(f"cli: load average {load:.2f} (1 min) on {os.cpu_count()} CPUs"))
    return results


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
