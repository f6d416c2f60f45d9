"""Authentication results of received mail: SPF, every DKIM signature, DMARC and ARC.

Computed once per stored message, after it is stored and off the SMTP path (the worker's
`tasks.authentication` actor), from the raw message and the facts of its SMTP session that
ingest keeps with the e-mail (the connecting IP, the HELO name, the envelope MAIL FROM).

- SPF (RFC 7208, pyspf): the connecting IP against the MAIL FROM domain, or against the HELO
  name when MAIL FROM is empty (a bounce), as the RFC's identities are checked.
- DKIM (RFC 6376, dkimpy): each DKIM-Signature, at most `MAX_SIGNATURES`, with its domain
  (d=) and selector (s=). A key record that is absent, revoked or unreadable is `permerror`
  (the RFC's PERMFAIL "key unavailable"), a look-up without an answer `temperror`, a body or
  signature that does not verify `fail`, a malformed signature header `permerror`.
- DMARC (RFC 7489): the policy record at `_dmarc.<From domain>`, else at its organisational
  domain (the Public Suffix List, shipped offline by `publicsuffixlist`); SPF is aligned when
  it passed for a domain that matches the From domain, DKIM when some passing signature's d=
  does (relaxed: the same organisational domain; strict: the same name). `pass` when either
  is aligned, `fail` when neither is, `none` without a record, `temperror` when the record's
  look-up got no answer, `permerror` when the message has no single From domain or the record
  has no valid policy. No well-kept library evaluates DMARC against an injected resolver
  (checkdmarc checks records, authheaders looks up DNS itself), hence this small part here.
- ARC (RFC 8617, dkimpy): the chain's validation (`pass`, `fail`, `none` when the message
  carries no ARC set) and the sealing domain of its latest instance.

Every DNS look-up goes through the configured resolver (`dns.nameservers`), each bounded by
`dns.timeout`; a look-up that gets no answer is `temperror` for the check that made it, never a
wait beyond that. Hostile input (a malformed signature, a garbage DNS answer, a From header
that names nothing) gives a result with a `reason`, never an exception: `authenticate` is total.
"""

from __future__ import annotations

import contextvars
import email.parser
import email.policy
import email.utils
import functools
import ipaddress
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dkim
import spf
from publicsuffixlist import PublicSuffixList
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from burnbox.dns import LookupFailed, Resolver
from models.mail.entities import (
    DONE,
    FAIL,
    NONE,
    PASS,
    PENDING,
    PERMERROR,
    RESULTS,
    TEMPERROR,
    Email,
)

log = logging.getLogger(__name__)


class _DemotedLog(logging.LoggerAdapter):
    """dkimpy's log, every record at DEBUG: dkimpy logs an ERROR such as "missing public key:
    b'sel._domainkey.example.com.'" (a byte-string repr) for conditions that are results here
    (a `permerror` or `temperror` with its reason), and an operator's terminal showed an error
    for every signed message received without DNS."""

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """Log at DEBUG whatever level dkimpy asked for."""
        super().log(logging.DEBUG, msg, *args, **kwargs)


_DKIMPY_LOG = _DemotedLog(logging.getLogger(__name__ + ".dkimpy"))

# Signatures verified per message: each costs a DNS look-up and a hash of the body, and a
# message may carry any number of them.
MAX_SIGNATURES = 8
MAX_REASON = 200
DMARC_POLICIES = ("none", "quarantine", "reject")


@dataclass(frozen=True)
class SessionFacts:
    """What the SMTP session said about a message (empty when unknown)."""

    peer_ip: str = ""
    helo: str = ""
    mail_from: str = ""


@functools.cache
def _public_suffixes() -> PublicSuffixList:
    # Parsing the list takes some milliseconds: once per process, on first use.
    return PublicSuffixList()


def organisational_domain(domain: str) -> str:
    """The registrable domain of `domain` (RFC 7489 3.2, by the Public Suffix List): the
    domain itself when it is a public suffix or a single label."""
    name = domain.lower().rstrip(".")
    return _public_suffixes().privatesuffix(name) or name


def aligned(domain: str, from_domain: str, mode: str) -> bool:
    """Whether an authenticated `domain` aligns with the From domain: the same name in strict
    mode (`s`), the same organisational domain in relaxed mode (anything else)."""
    if not domain or not from_domain:
        return False
    a, b = domain.lower().rstrip("."), from_domain.lower().rstrip(".")
    return a == b if mode == "s" else organisational_domain(a) == organisational_domain(b)


def _reason(error: object) -> str:
    return str(error)[:MAX_REASON]


