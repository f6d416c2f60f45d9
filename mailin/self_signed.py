"""A self-signed certificate for the embedded default (`burnbox serve`), so that STARTTLS, and
AUTH after it, work on a laptop with no certificate configured.

Made once in the data folder (`<data_dir>/smtp-tls/cert.pem` and `key.pem`, the key readable
by its owner only) and kept: an application that pinned it keeps working across restarts. Its
name is `smtp.hostname`, with `localhost` and 127.0.0.1 as alternative names. A certificate
configured with `smtp.tls_cert` and `smtp.tls_key` always wins; the scaled mode uses only that.
Clients must be told not to verify it (it is nobody's authority): for tests against a local
server that is what an application's "allow self-signed" setting is for.
"""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from burnbox.settings import Settings
from burnbox.timeutil import utcnow

FOLDER = "smtp-tls"
LIFETIME = timedelta(days=3650)


def make_self_signed(folder: Path, hostname: str) -> tuple[Path, Path]:
    """The (certificate, key) PEM files in `folder`, made now unless both exist."""
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    names: list[x509.GeneralName] = [x509.DNSName(hostname)]
    if hostname != "localhost":
        names.append(x509.DNSName("localhost"))
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    now = utcnow()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + LIFETIME)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(key, hashes.SHA256()))
    # The key first, created readable by its owner only; the certificate last, so a start
    # interrupted half way makes both again next time.
    descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def with_self_signed(settings: Settings) -> Settings:
    """`settings` with `smtp.tls_cert` and `smtp.tls_key` naming the data folder's self-signed
    certificate (made if need be), unless a certificate is configured."""
    if settings.smtp.tls_cert or settings.smtp.tls_key:
        return settings
    cert, key = make_self_signed(Path(settings.data_dir).resolve() / FOLDER,
                                 settings.smtp.hostname)
    return settings.replace(**{"smtp.tls_cert": str(cert), "smtp.tls_key": str(key)})
