"""Audit export jobs on worker threads: the request is answered at once, the worker writes
the same file the streamed export gives to object storage and notifies the user who asked with
the download path, which works until the job expires; then the cleanup deletes the job and its
file. Also: permissions, tenant isolation, bad input, a job run twice, a storage that fails."""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import timedelta

import pytest
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import update

import tasks
from burnbox.storage import FilesystemStorage
from burnbox.timeutil import utcnow
from models.platform.audit import Origin
from models.platform.audit_exports import AuditExport, claim_export, request_export
from models.platform.audit_log import AuditFilter
from tasks import start_worker
from tasks.cleanup import cleanup
from tasks.exports import export_audit
from tests.factories.tenancy import make_world
from tests.tasks.conftest import drain
from tests.tenancy import world_caller
from web import create_app

JOBS = "/orgs/{org}/audit/exports"


@pytest.fixture
def api(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_world(session, committed_runtime.settings)
    return world, world_caller(create_app(runtime=committed_runtime).test_client(), world,
                               "owner")


def _run(broker):
    drain(broker, "exports")
    drain(broker, "events")  # the audit.export_ready event's fan-out: the notification


@pytest.mark.parametrize("format_", ["csv", "json"])
def test_the_worker_writes_the_streamed_exports_file_and_notifies_the_user(
        committed_runtime, broker, worker, api, format_):
    world, call = api
    asked = call("POST", JOBS, json={"format": format_, "category": "member"})
    assert asked.status_code == 202, asked.get_json()
    job = asked.get_json()
    assert (job["status"], job["download_url"], job["filters"]) == (
        "pending", None, {"category": "member"})
    _run(broker)

    done = call("GET", f"{JOBS}/{job['id']}").get_json()
    assert done["status"] == "done"
    assert done["entries"] >= 1
    assert done["download_url"] == f"/api/v1/orgs/{world.ids['org']}/audit/exports/{job['id']}" \
        "/download"
    file = call("GET", f"{JOBS}/{job['id']}/download")
    assert file.status_code == 200
    # The CSV's type once said charset=utf-8 twice, and its name went unquoted.
    assert file.headers["Content-Type"] == {"csv": "text/csv; charset=utf-8",
                                            "json": "application/json"}[format_]
    assert re.fullmatch(r'attachment; filename="audit_export_\d{8}T\d{6}Z\.' + format_ + '"',
                        file.headers["Content-Disposition"])
    streamed = call("GET", "/orgs/{org}/audit/export",
                    query_string={"format": format_, "category": "member"})
    assert file.data == streamed.data
    assert done["size_bytes"] == len(file.data)

    [note] = call("GET", "/notifications").get_json()["data"]
    assert note["type"] == "audit.export_ready"
    assert note["data"]["download_path"] == done["download_url"]
    assert note["data"]["entries"] == done["entries"]
    assert note["title"] == f"Audit export ready: {done['entries']} entries ({format_})"
    assert call("GET", "/notifications", who="admin").get_json()["data"] == []  # only the asker
    [audited] = call("GET", "/orgs/{org}/audit", query_string={"action": "org.audit_export"}
                     ).get_json()["data"]
    assert (audited["actor_id"], audited["resource_id"]) == (str(world.users["owner"].id),
                                                             job["id"])
    assert audited["metadata"]["after"] == {"format": format_, "filters": {"category": "member"}}


def test_an_expired_job_no_longer_downloads_and_the_cleanup_removes_it_and_its_file(
        committed_runtime, broker, worker, api):
    _, call = api
    job = call("POST", JOBS, json={"format": "csv"}).get_json()
    _run(broker)
    with committed_runtime.db.session() as session:
        key = session.get(AuditExport, uuid.UUID(job["id"])).storage_key
        session.execute(update(AuditExport).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    assert committed_runtime.storage.get(key)
    assert call("GET", f"{JOBS}/{job['id']}").get_json()["download_url"] is None
    gone = call("GET", f"{JOBS}/{job['id']}/download")
    assert (gone.status_code, gone.get_json()["code"]) == (404, "not_found")

    cleanup.send()
    drain(broker, "clock")
    assert call("GET", f"{JOBS}/{job['id']}").status_code == 404
    with pytest.raises(FileNotFoundError):
        committed_runtime.storage.get(key)


def test_a_job_runs_once_however_often_its_message_arrives(committed_runtime, broker, worker,
                                                          api):
    _, call = api
    job = call("POST", JOBS, json={"format": "json"}).get_json()
    export_audit.send(job["id"])  # a duplicate message
    _run(broker)
    with committed_runtime.db.session() as session:
        again = claim_export(session, uuid.UUID(job["id"]), utcnow())
    assert again is None
    assert len(call("GET", "/notifications").get_json()["data"]) == 1


def test_a_storage_failure_marks_the_job_failed(committed_runtime, tmp_path, api):
    _, call = api
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the storage root should be")
    failing = dataclasses.replace(committed_runtime, storage=FilesystemStorage(blocked))
    broker = tasks.setup_broker(failing)  # the worker writes to a storage that cannot be written
    try:
        job = call("POST", JOBS, json={"format": "csv"}).get_json()
        running = start_worker(broker, threads=1)
        try:
            # The failure propagates out of the actor (no retry): the in-process broker's join
            # would raise it here, as it should; the job's row says what happened.
            options = {"fail_fast": False} if isinstance(broker, StubBroker) else {}
            broker.join("exports", timeout=10_000, **options)
        finally:
            running.stop()
    finally:
        tasks.setup_broker(committed_runtime)
    failed = call("GET", f"{JOBS}/{job['id']}").get_json()
    assert failed["status"] == "failed"
    assert failed["error"]
    assert call("GET", f"{JOBS}/{job['id']}/download").status_code == 404


def test_who_may_ask_see_and_download(committed_runtime, api):
    _, call = api
    job = call("POST", JOBS, json={"format": "csv"}).get_json()
    for who in ("member",):
        assert call("POST", JOBS, who=who, json={"format": "csv"}).status_code == 403
        assert call("GET", f"{JOBS}/{job['id']}", who=who).status_code == 403
    assert call("GET", f"{JOBS}/{job['id']}", who="admin").status_code == 200
    other = JOBS.replace("{org}", "{other_org}")
    assert call("GET", f"{other}/{job['id']}", who="outsider").status_code == 404
    assert call("GET", f"{JOBS}/{uuid.uuid4()}").status_code == 404
    assert call("GET", f"{JOBS}/not-a-uuid").status_code == 400


def test_the_list_shows_the_orgs_jobs_newest_first_and_no_other_orgs(committed_runtime, api):
    _, call = api
    first = call("POST", JOBS, json={"format": "csv"}).get_json()
    second = call("POST", JOBS, json={"format": "json", "severity": "critical"}).get_json()
    listed = call("GET", JOBS).get_json()
    assert [job["id"] for job in listed["data"]] == [second["id"], first["id"]]
    assert listed["data"][0] == call("GET", f"{JOBS}/{second['id']}").get_json()
    assert (listed["total"], listed["page"], listed["total_pages"]) == (2, 1, 1)
    paged = call("GET", JOBS, query_string={"per_page": 1, "page": 2}).get_json()
    assert [job["id"] for job in paged["data"]] == [first["id"]]
    assert call("GET", JOBS, who="member").status_code == 403
    other = JOBS.replace("{org}", "{other_org}")
    assert call("GET", other, who="outsider").get_json()["data"] == []
    assert call("GET", other).status_code == 404
    bad = call("GET", JOBS, query_string={"per_page": "many"})
    assert (bad.status_code, bad.get_json()["code"]) == (400, "validation_error")


@pytest.mark.parametrize("body", [{}, {"format": "xml"}, {"format": "csv", "severity": "loud"},
                                  {"format": "csv", "date_from": "yesterday"},
                                  {"format": "csv", "surprise": 1}])
def test_bad_requests_are_400_and_make_no_job(committed_runtime, api, body):
    _, call = api
    response = call("POST", JOBS, json=body)
    assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")
    with committed_runtime.db.session() as session:
        assert session.query(AuditExport).count() == 0


@pytest.mark.parametrize("body", [["csv"], "csv", {"format": "csv", "resource_name": "a\x00b"},
                                  {"format": "csv", "actor_email": "\udc80"},
                                  {"format": "csv", "actor_id": "not-a-uuid"},
                                  {"format": None}, {"format": "csv", "category": ["member"]}])
def test_malformed_bodies_are_400_not_500(committed_runtime, api, body):
    _, call = api
    response = call("POST", JOBS, json=body)
    assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")


def _left_running(runtime, world, lease_ends_in: timedelta) -> str:
    """A job as a worker leaves it when it dies mid-export: claimed and leased, never done,
    and its message gone with the worker (none is sent here)."""
    with runtime.db.transaction() as session:
        job = request_export(session, world.ids["org"], world.users["owner"].id, Origin(),
                             "csv", AuditFilter(), utcnow(), timedelta(hours=24))
        job.status, job.lease_until = "running", utcnow() + lease_ends_in
        return str(job.id)


def test_a_job_left_running_by_a_dead_worker_runs_again_once_its_lease_ends(
        committed_runtime, broker, worker, api):
    """It stayed `running` until it expired (24 h) and the cleanup deleted it. The cleanup now
    sends it to the worker again, and the claim takes it back."""
    world, call = api
    job_id = _left_running(committed_runtime, world, timedelta(seconds=-1))

    cleanup.send()
    drain(broker, "clock")
    _run(broker)
    done = call("GET", f"{JOBS}/{job_id}").get_json()
    assert done["status"] == "done"
    assert done["entries"] >= 1
    assert call("GET", f"{JOBS}/{job_id}/download").status_code == 200
    with committed_runtime.db.session() as session:
        assert session.get(AuditExport, uuid.UUID(job_id)).lease_until is None


def test_a_job_running_within_its_lease_is_not_taken_from_its_worker(
        committed_runtime, broker, worker, api):
    world, call = api
    job_id = _left_running(committed_runtime, world, timedelta(minutes=5))

    cleanup.send()
    drain(broker, "clock")
    export_audit.send(job_id)  # its message delivered again while the first run goes on
    _run(broker)
    assert call("GET", f"{JOBS}/{job_id}").get_json()["status"] == "running"
