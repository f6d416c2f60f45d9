"""The checks of an e-mail through the real handlers: the spam score's reasons on the
detail, the HTML check against the caniemail data, and the link check against real HTTP
receivers on loopback (allowed by `webhooks.allow_private_targets`, refused without it), with
who may do what."""

import time
import uuid

import pytest
from sqlalchemy import update

from models.mail.checks.link_check import Outbound, check_links
from models.mail.entities import Email
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email
from tests.receiver import Answer, Receiver
from tests.web.test_emails import inbox

__all__ = ["inbox"]  # the e-mail tests' lead's inbox

STYLED = """<!DOCTYPE html><html><head><style>
.row { display: flex; } @media (prefers-color-scheme: dark) { p { color: #eee; } }
</style></head><body><div class="row" style="margin-top: 2rem"><p>Hello</p>
<form action="https://x.example"><input type="checkbox"></form></div></body></html>"""


@pytest.fixture
def second_receiver():
    running = Receiver().start()
    yield running
    running.stop()


# --- The spam score explained ---------------------------------------------------------------


def test_the_detail_says_which_heuristics_made_the_spam_score(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, subject="YOU HAVE WON!!!",
                          text="Click here to claim your cash prize.\n")
    detail = api("GET", f"/emails/{email_id}").get_json()
    reasons = {reason["name"]: reason for reason in detail["spam_reasons"]}
    assert {"all_caps_subject", "exclamations", "suspicious_word"} <= set(reasons)
    assert reasons["suspicious_word"]["count"] == 3  # you have won, click here, cash prize
    assert all(reason["description"] for reason in reasons.values())
    assert sum(reason["points"] for reason in reasons.values()) == detail["spam_score"]


def test_mail_stored_before_the_reasons_were_kept_says_null(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address)
    with runtime.db.transaction() as session:
        session.execute(update(Email).where(Email.id == email_id).values(spam_signals=None))
    assert api("GET", f"/emails/{email_id}").get_json()["spam_reasons"] is None


# --- HTML compatibility ---------------------------------------------------------------------


def test_the_html_check_reads_the_html_as_sent_and_scores_each_family(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, html=STYLED)
    response = api("GET", f"/emails/{email_id}/html-check")
    assert response.status_code == 200
    body = response.get_json()
    assert body["html"] is True
    issues = {issue["slug"]: issue for issue in body["issues"]}
    # The style block and the form are gone from the sanitised body; the check sees them.
    # Outlook on Windows has no flexbox, Outlook on macOS has: partial for the family.
    assert "outlook" in issues["css-display-flex"]["partial"]
    assert issues["html-form"]["unsupported"]
    assert "css-at-media-prefers-color-scheme" in issues
    scores = {score["family"]: score for score in body["scores"]}
    assert {"gmail", "outlook", "apple-mail", "yahoo"} <= set(scores)
    assert scores["outlook"]["score"] < scores["apple-mail"]["score"] <= 100
    outlook = scores["outlook"]
    counted = outlook["supported"] + outlook["partial"] + outlook["unsupported"]
    assert outlook["score"] == round(
        100 * (outlook["supported"] + outlook["partial"] / 2) / counted, 1)


def test_an_email_without_html_has_a_clear_answer(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, text="Plain only.\n")
    response = api("GET", f"/emails/{email_id}/html-check")
    assert (response.status_code, response.get_json()) == (200, {"html": False})


@pytest.mark.parametrize("markup", [
    "<div style='::::;;{{}}'><<<>>></p></table><style>@media {{{ a:hover { color:",
    "<img src='data:image/webp;base64,AAAA'><a href=mailto:x@y.example>x</a><!-- open",
    "<p style='margin: calc(1px +'>" * 500,
])
def test_malformed_html_and_css_give_a_result(api, runtime, inbox, markup):
    email_id = make_email(runtime, inbox.full_address, html=markup)
    response = api("GET", f"/emails/{email_id}/html-check")
    assert response.status_code == 200
    assert response.get_json()["html"] is True


# --- Link check -----------------------------------------------------------------------------


