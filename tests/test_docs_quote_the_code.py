"""The docs' figures are the code's: each sentence below quotes a constant or setting, and the
test formats the sentence from the value the code holds, so a changed constant fails here until
its page says the new value (docs/architecture.md said "chunks of 8" long after the code sent
32). Add a row wherever a page quotes a number the code decides."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from burnbox.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = load_settings(environ={})


def _constant(dotted: str) -> object:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _script(path: str, pattern: str) -> str:
    """The value a UI module holds (the group of `pattern` in web/ui/static/js/`path`)."""
    text = (ROOT / "web/ui/static/js" / path).read_text(encoding="utf-8")
    found = re.search(pattern, text)
    assert found, f"{pattern} is not in {path}"
    return found.group(1)


def _spaced(number: object) -> str:
    """10000 as the docs write it in tables: `10 000`."""
    return f"{number:,}".replace(",", " ")


# (page, the sentence with {} where the value goes, the value).
QUOTES = [
    ("docs/architecture.md", "| aiosmtpd `{}` |", _constant("burnbox.patches.aiosmtpd.PROVED_ON")),
    ("docs/performance.md", "A `POST /inboxes` now sends {} statements",
     _constant("tests.web.test_loop_statements.CREATE_STATEMENTS")),
    ("docs/performance.md", "a `DELETE` sends {} statements plus the look-up",
     _constant("tests.web.test_loop_statements.DELETE_STATEMENTS")),
    ("docs/architecture.md", "| dramatiq `{}` |", _constant("burnbox.patches.dramatiq.PROVED_ON")),
    ("docs/architecture.md", "It sends them in chunks of {}, a `dispatch_events` message",
     _constant("tasks.events.DISPATCH_CHUNK")),
    ("docs/architecture.md", "together with up to {} other events recorded in the last minute",
     _constant("models.events.TOP_UP")),
    ("docs/mail.md", "A rule (at most {} per inbox, tried in order)",
     _constant("models.mail.chaos.MAX_RULES")),
    ("docs/mail.md", "printable ASCII, at most {} characters (default `Chaos rule`)",
     _constant("models.mail.chaos.MAX_TEXT")),
    ("docs/mail.md", "fire for the next N messages (1-{})",
     _spaced(_constant("models.mail.chaos.MAX_TIMES"))),
    ("docs/mail.md", "at most {} addresses per list,",
     _constant("models.mail.ingest.compose.MAX_RECIPIENTS")),
    ("docs/mail.md", "{} attachments, 50 extra headers",
     _constant("models.mail.ingest.compose.MAX_ATTACHMENTS")),
    ("docs/mail.md", "100 attachments, {} extra headers",
     _constant("models.mail.ingest.compose.MAX_HEADERS")),
    ("docs/mail.md", "headers and {} tags", _constant("models.mail.ingest.compose.MAX_TAGS")),
    ("docs/mail.md", "({} characters each, no commas)",
     _constant("models.mail.ingest.compose.MAX_TAG_CHARS")),
    ("docs/storage.md", "a WebP of at most {} pixels on its longer side",
     _constant("models.mail.ingest.thumbnails.MAX_SIDE")),
    ("docs/storage.md", "at most {} MiB) gets a thumbnail",
     _constant("models.mail.ingest.thumbnails.MAX_INPUT_BYTES") // (1024 * 1024)),
    ("docs/storage.md", "declares more than {} million pixels",
     _constant("models.mail.ingest.thumbnails.MAX_PIXELS") // 1_000_000),
    ("docs/mail.md", "it has 1-{} characters of letters,",
     _constant("models.mail.tag_entities.MAX_TAG_LENGTH")),
    ("docs/mail.md", "Limits (`models.mail.tag_entities`): {} tags per e-mail,",
     _constant("models.mail.tag_entities.MAX_TAGS_PER_EMAIL")),
    ("docs/mail.md", "tags per e-mail, {} per team, ",
     f'{_constant("models.mail.tag_entities.MAX_TAGS_PER_TEAM"):,}'),
    ("docs/mail.md", "per team, {} rules per team,",
     _constant("models.mail.tag_entities.MAX_RULES_PER_TEAM")),
    ("docs/mail.md", "rules per team, {} characters per rule search",
     _constant("models.mail.tag_entities.MAX_RULE_QUERY")),
    ("docs/mail-checks.md", "top first, at most {} per message",
     _constant("models.mail.checks.authentication.MAX_SIGNATURES")),
    ("docs/ui.md", "Phone ({} px)", _script("frame-widths.js", r"phone: .*pixels: (\d+)")),
    ("docs/ui.md", "Tablet ({} px)", _script("frame-widths.js", r"tablet: .*pixels: (\d+)")),
    ("docs/ui.md", "The first {} characters are highlighted",
     _script("html-source.js", r"HIGHLIGHT_CHARS = ([\d_]+);").replace("_", ",")),
    ("docs/mail-checks.md", "({} KB by default, spamc's own limit)",
     DEFAULTS.checks.spam_engine_max_bytes // 1024),
    ("docs/mail-checks.md", "One deadline, `checks.spam_engine_timeout` ({} s)",
     int(DEFAULTS.checks.spam_engine_timeout.total_seconds())),
    ("docs/mail-checks.md", "an answer longer than {} KiB is refused",
     _constant("burnbox.spam_engines.MAX_REPLY") // 1024),
    ("docs/mail-checks.md", "at most {} rules are kept",
     _constant("burnbox.spam_engines.MAX_RULES")),
    ("docs/mail-checks.md", "each description cut at {} characters",
     _constant("burnbox.spam_engines.MAX_DESCRIPTION")),
    ("docs/mail-checks.md", "At most {} are listed.",
     _constant("models.mail.checks.unsubscribe.MAX_URIS")),
    ("docs/mail-checks.md", "reads each object once in {} KiB blocks",
     _constant("models.mail.checks.checksums.BLOCK") // 1024),
    ("docs/admin.md", "| `checks.spam_engine_max_bytes` | `{}` |",
     DEFAULTS.checks.spam_engine_max_bytes),
    ("docs/mail.md", "| the recipients | 1 to {} bare addresses",
     _constant("models.mail.release.MAX_RECIPIENTS")),
    ("docs/mail.md", "each wait four times the one before, {} attempts in all",
     _constant("models.mail.release.MAX_ATTEMPTS")),
    ("docs/mail.md", "At most {} patterns a level.",
     _constant("models.mail.release_patterns.MAX_PATTERNS")),
    ("docs/mail.md", "(default `{}`; each recipient counts one)", DEFAULTS.release.rate_limit),
    ("docs/mail.md", "list's search syntax (1-{} characters, `tag:` included)",
     _constant("models.mail.tag_entities.MAX_RULE_QUERY")),
    ("docs/mail.md", "`recipients` 1 to {} bare addresses,",
     _constant("models.mail.release.MAX_RECIPIENTS")),
    ("docs/mail.md", "without a release relay or past {} rules an inbox or an assignment",
     _constant("models.mail.release_rules.MAX_RULES")),
    ("docs/admin.md", "each next wait is four times longer, {} attempts in all",
     _constant("models.mail.release.MAX_ATTEMPTS")),
    ("docs/compat.md", "the scope's newest {} messages, newest first",
     _constant("compat.mailhog.views.V1_LIMIT")),
    ("docs/compat.md", "`limit` ({}, at most 250)",
     _constant("compat.mailhog.views.V2_LIMIT")),
    ("docs/compat.md", "`limit` (50, at most {})",
     _constant("compat.mailhog.views.V2_MAX_LIMIT")),
    ("docs/compat.md", "by e-mail id, within {} MiB",
     _constant("compat.mailhog.messages.SHAPED_BUDGET") // 2**20),
    ("docs/compat.md", "a message whose JSON is over {} KiB",
     _constant("compat.mailhog.messages.SHAPED_LARGEST") // 2**10),
    ("docs/compat.md", "`keepalive:` every {} s",
     int(_constant("compat.mailhog.streams.KEEPALIVE_SECONDS"))),
    ("README.md", "sign in at `http://127.0.0.1:8080/` as `{}`",
     DEFAULTS.bootstrap.admin_email),
    ("README.md", "An inbox lives {} minutes by default",
     int(DEFAULTS.defaults.inbox_ttl.total_seconds() // 60)),
    ("README.md", "up to the maximum ({} hours by default",
     int(DEFAULTS.defaults.inbox_max_ttl.total_seconds() // 3600)),
]


def _prose(page: str) -> str:
    """The page with its line breaks and runs of spaces folded, as a reader reads it."""
    return re.sub(r"\s+", " ", (ROOT / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("page", "sentence", "value"), QUOTES,
                         ids=[f"{page}:{sentence[:30]}" for page, sentence, _ in QUOTES])
def test_the_page_quotes_the_value_the_code_holds(page, sentence, value):
    assert sentence.format(value) in _prose(page), (
        f"{page} should say {sentence.format(value)!r}: the code holds {value}")


def test_the_readmes_layout_names_every_context_of_models():
    layout = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    contexts = sorted(path.parent.name for path in (ROOT / "models").glob("*/__init__.py"))
    assert contexts
    missing = [name for name in contexts if f"\n  {name}/" not in layout]
    assert missing == [], f"README.md's layout lacks models/{missing}"
