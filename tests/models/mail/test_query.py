"""The search syntax of e-mail lists (models.mail.query): one table of query -> expected
e-mails, run on whichever backend the suite runs on (SQLite, or PostgreSQL with
BURNBOX_TEST_DATABASE_URL), so both give the same results."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from models.mail.entities import Attachment, Email
from models.mail.query import QuerySyntaxError, Term, filter_emails, parse_query
from models.mail.tags import change_email_tags
from tests.factories.mail import make_email, make_inbox

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)

# name: (message options, received_at, is_read)
MAILS = {
    "signup": ({"subject": "Verify your account", "sender": "Acme <no-reply@acme.example>",
                "text": "Your verification code is 482913.\nWelcome aboard!\n"},
               datetime(2026, 11, 20, 9, 0, tzinfo=UTC), False),
    "reset": ({"subject": "Reset your password", "sender": "Acme <security@acme.example>",
               "text": "Reset it here: https://acme.example/reset?t=1\nThe link expires soon.\n"},
              datetime(2026, 11, 21, 23, 59, tzinfo=UTC), True),
    "otp": ({"subject": "Ihr Sicherheitscode", "sender": "Bank <otp@bank.example>",
             "text": "Ihr Code lautet K7P2QX. 100% sicher_geheim.\n",
             "message_id": "<otp-1@bank.example>"},
            datetime(2026, 11, 22, 0, 0, tzinfo=UTC), False),
    "receipt": ({"subject": "Your receipt 100%", "sender": "Shop <orders@shop.example>",
                 "text": "Thanks for your order.\nTotal 12.00 USD\n",
                 "attachments": (("receipt.png", "image/png", PNG),)},
                datetime(2026, 11, 23, 12, 0, tzinfo=UTC), True),
    "news": ({"subject": "Weekly digest: welcome aboard", "sender": "News <news@digest.example>",
              "text": "Nothing to verify here. Promo code SAVE2026.\n"},
             datetime(2026, 11, 24, 8, 0, tzinfo=UTC), False),
}

TABLE = [
    ("", set(MAILS)),
    ("welcome", {"signup", "news"}),  # whole words in subject and body
    ("WELCOME ABOARD", {"signup", "news"}),  # case-blind, every word
    ('"welcome aboard"', {"signup", "news"}),
    ('"aboard welcome"', set()),  # a phrase keeps its order
    ("acme", {"signup", "reset"}),  # full text includes the sender
    ("verif", set()),  # whole words, not prefixes
    ("-welcome", {"reset", "otp", "receipt"}),
    ("from:acme.example", {"signup", "reset"}),
    ("from:SECURITY@", {"reset"}),
    ("-from:acme", {"otp", "receipt", "news"}),
    ("to:@", set(MAILS)),
    ("to:someone-else", set()),
    ("addressed:security@acme", {"reset"}),  # the From address
    ("addressed:@", set(MAILS)),  # the delivered address
    ("-addressed:acme.example", {"otp", "receipt", "news"}),
    ("subject:reset", {"reset"}),
    ('subject:"your receipt"', {"receipt"}),
    ("subject:100%", {"receipt"}),  # % is a character, not a wildcard
    ("subject:_", set()),
    ("has:attachment", {"receipt"}),
    ("-has:attachment", {"signup", "reset", "otp", "news"}),
    ("is:read", {"reset", "receipt"}),
    ("is:unread", {"signup", "otp", "news"}),
    ("before:2026-11-22", {"signup", "reset"}),
    ("after:2026-11-22", {"otp", "receipt", "news"}),
    ("after:2026-11-22 before:2026-11-23", {"otp"}),
    ("code:482913", {"signup"}),
    ("code:K7P2QX", {"otp"}),
    ("code:SAVE2026", set()),  # a promo code is not a one-time code
    ("-code:482913 is:unread", {"otp", "news"}),
    ("code:48291", set()),  # codes match whole
    ("*** - welcome", {"signup", "news"}),  # no word characters: skipped
    ('tag:"verify  FLOW"', {"signup"}),  # tags: case-blind, spaces as in names
    ("tag:otp", {"signup", "otp"}),
    ("-tag:otp", {"reset", "receipt", "news"}),
    ("tag:verify", set()),  # a tag matches whole
    ("is:tagged", {"signup", "otp"}),
    ("-is:tagged", {"reset", "receipt", "news"}),
    ("cc:bob@team", {"reset"}),  # any Cc address, case-blind
    ("cc:security", set()),  # the From address is not a Cc
    ("addressed:bob@team", {"reset"}),
    ("has:inline", {"receipt"}),
    ("-has:inline", {"signup", "reset", "otp", "news"}),
    ("message-id:otp-1@bank.example", {"otp"}),  # without its angle brackets
    ("message-id:<otp-1@bank.example>", {"otp"}),
    ("message-id:otp-1@bank", set()),  # whole
    ("larger:1M", {"reset"}),  # strictly over 1,000,000 bytes
    ("larger:100KB", {"reset", "receipt", "news"}),
    ("smaller:1k", {"otp"}),
    ("smaller:1MiB", {"signup", "otp", "receipt", "news"}),  # 1,048,576
    ("larger:1000 smaller:1000000", {"signup", "receipt"}),
    ("larger:999999999999999GiB", set()),  # past the size column's integer: still a statement
    ("smaller:999999999999999gib", set(MAILS)),
]
# The tags of some of MAILS.
TAGGED = {"signup": ["Verify Flow", "otp"], "otp": ["OTP"]}
# The stored sizes of MAILS, and columns set on some of them as their messages would.
SIZES = {"signup": 1_500, "reset": 2_500_000, "otp": 900, "receipt": 120_000,
         "news": 1_000_000}
COLUMNS = {"reset": {"cc": ["Bob@Team.example"]}}
INLINE = {"receipt"}


@pytest.fixture
def mails(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
    ids = {}
    for name, (options, received_at, is_read) in MAILS.items():
        ids[name] = make_email(runtime, inbox.full_address, **options)
        with runtime.db.transaction() as session:
            session.execute(update(Email).where(Email.id == ids[name]).values(
                received_at=received_at, is_read=is_read, size_bytes=SIZES[name],
                **COLUMNS.get(name, {})))
            if name in INLINE:
                session.execute(update(Attachment).where(Attachment.email_id == ids[name])
                                .values(inline=True))
            if name in TAGGED:
                change_email_tags(session, session.get(Email, ids[name]), inbox.team_id,
                                  TAGGED[name])
    return inbox, ids


@pytest.mark.parametrize(("q", "expected"), TABLE, ids=[q or "(empty)" for q, _ in TABLE])
def test_a_query_finds_the_same_emails_on_every_backend(runtime, mails, q, expected):
    inbox, ids = mails
    with runtime.db.session() as session:
        found = set(session.scalars(filter_emails(
            select(Email.id).where(Email.inbox_id == inbox.id), q)))
    assert found == {ids[name] for name in expected}


def test_the_parser_reads_operators_phrases_and_negation():
    assert parse_query(' -from:"a b"  "x y" z -is:read ') == [
        Term("from", "a b", negated=True), Term(None, "x y"), Term(None, "z"),
        Term("is", "read", negated=True)]


@pytest.mark.parametrize(("q", "offset"), [
    ('a "b', 2), ("x nope:1", 2), ("before:2026-02-30", 7), ("has:wings", 4),
    ("subject:", 8), ('code:""', 5), ("larger:huge", 7), ("smaller:1tb", 8),
    ("is:flagged", 3), ("bcc:a", 0), ("reply-to:a", 0),
])
def test_a_malformed_query_names_the_offset(q, offset):
    with pytest.raises(QuerySyntaxError) as raised:
        parse_query(q)
    assert raised.value.offset == offset
