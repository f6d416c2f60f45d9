"""SecretBox: sealed with the first key, opened with any, refused without a key or when no key
opens the value, and a clear-text value never passes for a sealed one."""

import pytest

from burnbox.secretbox import SecretBox, SecretsUnavailable, new_key


def test_a_secret_round_trips_and_survives_a_key_rotation():
    old, new = new_key(), new_key()
    sealed = SecretBox((old,)).seal("pa55 wörd")
    assert sealed.startswith("fernet:") and "pa55" not in sealed
    assert SecretBox((new, old)).open(sealed) == "pa55 wörd"
    assert SecretBox((new, old)).seal("x") != SecretBox((new, old)).seal("x")  # random IV


def test_without_a_key_nothing_is_sealed_or_opened():
    box = SecretBox(())
    assert not box.can_seal
    with pytest.raises(SecretsUnavailable):
        box.seal("x")
    with pytest.raises(SecretsUnavailable):
        box.open(SecretBox((new_key(),)).seal("x"))


def test_a_removed_key_a_tampered_value_or_clear_text_are_refused():
    box = SecretBox((new_key(),))
    sealed = SecretBox((new_key(),)).seal("x")
    for value in (sealed, box.seal("x")[:-4] + "AAAA", "plain text password"):
        with pytest.raises(SecretsUnavailable):
            box.open(value)
