"""The shuffler of encode–shuffle–analyze (Bittau et al., "Prochlo", SOSP 2017, §3): it sees who
sent a report and when, never what the report says (each is sealed to the analyzer:
:mod:`~ldp_plugin.federated.sealed`), and it hands the analyzer what the analyzer needs and
nothing else.

For one query, :class:`Shuffler` takes each node's reply, validated whole first
(:func:`~ldp_plugin.federated.reply.validate_reply` with the ciphertext size: types, the node's
quota, the byte bound — a failing reply is that node's error, counted by reason), then each
ciphertext: its length must be the query's ciphertext size (a plaintext envelope is
``not_sealed``, any other length ``wrong_length``), and a byte-identical replay is
``duplicate_ciphertext``. The accepted ciphertexts are held in a set — no node id, no arrival
position, no time is kept with them. :meth:`Shuffler.forward` refuses a batch below the query's
minimum (:class:`BatchBelowMinimum`; nothing is written), else sorts the ciphertexts by their
bytes (a canonical order that depends on the set only, never on which node sent what or when),
permutes them with :func:`permutation` (the OS CSPRNG) and writes one batch file
(:mod:`~ldp_plugin.federated.batch`) with a random batch id. All reports are forwarded together
after the round's deadline, so no report's timing survives.

The central (ε, δ) the analyzer records assumes this: the shuffler and the analyzer do not
collude, and the batch's accepted reports come from distinct honest devices (Erlingsson et al.,
SODA 2019; Feldman, McMillan, Talwar, FOCS 2021 — the bounds of :mod:`ldp_plugin.amplification`).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import Keyed, has
from ..sampling import as_source
from .batch import write_batch
from .envelope import envelope_size
from .query import Query
from .reply import validate_reply
from .sealed import SEAL_OVERHEAD

__all__ = ["Shuffler", "BatchBelowMinimum", "permutation", "SHUFFLER_REJECTIONS"]

SHUFFLER_REJECTIONS = ("not_sealed", "wrong_length", "duplicate_ciphertext")


class BatchBelowMinimum(LDPParameterError):
    """A batch smaller than its query's minimum: never forwarded (the amplification claim needs it)."""


def check_shufflable(mech: Any, what: str) -> None:
    """Refuse a memoized series (``Keyed``: user keys or a per-collection cost): its permanent
    reports link a device across batches, which the shuffle amplification bound does not cover."""
    if has(mech, Keyed):
        raise LDPParameterError(f"{what} is a memoized series ({mech.name}): its permanent reports link a device across batches, "
                                "which the shuffle amplification bound does not cover")


def permutation(n: int, rng: Any = None) -> list:
    """A uniformly random permutation of ``range(n)``: Fisher–Yates in Durstenfeld's form (Knuth,
    TAOCP vol. 2, §3.4.2, Algorithm P): for ``i = n − 1, …, 1`` swap positions ``i`` and ``j_i``,
    ``j_i`` exactly uniform on ``[0, i]`` (Lemire's rejection method on 32-bit words,
    :meth:`~ldp_plugin.sampling.RandomSource.uniform_int_each`), so each of the ``n!``
    permutations has probability exactly ``1/n!``. ``rng``: ``None`` (the OS CSPRNG, the default
    for every batch) or a seed / source for tests only."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= 1 << 32:
        raise LDPParameterError(f"n must be an integer in [0, 2**32] (got {n!r})")
    n = int(n)
    if n < 2:
        return list(range(n))
    js = as_source(rng).uniform_int_each(np.arange(n, 1, -1, dtype=np.int64)).tolist()  # j for i = n-1 .. 1
    a = list(range(n))
    for i, j in zip(range(n - 1, 0, -1), js):
        a[i], a[j] = a[j], a[i]
    return a


class Shuffler:
    """One query's batch at the shuffler (see the module docstring)."""

    def __init__(self, query: Query):
        self.query = query
        self.plain_size = envelope_size(query.mechanism(), query.content_hash)
        self.ciphertext_size = self.plain_size + SEAL_OVERHEAD
        self._held: set = set()
        self.rejected: dict = {}
        self.node_errors: dict = {}
        self.bytes_received = 0

    @property
    def count(self) -> int:
        """Distinct well-formed ciphertexts held."""
        return len(self._held)

    def _reject(self, reason: str, k: int = 1) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + k

    def add(self, ciphertexts: Any) -> int:
        """Hold each well-formed ciphertext; returns how many were new."""
        new = 0
        for c in ciphertexts:
            if not isinstance(c, (bytes, bytearray)):
                self._reject("wrong_length")
                continue
            self.bytes_received += len(c)
            if len(c) != self.ciphertext_size:
                self._reject("not_sealed" if len(c) == self.plain_size else "wrong_length")
                continue
            b = bytes(c)
            if b in self._held:
                self._reject("duplicate_ciphertext")
                continue
            self._held.add(b)
            new += 1
        return new

    def add_reply(self, raw: Any, *, quota: int) -> dict:
        """One node's reply, validated whole first; ``{"accepted", "refused", "retry", "error"}``."""
        blob = raw.get("reports") if isinstance(raw, dict) else None
        if isinstance(blob, (bytes, bytearray)) and len(blob) % self.ciphertext_size and not len(blob) % self.plain_size:
            # a blob of plaintext envelopes (an owner who pinned no analyzer key): each one refused as not sealed
            raw = {**raw, "reports": [bytes(blob[i:i + self.plain_size]) for i in range(0, len(blob), self.plain_size)]}
        reply, error = validate_reply(raw, quota=quota, envelope_size=self.ciphertext_size)
        if error is not None:
            self.node_errors[error] = self.node_errors.get(error, 0) + 1
            return {"accepted": 0, "refused": {}, "retry": False, "error": error}
        reports, size = reply["reports"], self.ciphertext_size
        if isinstance(reports, (bytes, bytearray)):  # the Flower wire's one blob: whole ciphertexts (checked above)
            reports = [bytes(reports[i:i + size]) for i in range(0, len(reports), size)]
        return {"accepted": self.add(reports), "refused": reply["refused"], "retry": reply["retry"], "error": None}

    def shuffled(self, rng: Any = None) -> list:
        """The held ciphertexts in canonical (byte-sorted) order, then permuted: a function of the
        set of ciphertexts and the permutation only."""
        canonical = sorted(self._held)
        return [canonical[i] for i in permutation(len(canonical), rng)]

    def forward(self, path: str | Path, *, rng: Any = None, batch_id: Optional[str] = None) -> dict:
        """Write the shuffled batch to ``path`` (atomically) and forget it; refuses — writing
        nothing — a batch below the query's ``min_batch``."""
        n = self.count
        if n < self.query.min_batch:
            raise BatchBelowMinimum(f"the batch holds {n} reports, below the query's min_batch={self.query.min_batch}: it is not forwarded")
        out = self.shuffled(rng)
        bid = batch_id or secrets.token_hex(16)
        write_batch(path, query_json=self.query.to_json(), batch_id=bid, ciphertexts=out, ciphertext_size=self.ciphertext_size)
        self._held.clear()
        return {"batch_id": bid, "n": n, "path": str(path)}
