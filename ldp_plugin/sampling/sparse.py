"""Entropy-proportional sparse Bernoulli matrices: the positions of the rare outcome
drawn as exact geometric skips derived from the integer threshold — no float in any decision.

A stream of independent events of probability ``q = T / 2**64`` is the same thing as its gaps:
``G`` zeros before each 1, independent and geometric, ``P(G >= g) = c_g = (1 − q)**g``. Each
``c_g = (2**64 − T)**g / 2**(64 g)`` is a dyadic rational, so ``G`` is decided exactly by
comparing a lazily read uniform ``U`` with the cutoffs: ``G = #{g >= 1 : U < c_g}``
(inversion, :func:`sparse_tables`). A draw reads ``U``'s bits a byte at a time, most significant
first, and stops as soon as the interval of the ``U`` values still possible holds no cutoff:

* **stage 1**: ``s1`` bytes (1 or 2, whichever costs fewer bits for this ``q``) index a table
  that gives the count directly (about 90% of draws at ``q = 1/(e**4 + 1)``);
* **stage 2**: one more byte indexes the sub-table of that prefix;
* **stage 3**: the remaining bytes of a 64-bit ``U64``; the count is ``#{g : L_g > U64}`` for
  ``L_g = floor(c_g · 2**64)`` (binary search), exact unless ``U64 == L_g`` for a ``c_g`` that is
  not a multiple of ``2**-64`` (probability ≈ ``M · 2**-64`` per draw);
* **stage 4** (that tie): further 64-bit words of ``U`` are compared with ``c_g`` in exact integer
  arithmetic until decided (at most ``g`` words: ``c_g`` has ``64 g`` bits).

Only ``g <= M`` is tabulated (``M``: the first ``g`` with ``c_g < 2**-6``, at most 4,096). A draw
with ``U < c_M`` is decided as "at least ``M`` zeros": the stream advances ``M`` events and the next
draw continues, which is exact because the geometric distribution is memoryless
(``P(G = M + j | G >= M) = P(G = j)``). Expected cost: ≈ ``log2(1/q) + 4`` bits per 1
(OUE, ``d = 1024``, ε = 4: ≈ 12.6 bits per draw, 0.24 bits per event against 2 for the dense
geometric-run decoder of :mod:`.bernoulli`); :func:`use_sparse` picks the cheaper one per ``q``.

**Byte layout.** A segment's block is cut into three regions: stage-1 bytes, stage-2 bytes,
stage-3 bytes, each consumed in order; a draw starts only if every region still holds what the
longest draw needs, otherwise the segment continues on a new block (the decision to stop depends
only on draws already made, so the draws that follow are still fresh and independent). Stage-4
words come from separate top-up draws. The compiled kernel and the numpy twin (vectorized per block) make the same draws from the same bytes and give the
same bits (tests compare them, and check every table entry against the exact cutoffs).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["SparseTables", "sparse_tables", "use_sparse", "SparseSegment", "resolve_tie"]

#: the largest number of tabulated cutoffs (table sizes stay in cache: ≤ 4,096 × 256 entries)
M_CAP = 1 << 12
#: tabulate cutoffs down to c_M < 2**-TAIL_BITS (one draw in 64 is "at least M zeros")
TAIL_BITS = 6
#: the sparse path is taken when it needs at most this many random bits per event (dense: 2)
MAX_BITS_PER_EVENT = 1.5


@dataclass(frozen=True)
class SparseTables:
    """The exact decision tables of the sparse sampler for threshold ``T`` (``0 < T < 2**64``).

    ``L[g − 1] = floor(c_g · 2**64)`` and ``frac[g − 1] = 1`` iff ``c_g · 2**64`` is not an
    integer, for ``g = 1..M``; ``table1[prefix]`` (``8 s1`` bits) and ``table2[256 j + byte]`` hold
    the count ``#{g <= M : c_g >= b}`` (``M``: at least ``M`` zeros; stored as :func:`_steps`) when
    no cutoff lies strictly inside the prefix's interval ``[a, b)``, else ``−(1 + j)``
    (sub-table ``j``) resp. ``−1`` (stage 3)."""

    T: int
    M: int
    s1: int
    L: np.ndarray
    frac: np.ndarray
    table1: np.ndarray
    table2: np.ndarray
    bits_per_draw: float
    events_per_draw: float
    p_stage2: float
    p_stage3: float

    @property
    def len3(self) -> int:
        return 7 - self.s1

    @property
    def bits_per_event(self) -> float:
        return self.bits_per_draw / self.events_per_draw


def _cutoffs(T: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``M``, ``L_g`` and ``frac_g`` for ``g = 1..M``, exactly: ``c_g · 2**128`` is bracketed by
    integer interval arithmetic (``[lo, hi]``, width ≤ ``g + 1``), which settles ``floor`` and
    integrality unless an integer multiple of ``2**64`` lies in the bracket; then ``c_g`` is computed
    exactly (``(2**64 − T)**g``)."""
    a = (1 << 64) - T
    lo = hi = 1 << 128
    tail = 1 << (128 - TAIL_BITS)
    L, frac = [], []
    g = 0
    while g < M_CAP:
        g += 1
        lo = (lo * a) >> 64
        hi = -((-hi * a) >> 64)
        if lo >> 64 == hi >> 64 and lo & 0xFFFF_FFFF_FFFF_FFFF:
            L.append(lo >> 64)
            frac.append(1)
        else:  # exact: c_g · 2**64 = a**g / 2**(64 (g − 1))
            num = pow(a, g)
            sh = 64 * (g - 1)
            L.append(num >> sh)
            frac.append(1 if num & ((1 << sh) - 1) else 0)
        if hi < tail:
            break
    return g, np.array(L, dtype=np.uint64), np.array(frac, dtype=np.uint8)