def test_the_link_check_asks_every_link_and_keeps_the_result(api, runtime, inbox, receiver,
                                                              second_receiver):
    base = f"http://127.0.0.1:{receiver.port}"
    receiver.by_path.update({"/gone": Answer(404),
                             "/moved": Answer(301, headers={"Location": "/ok"})})
    # The second receiver refuses HEAD, then answers the GET that follows.
    second_receiver.answer(Answer(405), Answer(200))
    nohead = f"http://127.0.0.1:{second_receiver.port}/page"
    links = [f"{base}/ok", f"{base}/gone", f"{base}/moved", nohead]
    email_id = make_email(runtime, inbox.full_address,
                          html="".join(f'<a href="{href}">link</a> ' for href in links))
    before = api("GET", f"/emails/{email_id}/link-check").get_json()
    assert (before["checked_at"], before["links"]) == (None, [])

    response = api("POST", f"/emails/{email_id}/link-check")
    assert response.status_code == 200, response.get_json()
    result = response.get_json()
    by_href = {link["href"]: link for link in result["links"]}
    assert [link["href"] for link in result["links"]] == links
    assert (by_href[f"{base}/ok"]["status"], by_href[f"{base}/ok"]["ok"]) == (200, True)
    assert by_href[f"{base}/ok"]["method"] == "HEAD"
    assert (by_href[f"{base}/gone"]["status"], by_href[f"{base}/gone"]["ok"]) == (404, False)
    moved = by_href[f"{base}/moved"]
    assert (moved["status"], moved["redirect_to"], moved["final_url"], moved["final_status"],
            moved["redirects"], moved["ok"]) == (301, f"{base}/ok", f"{base}/ok", 200, 1, True)
    assert (by_href[nohead]["status"], by_href[nohead]["method"]) == (200, "GET")
    assert [r.method for r in second_receiver.requests] == ["HEAD", "GET"]
    assert all(link["elapsed_ms"] >= 0 and link["error"] is None for link in result["links"])
    # Kept with the e-mail.
    assert api("GET", f"/emails/{email_id}/link-check").get_json() == result


def test_an_email_without_links_has_an_empty_result(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, text="No links here.\n")
    result = api("POST", f"/emails/{email_id}/link-check").get_json()
    assert (result["links"], result["skipped"]) == ([], 0)
    assert result["checked_at"] is not None


def test_links_to_internal_addresses_are_refused_without_the_webhooks_allowance(
        make_app, runtime, mail_world, inbox, receiver):
    email_id = make_email(runtime, inbox.full_address, text=f"See {receiver.url}\n")
    app = make_app(**{"webhooks.allow_private_targets": False})
    response = app.test_client().post(mail_world.path(f"/emails/{email_id}/link-check"),
                                      headers=mail_world.headers["team_member"])
    [link] = response.get_json()["links"]
    assert link["error"].startswith("address refused")
    assert (link["status"], link["ok"]) == (None, False)
    assert receiver.requests == []


def test_a_slow_link_times_out_within_its_bound(receiver):
    receiver.default = Answer(delay=3)
    started = time.monotonic()
    result = check_links([receiver.url, receiver.url + "?2"],
                         Outbound(allow_private=True, link_timeout=0.5, total_timeout=0.8))
    assert time.monotonic() - started < 2
    assert [link["error"] for link in result["links"]] == ["timeout", "timeout"]


def test_redirects_are_bounded(receiver):
    receiver.default = Answer(302, headers={"Location": "/again"})
    [link] = check_links([receiver.url], Outbound(allow_private=True))["links"]
    assert (link["redirects"], link["final_status"], link["ok"]) == (5, 302, True)


# --- Who may ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("who", "status"), [("owner", 200), ("lead", 200), ("team_member", 200),
                                             ("org_member", 403), ("outsider", 404),
                                             ("stranger", 404)])
def test_who_may_check_an_email(api, runtime, inbox, who, status):
    email_id = make_email(runtime, inbox.full_address, html="<p>Hi</p>")
    assert api("GET", f"/emails/{email_id}/html-check", who).status_code == status
    assert api("GET", f"/emails/{email_id}/link-check", who).status_code == status
    assert api("POST", f"/emails/{email_id}/link-check", who).status_code == status


def test_unknown_emails_are_404(api):
    for method, suffix in (("GET", "html-check"), ("GET", "link-check"), ("POST", "link-check")):
        assert api(method, f"/emails/{uuid.uuid4()}/{suffix}").status_code == 404


@pytest.mark.parametrize(("scopes", "status"), [(["team.emails.view"], 200),
                                                (["team.inboxes.view"], 403)])
def test_api_keys_need_the_view_scope(client, mail_world, runtime, inbox, scopes, status):
    email_id = make_email(runtime, inbox.full_address, html="<p>Hi</p>")
    key = make_key(client, mail_world, "lead", scopes=scopes)
    for method, suffix in (("GET", "html-check"), ("POST", "link-check")):
        response = client.open(f"/api/v1/emails/{email_id}/{suffix}", method=method,
                               headers=key_auth(key["raw_key"]))
        assert response.status_code == status
