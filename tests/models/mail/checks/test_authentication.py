"""Authentication results (models.mail.checks.authentication) against a real DNS server on loopback:
messages signed with dkimpy by a key the test publishes, SPF and DMARC records it publishes,
and the server's failures (silence, SERVFAIL, garbage) for the look-up errors."""

from __future__ import annotations

import base64
import logging
import time
from datetime import timedelta

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from burnbox.dns import Resolver
from models.mail.checks.authentication import SessionFacts, authenticate, dkim_verdict
from tests.dns_server import SILENT

DOMAIN = "shop.example"
SELECTOR = "s1"
HERE = SessionFacts(peer_ip="127.0.0.1", helo="mx.shop.example", mail_from="bounce@shop.example")


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=1024)


def private_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def key_record(key: rsa.RSAPrivateKey, name: str = f"{SELECTOR}._domainkey.{DOMAIN}") -> str:
    """The DKIM key's TXT record, as an operator publishes it (split in 200-character strings)."""
    public = base64.b64encode(key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    text = f"v=DKIM1; k=rsa; p={public}"
    strings = " ".join(f'"{text[i:i + 200]}"' for i in range(0, len(text), 200))
    return f"{name}. 60 IN TXT {strings}\n"


def signed(key: rsa.RSAPrivateKey, *, sender: str = f"Shop <news@{DOMAIN}>",
           domain: str = DOMAIN, body: str = "Your order shipped.\r\n") -> bytes:
    message = (f"From: {sender}\r\nTo: qa@burnbox.test\r\nSubject: Order\r\n"
               f"Message-ID: <1@{domain}>\r\n\r\n{body}").encode()
    signature = dkim.sign(message, SELECTOR.encode(), domain.encode(), private_pem(key),
                          include_headers=[b"from", b"to", b"subject"])
    return signature + message


@pytest.fixture
def resolver(dns_server) -> Resolver:
    """The loopback server with a time-out no loaded machine reaches for an answered query: at
    0.5 s, a garbage answer came late under the parallel suite and read as a `temperror`."""
    return Resolver((dns_server.nameserver,), timedelta(seconds=5))


def publish(dns_server, key, *, spf: str = "v=spf1 ip4:127.0.0.1 -all",
            dmarc: str | None = "v=DMARC1; p=reject") -> None:
    zone = key_record(key) + f'{DOMAIN}. 60 IN TXT "{spf}"\n'
    if dmarc:
        zone += f'_dmarc.{DOMAIN}. 60 IN TXT "{dmarc}"\n'
    dns_server.publish(zone)


def test_a_signed_message_from_an_allowed_ip_passes_everything(dns_server, resolver, key):
    publish(dns_server, key)
    results = authenticate(signed(key), HERE, resolver)
    assert results["status"] == "done"
    assert results["spf"] == {"result": "pass", "domain": DOMAIN, "identity": "mailfrom",
                              "ip": "127.0.0.1", "reason": results["spf"]["reason"]}
    assert [(s["result"], s["domain"], s["selector"]) for s in results["dkim"]] == [
        ("pass", DOMAIN, SELECTOR)]
    dmarc = results["dmarc"]
    assert (dmarc["result"], dmarc["domain"], dmarc["policy"], dmarc["record_domain"]) == (
        "pass", DOMAIN, "reject", DOMAIN)
    assert (dmarc["spf_aligned"], dmarc["dkim_aligned"]) == (True, True)
    assert results["arc"]["result"] == "none"  # no ARC set in the message


def test_a_tampered_body_fails_dkim(dns_server, resolver, key):
    publish(dns_server, key)
    raw = signed(key).replace(b"shipped", b"was lost")
    [signature] = authenticate(raw, HERE, resolver)["dkim"]
    assert signature["result"] == "fail"
    assert "body hash" in signature["reason"]


def test_a_signature_whose_key_is_not_published_is_a_permerror(dns_server, resolver, key):
    dns_server.publish(f'{DOMAIN}. 60 IN TXT "v=spf1 ip4:127.0.0.1 -all"\n')
    [signature] = authenticate(signed(key), HERE, resolver)["dkim"]
    # RFC 6376 6.1.2: no key record is a PERMFAIL (RFC 8601's permerror).
    assert (signature["result"], signature["domain"]) == ("permerror", DOMAIN)
    assert "no key" in signature["reason"]


def test_a_key_without_an_answer_is_a_result_and_no_error_in_the_log(
        dns_server, resolver, key, caplog):
    """dkimpy logged "missing public key: b'...'" at ERROR (a byte-string repr on an operator's
    terminal) for what the results already say."""
    dns_server.publish(f'{DOMAIN}. 60 IN TXT "v=spf1 ip4:127.0.0.1 -all"\n')
    with caplog.at_level(logging.DEBUG):
        [signature] = authenticate(signed(key), HERE, resolver)["dkim"]
    assert signature["result"] == "permerror"
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.WARNING] == []


def test_spf_minus_all_from_another_ip_fails_and_dmarc_still_passes_on_dkim(
        dns_server, resolver, key):
    publish(dns_server, key, spf="v=spf1 ip4:192.0.2.1 -all")
    results = authenticate(signed(key), HERE, resolver)
    assert results["spf"]["result"] == "fail"
    assert (results["dmarc"]["result"], results["dmarc"]["spf_aligned"],
            results["dmarc"]["dkim_aligned"]) == ("pass", False, True)


