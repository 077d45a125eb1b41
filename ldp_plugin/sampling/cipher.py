"""The secure source's byte generator: the OS CSPRNG, with large requests expanded by
AES-256-CTR under a fresh OS key.

**Construction.** A request for ``n >= CIPHER_MIN`` bytes takes a fresh 256-bit key from
``os.urandom`` and returns the first ``n`` bytes of the AES-256 keystream in counter mode
(counter blocks 0, 1, 2, …; the key is never reused, so neither is a counter block) — the
expansion step of NIST SP 800-90A's CTR_DRBG and of OpenSSL's default ``RAND_bytes``, done by
the `cryptography` package (OpenSSL, AES-NI). Smaller requests go to ``os.urandom`` directly.

**Threat model.** The output is indistinguishable from uniform bytes as long as AES-256 is a
pseudorandom permutation and the OS key is uniform and secret: a distinguisher's advantage is at
most the PRP advantage plus ``(n/16)**2 / 2**129`` (PRP/PRF switching; below ``2**-80`` for the
segment sizes used here). No state outlives a request (the key is a local of one call), so there
is nothing to leak, reseed or share: the generator is thread-safe and fork-safe by construction,
and a memory disclosure after a request reveals nothing about it (backtracking resistance). What
it adds to the OS CSPRNG's assumptions is only AES-256's security. It is about 30× faster than
``os.urandom`` per thread on this machine (BENCHMARKS.md), which is what lets the samplers of
:mod:`.sparse` run near the report-entropy limit.

``LDP_PLUGIN_RANDOM`` chooses: ``auto`` (default: AES-256-CTR expansion when `cryptography` is
importable — it comes with the ``fast`` extra — else ``os.urandom``), ``os`` (always
``os.urandom``), ``aes`` (require `cryptography`; an ImportError names the extra).
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

from ._env import use_fast
from .trace import note

__all__ = ["random_backend", "secure_bytes", "CIPHER_MIN"]

#: requests of at least this many bytes are expanded with AES-256-CTR (smaller: os.urandom)
CIPHER_MIN = 1 << 16
_ZERO_BLOCK = bytes(16)
_STATE: dict = {}


def _cipher_module():
    if "aes" not in _STATE:
        try:
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

            _STATE["aes"] = (Cipher, algorithms.AES, modes.CTR)
        except Exception:  # not installed or unusable: the OS CSPRNG alone
            _STATE["aes"] = None
    return _STATE["aes"]


def random_backend() -> str:
    """``"aes-256-ctr"`` or ``"os.urandom"``: how the secure source produces large requests now."""
    fast = use_fast("LDP_PLUGIN_RANDOM", "os", "aes", _cipher_module, "the cryptography package")
    return "aes-256-ctr" if fast else "os.urandom"


def secure_bytes(n: int, writable: bool = True, backend: Optional[str] = None) -> np.ndarray:
    """``n`` bytes from the secure generator (one call; safe from any thread)."""
    backend = backend or random_backend()
    if n >= CIPHER_MIN and backend == "aes-256-ctr":
        Cipher, AES, CTR = _cipher_module()
        enc = Cipher(AES(os.urandom(32)), CTR(_ZERO_BLOCK)).encryptor()
        out = np.empty(n + 15, dtype=np.uint8)  # update_into wants a block's slack
        enc.update_into(bytes(n), out)  # keystream = AES-CTR of zeros
        note("aes-256-ctr", n)
        return out[:n]
    note("os.urandom", n)
    data = np.frombuffer(os.urandom(n), dtype=np.uint8)
    return data.copy() if writable else data
