"""The sampling layer: exact, vectorized randomness from uniform bits and integer thresholds.

Every random decision a mechanism makes goes through this module, so every realized probability
is an exact rational number that the mechanism can check at construction:

* :meth:`RandomSource.bernoulli` draws events of probability exactly ``T / 2**64`` for an integer
  threshold ``T``: a uniform 64-bit word ``W`` is compared with ``T`` most-significant digits
  first, drawing further random digits only where the prefix ties (about 0.56 random bytes per
  event instead of 8);
* :meth:`RandomSource.uniform_int` draws integers exactly uniform on ``[0, r)`` by Lemire's
  multiply-and-reject method on 16- or 32-bit words (no modulo bias);
* :meth:`RandomSource.partial_shuffle_prefix` draws uniform ``s``-subsets without replacement of
  ``[0, N)`` for a whole batch (partial Fisher–Yates, exactly uniform).

Randomness comes from one injectable source: by default the operating system's CSPRNG
(``os.urandom``). A seeded PCG64-DXSM generator is used only when the caller passes a seed,
and is labelled ``secure=False`` (for reproducible simulations and tests, never for releases).
The global ``random``/``numpy.random`` state is never touched.
"""

from __future__ import annotations

import abc
import os
from typing import Optional, Union

import numpy as np

from ._errors import LDPParameterError
from .exact import TWO64

__all__ = ["RandomSource", "SecureRandomSource", "SeededRandomSource", "as_source", "chunk_source", "RNGLike"]


class RandomSource(abc.ABC):
    """A stream of uniform random bytes with exact samplers built on it."""

    secure: bool = False

    @abc.abstractmethod
    def random_bytes(self, n: int) -> np.ndarray:
        """``n`` independent uniform bytes as a ``uint8`` array."""

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

        ``W < T`` is decided nibble by nibble (most significant first) for eight output bits at
        once, SWAR-style: the eight lanes of a 64-bit word each hold one random nibble, and two
        word additions give the per-lane ``nibble < t`` and ``nibble == t`` flags, which one
        multiplication gathers into a byte. Level 1 uses a fresh 64-bit word per two output
        bytes; bits that tie (probability 1/16) are decided at the next nibble of ``T`` with four
        fresh bytes per tied output byte, and so on for up to 16 levels (a tie at all 16 means
        ``W == T``: False). About 0.7 random bytes and 2 word operations per output bit.
        """
        if not 0 <= threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        nb = (n_bits + 7) // 8
        total = n_rows * nb
        if threshold in (0, TWO64):
            out = np.full(total, 0 if threshold == 0 else 0xFF, dtype=np.uint8)
        else:
            nw = (total + 1) // 2
            w = self.random_bytes(8 * nw).view(np.uint64)
            t0 = threshold >> 60
            lt_lo, eq_lo = _swar_nibble_compare(w & _LANE_NIBBLE, t0)
            lt_hi, eq_hi = _swar_nibble_compare((w >> np.uint64(4)) & _LANE_NIBBLE, t0)
            out = np.stack([lt_lo, lt_hi], axis=1).ravel()[:total]
            tie = np.stack([eq_lo, eq_hi], axis=1).ravel()[:total]
            idx = np.flatnonzero(tie)
            level = 1
            while idx.size and level < 16:
                t = (threshold >> (60 - 4 * level)) & 15
                r = self.random_bytes(4 * idx.size).view(np.uint32).astype(np.uint64)
                lanes = (r & np.uint64(0x0F0F0F0F)) | (((r >> np.uint64(4)) & np.uint64(0x0F0F0F0F)) << np.uint64(32))
                lt, eq = _swar_nibble_compare(lanes, t)
                tb = tie[idx]
                out[idx] |= tb & lt
                still = tb & eq
                tie[idx] = still
                idx = idx[still != 0]
                level += 1
        out = out.reshape(n_rows, nb)
        if n_bits % 8:
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
        pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldp-urandom")
    return pool


_LANE_NIBBLE = np.uint64(0x0F0F0F0F0F0F0F0F)
_LANE_ONE = 0x0101010101010101
_GATHER = np.uint64(0x0102040810204080)  # moves bit 0 of byte lane k to bit 56 + k


def _swar_nibble_compare(lanes: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """For eight byte lanes holding values x_k in [0, 16): bytes whose bit k is [x_k < t] and
    [x_k == t]. ``x + 16 − t`` has bit 4 set iff ``x >= t``; ``(x ^ t) + 15`` has bit 4 set iff
    ``x != t`` (no lane overflows: both stay below 32)."""
    one = np.uint64(_LANE_ONE)
    ge = (lanes + np.uint64((16 - t) * _LANE_ONE)) >> np.uint64(4)
    ne = ((lanes ^ np.uint64(t * _LANE_ONE)) + np.uint64(15 * _LANE_ONE)) >> np.uint64(4)
    lt = (~ge) & one
    eq = (~ne) & one
    return ((lt * _GATHER) >> np.uint64(56)).astype(np.uint8), ((eq * _GATHER) >> np.uint64(56)).astype(np.uint8)


class SecureRandomSource(RandomSource):
    """The operating system's CSPRNG (``os.urandom``): the default for every release."""

    secure = True
    # os.urandom releases the GIL: large requests are split across threads (one per core, at
    # most 4), which raises the kernel CSPRNG's throughput on multi-core machines
    _PARALLEL_MIN = 1 << 20

    def random_bytes(self, n: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, np.uint8)
        workers = min(4, os.cpu_count() or 1)
        if n < self._PARALLEL_MIN or workers < 2:
            return np.frombuffer(os.urandom(n), dtype=np.uint8).copy()
        out = np.empty(n, dtype=np.uint8)
        bounds = np.linspace(0, n, workers + 1).astype(np.int64)

        def fill(i: int) -> None:
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            out[lo:hi] = np.frombuffer(os.urandom(hi - lo), dtype=np.uint8)

        list(_thread_pool(workers).map(fill, range(workers)))
        return out

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
