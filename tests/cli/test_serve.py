"""`burnbox serve`, the newcomer's first command, run for real in a subprocess."""

import os
import pty
import select
import signal
import smtplib
import socket
import subprocess
import time

import pytest
import requests
from openapi_spec_validator import validate

from models.schema import heads
from tests.processes import (
    BIN,
    ROOT,
    ProcessExited,
    free_port,
    process_env,
    terminate,
    wait_for_http,
)


@pytest.fixture
def served(tmp_path):
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path / "data"))
    for attempt in range(3):
        # A free port can be taken by a parallel test's process before serve binds it (a
        # start on the loaded CI machine polled a serve that had already left); then the
        # start is tried again on new ports.
        http_port, smtp_port = free_port(), free_port()
        process = subprocess.Popen(
            [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port",
             str(smtp_port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        try:
            wait_for_http(f"http://127.0.0.1:{http_port}/healthz", process=process)
            break
        except ProcessExited as exited:
            if "in use" not in exited.output or attempt == 2:
                raise
    try:
        yield process, http_port, smtp_port
    finally:
        terminate(process)


def test_serve_answers_health_openapi_and_smtp_on_the_embedded_default(served, tmp_path):
    _, http_port, smtp_port = served
    base = f"http://127.0.0.1:{http_port}"
    assert wait_for_http(f"{base}/readyz").json()["checks"] == {"database": "ok", "storage": "ok"}
    document = wait_for_http(f"{base}/api/v1/docs/openapi.json").json()
    validate(document)
    assert document["openapi"].startswith("3.0")
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=10) as smtp:
        code, features = smtp.ehlo("test.example")
        assert code == 250
        for extension in (b"SIZE", b"8BITMIME", b"PIPELINING", b"ENHANCEDSTATUSCODES"):
            assert extension in features
    assert (tmp_path / "data" / "burnbox.db").exists()


def test_serve_stops_cleanly_on_sigterm(served):
    process, _, _ = served
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "Burnbox is running" in output
    assert "Burnbox stopped." in output
    assert "Traceback" not in output


def test_a_malformed_setting_stops_start_up_naming_the_key(tmp_path):
    result = subprocess.run(
        [str(BIN / "burnbox"), "serve"], cwd=ROOT, capture_output=True, text=True, timeout=30,
        env=process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_DEFAULTS__WEBHOOK_TIMEOUT="soon"))
    assert result.returncode != 0
    assert "defaults.webhook_timeout" in result.stderr


def test_production_refuses_a_placeholder_jwt_secret(tmp_path):
    result = subprocess.run(
        [str(BIN / "burnbox"), "migrate"], cwd=ROOT, capture_output=True, text=True, timeout=30,
        env=process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_ENV="production",
                        BURNBOX_AUTH__JWT_SECRET="changeme"))
    assert result.returncode != 0
    assert "auth.jwt_secret" in result.stderr


def test_a_restart_keeps_the_tokens_it_signed_valid(tmp_path):
    # With no auth.jwt_secret each start used to sign with a new random key, so every restart
    # logged every user out with only "invalid access token" to say why.
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path / "data"), BURNBOX_BOOTSTRAP__ENABLED="true",
                      BURNBOX_BOOTSTRAP__ADMIN_PASSWORD="correct horse battery staple")
    command = [str(BIN / "burnbox"), "serve", "--port", str(http_port),
               "--smtp-port", str(smtp_port)]
    base = f"http://127.0.0.1:{http_port}/api/v1"

    def run_once(token: str | None) -> str:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            wait_for_http(f"http://127.0.0.1:{http_port}/healthz")
            if token is None:
                login = requests.post(f"{base}/auth/login", timeout=10, json={
                    "email": "admin@burnbox.test", "password": "correct horse battery staple"})
                assert login.status_code == 200, login.text
                token = login.json()["tokens"]["access_token"]
            me = requests.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token}"},
                              timeout=10)
            assert me.status_code == 200, me.text
            return token
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)

    token = run_once(None)
    assert run_once(token) == token


