"""The sampling layer: exact, vectorized randomness from uniform bits and integer thresholds.

Every random decision a mechanism makes goes through this module, so every realized probability
is an exact rational number that the mechanism can check at construction:

* :meth:`RandomSource.bernoulli` draws events of probability exactly ``T / 2**64`` for an integer
  threshold ``T``: a uniform 64-bit word ``W`` is compared with ``T`` most-significant digits
  first, drawing further random digits only where the prefix ties (about 0.56 random bytes per
  event instead of 8);
* :meth:`RandomSource.bernoulli_packed` draws whole bit matrices of such events by
  geometric-run decoding (``W < T`` is decided at the first bit where ``W`` and ``T`` differ,
  a geometric position: 2 random bits per event on average), one table step per random byte;
* :meth:`RandomSource.uniform_int` draws integers exactly uniform on ``[0, r)`` by Lemire's
  multiply-and-reject method on 16- or 32-bit words (no modulo bias);
* :meth:`RandomSource.sorted_subsets` draws uniform ``k``-subsets with or without a given item
  (Floyd's algorithm on exact Lemire draws, O(k) per row);
* :meth:`RandomSource.partial_shuffle_prefix` draws uniform ``s``-subsets without replacement of
  ``[0, N)`` in random order (partial Fisher–Yates, exactly uniform).

The two batch samplers have compiled kernels (numba, the ``fast`` extra) and numpy twins that
turn the same random bytes into the same output (:mod:`ldp_plugin._kernels`); work is cut into
fixed segments that run on all cores, and a seeded stream is consumed in the same order
whatever the number of cores or the backend.

Randomness comes from one injectable source: by default the operating system's CSPRNG
(``os.urandom``). A seeded PCG64-DXSM generator is used only when the caller passes a seed,
and is labelled ``secure=False`` (for reproducible simulations and tests, never for releases).
The global ``random``/``numpy.random`` state is never touched.
"""

from __future__ import annotations

import abc
import functools
import math
import os
from typing import Optional, Union

import numpy as np

from ._errors import LDPParameterError
from .exact import TWO64

__all__ = ["RandomSource", "SecureRandomSource", "SeededRandomSource", "as_source", "chunk_source", "RNGLike"]


