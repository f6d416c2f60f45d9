"""Secrets at rest: seal a secret string before it goes into the database, open it on reading.

Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) with the keys of
`secrets.encryption_keys`: the first key seals, every key opens (MultiFernet), so an operator
rotates by putting a new key first and keeping the old one until the secrets are saved again.
A sealed value is `fernet:<token>`; anything else is refused on opening rather than taken as a
clear-text secret, so a value copied in by hand cannot pass for an encrypted one.

Without a key nothing can be sealed: `SecretBox.seal` raises SecretsUnavailable, and the caller
refuses to store the secret (storing it in clear would make encryption optional, the mistake of
a system that shipped with plaintext secrets by default). Used for the mailer and storage
groups, and meant for every later secret (SSO client secrets).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from burnbox.settings import Settings

PREFIX = "fernet:"


class SecretsUnavailable(RuntimeError):
    """No encryption key is configured, or a sealed value cannot be opened with the keys."""


def new_key() -> str:
    """A fresh key for `secrets.encryption_keys`."""
    return Fernet.generate_key().decode("ascii")


class SecretBox:
    """Seals and opens secret strings with the configured keys (none: `can_seal` is False)."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        """Keys as `secrets.encryption_keys` holds them (checked by load_settings)."""
        fernets = [Fernet(key.encode("ascii")) for key in keys]
        self._fernet = MultiFernet(fernets) if fernets else None

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        """The box of `secrets.encryption_keys`."""
        return cls(settings.secrets.encryption_keys)

    @property
    def can_seal(self) -> bool:
        """True when a key is configured."""
        return self._fernet is not None

    def seal(self, secret: str) -> str:
        """`secret` encrypted with the first key, as `fernet:<token>`; SecretsUnavailable
        without a key."""
        if self._fernet is None:
            raise SecretsUnavailable("no encryption key is configured (secrets.encryption_keys)")
        return PREFIX + self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def open(self, sealed: str) -> str:
        """The secret inside `sealed`; SecretsUnavailable when no configured key opens it (a
        removed key, a tampered value) or it is not a sealed value."""
        if self._fernet is None:
            raise SecretsUnavailable("no encryption key is configured (secrets.encryption_keys)")
        if not sealed.startswith(PREFIX):
            raise SecretsUnavailable("the stored secret is not sealed")
        try:
            return self._fernet.decrypt(sealed[len(PREFIX):].encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError) as exc:
            raise SecretsUnavailable("no configured key opens the stored secret") from exc