class LineReader:
    """The lines written to a descriptor (a pseudo-terminal's controller), read as they come."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        # poll, not select: select() refuses descriptors past 1023, and a test worker late in a
        # run holds that many.
        self.readable = select.poll()
        self.readable.register(fd, select.POLLIN)
        self.pending = b""

    def lines(self, seconds: float, until: str | None = None) -> list[str]:
        """The lines written within `seconds` (sooner: up to the one containing `until`)."""
        deadline = time.monotonic() + seconds
        lines: list[str] = []
        while time.monotonic() < deadline:
            if b"\n" in self.pending:
                line, _, self.pending = self.pending.partition(b"\n")
                lines.append(line.decode().rstrip("\r"))
                if until is not None and until in lines[-1]:
                    return lines
                continue
            if self.readable.poll(max(0.0, deadline - time.monotonic()) * 1000):
                self.pending += os.read(self.fd, 65536)
        assert until is None, f"no line with {until!r} in {seconds} s: {lines}"
        return lines


def test_the_line_reader_reads_a_descriptor_past_1023():
    controller, follower = pty.openpty()
    high = os.dup2(controller, 1500)
    try:
        os.write(follower, b"Press Ctrl+C to stop.\n")
        assert LineReader(high).lines(10, until="Ctrl+C") == ["Press Ctrl+C to stop."]
    finally:
        for fd in (controller, follower, high):
            os.close(fd)


class Terminal:
    """`burnbox serve` on a pseudo-terminal, as a person starts it: what it prints, read line by
    line (stdout and stderr both go to the terminal)."""

    def __init__(self, tmp_path, http_port: int, smtp_port: int) -> None:
        controller, follower = pty.openpty()
        env = {k: v for k, v in process_env(BURNBOX_DATA_DIR=str(tmp_path / "data")).items()
               if k != "BURNBOX_LOG__FORMAT"}  # the default: decided by the terminal
        self.process = subprocess.Popen(
            [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port",
             str(smtp_port)], cwd=tmp_path, env=env, stdin=follower, stdout=follower,
            stderr=follower, close_fds=True, start_new_session=True)
        os.close(follower)
        self.controller = controller
        self.lines = LineReader(controller).lines

    def close(self) -> None:
        terminate(self.process)
        os.close(self.controller)


def test_serve_on_a_terminal_talks_in_short_sentences(tmp_path):
    http_port, smtp_port = free_port(), free_port()
    terminal = Terminal(tmp_path, http_port, smtp_port)
    try:
        start = terminal.lines(120, until="Press Ctrl+C to stop.")
        assert len(start) <= 15, start
        assert not any(line.lstrip().startswith("{") for line in start), start
        assert not any("WARNING" in line or "twice" in line for line in start), start
        [head] = heads()  # revisions are numbered 0001, 0002...: the head's is their count
        assert any(line.endswith(f"database ready at revision {head} "
                                 f"({int(head)} migrations applied)") for line in start), start
        # Idle: the clock sends its jobs (every 10 s or so) without a line.
        assert terminal.lines(12) == []

        # A request is no line on a person's terminal (`log.access` is off there by default):
        # a line per request buried every other line, and the UI makes ten per page.
        base = f"http://127.0.0.1:{http_port}"
        assert requests.get(f"{base}/healthz", timeout=10).status_code == 200

        with smtplib.SMTP("127.0.0.1", smtp_port, timeout=10) as smtp:
            smtp.ehlo()
            smtp.mail("shop@example.com")
            assert smtp.rcpt("nobody@elsewhere.example")[0] == 550
        [refused_line] = terminal.lines(5)
        assert refused_line.endswith(
            "refused mail for elsewhere.example from 127.0.0.1: the domain is not served here")

        bootstrap = subprocess.run(
            [str(BIN / "burnbox"), "bootstrap", "--env-file", "burnbox.env"], cwd=tmp_path,
            env=process_env(BURNBOX_DATA_DIR=str(tmp_path / "data")), capture_output=True,
            text=True, timeout=120)
        assert bootstrap.returncode == 0, bootstrap.stderr
        key = dict(line.split("=", 1) for line in
                   (tmp_path / "burnbox.env").read_text().splitlines())["BURNBOX_API_KEY"]
        headers = {"Authorization": f"Bearer {key}"}
        inbox = requests.post(f"{base}/api/v1/inboxes", json={"domain": "burnbox.test"},
                              headers=headers, timeout=10).json()
        login = requests.post(f"{base}/api/v1/inboxes/{inbox['id']}/smtp-credentials",
                              headers=headers, timeout=10).json()
        # Logged in with capture credentials (aiosmtpd warned of its own deprecated
        # `login_data` at every login), a DKIM-signed message whose key cannot be looked up
        # (dkimpy logged an ERROR with a byte-string repr for it).
        with smtplib.SMTP("127.0.0.1", smtp_port, timeout=10) as smtp:
            smtp.login(login["username"], login["secret"])
            smtp.sendmail("shop@example.com", ["anyone@example.org"], SIGNED_WITHOUT_KEY)
        login_line, mail_line = terminal.lines(5)
        assert login_line.endswith(f"SMTP login from 127.0.0.1 for {login['username']}")
        assert "mail stored for anyone@example.org from shop@example.com (" in mail_line
        [email] = requests.get(f"{base}/api/v1/inboxes/{inbox['id']}/emails", headers=headers,
                               timeout=10).json()["data"]
        results = _authentication_results(f"{base}/api/v1/emails/{email['id']}", headers)
        assert results["dkim"][0]["result"] in ("temperror", "permerror"), results
        assert terminal.lines(2) == []

        # Ctrl+C: the shutdown says so once (each in-process worker said it, twice in all).
        os.killpg(terminal.process.pid, signal.SIGINT)
        stop = terminal.lines(30, until="Burnbox stopped.")
        assert stop[-1] == "Burnbox stopped.", stop
        assert len(stop) == len(set(stop)), stop
        assert not any("Traceback" in line or "ERROR" in line for line in stop), stop
    finally:
        terminal.close()


SIGNED_WITHOUT_KEY = (
    b"From: shop@example.com\r\nTo: anyone@example.org\r\nSubject: Your code\r\n"
    b"DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel; c=relaxed/relaxed;\r\n"
    b" h=from:to:subject; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=AAAA\r\n"
    b"\r\nIt is 482913.\r\n")


def _authentication_results(url: str, headers: dict[str, str]) -> dict:
    """The e-mail's authentication results once computed (the worker computes them after the
    250), polled for up to 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        results = requests.get(url, headers=headers, timeout=10).json()["auth_results"]
        if results["status"] == "done":
            return results
        time.sleep(0.2)
    raise AssertionError(f"authentication results still pending: {results}")