def _codes(prefixes: np.ndarray, k: int, L_asc: np.ndarray, M: int, exact_L: np.ndarray) -> np.ndarray:
    """For ``k``-bit prefixes ``P`` (interval ``[P/2**k, (P+1)/2**k)``): the count of cutoffs
    ``c_g >= b`` if no cutoff lies strictly inside, else −1. ``c_g >= (P+1)·2**-k`` iff
    ``L_g >= (P+1)·2**(64−k)``; ``c_g <= P·2**-k`` iff ``L_g < P·2**(64−k)``, or equal with
    ``c_g · 2**64`` an integer (``exact_L``: those ``L_g``, sorted)."""
    P = prefixes.astype(np.uint64)
    sh = np.uint64(64 - k)
    lower = P << sh
    top = P == np.uint64((1 << k) - 1)
    upper = np.where(top, np.uint64(0), (P + np.uint64(1)) << sh)
    ge = np.where(top, 0, M - np.searchsorted(L_asc, upper, side="left"))  # L_g >= upper (none at 2**64)
    le = np.searchsorted(L_asc, lower, side="left")  # L_g < lower
    if exact_L.size:
        le = le + (np.searchsorted(exact_L, lower, side="right") - np.searchsorted(exact_L, lower, side="left"))
    return np.where(ge + le == M, ge, -1).astype(np.int64)


def _steps(codes: np.ndarray, M: int) -> np.ndarray:
    """Table entries as the kernel reads them: a count ``c < M`` (a 1 after ``c`` zeros) is
    ``2c + 1``, ``c = M`` (``M`` zeros, no 1) is ``2M``, undecided stays −1: the stream advances
    by ``entry >> 1`` zeros and then, if ``entry & 1``, by a 1."""
    out = np.where(codes < 0, -1, np.where(codes >= M, 2 * M, 2 * codes + 1))
    return out.astype(np.int16)  # 2M <= 8192 and at most M + 256 sub-tables: fits


def _counts(steps: np.ndarray, M: int) -> np.ndarray:
    """The counts back from table entries ``>= 0`` (inverse of :func:`_steps`)."""
    steps = steps.astype(np.int64)
    return np.where(steps & 1, steps >> 1, M)


def _build(T: int, s1: int, M: int, L: np.ndarray, frac: np.ndarray) -> SparseTables:
    L_asc = np.ascontiguousarray(L[::-1])
    exact_L = np.sort(L[frac == 0])
    k1 = 8 * s1
    c1 = _codes(np.arange(1 << k1, dtype=np.uint64), k1, L_asc, M, exact_L)
    amb = np.flatnonzero(c1 < 0)
    table1 = _steps(c1, M)
    table1[amb] = -(1 + np.arange(amb.size))
    sub = (amb.astype(np.uint64)[:, None] << np.uint64(8)) | np.arange(256, dtype=np.uint64)[None, :]
    table2 = _steps(_codes(sub.ravel(), k1 + 8, L_asc, M, exact_L), M)
    p2 = amb.size / 2.0**k1
    p3 = float((table2 < 0).sum()) / 2.0 ** (k1 + 8)
    q = T / 2.0**64
    c_M = float(L[-1]) / 2.0**64
    events = (1.0 - c_M) / q  # E[min(G + 1, M)]: events covered per draw
    bits = 8.0 * (s1 + p2 + (7 - s1) * p3)
    for t in (L, frac, table1, table2):
        t.setflags(write=False)
    return SparseTables(T, M, s1, L, frac, table1, table2, bits, events, p2, p3)