@dataclass
class _Lookups:
    """The TXT look-ups of the DKIM and ARC checks, through the resolver, remembering how each
    name's look-up ended (what the verdict of a signature that did not verify depends on)."""

    resolver: Resolver
    failed: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    found: dict[str, bytes] = field(default_factory=dict)

    def txt(self, name: bytes, timeout: float = 0) -> bytes | None:
        """dkimpy's `dnsfunc`: the first TXT record at `name`, None when there is none; raise
        `dkim.DnsTimeoutError` when the look-up got no answer (dkimpy then reports the
        signature invalid; `failed` says why). `timeout` is dkimpy's: the resolver's applies."""
        key = name.decode("ascii", "replace")
        try:
            records = self.resolver.txt(key.rstrip("."))
        except LookupFailed as exc:
            self.failed.add(key)
            raise dkim.DnsTimeoutError(str(exc)) from None
        if not records:
            self.missing.add(key)
            return None
        self.found[key] = records[0].encode("utf-8", "replace")
        return self.found[key]


# pyspf looks up DNS through its module-level `DNSLookup` (dnspython's default resolver). It is
# replaced once, here, by a look-up through the resolver of the check in progress (a context
# variable, so concurrent checks in threads each use their own); outside a check the original
# one answers, so other users of pyspf in the process see no change.
_spf_resolver: contextvars.ContextVar[Resolver | None] = contextvars.ContextVar(
    "spf_resolver", default=None)
_original_spf_lookup: Callable[..., list[Any]] = spf.DNSLookup


def _spf_lookup(name: str, qtype: str, strict: bool = True, timeout: float = 20
                ) -> list[tuple[tuple[str, str], Any]]:
    """pyspf's look-up: ((name, type), value) pairs in its shapes; `spf.TempError` when the
    look-up got no answer (SPF's temperror)."""
    resolver = _spf_resolver.get()
    if resolver is None:
        return _original_spf_lookup(name, qtype, strict, timeout)
    try:
        records = resolver.records(name, qtype)
    except LookupFailed as exc:
        raise spf.TempError(f"DNS {exc}") from None
    values: list[tuple[tuple[str, str], Any]] = []
    for rdata in records:
        if qtype in ("A", "AAAA"):
            values.append(((name, qtype), rdata.address))  # type: ignore[attr-defined]
        elif qtype == "MX":
            values.append(((name, qtype), (rdata.preference,  # type: ignore[attr-defined]
                                           rdata.exchange)))  # type: ignore[attr-defined]
        elif qtype == "PTR":
            values.append(((name, qtype), rdata.target.to_text(True)))  # type: ignore[attr-defined]
        elif qtype in ("TXT", "SPF"):
            values.append(((name, qtype), rdata.strings))  # type: ignore[attr-defined]
    return values


spf.DNSLookup = _spf_lookup


def check_spf(facts: SessionFacts, resolver: Resolver) -> dict[str, Any]:
    """SPF of the session: {result, domain, identity ("mailfrom" or "helo"), ip, reason}."""
    mail_from = facts.mail_from.strip().strip("<>")
    identity = "mailfrom" if mail_from else "helo"
    domain = (mail_from.rpartition("@")[2] if mail_from else facts.helo).lower().rstrip(".")
    outcome = {"result": NONE, "domain": domain, "identity": identity, "ip": facts.peer_ip,
               "reason": ""}
    try:
        ipaddress.ip_address(facts.peer_ip)
    except ValueError:
        return {**outcome, "reason": "the connecting IP address is not known"}
    if not domain:
        return {**outcome, "reason": "neither MAIL FROM nor HELO names a domain"}
    token = _spf_resolver.set(resolver)
    try:
        # querytime: the whole evaluation's budget (up to 10 DNS mechanisms, RFC 7208 4.6.4).
        result, explanation = spf.check2(
            facts.peer_ip, mail_from, facts.helo or domain,
            timeout=resolver.timeout, querytime=resolver.timeout * 4)
    except Exception as exc:  # pyspf on hostile input: a result, never an error (see module)
        log.warning("SPF check failed", exc_info=True)
        return {**outcome, "result": PERMERROR, "reason": _reason(exc)}
    finally:
        _spf_resolver.reset(token)
    return {**outcome, "result": result if result in RESULTS else PERMERROR,
            "reason": _reason(explanation)}


def _signature_tags(value: bytes) -> tuple[str, str]:
    """The d= and s= of a DKIM-Signature value, "" for what it lacks or cannot be read."""
    try:
        tags = dkim.util.parse_tag_value(value)
    except Exception:  # dkimpy's own parse error types vary with the fault
        return "", ""
    return (tags.get(b"d", b"").decode("ascii", "replace").strip().lower(),
            tags.get(b"s", b"").decode("ascii", "replace").strip())


