"""Exactly uniform k-subsets (:meth:`ldp_plugin.sampling.RandomSource.sorted_subsets`: Floyd's
algorithm on exact Lemire draws, O(k) per row)."""

from __future__ import annotations

import numpy as np

from .._errors import LDPParameterError
from .runner import _kernel, _run_segments

# -- uniform subsets (RandomSource.sorted_subsets) -------------------------------------------------

#: uniform draws per subset segment (4 MiB of 16-bit words)
_SUBSET_SEG_DRAWS = 1 << 21


def _mul_hi_lo(x: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64-bit halves of ``x · n`` for uint64 ``x`` and ``n < 2**32`` (exact)."""
    xl = x & np.uint64(0xFFFFFFFF)
    xh = x >> np.uint64(32)
    hi = (xh * n + ((xl * n) >> np.uint64(32))) >> np.uint64(32)
    return hi, x * n


def sorted_subsets(source, x: np.ndarray, include: np.ndarray, d: int, k: int, backend: str | None = None) -> np.ndarray:
    """:meth:`ldp_plugin.sampling.RandomSource.sorted_subsets` drawn from ``source``: rows in fixed
    segments of :data:`_SUBSET_SEG_DRAWS` draws (:class:`_SubsetSegment`), on the kernels'
    ``backend`` (None: ``LDP_PLUGIN_KERNELS``; the kernels layer names both)."""
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
    tasks = [_SubsetSegment(x[a:b], include[a:b], d, k, out[a:b], work=x.size * k, backend=backend) for a, b in zip(bounds[:-1], bounds[1:])]
    _run_segments(source, tasks)
    return out


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

    def __init__(self, x: np.ndarray, include: np.ndarray, d: int, k: int, out: np.ndarray, work: int | None = None, backend: str | None = None):
        self.x, self.inc, self.d, self.k, self.out = x, include.astype(np.uint8), d, k, out
        self.work = work  # the whole call's draws (the lazy kernel rule), not this segment's
        self.backend = backend  # the kernels' (None: LDP_PLUGIN_KERNELS)
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
        scan = _kernel("batched_rejects", self.work, self.backend)
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
        floyd = _kernel("floyd_sorted", self.work, self.backend)
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
