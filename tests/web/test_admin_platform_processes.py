"""A platform change made through one web process is seen by another at once: a `burnbox web`
child on the same database answers with the new registration switch, password policy and
e-mail verification rule without a restart."""

import os
import signal
import subprocess

import pytest
import requests

from tests.factories.identity import auth_headers, make_password_user, make_user
from tests.identity import EMAIL, PASSWORD
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http
from web import create_app

pytestmark = pytest.mark.slow


def test_a_second_web_process_sees_a_platform_change_without_restarting(committed_runtime):
    settings = committed_runtime.settings
    with committed_runtime.db.transaction() as session:
        admin = make_user(session, "root", is_system_admin=True)
        headers = auth_headers(session, settings, admin)
        make_password_user(session, settings)  # not verified
    port = free_port()
    env = process_env(BURNBOX_ENV="test", BURNBOX_DATA_DIR=settings.data_dir,
                      BURNBOX_DATABASE__URL=settings.database_url,
                      BURNBOX_REDIS__URL=settings.redis.url,
                      BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret,
                      BURNBOX_HTTP__PORT=str(port), BURNBOX_LOG__LEVEL="WARNING",
                      WEB_CONCURRENCY="1")
    web = subprocess.Popen([str(BIN / "burnbox"), "web"], cwd=ROOT, env=env,
                           start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        status = f"http://127.0.0.1:{port}/api/v1/auth/sso-status"
        before = wait_for_http(status).json()
        assert (before["registration_enabled"], before["password_policy"]["min_length"]) == (
            True, 8)
        client = create_app(runtime=committed_runtime).test_client()
        changed = client.put("/api/v1/admin/platform", headers=headers,
                             json={"allow_registration": False, "password_min_length": 14,
                                   "require_email_verification": True})
        assert changed.status_code == 200, changed.get_json()
        after = requests.get(status, timeout=5).json()
        assert (after["registration_enabled"], after["password_policy"]["min_length"]) == (
            False, 14)
        refused = requests.post(f"http://127.0.0.1:{port}/api/v1/auth/register", timeout=10,
                                json={"email": "x@example.test", "password": "long password 1",
                                      "display_name": "X"})
        assert refused.status_code == 403
        unverified = requests.post(f"http://127.0.0.1:{port}/api/v1/auth/login", timeout=30,
                                   json={"email": EMAIL, "password": PASSWORD})
        assert unverified.status_code == 403, unverified.text
        assert "verify your e-mail address" in unverified.json()["error"]
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
