"""Thumbnails end to end: an image put into an inbox gets its thumbnail from the worker after
it is stored; the endpoint serves it to the inbox's readers only, 404 for other orgs and for
attachments without one; it goes with its e-mail."""

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from tasks import start_worker
from tests.factories.mail import make_inbox, make_mail_world
from tests.tasks.conftest import wait_until
from web import create_app


def _png(size=(600, 300)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def scene(committed_runtime):
    import dramatiq

    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    world.ids["inbox"] = inbox.id
    running = start_worker(dramatiq.get_broker(), threads=2)
    app = create_app(runtime=runtime)
    app.config["TESTING"] = True
    yield runtime, world, app.test_client()
    running.stop()


def _objects(runtime) -> set[str]:
    root = Path(runtime.storage.root)
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def test_an_image_gets_a_thumbnail_after_it_is_stored(scene):
    runtime, world, client = scene
    headers = world.headers["team_member"]
    put = client.post(world.path("/inboxes/{inbox}/messages"), headers=headers, json={
        "from": "a@b.test", "html": '<img src="cid:pic">',
        "attachments": [
            {"filename": "pic.png", "content": base64.b64encode(_png()).decode(),
             "content_id": "pic"},
            {"filename": "broken.png", "content": base64.b64encode(b"no png").decode()},
            {"filename": "a.txt", "content": base64.b64encode(b"text").decode()}]})
    assert put.status_code == 201, put.get_json()
    email = put.get_json()
    # The answer is read after the e-mail is committed, so the worker may have made pic.png's
    # thumbnail already; the other two never get one.
    assert [part["has_thumbnail"] for part in email["attachments"][1:]] == [False, False]
    path = f"/api/v1/emails/{email['id']}"

    def parts():
        return {part["filename"]: part
                for part in client.get(path, headers=headers).get_json()["attachments"]}

    wait_until(lambda: parts()["pic.png"]["has_thumbnail"])
    found = parts()
    assert not found["broken.png"]["has_thumbnail"] and not found["a.txt"]["has_thumbnail"]
    thumb = client.get(f"{path}/attachments/{found['pic.png']['id']}/thumbnail",
                       headers=headers)
    assert thumb.status_code == 200 and thumb.mimetype == "image/webp"
    assert thumb.headers["X-Content-Type-Options"] == "nosniff"
    assert Image.open(io.BytesIO(thumb.data)).size == (240, 120)
    none = client.get(f"{path}/attachments/{found['a.txt']['id']}/thumbnail", headers=headers)
    assert none.status_code == 404 and none.get_json()["code"] == "not_found"
    foreign = client.get(f"{path}/attachments/{found['pic.png']['id']}/thumbnail",
                         headers=world.headers["outsider"])
    assert foreign.status_code == 404 and foreign.get_json()["code"] == "not_found"

    thumbnails = {key for key in _objects(runtime) if key.endswith(".thumb.webp")}
    assert len(thumbnails) == 1
    assert client.delete(path, headers=headers).status_code == 200
    wait_until(lambda: not _objects(runtime) & thumbnails)


def test_a_list_item_carries_its_first_thumbnail(scene):
    """(Read for the page at once: tests/web/test_readpath_statements.py counts statements.)"""
    _, world, client = scene
    headers = world.headers["team_member"]
    put = client.post(world.path("/inboxes/{inbox}/messages"), headers=headers, json={
        "from": "a@b.test", "subject": "Pictures",
        "attachments": [
            {"filename": "notes.txt", "content": base64.b64encode(b"text").decode()},
            {"filename": "first.png", "content": base64.b64encode(_png()).decode()},
            {"filename": "second.png", "content": base64.b64encode(_png((20, 20))).decode()}]})
    assert put.status_code == 201, put.get_json()
    plain = client.post(world.path("/inboxes/{inbox}/messages"), headers=headers,
                        json={"from": "a@b.test", "subject": "Words", "text": "hi"})
    assert plain.status_code == 201
    path = world.path("/inboxes/{inbox}/emails")

    def listed():
        return {item["subject"]: item for item in client.get(path, headers=headers)
                .get_json()["data"]}

    wait_until(lambda: listed()["Pictures"]["thumbnail"] is not None
               and len([part for part in client.get(f"/api/v1/emails/{put.get_json()['id']}",
                                                    headers=headers).get_json()["attachments"]
                        if part["has_thumbnail"]]) == 2)
    first = next(part for part in put.get_json()["attachments"]
                 if part["filename"] == "first.png")
    items = listed()
    assert items["Pictures"]["thumbnail"] == {"attachment_id": first["id"],
                                              "filename": "first.png"}
    assert items["Words"]["thumbnail"] is None
    searched = client.get(path, headers=headers, query_string={"q": "subject:pictures"})
    assert searched.get_json()["data"][0]["thumbnail"]["filename"] == "first.png"