def test_dmarc_fails_when_nothing_aligns_with_the_from_domain(dns_server, resolver, key):
    # Signed and SPF-authorised for another domain than the From's.
    zone = key_record(key, f"{SELECTOR}._domainkey.relay.example")
    zone += 'relay.example. 60 IN TXT "v=spf1 ip4:127.0.0.1 -all"\n'
    zone += f'_dmarc.{DOMAIN}. 60 IN TXT "v=DMARC1; p=quarantine; adkim=s"\n'
    dns_server.publish(zone)
    raw = signed(key, domain="relay.example")
    facts = SessionFacts("127.0.0.1", "relay.example", "bounce@relay.example")
    results = authenticate(raw, facts, resolver)
    assert results["spf"]["result"] == "pass"
    assert dkim_verdict(results["dkim"]) == "pass"
    dmarc = results["dmarc"]
    assert (dmarc["result"], dmarc["policy"], dmarc["alignment"]) == (
        "fail", "quarantine", {"spf": "relaxed", "dkim": "strict"})


def test_relaxed_alignment_accepts_a_subdomain_and_finds_the_organisations_record(
        dns_server, resolver, key):
    zone = key_record(key, f"{SELECTOR}._domainkey.mail.{DOMAIN}")
    zone += f'_dmarc.{DOMAIN}. 60 IN TXT "v=DMARC1; p=none; sp=reject"\n'
    dns_server.publish(zone)
    raw = signed(key, domain=f"mail.{DOMAIN}", sender=f"news@news.{DOMAIN}")
    dmarc = authenticate(raw, HERE, resolver)["dmarc"]
    assert (dmarc["result"], dmarc["domain"], dmarc["record_domain"], dmarc["policy"]) == (
        "pass", f"news.{DOMAIN}", DOMAIN, "reject")


def test_a_dns_timeout_is_a_temperror_within_the_timeout(dns_server, key):
    publish(dns_server, key)
    dns_server.fail(SILENT)
    resolver = Resolver((dns_server.nameserver,), timedelta(seconds=0.5))
    started = time.monotonic()
    results = authenticate(signed(key), HERE, resolver)
    elapsed = time.monotonic() - started
    assert results["spf"]["result"] == "temperror"
    assert [s["result"] for s in results["dkim"]] == ["temperror"]
    assert results["dmarc"]["result"] == "temperror"
    # Each look-up waits at most the resolver's 0.5 s: SPF, the key, DMARC.
    assert elapsed < 5


def test_a_malformed_signature_header_is_a_permerror(dns_server, resolver, key):
    publish(dns_server, key)
    raw = b"DKIM-Signature: v=1; a=rsa-sha256; d=;;; b=!!!\r\n" + signed(key)
    results = authenticate(raw, HERE, resolver)
    assert [s["result"] for s in results["dkim"]] == ["permerror", "pass"]
    assert dkim_verdict(results["dkim"]) == "pass"


def test_garbage_in_dns_gives_clear_results(dns_server, resolver, key):
    zone = f'{SELECTOR}._domainkey.{DOMAIN}. 60 IN TXT "v=DKIM1; k=rsa; p=not*base64"\n'
    zone += f'{DOMAIN}. 60 IN TXT "v=spf1 ip4:not-an-ip include:;; -all"\n'
    zone += f'_dmarc.{DOMAIN}. 60 IN TXT "v=DMARC1; p=whatever"\n'
    dns_server.publish(zone)
    results = authenticate(signed(key), HERE, resolver)
    assert results["spf"]["result"] == "permerror"
    assert [s["result"] for s in results["dkim"]] == ["permerror"]
    assert results["dmarc"]["result"] == "permerror"


def test_a_message_without_from_or_session_facts_gives_results_not_errors(resolver):
    results = authenticate(b"Subject: no sender\r\n\r\nhello\r\n", SessionFacts(), resolver)
    assert results["spf"]["result"] == "none"
    assert results["dkim"] == []
    assert results["dmarc"]["result"] == "permerror"
    assert results["arc"]["result"] == "none"


def arc_sealed(key: rsa.RSAPrivateKey, raw: bytes) -> bytes:
    """`raw` as relay.example forwards it: its Authentication-Results and an ARC set
    (dkimpy's ARC signing reads that header with the `authres` package)."""
    raw = b"Authentication-Results: relay.example; dkim=pass header.d=shop.example\r\n" + raw
    return b"".join(dkim.arc_sign(raw, b"arc", b"relay.example", private_pem(key),
                                  b"relay.example")) + raw


def test_an_arc_chain_passes_and_a_change_after_sealing_fails_it(dns_server, resolver, key):
    dns_server.publish(key_record(key) + key_record(key, "arc._domainkey.relay.example"))
    sealed = arc_sealed(key, signed(key))
    arc = authenticate(sealed, HERE, resolver)["arc"]
    assert (arc["result"], arc["domain"], arc["instances"]) == ("pass", "relay.example", 1)
    arc = authenticate(sealed.replace(b"shipped", b"was lost"), HERE, resolver)["arc"]
    assert (arc["result"], arc["domain"]) == ("fail", "relay.example")
