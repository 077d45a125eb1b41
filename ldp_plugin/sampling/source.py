"""The random sources: the API every sampler draws from (OS CSPRNG by default; seeded only
when asked). See :mod:`ldp_plugin.sampling`."""

from __future__ import annotations

import abc
import os
from typing import Optional, Union

import numpy as np

from .._errors import LDPParameterError
from ..exact import TWO64
from .bernoulli import _bernoulli_runs, set_row_bits
from .cipher import random_backend, secure_bytes
from .runner import _thread_pool
from .trace import note
from .subsets import sorted_subsets

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
        geometric (the *dense* path; when one outcome is rare — at most about 1 event in 6 — the
        *sparse* path of :mod:`ldp_plugin.sampling.sparse` draws only the rare outcomes' positions,
        by exact geometric skips, at about ``log2(1/q) + 4`` random bits per rare event; it is
        taken when it needs at most 1.5 bits per event, and a rare 0 is sampled as a rare 1 and
        the bits flipped). Dense: ``P(g) = 2**-(g+1)``, because ``W XOR T`` is uniform. So an event is
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
        return self._packed(threshold, n_rows, n_bits)

    def bernoulli_rows(self, q_threshold: int, n_rows: int, n_bits: int, positions: np.ndarray, p_threshold: int) -> np.ndarray:
        """Packed rows (as :meth:`bernoulli_packed`) whose bit ``j`` of row ``i`` is 1 with
        probability ``p_threshold / 2**64`` if ``j`` is one of ``positions[i]`` (an ``(n_rows, h)``
        integer array) and ``q_threshold / 2**64`` otherwise, independently — every unary
        encoding's report. Every bit is drawn with ``q``, then each listed position is redrawn
        with ``p`` (column by column; a position listed twice is redrawn twice: still exactly
        Bernoulli(``p``)). The ``h`` columns of ``p``-events are drawn first (one
        :meth:`bernoulli` call each); on the sparse path they are written into each segment of
        rows as soon as it is sampled, on the worker that sampled it."""
        positions = np.asarray(positions)
        if positions.ndim != 2 or positions.shape[0] != n_rows:
            raise LDPParameterError("positions must be an (n_rows, h) integer array")
        if positions.size and (int(positions.min()) < 0 or int(positions.max()) >= n_bits):
            raise LDPParameterError(f"positions must be bit indices in [0, n_bits) = [0, {n_bits})")
        if not 0 <= p_threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        own = [self.bernoulli(p_threshold, n_rows) for _ in range(positions.shape[1])]

        def after(a: int, b: int, rows: np.ndarray) -> None:
            for t, bits in enumerate(own):
                set_row_bits(rows, positions[a:b, t], bits[a:b])

        return self._packed(q_threshold, n_rows, n_bits, after)

    def _packed(self, threshold: int, n_rows: int, n_bits: int, after=None, backend=None) -> np.ndarray:
        """:meth:`bernoulli_packed` with a row hook ``after`` (:func:`.bernoulli._bernoulli_runs`) and
        the kernels' ``backend`` (None: ``LDP_PLUGIN_KERNELS``; the kernels layer names both)."""
        if not 0 <= threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        if n_rows < 0 or n_bits < 0:
            raise LDPParameterError("n_rows and n_bits must be non-negative")
        nb = (n_bits + 7) // 8
        if threshold in (0, TWO64) or n_rows == 0 or n_bits == 0:
            out = np.full((n_rows, nb), 0 if threshold == 0 else 0xFF, dtype=np.uint8)
            if n_bits % 8 and n_rows:
                out[:, -1] &= (1 << (n_bits % 8)) - 1
            if after is not None and n_bits:
                after(0, n_rows, out)
            return out
        return _bernoulli_runs(self, threshold, n_rows, n_bits, after, backend)

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

    def inverse_cdf(self, boundaries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Element ``i``: the ``j`` with ``B[rows[i], j] <= W_i < B[rows[i], j + 1]`` for a uniform
        64-bit word ``W_i`` (``B = boundaries``, an ``(R, ℓ)`` ``uint64`` array of non-decreasing
        rows starting at 0; the last interval ends at ``2**64``), as ``int64``: output ``j`` with
        probability exactly ``(B[r, j+1] − B[r, j]) / 2**64`` — a finite channel's inverse CDF on
        integer boundaries. One word per element, drawn in element order."""
        B = np.asarray(boundaries, dtype=np.uint64)
        rows = np.asarray(rows, dtype=np.int64)
        w = self.words(rows.size)
        out = np.empty(rows.size, dtype=np.int64)
        for r in np.unique(rows).tolist():
            sel = np.flatnonzero(rows == r)
            out[sel] = np.searchsorted(B[r], w[sel], side="right") - 1
        return out

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
        return sorted_subsets(self, x, include, d, k)

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


class SecureRandomSource(RandomSource):
    """The secure source, the default for every release: the operating system's CSPRNG
    (``os.urandom``), large requests expanded with AES-256-CTR under a fresh OS key when the
    `cryptography` package is installed (:mod:`ldp_plugin.sampling.cipher`: the construction,
    its threat model and ``LDP_PLUGIN_RANDOM``)."""

    secure = True
    concurrent_draws = True
    # the generator releases the GIL: large requests are split across threads (one per core, at
    # most 4), which raises the kernel CSPRNG's throughput on multi-core machines
    _PARALLEL_MIN = 1 << 20

    @property
    def backend(self) -> str:
        """``"aes-256-ctr"`` or ``"os.urandom"`` (see :func:`~ldp_plugin.sampling.cipher.random_backend`)."""
        return random_backend()

    def random_bytes(self, n: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, np.uint8)
        workers = min(4, os.cpu_count() or 1)
        if n < self._PARALLEL_MIN or workers < 2:
            return secure_bytes(n)
        out = np.empty(n, dtype=np.uint8)
        bounds = np.linspace(0, n, workers + 1).astype(np.int64)
        backend = random_backend()

        def fill(i: int) -> None:
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            out[lo:hi] = secure_bytes(hi - lo, writable=False, backend=backend)

        list(_thread_pool(workers).map(fill, range(workers)))
        note("threaded-request", workers)
        return out

    def _worker_bytes(self, n: int) -> np.ndarray:
        return secure_bytes(n, writable=False)  # one call, no nested thread pool

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