class RandomSource(abc.ABC):
    """A stream of uniform random bytes with exact samplers built on it."""

    secure: bool = False
    #: True when independent draws may be taken from several threads at once, in any order (a
    #: CSPRNG such as the OS's); the batch samplers then let each worker draw its own blocks.
    #: A seeded stream is False: it is consumed in one fixed order.
    concurrent_draws: bool = False

    @abc.abstractmethod
    def random_bytes(self, n: int) -> np.ndarray:
        """``n`` independent uniform bytes as a ``uint8`` array."""

    def _worker_bytes(self, n: int) -> np.ndarray:
        """``n`` bytes drawn from a worker thread (only used when ``concurrent_draws``; may be
        read-only)."""
        return self.random_bytes(n)

    # -- derived samplers ------------------------------------------------------------------------
    def words(self, n: int, bits: int = 64) -> np.ndarray:
        """``n`` uniform unsigned words of ``bits`` bits (16, 32 or 64)."""
        dtype = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
        return self.random_bytes(n * (bits // 8)).view(dtype)

    def bernoulli(self, threshold: int, size: int) -> np.ndarray:
        """Boolean array, each ``True`` with probability exactly ``threshold / 2**64``.

        Decides ``W < threshold`` for a uniform 64-bit ``W`` lazily, most significant digits
        first: the top 4 bits of ``W`` (a random nibble) are compared with the threshold's top
        nibble ``t0``; below decides True, above False, and only a tie (probability 1/16) needs
        the remaining 60 bits, decided byte by byte by :meth:`_bernoulli_bytes` with threshold
        ``16 · (T mod 2**60)``. Exactly ``t0/16 + (T mod 2**60)/2**64 = T/2**64``, at about
        0.56 random bytes per event instead of 8.
        """
        if not 0 <= threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        if threshold == 0:
            return np.zeros(size, dtype=bool)
        if threshold == TWO64:
            return np.ones(size, dtype=bool)
        t0 = threshold >> 60
        rest = (threshold & ((1 << 60) - 1)) << 4
        b = self.random_bytes((size + 1) // 2)
        nib = np.empty(2 * b.size, dtype=np.uint8)
        np.right_shift(b, 4, out=nib[0::2])
        np.bitwise_and(b, 15, out=nib[1::2])
        nib = nib[:size]
        out = nib < t0
        tie = np.flatnonzero(nib == t0)
        if tie.size:
            out[tie] = self._bernoulli_bytes(rest, tie.size)
        return out

    def bernoulli_packed(self, threshold: int, n_rows: int, n_bits: int) -> np.ndarray:
        """``(n_rows, ceil(n_bits/8))`` bytes whose bits (LSB first) are independent events of
        probability exactly ``threshold / 2**64``; padding bits beyond ``n_bits`` are 0.

        **Geometric-run decoding.** ``W < T`` for a uniform 64-bit ``W`` is decided at the first
        bit (most significant first) where ``W`` and ``T`` differ, and that position ``g`` is
        geometric: ``P(g) = 2**-(g+1)``, because ``W XOR T`` is uniform. So an event is
        ``bit g of T`` (counted from the top; 0 if ``g >= 64``, i.e. ``W == T``), where ``g`` is
        the number of zeros before the next 1 in a stream of fair random bits — and its
        probability is ``sum over set bits g of T of 2**-(g+1) = T / 2**64`` exactly. Each event
        uses 2 random bits on average (0.25 bytes, against 8 for a whole word).

        The stream is decoded one random byte at a time by a 65×256 table (:func:`run_table`:
        zeros carried in × byte → events completed, their bits, zeros carried out), with a
        compiled kernel when numba is installed and an equivalent numpy scan otherwise (the same
        bytes give the same bits). Work is cut into fixed segments of rows, each decoding its own
        block of the stream, so segments run on several cores and the output does not depend
        on the number of threads.
        """
        if not 0 <= threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        if n_rows < 0 or n_bits < 0:
            raise LDPParameterError("n_rows and n_bits must be non-negative")
        nb = (n_bits + 7) // 8
        if threshold in (0, TWO64) or n_rows == 0 or n_bits == 0:
            out = np.full((n_rows, nb), 0 if threshold == 0 else 0xFF, dtype=np.uint8)
        else:
            out = _bernoulli_runs(self, threshold, n_rows, n_bits)
        if n_bits % 8 and n_rows:
            out[:, -1] &= (1 << (n_bits % 8)) - 1
        return out

    def _bernoulli_bytes(self, threshold: int, size: int) -> np.ndarray:
        """``W < threshold`` for uniform 64-bit ``W``, compared byte by byte (most significant
        first; only ties draw the next byte): bit for bit the full 64-bit comparison."""
        if threshold == 0:
            return np.zeros(size, dtype=bool)
        tb = threshold.to_bytes(8, "big")
        first = self.random_bytes(size)
        out = first < tb[0]
        pending = np.flatnonzero(first == tb[0])
        for level in range(1, 8):
            if pending.size == 0:
                break
            b = self.random_bytes(pending.size)
            out[pending] = b < tb[level]
            pending = pending[b == tb[level]]
        # after eight equal bytes, W == threshold, which is not < threshold: stays False
        return out

    def uniform_int(self, r: int, size: int) -> np.ndarray:
        """``size`` integers exactly uniform on ``[0, r)`` (``1 <= r <= 2**32``), as ``int64``.

        Lemire's nearly-divisionless method: ``x * r`` for a uniform ``b``-bit ``x``; the high
        ``b`` bits are the value, and a draw is rejected (and redrawn) when its low ``b`` bits fall
        below ``2**b mod r``, which removes the modulo bias exactly. ``b = 16`` when
        ``r <= 2**10`` (rejection rate below 1.6%), else ``b = 32``.
        """
        if not 1 <= r <= 1 << 32:
            raise LDPParameterError("range r must be in [1, 2**32]")
        if r == 1:
            return np.zeros(size, dtype=np.int64)
        bits = 16 if r <= 1 << 10 else 32
        mask = (1 << bits) - 1
        reject_below = (1 << bits) % r
        out, todo = self._lemire_round(r, size, bits, mask, reject_below)
        while todo.size:  # rejected draws (probability < r / 2**bits each) are redrawn
            again, bad = self._lemire_round(r, todo.size, bits, mask, reject_below)
            good = np.ones(todo.size, dtype=bool)
            good[bad] = False
            out[todo[good]] = again[good]
            todo = todo[bad]
        return out

    def bernoulli_each(self, thresholds: np.ndarray) -> np.ndarray:
        """Booleans with *per-element* probabilities ``thresholds[i] / 2**64`` (``uint64``
        thresholds below ``2**64``): one uniform 64-bit word each, ``W < T`` — exact."""
        t = np.asarray(thresholds, dtype=np.uint64)
        return self.words(t.size) < t

    def uniform_int_each(self, r: np.ndarray) -> np.ndarray:
        """Integers exactly uniform on ``[0, r[i])`` for per-element ranges ``1 <= r[i] <= 2**32``
        (Lemire's method on 32-bit words, rejected draws redrawn), as ``int64``."""
        r = np.asarray(r, dtype=np.uint64)
        if r.size and (int(r.min()) < 1 or int(r.max()) > 1 << 32):
            raise LDPParameterError("ranges must be in [1, 2**32]")
        out = np.zeros(r.size, dtype=np.int64)
        todo = np.flatnonzero(r > 1)
        reject_below = (np.uint64(1 << 32) - r) % r  # 2**32 mod r, elementwise
        while todo.size:
            m = self.words(todo.size, 32).astype(np.uint64) * r[todo]
            ok = (m & np.uint64(0xFFFFFFFF)) >= reject_below[todo]
            out[todo[ok]] = (m[ok] >> np.uint64(32)).astype(np.int64)
            todo = todo[~ok]
        return out

    def _lemire_round(self, r: int, size: int, bits: int, mask: int, reject_below: int):
        """One round of Lemire's method: values and the indices of rejected draws."""
        m = self.words(size, bits).astype(np.uint64)
        m *= np.uint64(r)
        rejected = np.flatnonzero((m & np.uint64(mask)) < np.uint64(reject_below)) if reject_below else np.empty(0, np.int64)
        m >>= np.uint64(bits)
        return m.astype(np.int64), rejected

    def sorted_subsets(self, x: np.ndarray, include: np.ndarray, d: int, k: int) -> np.ndarray:
        """Row ``i``: a ``k``-subset of ``[0, d)``, sorted, uniform among the subsets that contain
        ``x[i]`` if ``include[i]`` and among those that do not otherwise (``1 <= k <= d − 1``).

        The ``s = k − [include]`` items besides ``x`` are a uniform ``s``-subset of the other
        ``d − 1`` items by Floyd's algorithm (``s`` exact uniform draws, step ``j`` on
        ``[0, d − 1 − s + j]``, several per 64-bit word by batched Lemire with rejected words
        redrawn — see :class:`_SubsetSegment`; a draw that hits an item already taken takes
        ``d − 1 − s + j`` instead), so a row costs O(k) draws and O(d/64) words of bitmap. Rows run in fixed segments on all cores, with a compiled kernel
        when numba is installed and the same result from numpy otherwise.
        """
        x = np.ascontiguousarray(x, dtype=np.int64)
        include = np.asarray(include, dtype=bool)
        if not 1 <= k <= d - 1:
            raise LDPParameterError(f"subset size k must be in [1, d-1] = [1, {d - 1}]")
        if x.ndim != 1 or include.shape != x.shape:
            raise LDPParameterError("x and include must be 1-d arrays of the same length")
        if x.size and (int(x.min()) < 0 or int(x.max()) >= d):
            raise LDPParameterError(f"items x must be codes in [0, d) = [0, {d})")
        dtype = np.uint16 if d <= 1 << 16 else np.uint32
        out = np.empty((x.size, k), dtype=dtype)
        per = max(1, _SUBSET_SEG_DRAWS // k)
        bounds = list(range(0, x.size, per)) + [x.size]
        tasks = [_SubsetSegment(x[a:b], include[a:b], d, k, out[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        _run_segments(self, tasks)
        return out

    def partial_shuffle_prefix(self, n_rows: int, population: int, s: int) -> np.ndarray:
        """For each of ``n_rows`` rows, a uniform ``s``-subset of ``[0, population)``, as an
        ``(n_rows, s)`` array in random order (partial Fisher–Yates; exactly uniform).

        Cost per row: O(population) to lay out the identity permutation (a memory copy) and
        O(s) exact uniform draws.
        """
        if not 0 <= s <= population:
            raise LDPParameterError("subset size must be in [0, population]")
        dtype = np.uint16 if population <= 1 << 16 else np.uint32
        perm = np.empty((n_rows, population), dtype=dtype)
        perm[:] = np.arange(population, dtype=dtype)
        rows = np.arange(n_rows)
        for i in range(s):
            j = i + self.uniform_int(population - i, n_rows)
            tmp = perm[rows, j].copy()
            perm[rows, j] = perm[:, i]
            perm[:, i] = tmp
        return perm[:, :s]


_POOLS: dict = {}


def _thread_pool(workers: int):
    from concurrent.futures import ThreadPoolExecutor

    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldp-sampling")
    return pool


# -- geometric-run decoding (RandomSource.bernoulli_packed) -------------------------------------

#: events per segment: a segment decodes its own block of random bytes (≈ 2 MiB), on its own core
_SEG_EVENTS = 1 << 23
#: segments drawn before decoding in parallel; a constant, so the output never depends on the
#: number of cores (a seeded stream is consumed in the same order everywhere)
_ROUND = 4
#: bytes of each extra block when a segment's block runs out (about 1 segment in 10**30)
_TOPUP_BYTES = 4096


@functools.lru_cache(maxsize=64)
def run_table(threshold: int) -> np.ndarray:
    """The decoding table of :meth:`RandomSource.bernoulli_packed` for ``0 < threshold < 2**64``:
    ``table[s * 256 + v]`` for ``s`` zeros already seen in the current run (capped at 64) and a
    random byte ``v`` read LSB first. Bits 0–7: the events completed in ``v``, in order (event =
    bit ``g`` of the threshold from the top, 0 for ``g >= 64``); bits 8–11: how many; bits 12–18:
    the zeros carried into the next byte."""
    tb = np.array([(threshold >> (63 - g)) & 1 for g in range(64)] + [0], dtype=np.uint32)
    s = np.repeat(np.arange(65, dtype=np.uint32), 256)
    v = np.tile(np.arange(256, dtype=np.uint32), 65)
    bits = np.zeros_like(v)
    cnt = np.zeros_like(v)
    for k in range(8):
        one = (v >> np.uint32(k)) & np.uint32(1)
        bits |= (tb[s] & one) << cnt
        cnt += one
        s = np.where(one == 1, 0, np.minimum(s + 1, 64)).astype(np.uint32)
    table = bits | (cnt << np.uint32(8)) | (s << np.uint32(12))
    table.setflags(write=False)
    return table


# zeros above the highest set bit of a byte (LSB-first reading: the zeros carried out of it)
_HIGH_ZEROS = np.array([8] + [7 - int(v).bit_length() + 1 for v in range(1, 256)], dtype=np.int32)


def _decode_runs_numpy(v: np.ndarray, s0: int, table: np.ndarray, need: int) -> tuple[np.ndarray, int, int]:
    """The numpy twin of the compiled decoder: the first ``min(need, available)`` events of the
    byte block ``v`` (packed LSB first) starting with ``s0`` carried zeros, their number, and the
    zeros carried out of the last byte read (meaningful only when the block was used up)."""
    L = v.size
    nz = v != 0
    carry_out = _HIGH_ZEROS[v]  # exact for non-zero bytes
    zi = np.flatnonzero(~nz)
    if zi.size:  # a zero byte (1 in 256) carries its predecessor's zeros + 8 on: settle the runs
        prev = zi - 1
        while True:
            before = np.where(prev >= 0, carry_out[np.maximum(prev, 0)], s0)
            new = np.minimum(before + 8, 64)
            if np.array_equal(new, carry_out[zi]):
                break
            carry_out[zi] = new
    np.minimum(carry_out, 64, out=carry_out)
    carry_in = np.empty(L, dtype=np.int32)
    carry_in[:1] = s0
    carry_in[1:] = carry_out[:-1]
    carry_in <<= 8
    carry_in |= v
    e = table[carry_in]
    cnt = (e >> np.uint32(8)).astype(np.uint8)
    cnt &= 15
    cum = np.cumsum(cnt, dtype=np.uint32)
    used = L if L == 0 or cum[-1] < need else int(np.searchsorted(cum, need)) + 1
    n_ev = min(need, int(cum[used - 1])) if used else 0
    return _concat_bits(e[:used].astype(np.uint8), cnt[:used], n_ev), n_ev, int(carry_out[used - 1]) if used else s0


def _concat_bits(o: np.ndarray, cnt: np.ndarray, n_ev: int) -> np.ndarray:
    """Concatenate the right-aligned bit fields ``o[i] & (2**cnt[i] − 1)`` (``cnt <= 8``) into one
    LSB-first bit string, packed, keeping its first ``n_ev`` bits. Neighbouring fields are merged
    pairwise three times (8, 16, 32 → 64-bit words: eight fields, at most 64 bits), and each
    group's word lands on at most two output words, OR-reduced per target word (fields never
    overlap, so OR is concatenation)."""
    L = o.size
    if L == 0:
        return np.zeros(0, dtype=np.uint8)
    G = (L + 7) // 8
    word = np.zeros(G * 8, dtype=np.uint8)
    word[:L] = o
    bits = np.zeros(G * 8, dtype=np.uint8)
    bits[:L] = cnt
    for dtype in (np.uint16, np.uint32, np.uint64):  # merge neighbours: a | b << len(a), 3 times
        a, b = word[0::2].astype(dtype), word[1::2].astype(dtype)
        b <<= bits[0::2].astype(dtype)
        a |= b
        word = a
        bits = bits[0::2] + bits[1::2]
    group_bits = bits.astype(np.int64)
    off = np.cumsum(group_bits) - group_bits
    tgt = off >> 6
    sh = (off & 63).astype(np.uint64)
    out = np.zeros(int(off[-1] + group_bits[-1]) // 64 + 2, dtype=np.uint64)
    lo = word << sh
    hi = np.where(sh > 0, word >> (np.uint64(64) - np.maximum(sh, np.uint64(1))), np.uint64(0))
    starts = np.flatnonzero(np.concatenate([[True], tgt[1:] != tgt[:-1]]))
    first = tgt[starts]
    out[first] |= np.bitwise_or.reduceat(lo, starts)
    out[first + 1] |= np.bitwise_or.reduceat(hi, starts)
    packed = out.view(np.uint8)[: (n_ev + 7) // 8].copy()
    if n_ev % 8:
        packed[-1] &= (1 << (n_ev % 8)) - 1
    return packed


class _RunSegment:
    """One segment's decoder state across its random blocks (either backend)."""

    def __init__(self, n_events: int, table: np.ndarray, kernel):
        self.need, self.table, self.kernel = n_events, table, kernel
        self.s = 0
        if kernel is not None:
            self.out = np.zeros((n_events + 7) // 8, dtype=np.uint8)
            self.pos = self.acc = self.nacc = 0
        else:
            self.parts: list = []
            self.have = 0

    @property
    def first_bytes(self) -> int:
        return _block_bytes(self.need)

    def first(self, block: np.ndarray) -> None:
        self.feed(block)

    def settle(self, draw) -> None:
        while not self.done:  # a block that ran out is continued on extra blocks, in order
            self.feed(draw(_TOPUP_BYTES))

    def finish(self) -> None:
        pass

    @property
    def done(self) -> bool:
        return (self.pos * 8 + self.nacc if self.kernel is not None else self.have) >= self.need

    def feed(self, block: np.ndarray) -> None:
        if self.kernel is not None:
            _, self.s, self.acc, self.nacc, self.pos = self.kernel(
                block, 0, self.table, self.out, self.pos, self.acc, self.nacc, self.s, self.need
            )
        else:
            packed, count, self.s = _decode_runs_numpy(block, self.s, self.table, self.need - self.have)
            self.parts.append((packed, count))
            self.have += count

    def result(self) -> np.ndarray:
        """The events, packed LSB first (bits past ``need`` are 0)."""
        if self.kernel is not None:
            out = self.out
            if self.need % 8:
                out[-1] &= (1 << (self.need % 8)) - 1
            return out
        if len(self.parts) == 1:
            return self.parts[0][0]
        bits = [np.unpackbits(p, count=c, bitorder="little") for p, c in self.parts]  # top-ups: rare
        return np.packbits(np.concatenate(bits), bitorder="little")


def _block_bytes(n_events: int) -> int:
    """Random bytes drawn for a segment of ``n_events`` events: the mean (2 bits per event) plus
    12 standard deviations (the bits per event are 1 + geometric: variance 2), in whole words."""
    bits = 2 * n_events + 12 * math.isqrt(2 * n_events + 1) + 128
    return 8 * ((bits + 63) // 64)


def _bernoulli_runs(source: "RandomSource", threshold: int, n_rows: int, n_bits: int) -> np.ndarray:
    from ._kernels import compiled

    kernel = compiled("decode_runs")
    table = run_table(int(threshold))
    nb = (n_bits + 7) // 8
    out = np.empty((n_rows, nb), dtype=np.uint8)
    rows_per_seg = max(1, _SEG_EVENTS // n_bits)
    bounds = list(range(0, n_rows, rows_per_seg)) + [n_rows]
    tasks = [_RunSegment((b - a) * n_bits, table, kernel) for a, b in zip(bounds[:-1], bounds[1:])]
    _run_segments(source, tasks)
    for a, b, task in zip(bounds[:-1], bounds[1:], tasks):
        flat = task.result()
        if n_bits % 8 == 0:
            out[a:b] = flat.reshape(b - a, nb)
        else:
            bits = np.unpackbits(flat, count=(b - a) * n_bits, bitorder="little").reshape(b - a, n_bits)
            out[a:b] = np.packbits(bits, axis=1, bitorder="little")
    return out


def _run_segments(source: "RandomSource", tasks: list) -> None:
    """Run segment tasks in rounds of ``_ROUND``: each task takes one first block of random bytes
    (``task.first_bytes``; ``task.first(block)``), then draws what else it needs in order
    (``task.settle(draw)``), then computes (``task.finish()``). A seeded stream is consumed in
    task order whatever the number of cores; a source with ``concurrent_draws`` (the OS CSPRNG:
    thread-safe, not reproducible) is drawn by each worker itself, so drawing and computing
    overlap on all cores."""
    workers = min(_ROUND, os.cpu_count() or 1)
    for r in range(0, len(tasks), _ROUND):
        group = tasks[r : r + _ROUND]
        pool = _thread_pool(workers) if workers > 1 and len(group) > 1 else None
        if pool is not None and source.concurrent_draws:

            def whole(task):
                task.first(source._worker_bytes(task.first_bytes))
                task.settle(source._worker_bytes)
                task.finish()

            list(pool.map(whole, group))
            continue
        blocks = [source.random_bytes(task.first_bytes) for task in group]
        if pool is not None:
            list(pool.map(lambda tb: tb[0].first(tb[1]), zip(group, blocks)))
        else:
            for task, block in zip(group, blocks):
                task.first(block)
        for task in group:
            task.settle(source.random_bytes)
        if pool is not None:
            list(pool.map(lambda task: task.finish(), group))
        else:
            for task in group:
                task.finish()


# -- uniform subsets (RandomSource.sorted_subsets) -------------------------------------------------

#: uniform draws per subset segment (4 MiB of 16-bit words)
_SUBSET_SEG_DRAWS = 1 << 21


def _mul_hi_lo(x: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64-bit halves of ``x · n`` for uint64 ``x`` and ``n < 2**32`` (exact)."""
    xl = x & np.uint64(0xFFFFFFFF)
    xh = x >> np.uint64(32)
    hi = (xh * n + ((xl * n) >> np.uint64(32))) >> np.uint64(32)
    return hi, x * n


class _SubsetSegment:
    """Consecutive rows of :meth:`RandomSource.sorted_subsets`.

    Row ``i`` needs ``s = k − include[i]`` uniform draws for Floyd's algorithm, step ``j`` on
    ``[0, N − s + j]`` (``N = d − 1``); slots ``j >= s`` have range 1. The draws come ``c`` at a
    time from one uniform 64-bit word ``w`` (batched Lemire: the digits of ``floor(w·P / 2**64)``
    in the mixed radix of the ``c`` ranges, ``P`` their product ≤ 2**60, peeled off by repeated
    multiplication; the word is rejected, and redrawn, when ``w·P mod 2**64 < 2**64 mod P``,
    which makes all ``c`` draws exactly uniform and independent). That is 8 bytes for ``c = 6``
    draws when ``d <= 1025``, against 2 bytes per draw one at a time. Rejected words are
    replaced in row-major order, round by round; then Floyd's algorithm writes the rows in place
    (compiled kernel, or its numpy twin: the same words give the same rows).
    """

    def __init__(self, x: np.ndarray, include: np.ndarray, d: int, k: int, out: np.ndarray):
        self.x, self.inc, self.d, self.k, self.out = x, include.astype(np.uint8), d, k, out
        self.n_other = N = d - 1
        if not N < 1 << 32:
            raise LDPParameterError("subset sampling needs d <= 2**32")
        self.c = c = max(1, 60 // N.bit_length())  # draws per 64-bit word: P <= 2**60
        self.groups = G = (k + c - 1) // c
        self.first_bytes = x.size * G * 8
        # product of each group's ranges and the rejection threshold 2**64 mod P, for rows
        # without (a = 0) and with (a = 1) x: exact integers
        self.P = np.ones((2, G), dtype=np.uint64)
        self.thr = np.zeros((2, G), dtype=np.uint64)
        for a in range(2):
            s = k - a
            for g in range(G):
                P = 1
                for j in range(g * c, min(k, g * c + c)):
                    P *= N - s + j + 1 if j < s else 1
                self.P[a, g], self.thr[a, g] = P, (1 << 64) % P

    def _rejected(self, flat_idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Which of the words ``w`` at flat positions ``flat_idx`` are rejected."""
        a, g = self.inc[flat_idx // self.groups], flat_idx % self.groups
        return (w * self.P[a, g]) < self.thr[a, g]

    def first(self, block: np.ndarray) -> None:
        words = block.view(np.uint64).reshape(self.x.size, self.groups)
        self.words = words if words.flags.writeable else words.copy()
        scan = _kernel("batched_rejects")
        if scan is not None:
            buf = np.empty(self.words.size // 8 + 1024, dtype=np.int64)
            cnt = scan(self.words, self.P, self.thr, self.inc, buf)
            if cnt <= buf.size:
                self.rej = buf[:cnt].copy()
                return
        flat = self.words.reshape(-1)
        self.rej = np.flatnonzero(self._rejected(np.arange(flat.size), flat))

    def settle(self, draw) -> None:
        flat = self.words.reshape(-1)
        rej = self.rej
        while rej.size:  # rejected words are replaced in row-major order, until all are accepted
            new = draw(rej.size * 8).view(np.uint64)
            flat[rej] = new
            rej = rej[self._rejected(rej, new)]

    def finish(self) -> None:
        floyd = _kernel("floyd_sorted")
        if floyd is not None:
            floyd(self.words, self.n_other, self.c, self.x, self.inc, self.out)
            return
        m, k, N, c = self.x.size, self.k, self.n_other, self.c
        s = k - self.inc.astype(np.int64)
        small = k <= 32  # few picks: compare with the earlier picks; else a membership matrix
        picks = np.full((m, k), -1, dtype=np.int64) if small else None
        taken = None if small else np.zeros((m, N), dtype=bool)
        rows = np.arange(m)
        acc = np.zeros(m, dtype=np.uint64)
        for j in range(k):
            if j % c == 0:
                acc = self.words[:, j // c].copy()
            rng = np.where(j < s, N - s + j + 1, 1).astype(np.uint64)
            t, acc = _mul_hi_lo(acc, rng)
            live = j < s
            t = t.astype(np.int64)[live]
            lr = rows[live]
            hit = (picks[lr, :j] == t[:, None]).any(axis=1) if small else taken[lr, t]
            t[hit] = (N - s[lr] + j)[hit]  # Floyd: N − s + j when t is already taken
            if small:
                picks[lr, j] = t
            else:
                taken[lr, t] = True
        if small:  # to item space: v -> v + [v >= x]; the unused slot of an including row is x
            v = picks + (picks >= self.x[:, None])
            v[:, -1] = np.where(self.inc == 1, self.x, v[:, -1])
            self.out[:] = np.sort(v, axis=1)
            return
        items = np.zeros((m, self.d), dtype=bool)  # to item space: v -> v + [v >= x], plus x
        r, v = np.nonzero(taken)
        items[r, v + (v >= self.x[r])] = True
        inc = self.inc == 1
        items[rows[inc], self.x[inc]] = True
        self.out[:] = np.nonzero(items)[1].reshape(m, k)


def _kernel(name: str):
    from ._kernels import compiled

    return compiled(name)


class SecureRandomSource(RandomSource):
    """The operating system's CSPRNG (``os.urandom``): the default for every release."""

    secure = True
    concurrent_draws = True
    # os.urandom releases the GIL: large requests are split across threads (one per core, at
    # most 4), which raises the kernel CSPRNG's throughput on multi-core machines
    _PARALLEL_MIN = 1 << 20

    def random_bytes(self, n: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, np.uint8)
        workers = min(4, os.cpu_count() or 1)
        if n < self._PARALLEL_MIN or workers < 2:
            return self._urandom(n)
        out = np.empty(n, dtype=np.uint8)
        bounds = np.linspace(0, n, workers + 1).astype(np.int64)

        def fill(i: int) -> None:
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            out[lo:hi] = np.frombuffer(os.urandom(hi - lo), dtype=np.uint8)

        list(_thread_pool(workers).map(fill, range(workers)))
        return out

    @staticmethod
    def _urandom(n: int, writable: bool = True) -> np.ndarray:
        """``n`` bytes from one ``os.urandom`` call (safe to call from any thread)."""
        out = np.frombuffer(os.urandom(n), dtype=np.uint8)
        return out.copy() if writable else out

    def _worker_bytes(self, n: int) -> np.ndarray:
        return self._urandom(n, writable=False)  # one call, no nested thread pool

    def __repr__(self) -> str:
        return "SecureRandomSource()"


class SeededRandomSource(RandomSource):
    """A seeded PCG64-DXSM stream, for reproducible simulations and tests only (not secure)."""

    secure = False

    def __init__(self, seed: int, stream: Union[int, tuple, None] = None):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise LDPParameterError("seed must be a non-negative integer")
        self.seed = int(seed)
        self.stream = None if stream is None else (tuple(int(s) for s in stream) if isinstance(stream, tuple) else int(stream))
        if self.stream is None:
            self._bitgen = np.random.PCG64DXSM(self.seed)
        else:  # an independent stream per partition/chunk: SeedSequence spawn key (seed, *stream)
            key = self.stream if isinstance(self.stream, tuple) else (self.stream,)
            self._bitgen = np.random.PCG64DXSM(np.random.SeedSequence(self.seed, spawn_key=key))

    def random_bytes(self, n: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, np.uint8)
        words = self._bitgen.random_raw((n + 7) // 8)
        return words.view(np.uint8)[:n]

    def __repr__(self) -> str:
        stream = "" if self.stream is None else f", stream={self.stream}"
        return f"SeededRandomSource(seed={self.seed}{stream})  # not secure: simulations and tests only"


def chunk_source(rng: RNGLike, chunk: int, partition: Optional[int] = None) -> RandomSource:
    """The source for chunk/partition ``chunk`` of a job: the OS CSPRNG, or — for an integer
    seed — an independent seeded stream per chunk (never the same stream twice), so results do
    not depend on how an engine batches the rows."""
    if rng is None or (isinstance(rng, RandomSource) and rng.secure):
        return SecureRandomSource() if rng is None else rng
    stream = chunk if partition is None else (int(partition), int(chunk))
    if isinstance(rng, SeededRandomSource):
        return SeededRandomSource(rng.seed, stream=stream)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return SeededRandomSource(int(rng), stream=stream)
    raise LDPParameterError("rng must be None (secure), an integer seed, or a RandomSource")


RNGLike = Union[RandomSource, int, None]


def as_source(rng: RNGLike) -> RandomSource:
    """``None`` → a fresh :class:`SecureRandomSource`; an int → a seeded source; a source → itself."""
    if rng is None:
        return SecureRandomSource()
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return SeededRandomSource(int(rng))
    raise LDPParameterError("rng must be None (secure), an integer seed, or a RandomSource")
