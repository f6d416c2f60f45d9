"""Why an e-mail has its spam score (models.mail.checks.spam): every signal the parser can
find has a weight and a sentence, and the reasons' points add up to the score it stored."""

from hypothesis import given
from hypothesis import strategies as st

from models.mail.checks.spam import DESCRIPTIONS, SPAM_WEIGHTS, spam_reasons, spam_score
from models.mail.ingest.parse import parse_message

SPAMMY = (b"From: Lucky <win@lottery.example>\r\nTo: qa@burnbox.test\r\n"
          b"Reply-To: claims@elsewhere.example\r\nSubject: YOU HAVE WON!!!\r\n"
          b"Content-Type: text/html\r\n\r\n<p>You have won the lottery jackpot. "
          b"Click here, act now: a wire transfer awaits.</p>\r\n")


def test_every_signal_has_a_weight_and_a_sentence():
    assert set(DESCRIPTIONS) == set(SPAM_WEIGHTS)
    assert all(text and not text.endswith(".") for text in DESCRIPTIONS.values())


def test_mail_stored_before_signals_were_kept_has_no_reasons_and_a_clean_one_an_empty_list():
    assert spam_reasons(None) is None
    assert spam_reasons([]) == []


def test_the_reasons_of_a_spammy_message_add_up_to_its_score():
    parsed = parse_message(SPAMMY)
    reasons = spam_reasons(parsed.spam_signals)
    names = [reason["name"] for reason in reasons]
    assert {"missing_message_id", "missing_date", "reply_to_mismatch", "all_caps_subject",
            "exclamations", "html_only", "suspicious_word"} <= set(names)
    words = next(reason for reason in reasons if reason["name"] == "suspicious_word")
    assert words["count"] == 4  # each distinct phrase counts, at most MAX_SUSPICIOUS_WORDS
    assert words["points"] == 4 * SPAM_WEIGHTS["suspicious_word"]
    assert parsed.spam_score == min(10.0, round(sum(r["points"] for r in reasons), 1))


@given(st.lists(st.sampled_from(sorted(SPAM_WEIGHTS)), max_size=30))
def test_points_are_weight_times_count_in_the_order_found(signals):
    reasons = spam_reasons(signals)
    assert [reason["name"] for reason in reasons] == list(dict.fromkeys(signals))
    for reason in reasons:
        assert reason["count"] == signals.count(reason["name"])
        assert reason["points"] == SPAM_WEIGHTS[reason["name"]] * reason["count"]
        assert reason["description"] == DESCRIPTIONS[reason["name"]]
    assert spam_score(signals) == round(min(10.0, sum(r["points"] for r in reasons)), 1)