@functools.lru_cache(maxsize=16)
def sparse_tables(T: int) -> SparseTables:
    """The cheaper (in expected random bits) of the 1- and 2-byte first stages for ``T``."""
    if not 0 < T < 1 << 64:
        raise ValueError("threshold must be in (0, 2**64)")
    M, L, frac = _cutoffs(T)
    one = _build(T, 1, M, L, frac)
    if M < 64:  # few cutoffs: one byte already decides nearly every draw
        return one
    two = _build(T, 2, M, L, frac)
    return one if one.bits_per_draw <= two.bits_per_draw else two


def use_sparse(T: int) -> bool:
    """Whether the sparse sampler is cheaper than dense run decoding for events of probability
    ``T / 2**64`` (``T <= 2**63``; the caller complements larger thresholds)."""
    if not 0 < T <= 1 << 63 or T > (1 << 64) // 5:  # q > 0.2: never cheaper than 2 bits/event
        return False
    return sparse_tables(T).bits_per_event <= MAX_BITS_PER_EVENT


def resolve_tie(tables: SparseTables, u64: int, draw: Callable[[int], np.ndarray]) -> int:
    """Stage 4: the count ``#{g <= M : U < c_g}`` when ``U``'s first 64 bits ``u64`` equal some
    ``L_g`` with ``c_g · 2**64`` not an integer. Reads further 64-bit words (big-endian) from
    ``draw`` and compares exactly; the tied cutoffs are consecutive (``c_g`` decreases)."""
    L = tables.L
    count = int(np.searchsorted(L[::-1], np.uint64(u64), side="right"))
    count = tables.M - count  # L_g > u64
    a = (1 << 64) - tables.T
    U, k = u64, 1  # U lies in [U / 2**(64k), (U + 1) / 2**(64k))
    g = count + 1
    while g <= tables.M and int(L[g - 1]) == u64 and tables.frac[g - 1]:
        N = pow(a, g)  # c_g = N / 2**(64 g)
        while True:
            if (U + 1) << (64 * g) <= N << (64 * k):  # U < c_g for sure
                count += 1
                break
            if U << (64 * g) >= N << (64 * k):  # U >= c_g: so are all later (smaller) cutoffs
                return count
            U = (U << 64) | int.from_bytes(bytes(draw(8)), "big")
            k += 1
        g += 1
    return count


def _layout(tables: SparseTables, draws: int) -> tuple[int, int, int]:
    """Region sizes (bytes) for a block meant to make ``draws`` draws: the mean need of each
    stage plus 12 standard deviations (binomial), so a block rarely runs short."""
    def margin(p: float) -> int:
        m = draws * p
        return int(math.ceil(m + 12 * math.sqrt(m + 1) + 4))

    return tables.s1 * (draws + 12 * math.isqrt(draws + 1) + 16), margin(tables.p_stage2), tables.len3 * margin(tables.p_stage3)


