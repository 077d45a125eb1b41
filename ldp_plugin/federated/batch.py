"""The shuffled batch the shuffler forwards to the analyzer: one file, and nothing in it but
what the analyzer needs.

Layout: ``b"LDPSHUF1"``, a 4-byte little-endian header length, the header (canonical JSON
``{"format", "version", "batch_id", "query", "n", "ciphertext_size"}``: the query's JSON, a random
batch id, the count and the common ciphertext length), then the ``n`` ciphertexts back to back,
each exactly ``ciphertext_size`` bytes, in the shuffled order. No node id, no arrival order, no
time, no per-report length: the header's keys are fixed (a reader refuses any other) and every
ciphertext has the same length. The file is written atomically (a temporary file in the same
directory, fsync, rename), so an analyzer never reads half a batch, and it is written only for
a batch of at least the query's minimum (:class:`~ldp_plugin.federated.shuffler.Shuffler`)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Iterator

from .._errors import LDPInputError
from .atomic import write_atomic

__all__ = ["BATCH_MAGIC", "BATCH_VERSION", "HEADER_KEYS", "write_batch", "read_batch", "iter_ciphertexts"]

BATCH_MAGIC = b"LDPSHUF1"
BATCH_VERSION = 1
HEADER_KEYS = frozenset({"format", "version", "batch_id", "query", "n", "ciphertext_size"})
_LEN = struct.Struct("<I")
_MAX_HEADER = 1 << 20


def write_batch(path: str | Path, *, query_json: str, batch_id: str, ciphertexts: list, ciphertext_size: int) -> Path:
    """Write the batch atomically; every ciphertext must be ``ciphertext_size`` bytes."""
    p = Path(path)
    if any(len(c) != ciphertext_size for c in ciphertexts):
        raise LDPInputError("every ciphertext of a batch must have the query's ciphertext size")
    header = json.dumps({"format": "ldp-shuffled-batch", "version": BATCH_VERSION, "batch_id": batch_id, "query": query_json,
                         "n": len(ciphertexts), "ciphertext_size": int(ciphertext_size)}, sort_keys=True, separators=(",", ":")).encode()
    return write_atomic(p, BATCH_MAGIC + _LEN.pack(len(header)) + header, b"".join(ciphertexts))


def read_batch(path: str | Path) -> tuple[dict, bytes]:
    """``(header, body)`` of a batch file, checked whole before anything is decrypted: the magic,
    the header's exact keys and types, and ``len(body) == n × ciphertext_size``. Raises
    :class:`LDPInputError` naming the check that failed."""
    p = Path(path)
    if not p.is_file():
        raise LDPInputError(f"the batch file {p.name!r} does not exist")
    raw = p.read_bytes()
    bad = LDPInputError(f"{p.name!r} is not a shuffled batch file (bad magic, header or length)")
    if len(raw) < len(BATCH_MAGIC) + _LEN.size or raw[:len(BATCH_MAGIC)] != BATCH_MAGIC:
        raise bad
    (hlen,) = _LEN.unpack_from(raw, len(BATCH_MAGIC))
    start = len(BATCH_MAGIC) + _LEN.size
    if hlen > _MAX_HEADER or start + hlen > len(raw):
        raise bad
    try:
        header = json.loads(raw[start:start + hlen])
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if not isinstance(header, dict) or set(header) != HEADER_KEYS or header["format"] != "ldp-shuffled-batch":
        raise bad
    if header["version"] != BATCH_VERSION:
        raise LDPInputError(f"unsupported batch version {header['version']!r} (this analyzer reads {BATCH_VERSION})")
    n, size = header["n"], header["ciphertext_size"]
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in (n, size)) or not isinstance(header["query"], str) \
            or not isinstance(header["batch_id"], str) or not header["batch_id"]:
        raise bad
    body = raw[start + hlen:]
    if len(body) != n * size:
        raise bad
    return header, body


def iter_ciphertexts(header: dict, body: bytes) -> Iterator[bytes]:
    size = header["ciphertext_size"]
    for i in range(header["n"]):
        yield body[i * size:(i + 1) * size]
