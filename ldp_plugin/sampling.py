"""The sampling layer: exact, vectorized randomness from uniform bits and integer thresholds.

Every random decision a mechanism makes goes through this module, so every realized probability
is an exact rational number that the mechanism can check at construction:

* :meth:`RandomSource.bernoulli` draws events of probability exactly ``T / 2**64`` for an integer
  threshold ``T``: a uniform 64-bit word ``W`` is compared with ``T`` most-significant byte first,
  drawing further bytes only where the prefix ties (about 1.004 bytes per event instead of 8);
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
from typing import Union

import numpy as np

from ._errors import LDPParameterError
from .exact import TWO64

__all__ = ["RandomSource", "SecureRandomSource", "SeededRandomSource", "as_source", "RNGLike"]


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

        ``W < threshold`` for a uniform 64-bit ``W`` is decided byte by byte, most significant
        first: a byte below (above) the threshold's byte decides True (False); only ties draw the
        next byte. The result is bit-for-bit the comparison of a full 64-bit word.
        """
        if not 0 <= threshold <= TWO64:
            raise LDPParameterError("threshold must be in [0, 2**64]")
        if threshold == 0:
            return np.zeros(size, dtype=bool)
        if threshold == TWO64:
            return np.ones(size, dtype=bool)
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
        out = np.empty(size, dtype=np.int64)
        todo = np.arange(size)
        while todo.size:
            x = self.words(todo.size, bits).astype(np.uint64)
            m = x * np.uint64(r)
            good = (m & np.uint64(mask)) >= np.uint64(reject_below)
            out[todo[good]] = (m[good] >> np.uint64(bits)).astype(np.int64)
            todo = todo[~good]
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


class SecureRandomSource(RandomSource):
    """The operating system's CSPRNG (``os.urandom``): the default for every release."""

    secure = True

    def random_bytes(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(n), dtype=np.uint8).copy() if n else np.empty(0, np.uint8)

    def __repr__(self) -> str:
        return "SecureRandomSource()"


class SeededRandomSource(RandomSource):
    """A seeded PCG64-DXSM stream, for reproducible simulations and tests only (not secure)."""

    secure = False

    def __init__(self, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise LDPParameterError("seed must be a non-negative integer")
        self.seed = int(seed)
        self._bitgen = np.random.PCG64DXSM(self.seed)

    def random_bytes(self, n: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, np.uint8)
        words = self._bitgen.random_raw((n + 7) // 8)
        return words.view(np.uint8)[:n]

    def spawn(self) -> "SeededRandomSource":
        """An independent child stream (for parallel partitions)."""
        child_seed = int(self._bitgen.random_raw())
        return SeededRandomSource(child_seed)

    def __repr__(self) -> str:
        return f"SeededRandomSource(seed={self.seed})  # not secure: simulations and tests only"


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