def sparse_numpy(v, n1: int, n2: int, i1: int, i2: int, i3: int, tb: SparseTables, pos: int, need: int, n_bits: int, out) -> tuple:
    """The numpy twin of the compiled ``sparse_runs`` kernel: the same draws from the same block
    ``v`` (regions ``[0, n1)``, ``[n1, n1 + n2)``, the rest), vectorized. Sets the 1s in ``out``
    (``(rows, ceil(n_bits/8))`` bytes, zero on entry, event ``e`` = row ``e // n_bits``, column
    ``e % n_bits``). Returns ``(status, i1, i2, i3, pos, u64)``: status 0 done, 1 a region too
    short for another draw, 2 stage-4 tie for the draw just made (``pos`` not yet advanced)."""
    s1, len3, M = tb.s1, tb.len3, tb.M
    n3 = v.size - n1 - n2
    nd = (n1 - i1) // s1
    if pos >= need:
        return 0, i1, i2, i3, pos, 0
    p = v[i1 : i1 + nd * s1].reshape(nd, s1).astype(np.int64)
    prefix = p[:, 0] if s1 == 1 else (p[:, 0] << 8) | p[:, 1]
    code = tb.table1[prefix].astype(np.int64)
    amb1 = code < 0
    code[~amb1] = _counts(code[~amb1], M)
    j2 = i2 + np.cumsum(amb1) - amb1  # stage-2 byte index of each draw (exclusive count)
    ok2 = amb1 & (j2 < n2)
    idx2 = np.flatnonzero(ok2)
    b2 = v[n1 + j2[idx2]].astype(np.int64)
    c2 = tb.table2[(-code[idx2] - 1) * 256 + b2].astype(np.int64)
    amb2 = np.zeros(nd, dtype=bool)
    amb2[idx2] = c2 < 0
    code[idx2] = np.where(c2 < 0, -1, _counts(c2, M))
    j3 = i3 + len3 * (np.cumsum(amb2) - amb2)
    # a draw starts only if every region holds a longest draw
    start_ok = (j2 < n2) & (j3 + len3 <= n3)
    J = int(np.argmin(start_ok)) if not start_ok.all() else nd
    idx3 = np.flatnonzero(amb2[:J])
    tie = nd + 1
    tie_u = 0
    if idx3.size:
        u = (prefix[idx3].astype(np.uint64) << np.uint64(8)) | b2[np.searchsorted(idx2, idx3)].astype(np.uint64)
        offs = n1 + n2 + j3[idx3]
        for t in range(len3):
            u = (u << np.uint64(8)) | v[offs + t].astype(np.uint64)
        L_asc = tb.L[::-1]
        c3 = M - np.searchsorted(L_asc, u, side="right")
        code[idx3] = c3
        at = np.minimum(c3, M - 1)
        tied = (c3 < M) & (tb.L[at] == u) & (tb.frac[at] == 1)
        if tied.any():
            tie = int(idx3[np.argmax(tied)])
            tie_u = int(u[np.argmax(tied)])
    code = code[:J]
    adv = np.where(code >= M, M, code + 1)
    start = np.empty(J + 1, dtype=np.int64)
    start[0] = pos
    np.cumsum(adv, out=start[1:])
    start[1:] += pos
    done_at = int(np.searchsorted(start, need, side="left"))  # first draw that would start at/after need
    end = min(done_at, J, tie)
    ev = np.flatnonzero(code[:end] < M)
    e = start[ev] + code[ev]
    e = e[e < need]
    if e.size:
        rows, cols = np.divmod(e, n_bits)
        np.bitwise_or.at(out, (rows, cols >> 3), np.left_shift(np.uint8(1), (cols & 7).astype(np.uint8)))
    ni1, ni2, ni3 = i1 + end * s1, i2 + int(amb1[:end].sum()), i3 + len3 * int(amb2[:end].sum())
    if end == done_at:
        return 0, ni1, ni2, ni3, int(start[end]), 0
    if end == tie:  # the tied draw's bytes are consumed; the stream has not advanced past it
        return 2, ni1 + s1, ni2 + 1, ni3 + len3, int(start[tie]), tie_u
    return 1, ni1, ni2, ni3, int(start[end]), 0


class SparseSegment:
    """One segment of the sparse sampler (runner protocol of :func:`.runner._run_segments`):
    ``need`` events written into ``out`` (rows of this segment, zero on entry)."""

    TOPUP_DRAWS = 4096

    def __init__(self, need: int, n_bits: int, out: np.ndarray, tables: SparseTables, kernel, finish=None):
        self.need, self.n_bits, self.out, self.tb, self.kernel = need, n_bits, out, tables, kernel
        self.on_finish = finish
        self.pos = 0
        self.status = 1
        self.tie = 0
        draws = int(need / tables.events_per_draw) + 1
        self.sizes = _layout(tables, draws)
        self.topup = _layout(tables, self.TOPUP_DRAWS)

    @property
    def first_bytes(self) -> int:
        return sum(self.sizes)

    def first(self, block: np.ndarray) -> None:
        self._start(block, self.sizes)

    def _start(self, block, sizes) -> None:
        self.block, self.n1, self.n2 = block, sizes[0], sizes[1]
        self.i1 = self.i2 = self.i3 = 0
        self._run()

    def _run(self) -> None:
        tb = self.tb
        if self.kernel is not None:
            st, self.i1, self.i2, self.i3, self.pos, u = self.kernel(
                self.block, self.n1, self.n2, tb.s1, tb.len3, self.i1, self.i2, self.i3,
                tb.table1, tb.table2, tb.L, tb.frac, tb.M, self.pos, self.need, self.n_bits, self.out)
            u &= 0xFFFF_FFFF_FFFF_FFFF
        else:
            st, self.i1, self.i2, self.i3, self.pos, u = sparse_numpy(
                self.block, self.n1, self.n2, self.i1, self.i2, self.i3, tb, self.pos, self.need, self.n_bits, self.out)
        self.status, self.tie = st, u

    def settle(self, draw) -> None:
        while self.status:
            if self.status == 2:  # a stage-4 tie (≈ M·2**-64 per draw): decide it exactly
                code = resolve_tie(self.tb, self.tie, draw)
                if code >= self.tb.M:
                    self.pos += self.tb.M
                else:
                    e = self.pos + code
                    if e < self.need:
                        r, c = divmod(e, self.n_bits)
                        self.out[r, c >> 3] |= np.uint8(1 << (c & 7))
                    self.pos = e + 1
                self._run()
            else:  # a region ran short: continue on a new block
                self._start(draw(sum(self.topup)), self.topup)

    def finish(self) -> None:
        self.block = None
        if self.on_finish is not None:  # e.g. complement, own bits: while the rows are in cache
            self.on_finish(self.out)

