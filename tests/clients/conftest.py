"""The clients' tests share one `burnbox serve` per module, started on free ports with an empty
data folder and a bootstrapped team API key, and the Python client of that service."""

from __future__ import annotations

import re
import signal
import smtplib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import pytest
import requests
from burnbox_client import Burnbox, BurnboxError

from tests.processes import BIN, free_port, process_env, wait_for_http, wait_until

API_KEY = "bb_" + "c1" * 32
DOMAIN = "burnbox.test"
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "testing-with-burnbox.md"


@dataclass
class Service:
    url: str
    smtp_port: int
    process: subprocess.Popen
    log: Path

    def check_alive(self) -> None:
        """Fail with the end of the server's log if `burnbox serve` has exited: a test that
        loses its server then says why, instead of showing only a reset connection."""
        if self.process.poll() is not None:
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-4000:]
            pytest.fail(f"burnbox serve exited with {self.process.returncode}:\n{tail}")

    def send(self, to: str, subject: str, text: str, html: str | None = None,
             attachment: bytes | None = None, headers: dict[str, str] | None = None) -> None:
        """Mail `to` through Burnbox's SMTP server, as an application would (with `headers`
        besides From, To and Subject)."""
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = "app@shop.example", to, subject
        for name, value in (headers or {}).items():
            message[name] = value
        message.set_content(text)
        if html is not None:
            message.add_alternative(html, subtype="html")
        if attachment is not None:
            message.add_attachment(attachment, maintype="text", subtype="csv",
                                   filename="report.csv")
        with smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=10) as smtp:
            smtp.send_message(message)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """`burnbox serve` on an empty data folder, bootstrapped with a known team API key."""
    folder = tmp_path_factory.mktemp("serve")
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=str(folder / "data"), BURNBOX_BOOTSTRAP__ENABLED="true",
                      BURNBOX_BOOTSTRAP__API_KEY=API_KEY,
                      BURNBOX_HTTP__PUBLIC_URL=f"http://127.0.0.1:{http_port}")
    log_path = folder / "serve.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port", str(smtp_port)],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{http_port}"
    try:
        wait_for_http(f"{url}/readyz")
        # serve bootstraps the key just after it starts answering: wait until the key works.
        wait_until(lambda: requests.get(f"{url}/api/v1/my/domains", timeout=5, headers={
            "Authorization": f"Bearer {API_KEY}"}).ok)
        yield Service(url, smtp_port, process, log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


@pytest.fixture
def client(service: Service) -> Iterator[Burnbox]:
    made = Burnbox(service.url, API_KEY, domain=DOMAIN)
    yield made
    made.close()
    service.check_alive()


def assert_inboxes_gone(client: Burnbox, record: Path, count: int) -> None:
    """`record` lists `count` different inbox ids, one a line, and none of them exists now."""
    inbox_ids = record.read_text().split()
    assert len(set(inbox_ids)) == count, inbox_ids
    for inbox_id in inbox_ids:
        with pytest.raises(BurnboxError) as gone:
            client.inboxes.get(inbox_id)
        assert gone.value.status == 404


def run_guide_example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                      service: Service, tag: str, **environment: str) -> pytest.RunResult:
    """Run the ```python <tag>:example block of docs/testing-with-burnbox.md as written, with
    the pytest plugin from its entry point, against `service` (BURNBOX_URL, BURNBOX_API_KEY,
    BURNBOX_SMTP set, and `environment`)."""
    pattern = re.compile(rf"^```python {tag}:example\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    [example] = pattern.findall(GUIDE.read_text(encoding="utf-8"))
    pytester.makepyfile(**{f"test_{tag}": example})
    for name, value in {"BURNBOX_URL": service.url, "BURNBOX_API_KEY": API_KEY,
                        "BURNBOX_SMTP": f"127.0.0.1:{service.smtp_port}", **environment}.items():
        monkeypatch.setenv(name, value)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")
