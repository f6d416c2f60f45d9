"""The plain pages of an e-mail (`/view/:id.html`, `/view/:id.txt`): the sanitised HTML as the
reading pane's frame holds it and the text as UTF-8 text, under the frame's policy and sandbox;
authenticated as the API is (a session's token, a team's API key with `team.emails.view`); a
404 envelope for another org's e-mail, an e-mail without that part, or none at all."""

import re
import uuid
from pathlib import Path

import pytest

from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email
from web.views.viewing import FRAME_POLICY, FRAME_POLICY_IMAGES

HTML = ('<p style="color:#c2410c">Żółć: your code is <b>482913</b></p>'
        '<img src="https://tracker.example/p.gif" alt="pixel"><script>alert(1)</script>')
TEXT = "Żółć: your code is 482913.\n"
EMAIL_JS = Path(__file__).resolve().parents[2] / "web/ui/static/js/email.js"


@pytest.fixture
def email_id(runtime, inbox):
    return make_email(runtime, inbox.full_address, subject="Code", text=TEXT, html=HTML)


def _view(client, mail_world, path, who="team_member", **kwargs):
    return client.get(path, headers=kwargs.pop("headers", mail_world.headers.get(who, {})),
                      **kwargs)


def test_the_html_page_is_the_frames_document_under_the_frames_walls(client, mail_world,
                                                                     email_id):
    response = _view(client, mail_world, f"/view/{email_id}.html")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    page = response.get_data(as_text=True)
    assert page.startswith('<!doctype html><html><head>'
                           f'<meta http-equiv="Content-Security-Policy" content="{FRAME_POLICY}">')
    assert '<base target="_blank"></head><body>' in page
    assert "Żółć: your code is <b>482913</b>" in page
    assert "<script" not in page  # sanitised on arrival
    policy = response.headers["Content-Security-Policy"]
    assert policy.startswith(FRAME_POLICY + "; ")
    directives = {part.strip() for part in policy.split(";")}
    assert {"sandbox", "frame-ancestors 'none'", "img-src data:"} <= directives
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Cache-Control"] == "no-store"


def test_remote_images_are_allowed_only_when_asked_for(client, mail_world, email_id):
    response = _view(client, mail_world, f"/view/{email_id}.html?remote_images=true")
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"].startswith(FRAME_POLICY_IMAGES + "; ")
    assert f'content="{FRAME_POLICY_IMAGES}"' in response.get_data(as_text=True)
    refused = _view(client, mail_world, f"/view/{email_id}.html?remote_images=maybe")
    assert refused.status_code == 400
    assert refused.get_json()["code"] == "validation_error"


def test_the_text_page_is_utf8_text_that_nothing_runs_in(client, mail_world, email_id):
    response = _view(client, mail_world, f"/view/{email_id}.txt")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    detail = _view(client, mail_world, f"/api/v1/emails/{email_id}").get_json()
    assert response.get_data() == detail["body_text"].encode()  # the API's text, as stored
    assert "Żółć: your code is 482913." in response.get_data(as_text=True)
    assert "sandbox" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_pages_match_the_reading_panes_frame_policies():
    """The UI's copy of the policies is the page's: one frame, two ways of opening it."""
    script = EMAIL_JS.read_text(encoding="utf-8")
    found = dict(re.findall(r'^const (BLOCKED|IMAGES) = "([^"]+)";', script, re.MULTILINE))
    assert found == {"BLOCKED": FRAME_POLICY, "IMAGES": FRAME_POLICY_IMAGES}


def test_an_api_key_of_the_team_with_email_view_opens_them(client, mail_world, email_id):
    reader = make_key(client, mail_world, scopes=["team.emails.view"])["raw_key"]
    assert _view(client, mail_world, f"/view/{email_id}.html",
                 headers=key_auth(reader)).status_code == 200
    assert _view(client, mail_world, f"/view/{email_id}.txt",
                 headers=key_auth(reader)).status_code == 200
    narrow = make_key(client, mail_world, scopes=["team.view"])["raw_key"]
    refused = _view(client, mail_world, f"/view/{email_id}.html", headers=key_auth(narrow))
    api = _view(client, mail_world, f"/api/v1/emails/{email_id}", headers=key_auth(narrow))
    assert (refused.status_code, refused.get_json()) == (403, api.get_json())  # as the API


@pytest.mark.parametrize("suffix", ["html", "txt"])
def test_another_orgs_email_and_unknown_ids_are_404_envelopes(client, mail_world, email_id,
                                                               suffix):
    for who in ("outsider", "stranger"):
        response = _view(client, mail_world, f"/view/{email_id}.{suffix}", who=who)
        assert response.status_code == 404, who
        assert response.get_json()["code"] == "not_found"
        assert "482913" not in response.get_data(as_text=True)
    # Inside the org but outside the team: the API's answer (its 403), and no mail.
    inside = _view(client, mail_world, f"/view/{email_id}.{suffix}", who="org_member")
    api = _view(client, mail_world, f"/api/v1/emails/{email_id}", who="org_member")
    assert (inside.status_code, inside.get_json()) == (api.status_code, api.get_json())
    assert "482913" not in inside.get_data(as_text=True)
    unknown = _view(client, mail_world, f"/view/{uuid.uuid4()}.{suffix}")
    assert unknown.status_code == 404
    assert unknown.get_json()["code"] == "not_found"


@pytest.mark.parametrize("suffix", ["html", "txt"])
def test_the_pages_need_authentication(client, email_id, suffix):
    response = client.get(f"/view/{email_id}.{suffix}")
    assert response.status_code == 401
    assert response.get_json()["code"] == "unauthenticated"


def test_a_malformed_id_is_a_400(client, mail_world):
    response = _view(client, mail_world, "/view/not-an-id.html")
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"


def test_a_missing_part_is_a_404_saying_which(client, mail_world, runtime, inbox):
    text_only = make_email(runtime, inbox.full_address, text="Plain only.\n")
    response = _view(client, mail_world, f"/view/{text_only}.html")
    assert (response.status_code, response.get_json()["error"]) == (
        404, "email has no HTML part")
    assert _view(client, mail_world, f"/view/{text_only}.txt").status_code == 200


@pytest.mark.parametrize("value", ["%00", "%ED%A0%80", "tru%00e", "x" * 10_000, "1" * 5000])
def test_a_bad_remote_images_value_is_a_400_envelope(client, mail_world, email_id, value):
    response = _view(client, mail_world, f"/view/{email_id}.html?remote_images={value}")
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"


def test_the_html_as_sent_is_answered_unsanitised_as_data(client, mail_world, runtime, inbox,
                                                          email_id):
    response = _view(client, mail_world, f"/api/v1/emails/{email_id}/html-source")
    assert response.status_code == 200
    assert response.get_json()["html"].rstrip() == HTML  # the script too: shown as text
    text_only = make_email(runtime, inbox.full_address, text="Plain only.\n")
    assert _view(client, mail_world, f"/api/v1/emails/{text_only}/html-source").get_json() == {
        "html": ""}
    for who in ("outsider", "stranger"):
        refused = _view(client, mail_world, f"/api/v1/emails/{email_id}/html-source", who=who)
        assert refused.status_code == 404 and "482913" not in refused.get_data(as_text=True)
    reader = make_key(client, mail_world, scopes=["team.emails.view"])["raw_key"]
    assert _view(client, mail_world, f"/api/v1/emails/{email_id}/html-source",
                 headers=key_auth(reader)).status_code == 200
