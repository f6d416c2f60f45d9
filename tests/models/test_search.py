"""Substring search: the user's text matches only itself, on both backends."""

import pytest
from sqlalchemy import literal, select

from models.search import contains


@pytest.mark.parametrize(("value", "text", "found"), [
    ("alpha.example", "pha.ex", True),
    ("100%_off", "%_", True),
    ("100 off", "%", False),
    ("a-b", "_", False),
    ("back\\slash", "k\\s", True),
    ("backslash", "\\", False),
])
def test_wildcards_and_the_escape_character_match_only_themselves(runtime, value, text, found):
    with runtime.db.session() as session:
        assert session.scalar(select(contains(literal(value), text))) is found