def check_dkim(raw: bytes, lookups: _Lookups) -> list[dict[str, Any]]:
    """One {result, domain, selector, reason} per DKIM signature, top first (see module)."""
    try:
        verifier = dkim.DKIM(raw, logger=_DKIMPY_LOG, timeout=lookups.resolver.timeout)
    except Exception as exc:  # a message dkimpy cannot parse
        return [{"result": PERMERROR, "domain": "", "selector": "", "reason": _reason(exc)}]
    signatures = [value for name, value in verifier.headers
                  if name.lower() == b"dkim-signature"][:MAX_SIGNATURES]
    results = []
    for idx, value in enumerate(signatures):
        domain, selector = _signature_tags(value)
        key_name = f"{selector}._domainkey.{domain}."
        result, reason = PASS, ""
        try:
            if not verifier.verify(idx=idx, dnsfunc=lookups.txt):
                result, reason = _unverified(key_name, lookups)
        except dkim.ValidationError as exc:
            # dkimpy raises this for a body hash mismatch and for missing or bad tags alike.
            result = FAIL if "body hash mismatch" in str(exc) else PERMERROR
            reason = _reason(exc)
        except Exception as exc:  # malformed header or key: a result, never an error
            result, reason = PERMERROR, _reason(exc)
        results.append({"result": result, "domain": domain, "selector": selector,
                        "reason": reason})
    return results


def _unverified(key_name: str, lookups: _Lookups) -> tuple[str, str]:
    """Why a signature did not verify: no answer for its key, no key, a bad key, or a bad
    signature."""
    if key_name in lookups.failed:
        return TEMPERROR, "the key's DNS look-up got no answer"
    if key_name in lookups.missing:
        return PERMERROR, "no key published at " + key_name.rstrip(".")
    try:
        dkim.evaluate_pk(key_name.encode(), lookups.found.get(key_name))
    except Exception as exc:  # revoked, malformed or too short a key
        return PERMERROR, _reason(f"unusable key: {exc}")
    return FAIL, "the signature does not verify"


def check_arc(raw: bytes, lookups: _Lookups) -> dict[str, Any]:
    """The ARC chain: {result, domain (the latest sealer), instances, reason}."""
    failed_before = len(lookups.failed)
    try:
        sealer = dkim.ARC(raw, logger=_DKIMPY_LOG)
        instances, _headers = sealer.sorted_arc_headers()
        if not instances:
            return {"result": NONE, "domain": "", "instances": 0, "reason": ""}
        seals = [value for name, value in sealer.headers if name.lower() == b"arc-seal"]
        latest = max(seals, key=lambda value: _instance(value), default=b"")
        domain = _signature_tags(latest)[0]
        verdict, _results, reason = sealer.verify(dnsfunc=lookups.txt)
    except Exception as exc:  # malformed ARC headers
        return {"result": PERMERROR, "domain": "", "instances": 0, "reason": _reason(exc)}
    if verdict == dkim.CV_Pass:
        result = PASS
    elif len(lookups.failed) > failed_before:
        result = TEMPERROR
    else:
        result = NONE if verdict == dkim.CV_None else FAIL
    return {"result": result, "domain": domain, "instances": instances,
            "reason": _reason(reason)}


def _instance(value: bytes) -> int:
    try:
        return int(dkim.util.parse_tag_value(value).get(b"i", b"0"))
    except Exception:
        return 0


def from_domain(raw: bytes) -> str | None:
    """The domain of the message's one From address, None when it has none or several
    (RFC 7489 6.6.1: such a message cannot be evaluated)."""
    headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)
    values = [str(value) for value in headers.get_all("From", [])]
    addresses = [address for _name, address in email.utils.getaddresses(values) if address]
    if len(addresses) != 1 or "@" not in addresses[0]:
        return None
    return addresses[0].rpartition("@")[2].lower().rstrip(".") or None


def _dmarc_record(resolver: Resolver, domain: str) -> tuple[str | None, dict[str, str]]:
    """(where, tags) of the DMARC record for `domain` or its organisational domain; (None, {})
    when there is none. Raise LookupFailed when a look-up got no answer."""
    org = organisational_domain(domain)
    for name in dict.fromkeys((domain, org)):
        records = [text for text in resolver.txt(f"_dmarc.{name}")
                   if text.strip().lower().startswith("v=dmarc1")]
        if len(records) == 1:  # several records: as if none (RFC 7489 6.6.3)
            tags = {}
            for part in records[0].split(";"):
                tag, _eq, value = part.partition("=")
                tags[tag.strip().lower()] = value.strip()
            return name, tags
    return None, {}