@pytest.mark.parametrize("taken", ["http", "smtp"])
def test_a_port_in_use_stops_serve_with_one_line(tmp_path, taken):
    http_port, smtp_port = free_port(), free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", http_port if taken == "http" else smtp_port))
        holder.listen()
        result = subprocess.run(
            [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port",
             str(smtp_port)], cwd=tmp_path, env=process_env(BURNBOX_DATA_DIR=str(tmp_path)),
            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    # werkzeug's own line for HTTP; ours for SMTP (it was a traceback).
    assert result.stderr.splitlines()[-1] == (
        f"Port {http_port} is in use by another program. Either identify and stop that "
        "program, or start the server with a different port." if taken == "http" else
        f"Error: cannot listen for SMTP on 127.0.0.1:{smtp_port}: address already in use (is "
        "another Burnbox running? --smtp-port chooses another port)")


def test_waiting_for_a_serve_that_left_says_why_at_once(tmp_path):
    """A serve that cannot start (here its port is taken) is reported with its own words as
    soon as it exits, not after the whole start-up timeout."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        process = subprocess.Popen(
            [str(BIN / "burnbox"), "serve", "--port", str(port), "--smtp-port",
             str(free_port())], cwd=tmp_path, env=process_env(BURNBOX_DATA_DIR=str(tmp_path)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started = time.monotonic()
        with pytest.raises(ProcessExited, match=f"Port {port} is in use"):
            wait_for_http(f"http://127.0.0.1:{port}/healthz", process=process)
    assert time.monotonic() - started < 60
