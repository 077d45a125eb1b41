"""Reports sealed to the analyzer: libsodium sealed boxes (PyNaCl's :class:`nacl.public.SealedBox`).

A sealed box is X25519 key agreement with a fresh ephemeral key pair per message, then
XSalsa20-Poly1305 authenticated encryption under the shared key, nonce derived from both public
keys (libsodium ``crypto_box_seal``). Anyone holding the analyzer's public key can seal; only the
analyzer's private key opens; a ciphertext altered in any bit fails to open (Poly1305). The
ciphertext of an ``m``-byte envelope is exactly ``m + 48`` bytes (the ephemeral public key and
the tag), and every envelope of a query has the same length (:func:`.envelope.envelope_size`),
so the lengths of a query's ciphertexts are all equal: no padding is needed to hide which
report is which, and a ciphertext of any other length is not an honest device's.

**Who chooses the key.** A device seals only to the key its *owner* pinned in the device TOML
(``[device] analyzer_key``: the 64 hex digits of the public key, or the path of the ``.pub`` file
``ldp federated analyzer-keys`` wrote); a query carries no key. A server that could hand devices a
key would swap in its own and read every report; here it cannot.

The analyzer's key pair is generated locally (:func:`generate_analyzer_keys`): the private key in
a 0600 file written atomically (a private temporary file, fsync, rename), the public key beside it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import os
import re
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .._errors import LDPParameterError
from .atomic import write_atomic

try:  # the federated extra: pip install 'ldp-plugin[flower]'
    from nacl.exceptions import CryptoError
    from nacl.public import PrivateKey, PublicKey, SealedBox
except ImportError:  # pragma: no cover - reported when a sealed box is used
    PrivateKey = PublicKey = SealedBox = None
    CryptoError = Exception

__all__ = ["SEAL_OVERHEAD", "generate_analyzer_keys", "public_key", "private_key", "key_fingerprint", "seal_reports", "open_reports", "seal_reply",
           "open_chunks"]

#: bytes a sealed box adds: the ephemeral X25519 public key (32) and the Poly1305 tag (16)
SEAL_OVERHEAD = 48
KEY_VERSION = 1
_HEX_KEY = re.compile(r"^[0-9a-fA-F]{64}$")


def _need_nacl() -> None:
    if SealedBox is None:
        raise LDPParameterError("sealed reports need PyNaCl: pip install 'ldp-plugin[flower]'")


def key_fingerprint(key: "PublicKey") -> str:
    """The first 16 bytes of SHA-256 over the raw public key, hex: what an owner compares."""
    return hashlib.sha256(bytes(key)).hexdigest()[:32]


def generate_analyzer_keys(directory: str | Path, *, force: bool = False) -> dict:
    """A fresh X25519 key pair (libsodium's CSPRNG) as ``analyzer.key`` (0600, JSON with the
    private key) and ``analyzer.pub`` (the public key, 64 hex digits) in ``directory``. Refuses
    to replace an existing private key unless ``force`` (reports sealed to the old key could no
    longer be opened)."""
    _need_nacl()
    d = Path(directory)
    priv_path, pub_path = d / "analyzer.key", d / "analyzer.pub"
    if priv_path.exists() and not force:
        raise LDPParameterError(f"{priv_path.name!r} already exists in {d.name!r}: replacing it loses every report sealed to it (use --force)")
    d.mkdir(parents=True, exist_ok=True)
    sk = PrivateKey.generate()
    write_atomic(priv_path, json.dumps({"version": KEY_VERSION, "private_key": bytes(sk).hex()}).encode())  # 0600
    write_atomic(pub_path, (bytes(sk.public_key).hex() + "\n").encode())
    pub_path.chmod(0o644)  # the public key is for the devices' owners
    return {"private_key": str(priv_path), "public_key": str(pub_path), "public_key_hex": bytes(sk.public_key).hex(),
            "fingerprint": key_fingerprint(sk.public_key)}


def public_key(value: str | Path, base: Optional[Path] = None) -> "PublicKey":
    """The analyzer's public key from 64 hex digits or the path of a ``.pub`` file (relative to
    ``base``). Raises :class:`LDPParameterError` naming what is wrong (never the key's bytes)."""
    _need_nacl()
    text = str(value).strip()
    if not _HEX_KEY.match(text):
        p = Path(text) if base is None else Path(base) / text
        if not p.is_file():
            raise LDPParameterError("analyzer_key must be 64 hex digits or the path of an existing analyzer.pub file")
        text = p.read_text().strip()
        if not _HEX_KEY.match(text):
            raise LDPParameterError(f"the public key file {p.name!r} does not hold 64 hex digits")
    return PublicKey(bytes.fromhex(text))


def private_key(path: str | Path) -> "PrivateKey":
    """The analyzer's private key from its 0600 file. Raises :class:`LDPParameterError` if the
    file is missing, readable by others, or not a key file."""
    _need_nacl()
    p = Path(path)
    if not p.is_file():
        raise LDPParameterError(f"the analyzer key file {p.name!r} does not exist")
    if os.name == "posix" and (p.stat().st_mode & 0o077):
        raise LDPParameterError(f"the analyzer key file {p.name!r} is readable by other users (mode must be 0600)")
    try:
        doc = json.loads(p.read_text())
        if doc.get("version") != KEY_VERSION or not _HEX_KEY.match(doc.get("private_key", "")):
            raise ValueError
        return PrivateKey(bytes.fromhex(doc["private_key"]))
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
        raise LDPParameterError(f"the analyzer key file {p.name!r} is not an analyzer private key") from None


def seal_reports(envelopes: Iterable, key: "PublicKey") -> list:
    """Each envelope (nonce + one wire report) sealed to ``key``: ``len(envelope) + 48`` bytes."""
    _need_nacl()
    box = SealedBox(key)
    return [box.encrypt(bytes(e)) for e in envelopes]


def open_reports(ciphertexts: Iterable, key: "PrivateKey") -> tuple[list, int]:
    """``(envelopes, undecryptable)``: the opened envelopes, and how many ciphertexts did not
    open (sealed to another key, altered, truncated)."""
    _need_nacl()
    box = SealedBox(key)
    out, bad = [], 0
    for c in ciphertexts:
        try:
            out.append(box.decrypt(bytes(c)))
        except (CryptoError, ValueError, TypeError):
            bad += 1
    return out, bad


def _open_chunk(args: tuple) -> tuple[list, int]:
    """A worker's share: open one chunk with the raw private key (module level: picklable)."""
    chunk, raw_key = args
    return open_reports(chunk, PrivateKey(raw_key))


def open_chunks(chunks: Iterable, key: "PrivateKey", *, workers: Optional[int] = None) -> Iterator[tuple[list, int]]:
    """:func:`open_reports` of each chunk, in order, on ``workers`` processes (default: every
    core this process may use). Each ciphertext is opened by libsodium's ``crypto_box_seal_open``
    (PyNaCl) exactly as on one core; the processes only share the work. One worker, or a single
    chunk, runs in this process. Workers are started with ``spawn`` (no state of this process —
    threads, generators, open ledgers — is copied into them)."""
    _need_nacl()
    n = workers if workers is not None else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    it = iter(chunks)
    first = next(it, None)
    if first is None:
        return
    second = next(it, None)
    if n <= 1 or second is None:
        yield open_reports(first, key)
        if second is not None:
            yield open_reports(second, key)
            for c in it:
                yield open_reports(c, key)
        return
    raw = bytes(key)
    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque = deque()
        for c in itertools.chain((first, second), it):
            pending.append(pool.submit(_open_chunk, (list(c), raw)))
            if len(pending) >= 2 * n:  # bounded: at most 2 chunks per worker in flight
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def seal_reply(reply: dict, key_hex: Optional[str]) -> dict:
    """A device's reply with its reports sealed to the owner-pinned analyzer key (unchanged if
    the owner pinned none). A retried query's kept envelopes are sealed afresh (new ephemeral
    keys, the same nonces inside: the analyzer counts the replay as ``duplicate``)."""
    if key_hex is None or not reply.get("reports"):
        return reply
    return {**reply, "reports": seal_reports(reply["reports"], public_key(key_hex))}