def check_dmarc(raw: bytes, spf_result: dict[str, Any], signatures: list[dict[str, Any]],
                resolver: Resolver) -> dict[str, Any]:
    """DMARC: {result, domain (From), record_domain, policy, alignment {spf, dkim: relaxed or
    strict}, spf_aligned, dkim_aligned, reason}."""
    try:
        domain = from_domain(raw)
    except Exception:  # headers the parser cannot read
        domain = None
    outcome: dict[str, Any] = {
        "result": NONE, "domain": domain or "", "record_domain": "", "policy": "",
        "alignment": {"spf": "relaxed", "dkim": "relaxed"}, "spf_aligned": False,
        "dkim_aligned": False, "reason": ""}
    if domain is None:
        return {**outcome, "result": PERMERROR, "reason": "the message has no single From domain"}
    try:
        where, tags = _dmarc_record(resolver, domain)
    except LookupFailed as exc:
        where, tags = None, {}
        outcome.update(result=TEMPERROR, reason=_reason(exc))
    aspf, adkim = tags.get("aspf", "r").lower(), tags.get("adkim", "r").lower()
    spf_aligned = spf_result["result"] == PASS and aligned(spf_result["domain"], domain, aspf)
    dkim_aligned = any(sig["result"] == PASS and aligned(sig["domain"], domain, adkim)
                       for sig in signatures)
    outcome.update(alignment={"spf": "strict" if aspf == "s" else "relaxed",
                              "dkim": "strict" if adkim == "s" else "relaxed"},
                   spf_aligned=spf_aligned, dkim_aligned=dkim_aligned)
    if where is None:
        if outcome["result"] == NONE:
            outcome["reason"] = "no DMARC record"
        return outcome
    # A subdomain without a record of its own follows the organisation's sp=, else its p=.
    policy = tags.get("p", "").lower()
    if where != domain and tags.get("sp", "").lower() in DMARC_POLICIES:
        policy = tags["sp"].lower()
    outcome.update(record_domain=where, policy=policy)
    if policy not in DMARC_POLICIES:
        return {**outcome, "result": PERMERROR, "reason": "the record has no valid p= policy"}
    return {**outcome, "result": PASS if spf_aligned or dkim_aligned else FAIL}


def dkim_verdict(signatures: list[dict[str, Any]]) -> str:
    """The one DKIM word an e-mail is searched by: pass when any signature passed, none
    without signatures, else the first signature's result."""
    if not signatures:
        return NONE
    if any(sig["result"] == PASS for sig in signatures):
        return PASS
    return str(signatures[0]["result"])


def authenticate(raw: bytes, facts: SessionFacts, resolver: Resolver) -> dict[str, Any]:
    """The complete authentication results of a message (the `auth_results` of its e-mails,
    status `done`; the shape is in docs/mail-checks.md). Never raises."""
    lookups = _Lookups(resolver)
    spf_result = check_spf(facts, resolver)
    signatures = check_dkim(raw, lookups)
    return {"status": DONE, "spf": spf_result, "dkim": signatures,
            "dmarc": check_dmarc(raw, spf_result, signatures, resolver),
            "arc": check_arc(raw, lookups)}


@dataclass(frozen=True)
class PendingMessage:
    """One stored message whose e-mails still wait for their results."""

    raw_key: str
    facts: SessionFacts
    email_ids: tuple[uuid.UUID, ...]


def pending_messages(session: Session, email_ids: Sequence[uuid.UUID]) -> list[PendingMessage]:
    """The messages among the e-mails `email_ids` whose results are still pending, each once
    (the e-mails of one message share its raw object and its results): deleted e-mails and
    e-mails already done are left out, so computing again is harmless."""
    rows = session.execute(
        select(Email.id, Email.raw_key, Email.smtp_peer_ip, Email.smtp_helo, Email.envelope_from)
        .where(Email.id.in_(email_ids), Email.auth_results.is_(None))
        .order_by(Email.raw_key, Email.id)).all()
    messages: dict[str, PendingMessage] = {}
    for row in rows:
        known = messages.get(row.raw_key)
        messages[row.raw_key] = PendingMessage(
            row.raw_key, SessionFacts(row.smtp_peer_ip, row.smtp_helo, row.envelope_from),
            (*known.email_ids, row.id) if known else (row.id,))
    return list(messages.values())


def record_results(session: Session, email_ids: Sequence[uuid.UUID],
                   results: dict[str, Any]) -> None:
    """Store `results` (of `authenticate`) on the e-mails `email_ids`, with the verdicts the
    search filters on."""
    session.execute(
        update(Email).where(Email.id.in_(email_ids))
        .values(auth_results=results, auth_spf=results["spf"]["result"],
                auth_dkim=dkim_verdict(results["dkim"]), auth_dmarc=results["dmarc"]["result"])
        .execution_options(synchronize_session=False))


def auth_results_of(email: Email) -> dict[str, Any]:
    """The `auth_results` an e-mail's detail shows: the stored results, or the pending shape
    (status `pending`, no verdicts yet)."""
    if email.auth_results is None:
        return {"status": PENDING, "spf": None, "dkim": [], "dmarc": None, "arc": None}
    return {"spf": None, "dkim": [], "dmarc": None, "arc": None, **email.auth_results}
