"""The HTML compatibility check (models.mail.checks.html_check) against the shipped caniemail data:
the features a markup uses, each family's score, and the issues, worst first."""

from hypothesis import given
from hypothesis import strategies as st

from models.mail.checks.html_check import FAMILIES, check_html

DARK_MODE = ("<div style=\"display:flex\">x</div>"
             "<style>@media (prefers-color-scheme: dark) { p { color: red } }</style>")


def test_empty_markup_is_no_html():
    assert check_html("") == {"html": False}
    assert check_html(" \r\n\t") == {"html": False}


def test_plain_markup_scores_full_marks_everywhere_with_no_issue():
    result = check_html("<p>Your code is 482913.</p>")
    assert result["html"] is True
    assert result["issues"] == []
    assert [score["family"] for score in result["scores"]] == list(FAMILIES)
    assert {score["score"] for score in result["scores"]} == {100.0}


def test_a_feature_some_clients_lack_is_an_issue_naming_them_and_lowers_their_score():
    result = check_html(DARK_MODE)
    issues = {issue["slug"]: issue for issue in result["issues"]}
    dark = issues["css-at-media-prefers-color-scheme"]
    assert "gmail" in dark["unsupported"]
    assert dark["url"].startswith("https://www.caniemail.com/")
    gmail = next(score for score in result["scores"] if score["family"] == "gmail")
    assert gmail["unsupported"] >= 1 and gmail["score"] < 100.0
    # Worst first: more families without support before fewer.
    ranked = [(len(issue["unsupported"]), len(issue["partial"])) for issue in result["issues"]]
    assert ranked == sorted(ranked, reverse=True)
    assert result["features_used"] >= len(result["issues"])


@given(st.text(max_size=300))
def test_any_text_gets_a_check_and_never_an_exception(markup):
    result = check_html(markup)
    assert result["html"] is bool(markup.strip())
    if result["html"]:
        assert all(0.0 <= score["score"] <= 100.0 for score in result["scores"])
