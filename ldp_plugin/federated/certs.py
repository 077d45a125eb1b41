"""Keys and certificates for a local or test deployment, generated on this machine with the
``cryptography`` package (no openssl binary needed): a CA, a SuperLink server certificate for the
given host names / IP addresses (signed by the CA), and one EC P-384 key pair per SuperNode in
OpenSSH format (the format ``flower-supernode --auth-supernode-private-key`` and
``flwr supernode register`` read). Private keys are written with mode 0600."""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
import os
from pathlib import Path

from .._errors import LDPParameterError

__all__ = ["existing_credentials", "make_tls", "make_node_keys"]


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")


def _check_hosts(hosts: tuple) -> None:
    """Each ``--host`` is an IP address or a DNS name of at most 64 characters (the certificate's
    common name), checked before any key is made."""
    if not hosts:
        raise LDPParameterError("--host: give at least one host name or IP address of the SuperLink")
    for h in hosts:
        try:
            ipaddress.ip_address(h)
            continue
        except ValueError:
            pass
        if not isinstance(h, str) or not 1 <= len(h) <= 64 or not _HOST.match(h):
            raise LDPParameterError("--host must be an IP address or a DNS name of 1 to 64 letters, digits, dots and hyphens")


def existing_credentials(directory: str | Path, nodes: int) -> list:
    """The files :func:`make_tls` and :func:`make_node_keys` would overwrite that already exist."""
    d = Path(directory)
    names = ["ca.pem", "server.pem", "server.key"] + [f"nodes/node-{i}{ext}" for i in range(nodes) for ext in ("", ".pub")]
    return [n for n in names if (d / n).exists()]


def make_tls(directory: str | Path, hosts: tuple = ("127.0.0.1", "localhost"), days: int = 30) -> dict:
    """``ca.pem``, ``server.pem`` and ``server.key`` in ``directory``; returns their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    _check_hosts(hosts)
    d = Path(directory)
    now = _dt.datetime.now(_dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ldp-plugin federated CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP384R1())
    sans = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(hosts[0]))])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5))
            .not_valid_after(now + _dt.timedelta(days=days)).add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return {
        "ca": str(_write(d / "ca.pem", ca.public_bytes(pem))),
        "cert": str(_write(d / "server.pem", cert.public_bytes(pem))),
        "key": str(_write(d / "server.key", key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), private=True)),
    }


def make_node_keys(directory: str | Path, name: str) -> dict:
    """``<name>`` (private, OpenSSH, 0600) and ``<name>.pub`` (OpenSSH) — an EC P-384 key pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    d = Path(directory)
    key = ec.generate_private_key(ec.SECP384R1())
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return {"private": str(_write(d / name, priv, private=True)), "public": str(_write(d / f"{name}.pub", pub + b"\n"))}
