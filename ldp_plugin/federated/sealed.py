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
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from .._extras import missing_extra
from .._errors import LDPParameterError
from .atomic import write_atomic

try:  # the federated extra: pip install 'ldp-plugin[flower]'
    from nacl._sodium import ffi as _ffi, lib as _sodium  # libsodium itself, as PyNaCl's own bindings call it
    from nacl.exceptions import CryptoError
    from nacl.public import PrivateKey, PublicKey, SealedBox
except ImportError:  # pragma: no cover - reported when a sealed box is used
    PrivateKey = PublicKey = SealedBox = _ffi = _sodium = None
    CryptoError = Exception

__all__ = ["SEAL_OVERHEAD", "generate_analyzer_keys", "public_key", "private_key", "key_fingerprint", "seal_reports", "open_reports", "seal_reply",
           "open_boxes"]

#: bytes a sealed box adds: the ephemeral X25519 public key (32) and the Poly1305 tag (16)
SEAL_OVERHEAD = 48
KEY_VERSION = 1
_HEX_KEY = re.compile(r"^[0-9a-fA-F]{64}$")


def _need_nacl() -> None:
    if SealedBox is None:
        raise missing_extra("sealed reports need PyNaCl", "flower")


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


#: sealed boxes per task of :func:`open_boxes` (about 30 ms of work on one core: small enough to
#: balance the cores' shares, large enough that handing a task out costs nothing)
_TASK = 1024


def _default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def open_boxes(body: Any, size: int, key: "PrivateKey", *, workers: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """``(opened, ok)`` for ``body``, the concatenation of sealed boxes of ``size`` bytes each (a
    shuffled batch's body): ``opened`` the ``(n, size - 48)`` uint8 array of the opened envelopes
    (a row that did not open is zeros) and ``ok`` the bool mask of the boxes that opened — a box
    sealed to another key, altered in any bit or truncated does not, alone.

    Each box is opened by libsodium's ``crypto_box_seal_open`` (the C function PyNaCl's
    ``nacl.bindings`` call; no cryptography of ours), reading the box in place from ``body`` and
    writing the envelope straight into its row of ``opened`` (no per-box Python object). The
    boxes are shared out in tasks of :data:`_TASK` to ``workers`` threads (default: every core
    this process may use): libsodium runs without Python's lock held (cffi releases it around the
    call), so the threads open boxes on every core at once, with no process to start and nothing
    to copy between processes. The result is the same, byte for byte, whatever ``workers``."""
    _need_nacl()
    if isinstance(size, bool) or not isinstance(size, int) or size <= SEAL_OVERHEAD:
        raise LDPParameterError(f"size must be an integer above {SEAL_OVERHEAD} (the sealed box's overhead)")
    view = memoryview(body).cast("B")
    if len(view) % size:
        raise LDPParameterError(f"the sealed boxes' buffer must hold whole boxes of {size} bytes")
    n, m = len(view) // size, size - SEAL_OVERHEAD
    opened = np.zeros((n, m), dtype=np.uint8)
    ok = np.zeros(n, dtype=np.bool_)
    if n == 0:
        return opened, ok
    src, dst = _ffi.from_buffer(view), _ffi.from_buffer(opened)
    pk, sk = bytes(key.public_key), bytes(key)

    def task(lo: int) -> None:
        hi = min(n, lo + _TASK)
        res = [_sodium.crypto_box_seal_open(dst + i * m, src + i * size, size, pk, sk) for i in range(lo, hi)]
        ok[lo:hi] = np.asarray(res) == 0

    n_workers = max(1, min(workers if workers is not None else _default_workers(), -(-n // _TASK)))
    if n_workers == 1:
        for lo in range(0, n, _TASK):
            task(lo)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            list(pool.map(task, range(0, n, _TASK)))
    opened[~ok] = 0  # nothing of a box that did not open
    return opened, ok


def seal_reply(reply: dict, key_hex: Optional[str]) -> dict:
    """A device's reply with its reports sealed to the owner-pinned analyzer key (unchanged if
    the owner pinned none). A retried query's kept envelopes are sealed afresh (new ephemeral
    keys, the same nonces inside: the analyzer counts the replay as ``duplicate``)."""
    if key_hex is None or not reply.get("reports"):
        return reply
    return {**reply, "reports": seal_reports(reply["reports"], public_key(key_hex))}
