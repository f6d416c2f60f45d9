"""The List-Unsubscribe check (models.mail.checks.unsubscribe): RFC 2369's header and RFC
8058's one-click form, on headers as a sender writes them and as they go wrong."""

from __future__ import annotations

import pytest

from models.mail.checks.unsubscribe import ONE_CLICK, check_unsubscribe

HTTPS = "<https://shop.example/unsubscribe?u=42>"
SIGNED = ("DKIM-Signature", "v=1; a=rsa-sha256; d=shop.example; s=s1; "
          "h=From:To:Subject:List-Unsubscribe:\r\n List-Unsubscribe-Post; bh=x; b=y")


def test_no_header_is_no_offer():
    assert check_unsubscribe([("Subject", "Hi"), ("From", "a@b.example")]) is None


def test_a_signed_one_click_offer_has_no_problems():
    found = check_unsubscribe([("List-Unsubscribe", f"<mailto:u@shop.example?subject=stop>, "
                                                    f"{HTTPS}"),
                               ("List-Unsubscribe-Post", ONE_CLICK), SIGNED])
    assert found == {
        "header": f"<mailto:u@shop.example?subject=stop>, {HTTPS}", "post": ONE_CLICK,
        "links": [{"uri": "mailto:u@shop.example?subject=stop", "scheme": "mailto",
                   "valid": True},
                  {"uri": "https://shop.example/unsubscribe?u=42", "scheme": "https",
                   "valid": True}],
        "one_click": True, "problems": []}


def test_header_names_are_read_without_regard_to_case():
    found = check_unsubscribe([("list-unsubscribe", HTTPS),
                               ("LIST-UNSUBSCRIBE-POST", ONE_CLICK), SIGNED])
    assert found["one_click"] and found["problems"] == []


def test_one_click_without_a_signature_over_both_headers_says_so():
    found = check_unsubscribe([("List-Unsubscribe", HTTPS), ("List-Unsubscribe-Post", ONE_CLICK),
                               ("DKIM-Signature", "v=1; d=shop.example; h=From:List-Unsubscribe")])
    assert found["one_click"] is True
    assert found["problems"] == ["no DKIM signature covers both List-Unsubscribe and "
                                 "List-Unsubscribe-Post, as RFC 8058 requires for one-click"]


def test_an_https_link_without_the_post_header_offers_no_one_click():
    found = check_unsubscribe([("List-Unsubscribe", HTTPS)])
    assert found["one_click"] is False
    assert found["problems"] == ["no List-Unsubscribe-Post header: one-click unsubscribe (RFC "
                                 "8058) is not offered, which large mailbox providers ask of "
                                 "bulk senders"]


def test_a_post_header_needs_an_https_link_and_the_exact_value():
    found = check_unsubscribe([("List-Unsubscribe", "<http://shop.example/u>"),
                               ("List-Unsubscribe-Post", "List-Unsubscribe=Yes")])
    assert found["one_click"] is False
    assert found["problems"] == [
        "'http://shop.example/u' is plain http: one-click unsubscribe needs https",
        f"List-Unsubscribe-Post should be exactly \"{ONE_CLICK}\"",
        "List-Unsubscribe-Post is present but List-Unsubscribe has no https URI to POST to "
        "(RFC 8058)"]


@pytest.mark.parametrize(("header", "problem"), [
    ("https://shop.example/u", "List-Unsubscribe has no URI in angle brackets"),
    ("<mailto:>", "the mailto URI 'mailto:' names no address"),
    ("<https:///u>", "the https URI 'https:///u' names no host"),
    ("<javascript:alert(1)>", "'javascript:alert(1)': only mailto, http and https URIs can be "
                              "used"),
])
def test_a_link_a_client_could_not_use_is_a_problem(header, problem):
    found = check_unsubscribe([("List-Unsubscribe", header)])
    assert problem in found["problems"]
    assert not any(link["valid"] for link in found["links"])


def test_folded_white_space_inside_the_brackets_is_not_part_of_the_uri():
    found = check_unsubscribe([("List-Unsubscribe", "<https://shop.example/\r\n u/1>")])
    assert found["links"][0]["uri"] == "https://shop.example/u/1"


def test_two_headers_and_a_post_header_alone_are_problems():
    twice = check_unsubscribe([("List-Unsubscribe", HTTPS), ("List-Unsubscribe", HTTPS)])
    assert "2 List-Unsubscribe headers: a client reads only one" in twice["problems"]
    alone = check_unsubscribe([("List-Unsubscribe-Post", ONE_CLICK)])
    assert (alone["header"], alone["one_click"], alone["problems"]) == (
        None, False, ["List-Unsubscribe-Post without a List-Unsubscribe header"])


def test_a_flood_of_links_is_cut_and_hostile_text_never_raises():
    found = check_unsubscribe([("List-Unsubscribe", ", ".join(f"<https://x.example/{n}>"
                                                               for n in range(50)))])
    assert len(found["links"]) == 10
    assert "List-Unsubscribe lists 50 URIs; only the first 10 are shown" in found["problems"]
    for hostile in ("<\x00>", "<http://[::1>", "<" + "a" * 100_000 + ">", "<\ud800>", "<<>>"):
        assert check_unsubscribe([("List-Unsubscribe", hostile)]) is not None
