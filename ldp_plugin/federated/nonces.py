"""The collector's replay guard: the set of report nonces seen for one query, held as arrays.

A nonce is 16 bytes (:mod:`~ldp_plugin.federated.envelope`), read here as two little-endian 64-bit
words ``(k1, k2)``. The set is a pair of aligned ``uint64`` arrays sorted by ``k1``: 16 bytes per
accepted report and nothing per report in Python, so its memory is bounded by the bytes received.
A batch is checked in one pass of array operations — sort the batch by ``k1``, find equal
neighbours (replays inside the batch; the earliest is kept), look the sorted words up in the set
(``searchsorted``) and merge the new ones in. Membership is exact (both words compared): a shared
``k1`` — 2^-64 per pair for honest CSPRNG nonces, or forged — is resolved by comparing ``k2`` over
the (short) run of equal ``k1``, never by a hash that could collide.

With the compiled kernels (:mod:`ldp_plugin.sampling.aggregate_kernels`) the same set is an
open-addressing hash table of the 16-byte keys (at most half full: 32 bytes per nonce, plus one
byte per slot holding a 7-bit tag of the key's hash, so a probe past a taken slot reads that
slot's key only when the tags agree), its slots keyed by a secret salt from the OS CSPRNG;
membership is still exact (both words compared). Both representations give the same answers;
the set converts between them if the backend changes.

:meth:`NonceSet.admit_envelopes` is the collector's one pass over a batch of envelopes: header
bytes compared, nonce admitted, and the admitted rows' payload bytes gathered into one dense
array while each row is in cache — so the range check and the accumulator read a few bytes per
report instead of a second pass over the envelopes.
"""

from __future__ import annotations

import os

import numpy as np

from .._errors import LDPInputError
from ..sampling.aggregate_kernels import admit_nonce_rows, aggregate_kernel, rows_match

__all__ = ["NonceSet"]

_NO_PATTERN = np.zeros(0, dtype=np.uint8)
_NO_PAYLOAD = np.zeros((0, 0), dtype=np.uint8)
#: the most keys :meth:`NonceSet.reserve` sizes the table for (2^25 slots, about 570 MB); beyond, it grows as keys arrive
RESERVE_MAX = 1 << 24


