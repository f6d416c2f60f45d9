"""Recipient patterns of releases: which real mailboxes a captured e-mail may be sent to.

A pattern is `local@domain`:
- the local part is one address's (`qa`) or `*`, any local part;
- the domain is a name (`company.example`) or `*.` before a name (`*.company.example`): any
  name below it, never the name itself.
Nothing else holds a `*`: no `*@*`, no `q*@...`, no `*company.example`, so a pattern always
names its domain and no pattern can reach every mailbox on the internet.

Domains compare in lower case (as DNS does); local parts exactly, since a mail server may tell
`QA` from `qa`, and a release must not reach a mailbox nobody allowed.

The operator's patterns (`release.allowed_recipients`) bound everything: an org's patterns must
each lie within one of them (`within`), a team's within its org's (or the operator's when the
org set none), so a level can only narrow what the levels above allow. A recipient must match
every level that has patterns, the operator's always (`allowed_by`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from models.errors import ValidationFailed
from models.mail.entities import MAX_ADDRESS, may_be_address

ANY = "*"
SUBDOMAINS = "*."
# The most patterns one level keeps: a list to read, not a directory of addresses.
MAX_PATTERNS = 50
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"(?:{_LABEL}\.)+{_LABEL}")
# A local part as people type one: dot-atom characters, no quoting (a quoted local part is legal
# but never what a person releasing a test e-mail to their own mailbox means).
_LOCAL = re.compile(r"[A-Za-z0-9!#$%&'+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'+/=?^_`{|}~-]+)*")


@dataclass(frozen=True)
class Pattern:
    """One parsed pattern: `local` ("*" for any) and `domain` (lower case, without `*.`),
    with `subdomains` true for `*.domain`."""

    local: str
    domain: str
    subdomains: bool

    def __str__(self) -> str:
        return f"{self.local}@{SUBDOMAINS if self.subdomains else ''}{self.domain}"

    def matches(self, address: Address) -> bool:
        """Whether the address is one this pattern names."""
        if self.local != ANY and self.local != address.local:
            return False
        if self.subdomains:
            return address.domain.endswith("." + self.domain)
        return address.domain == self.domain

    def within(self, bound: Pattern) -> bool:
        """Whether every address this pattern names is one `bound` names too."""
        if bound.local != ANY and self.local != bound.local:
            return False
        if not bound.subdomains:
            return not self.subdomains and self.domain == bound.domain
        return self.domain.endswith("." + bound.domain) or (
            self.subdomains and self.domain == bound.domain)


@dataclass(frozen=True)
class Address:
    """A recipient's address split once: the local part as given, the domain in lower case."""

    local: str
    domain: str

    def __str__(self) -> str:
        return f"{self.local}@{self.domain}"


def parse_address(text: str) -> Address | None:
    """The address `text` names (a bare `local@domain`, no display name), or None when it is
    not one."""
    if not may_be_address(text) or len(text) > MAX_ADDRESS:
        return None
    local, at, domain = text.strip().rpartition("@")
    domain = domain.lower()
    if not at or len(local) > 64 or not _LOCAL.fullmatch(local) or not _NAME.fullmatch(domain):
        return None
    return Address(local, domain)


def parse_pattern(text: str) -> Pattern | None:
    """The pattern `text` is, or None when it is not one (see the module's rules)."""
    if not may_be_address(text):
        return None
    local, at, domain = text.strip().rpartition("@")
    domain = domain.lower()
    subdomains = domain.startswith(SUBDOMAINS)
    if subdomains:
        domain = domain[len(SUBDOMAINS):]
    if not at or not _NAME.fullmatch(domain):
        return None
    if local != ANY and (len(local) > 64 or not _LOCAL.fullmatch(local)):
        return None
    return Pattern(local, domain, subdomains)


def checked_patterns(texts: Iterable[str], bound: Sequence[Pattern]) -> list[Pattern]:
    """The patterns `texts` names, without repeats, each within one of `bound`.
    ValidationFailed (details per pattern) for one that is malformed or escapes the bound, or
    for more than MAX_PATTERNS."""
    found: dict[str, Pattern] = {}
    problems: dict[str, str] = {}
    for text in texts:
        pattern = parse_pattern(text)
        if pattern is None:
            problems[text[:MAX_ADDRESS]] = ("not a pattern: local@domain, where the local part "
                                            "may be * and the domain may start with *.")
        elif not any(pattern.within(outer) for outer in bound):
            problems[text] = "outside the recipients allowed above this level"
        else:
            found.setdefault(str(pattern), pattern)
    if problems:
        raise ValidationFailed("recipient pattern refused", details={"patterns": problems})
    if len(found) > MAX_PATTERNS:
        raise ValidationFailed("too many recipient patterns",
                               details={"patterns": [f"at most {MAX_PATTERNS}"]})
    return list(found.values())


def operator_bound(texts: Iterable[str]) -> list[Pattern]:
    """The operator's patterns (`release.allowed_recipients`), those that parse; a malformed
    one is left out, so it allows nothing rather than something unintended."""
    return [pattern for pattern in map(parse_pattern, texts) if pattern is not None]


def allowed_by(address: Address, levels: Iterable[Sequence[Pattern]]) -> bool:
    """Whether the address matches a pattern of every level (a level is a list of patterns)."""
    return all(any(pattern.matches(address) for pattern in level) for level in levels)