class NonceSet:
    """Exact set of 16-byte nonces with a vectorized "first time seen?" test."""

    def __init__(self) -> None:
        self.k1 = np.zeros(0, dtype=np.uint64)  # sorted
        self.k2 = np.zeros(0, dtype=np.uint64)  # aligned with k1
        self._table: tuple | None = None  # (keys (cap, 2) uint64, used (cap,) uint8) when compiled
        self._count = 0
        self._salt = np.uint64(int.from_bytes(os.urandom(8), "little"))
        self._work = (np.zeros((0, 3), dtype=np.uint64),) * 2  # the compiled kernel's scratch rows, kept warm between batches

    def reserve(self, n: int) -> None:
        """Size the compiled backend's hash table for ``min(n, RESERVE_MAX)`` keys now and touch
        its memory, so that admitting them later neither grows (rehashes) the table nor waits for
        the operating system to map its pages. Nothing changes with the numpy twin, or when the
        table is that large already; the set's contents and answers never change."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise LDPInputError("NonceSet.reserve takes a count of keys >= 0")
        n = min(n, RESERVE_MAX)
        if n == 0 or aggregate_kernel("nonce_admit_matching", n + self._count) is None:
            return
        before = self._table
        keys, used = self._hash_table(self._count + n)
        if keys is not (before[0] if before is not None else None) and self._count == 0:
            keys.fill(0)  # fault every page in now (the table is empty: nothing to keep)
            used.fill(0)

    def __len__(self) -> int:
        return self._count

    def admit(self, rows: np.ndarray) -> np.ndarray:
        """``rows``: an ``(m, w)`` uint8 array, ``w >= 16``, whose first 16 bytes per row are the
        nonces (an ``(m, 16)`` array of nonces, or the envelopes themselves: the compiled kernel
        reads them in place). Returns a bool mask of the rows whose nonce is new — not in the set
        and not an earlier row of this batch — and adds those to the set."""
        if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] < 16:
            raise LDPInputError("NonceSet.admit takes an (m, w >= 16) uint8 array of rows starting with their nonces")
        m = rows.shape[0]
        if m == 0:
            return np.zeros(0, dtype=bool)
        run = aggregate_kernel("nonce_admit_matching", m + self._count)
        if run is not None:  # an empty pattern: every row's nonce goes through the set
            keys, used = self._hash_table(self._count + m)
            out = np.zeros(m, dtype=np.uint8)
            src = rows if rows.flags.c_contiguous else np.ascontiguousarray(rows[:, :16])
            self._count += int(run(keys, used, src, 0, _NO_PATTERN, self._salt, out, 0, _NO_PAYLOAD, *self._scratch(m, keys.shape[0])))
            return out.view(np.bool_)
        nonces = rows[:, :16]
        words = np.ascontiguousarray(nonces).view("<u8").reshape(m, 2).astype(np.uint64, copy=False)
        if self._table is not None:  # the backend changed: back to the sorted arrays
            keys, used = self._table
            taken = keys[used != 0]
            order = np.argsort(taken[:, 0], kind="stable")
            self.k1, self.k2 = taken[order, 0].copy(), taken[order, 1].copy()
            self._table = None
        mask = self._admit_sorted(words[:, 0].copy(), words[:, 1].copy())
        self._count = int(self.k1.size)
        return mask

    def admit_matching(self, rows: np.ndarray, offset: int, pattern: bytes) -> np.ndarray:
        """Status per row of the ``(m, w)`` uint8 envelope rows (nonce = the first 16 bytes):
        ``2`` when the bytes ``[offset, offset + len(pattern))`` differ from ``pattern`` (the row
        is not admitted and its nonce is not recorded), else ``1`` (a new nonce, now in the set)
        or ``0`` (seen before, or an earlier row of this batch) — :func:`rows_match` and
        :meth:`admit` on the matching rows, in one pass over the rows with the compiled kernel."""
        return self.admit_envelopes(rows, offset, pattern, rows.shape[1] if rows.ndim == 2 else 0)[0]

    def admit_envelopes(self, rows: np.ndarray, offset: int, pattern: bytes, payload_offset: int) -> tuple:
        """``(status, payload)``: the status per row of :meth:`admit_matching`, and the bytes
        ``[payload_offset, w)`` of the admitted rows (status 1), in row order, as a ``(k, w -
        payload_offset)`` uint8 array — gathered in the same pass with the compiled kernel (the
        numpy twin returns a view of ``rows`` when every row is admitted, else a gathered copy)."""
        if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] < max(16, offset + len(pattern)) or not 0 <= payload_offset <= rows.shape[1]:
            raise LDPInputError("NonceSet.admit_envelopes takes an (m, w) uint8 array of rows starting with their nonces and a payload offset in [0, w]")
        m, pw = rows.shape[0], rows.shape[1] - payload_offset
        run = aggregate_kernel("nonce_admit_matching", m + self._count)
        if run is not None and m and rows.flags.c_contiguous:
            keys, used = self._hash_table(self._count + m)
            out = np.zeros(m, dtype=np.uint8)
            payload = np.empty((m, pw), dtype=np.uint8) if pw else _NO_PAYLOAD
            k = admit_nonce_rows(keys, used, rows, offset, np.frombuffer(bytes(pattern), dtype=np.uint8), self._salt, out, payload_offset, payload,
                                 *self._scratch(m, keys.shape[0]))  # its scan of the rows on both cores
            self._count += k
            return out, payload[:k] if pw else np.zeros((k, 0), dtype=np.uint8)
        ok = rows_match(rows, offset, pattern)
        out = np.full(m, 2, dtype=np.uint8)
        good = np.flatnonzero(ok)
        if good.size:
            out[good] = self.admit(rows if good.size == m else rows[good])
        fresh = out == 1
        k = int(np.count_nonzero(fresh))
        return out, rows[:, payload_offset:] if k == m else rows[fresh, payload_offset:]

    def _scratch(self, m: int, cap: int) -> tuple:
        """``(tmp, stage, bucket_bits)`` for the compiled kernel: two ``(m, 3)`` uint64 scratch
        arrays (grown, never shrunk: bounded by the largest batch) and the number of table regions
        its inserts are sorted into (a region of about 512 slots, at most 2^16 regions)."""
        if self._work[0].shape[0] < m:
            self._work = (np.zeros((m, 3), dtype=np.uint64), np.zeros((m, 3), dtype=np.uint64))
        return self._work[0][:m], self._work[1][:m], min(16, max(0, cap.bit_length() - 1 - 9))

    def _hash_table(self, need: int) -> tuple:
        """The hash table with room for ``need`` keys at most half full (grown or built from the
        sorted arrays when needed)."""
        cap = 1 << max(10, (2 * need - 1).bit_length())
        if self._table is not None and self._table[0].shape[0] >= cap:
            return self._table
        keys, used = np.zeros((cap, 2), dtype=np.uint64), np.zeros(cap, dtype=np.uint8)
        if self._table is not None:
            aggregate_kernel("nonce_rehash", 0)(self._table[0], self._table[1], keys, used, self._salt)
        elif self.k1.size:
            rows = np.stack([self.k1, self.k2], axis=1).astype("<u8", copy=False).view(np.uint8)  # (k, 16): the nonces' bytes
            aggregate_kernel("nonce_admit_matching", 0)(keys, used, rows, 0, _NO_PATTERN, self._salt, np.zeros(self.k1.size, dtype=np.uint8), 0, _NO_PAYLOAD,
                                                        *self._scratch(self.k1.size, cap))
            self.k1, self.k2 = self.k1[:0], self.k2[:0]
        self._table = (keys, used)
        return self._table

    def _admit_sorted(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """The numpy twin of :meth:`admit` on the sorted arrays."""
        m = k1.size
        order = np.argsort(k1)
        s1 = k1[order]
        tie = s1[1:] == s1[:-1]
        if tie.any():  # equal first words in the batch: order by both, stably (earliest row first)
            order = np.lexsort((np.arange(m), k2, k1))
            s1 = k1[order]
        s2 = k2[order]
        new = np.ones(m, dtype=bool)  # in sorted order
        new[1:] = ~((s1[1:] == s1[:-1]) & (s2[1:] == s2[:-1]))  # a repeat of the previous row
        if self.k1.size:
            lo = np.searchsorted(self.k1, s1, side="left")
            hi = np.searchsorted(self.k1, s1, side="right")
            one = hi - lo == 1
            hit = np.zeros(m, dtype=bool)
            hit[one] = self.k2[lo[one]] == s2[one]
            for j in np.flatnonzero(hi - lo > 1).tolist():  # a run of equal k1 in the set (rare/forged)
                hit[j] = bool((self.k2[lo[j]:hi[j]] == s2[j]).any())
            new &= ~hit
        f1, f2 = s1[new], s2[new]
        if f1.size:
            at = np.searchsorted(self.k1, f1, side="right")
            self.k1 = np.insert(self.k1, at, f1)
            self.k2 = np.insert(self.k2, at, f2)
        mask = np.zeros(m, dtype=bool)
        mask[order[new]] = True
        return mask
