"""The kernels layer: every compiled (numba) kernel of the sampling layer held to its numpy twin,
bit for bit, on drawn inputs, edges first — and both held to an independent reference.

The twins are called explicitly (each dispatching function's ``backend`` argument,
:func:`ldp_plugin.sampling.kernels.select`): no environment variable is set and no module global
is patched, so both implementations run in one process. Checks, per kernel family:

* **samplers and subsets** (``decode_runs``, ``sparse_runs``; ``batched_rejects``, ``floyd_sorted``): the same
  seeded stream through both backends gives the same output bit for bit **and the same requests**
  (sizes, in order: identical consumed randomness), at thresholds on both sides of the dense/sparse
  switch and of ``2**63`` (the complemented sparse path), shapes ``0, 1, 7, 8, 9, 63, 64, 65`` bits,
  ``d`` at powers of two ± 1, ``k`` at 1, ``d − 1`` and past the twin's membership-matrix switch,
  and sizes that cross a segment (full run). Crafted streams reach what a random one almost never
  does: a first block of zero bytes (dense: no event completes, every event comes from top-up
  blocks; subsets: every word rejected, more rejections than the kernel's buffer holds), a sparse
  block of bytes 0xFF (every draw a 1 at once: a region runs short, the segment continues on a new block),
  and a draw equal to a cutoff ``L_g`` (the stage-4 tie, decided exactly from further words). The
  dense decoder is also replayed by a plain reference (event = bit ``g`` of the threshold after ``g``
  zeros) over the bytes it was given; subsets are checked for size, order, range and ``x``.
* **aggregation** (histograms, grouped histograms, packed column counts, row matching, hashed
  support, sorted-row histograms): both backends equal ``np.bincount`` / ``np.unpackbits`` / the
  definition, across dtypes, ``d`` at multiples of 8 and 64 ± 1, and rows across the blocks, chunks
  and thread splits; an out-of-range code is refused by both (naming the range, counting nothing)
  wherever it sits, including at a block edge.
* **text lookup** (``lookup_fixed``, ``lookup_objects``): both backends equal a dictionary lookup on ``U`` and ``S``
  arrays of several widths, with categories that cannot occur (too wide, ending in NUL), non-ASCII
  labels, a table whose few hashed columns collide into long probe runs (rebuilt on every column),
  and the first unknown value at the first, last and step-boundary positions.
* **secure, refusals** (the secure source and the sampling API): a request above the split threshold is filled by
  several threads, each share uniform (χ², α = 1e−9) and distinct; a batch of two segments on the
  secure source has its worker-drawn law; the refusals of the samplers name the parameter, never
  echo the value and draw nothing; the exact edges (probability 0 and 1, range 1) draw nothing; a
  unary row's listed positions are exactly ``p`` at ``p`` = 0 and 1 on the dense, sparse and
  complemented paths; per-chunk seeded streams are one per chunk and partition.
* **plain** (full run): in a fresh interpreter where numba and cryptography cannot be imported, the
  kernels fall back to the numpy twins and the secure source to ``os.urandom``, a seeded release
  equals the numpy twins' here, and ``LDP_PLUGIN_KERNELS=numba`` / ``LDP_PLUGIN_RANDOM=aes`` are
  ImportErrors naming the extra.

Without numba (the ``fast`` extra), or where it cannot compile, only the numpy twins run against the references; the result's
``backends`` then lists ``numpy`` alone. Power: the seeded bugs ``lookup-step-boundary`` (the numpy
lookup gives the last row of each step its neighbour's code), ``column-chunk-edge`` (the numpy column
counts skip the last row of each chunk) and ``dense-extra-draw`` (the numpy dense path draws one
byte more than the compiled one, outputs unchanged) fail this layer.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from typing import Any, Callable, Optional

import numpy as np
from scipy import stats

from .._errors import LDPInputError, LDPParameterError
from ..sampling import RandomSource, SecureRandomSource, SeededRandomSource, as_source, chunk_source
from ..sampling import _env, aggregate_kernels as agg, bernoulli, kernels, object_layout, poisson, row_lookup, sparse, subsets
from ..sampling.cipher import random_backend
from ..sampling.trace import PathTrace
from .production import kernel_env, numba_available
from .refusals import refusal_problems

__all__ = ["kernels_layer", "FAMILIES", "IMPLEMENTATIONS", "RecordedSource", "reference_dense"]

TWO64 = 1 << 64


def _packed(source: RandomSource, threshold: int, n_rows: int, n_bits: int, backend: Optional[str]) -> np.ndarray:
    return source._packed(threshold, n_rows, n_bits, backend=backend)


#: the implementations the layer drives, by name (a seeded bug replaces one)
IMPLEMENTATIONS: dict = {
    "packed": _packed,
    "sorted_subsets": subsets.sorted_subsets,
    "bounded_histogram": agg.bounded_histogram,
    "grouped_histogram": agg.grouped_histogram,
    "packed_column_counts": agg.packed_column_counts,
    "rows_match": agg.rows_match,
    "hashed_support": agg.hashed_support,
    "sorted_rows_histogram": agg.sorted_rows_histogram,
    "fixed_width_codes": row_lookup.fixed_width_codes,
    "list_codes": row_lookup.list_codes,
}


class RecordedSource(RandomSource):
    """A seeded stream that records every request (its size, in order; its bytes when ``keep``).
    ``script(i, block)`` may replace request ``i``'s bytes (a crafted block): the stream advances
    as if it had not, so two runs stay aligned."""

    def __init__(self, seed: int, script: Optional[Callable] = None, keep: bool = False):
        self._inner = SeededRandomSource(seed)
        self._script, self._keep = script, keep
        self.requests: list = []
        self.blocks: list = []

    def random_bytes(self, n: int) -> np.ndarray:
        i = len(self.requests)
        self.requests.append(int(n))
        b = self._inner.random_bytes(n)
        if self._script is not None:
            b = np.ascontiguousarray(self._script(i, b), dtype=np.uint8)
        if self._keep:
            self.blocks.append(b.copy())
        return b


def reference_dense(stream: np.ndarray, threshold: int, need: int) -> Optional[np.ndarray]:
    """The dense decoder's definition, one bit at a time: the stream's bits LSB first; after ``g``
    zeros a 1 completes an event equal to bit ``g`` of the threshold from the top (0 for ``g >= 64``).
    The first ``need`` events (0/1), or None if the stream holds fewer."""
    out = []
    g = 0
    for byte in stream.tolist():
        for k in range(8):
            if (byte >> k) & 1:
                out.append((threshold >> (63 - g)) & 1 if g < 64 else 0)
                g = 0
                if len(out) == need:
                    return np.array(out, dtype=np.uint8)
            else:
                g += 1
    return None


def _bits(rows: np.ndarray, n_bits: int) -> np.ndarray:
    return np.unpackbits(rows, axis=1, bitorder="little")[:, :n_bits].reshape(-1) if rows.size else np.zeros(0, np.uint8)


class _Run:
    """The failures and the case count of one layer run."""

    def __init__(self, backends: tuple, impl: dict):
        self.backends, self.impl = backends, impl
        self.failures: list = []
        self.cases: Counter = Counter()

    def fail(self, what: str) -> None:
        if len(self.failures) < 40:
            self.failures.append(what)

    def same(self, family: str, what: str, results: dict) -> None:
        """``results``: backend -> a tuple of arrays/values; all backends must agree exactly."""
        self.cases[family] += 1
        ref = results[self.backends[0]]
        for b in self.backends[1:]:
            got = results[b]
            if len(got) != len(ref) or not all(_equal(x, y) for x, y in zip(ref, got)):
                self.fail(f"{family}: {what}: {b} differs from {self.backends[0]}")


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        x, y = np.asarray(x), np.asarray(y)
        return x.shape == y.shape and x.dtype == y.dtype and bool(np.array_equal(x, y))
    return x == y


# -- samplers ---------------------------------------------------------------------------------------

def _dense_and_sparse(run: _Run, seed: int, quick: bool) -> None:
    packed = run.impl["packed"]
    thresholds = [1 << 63, (1 << 63) + 1, 3 << 62, TWO64 // 5, TWO64 // 5 + 1, 1, 1 << 44, TWO64 - (1 << 44), TWO64 - 1,
                  0x9E3779B97F4A7C15, 0, TWO64]
    shapes = [(0, 5), (4, 0), (1, 1), (1, 7), (3, 8), (2, 9), (5, 63), (3, 64), (2, 65), (40, 33)]
    for t_i, T in enumerate(thresholds):
        for s_i, (rows, bits) in enumerate(shapes):
            results = {}
            for b in run.backends:
                src = RecordedSource(seed + 7919 * t_i + s_i, keep=True)
                out = packed(src, T, rows, bits, b)
                results[b] = (out, src.requests)
                if b == run.backends[0]:
                    _check_packed(run, T, rows, bits, out, src)
            run.same("samplers", f"threshold {T:#x}, {rows}x{bits} bits", results)
    # a first block of zero bytes: no event completes in it; every event comes from top-up blocks
    for T in (1 << 63, 0x9E3779B97F4A7C15):
        results = {}
        for b in run.backends:
            src = RecordedSource(seed + 1, script=lambda i, blk: np.zeros_like(blk) if i == 0 else blk, keep=True)
            out = packed(src, T, 7, 9, b)
            results[b] = (out, src.requests)
            if len(src.requests) < 2:
                run.fail(f"samplers: a zero first block did not continue on top-up blocks ({b})")
            ref = reference_dense(np.concatenate(src.blocks), T, 63)
            if ref is None or not np.array_equal(_bits(out, 9), ref):
                run.fail(f"samplers: dense decoding over top-up blocks differs from the reference ({b})")
        run.same("samplers", f"threshold {T:#x} after a zero block", results)
    if not quick:  # two segments of rows (each decodes its own block)
        rows = bernoulli._SEG_EVENTS // 64 + 3
        for T in (3 << 62, 1 << 50):
            results = {}
            for b in run.backends:
                src = RecordedSource(seed + 2)
                results[b] = (packed(src, T, rows, 64, b), src.requests)
            run.same("samplers", f"threshold {T:#x}, {rows} rows (two segments)", results)
    _sparse_crafted(run, seed)


def _check_packed(run: _Run, T: int, rows: int, bits: int, out: np.ndarray, src: RecordedSource) -> None:
    """Shape, cleared padding, the exact edges (no draw), and the dense path against its reference."""
    nb = (bits + 7) // 8
    if out.shape != (rows, nb) or out.dtype != np.uint8:
        run.fail(f"samplers: threshold {T:#x}: shape {out.shape}, expected {(rows, nb)}")
        return
    if bits % 8 and rows and (out[:, -1] >> (bits % 8)).any():
        run.fail(f"samplers: threshold {T:#x}: padding bits set")
    if T in (0, TWO64) or rows == 0 or bits == 0:
        if src.requests or not (_bits(out, bits) == (1 if T == TWO64 else 0)).all():
            run.fail(f"samplers: threshold {T:#x}, {rows}x{bits}: the exact edge drew randomness or is not constant")
        return
    if not sparse.use_sparse(min(T, TWO64 - T)) and rows * bits <= 4096 and len(src.blocks) == 1:
        ref = reference_dense(src.blocks[0], T, rows * bits)
        if ref is not None and not np.array_equal(_bits(out, bits), ref):
            run.fail(f"samplers: threshold {T:#x}, {rows}x{bits}: dense decoding differs from the reference")


def _tie_words(tb: sparse.SparseTables) -> list:
    """``(g, L_g)`` of the cutoffs (``c_g`` not a multiple of ``2**-64``) that a draw reaches at
    stage 3, largest ``g`` first."""
    k1 = 8 * tb.s1
    out = []
    for g in range(tb.M, 0, -1):
        u = int(tb.L[g - 1])
        p = u >> (64 - k1)
        if tb.frac[g - 1] and tb.table1[p] < 0 and tb.table2[256 * (-int(tb.table1[p]) - 1) + ((u >> (56 - k1)) & 255)] < 0:
            out.append((g, u))
    return out


def _sparse_crafted(run: _Run, seed: int) -> None:
    """Sparse segments on crafted first blocks: bytes 0xFF (every draw is ``U`` near 1: a 1 at once,
    so the block's regions run short and the segment continues on a new block), and a first draw
    equal to a cutoff ``L_g`` followed by zero words, so ``U`` lies just above ``L_g / 2**64`` and
    below ``c_g``: the stage-4 tie decides exactly ``g`` zeros — at the last cutoff ``g = M`` (no 1
    in the draw), at another (a 1 after ``g`` zeros), and with a segment of one event that the tie
    completes; followed by words of ones, ``U`` ends above ``c_g``: ``g − 1`` zeros then a 1."""
    for T in (1 << 54, 1 << 44):
        tb = sparse.sparse_tables(T)
        ties = _tie_words(tb)
        cases = ([("short", None, 4000, 40, 0)] + [("tie", t, 4000, 40, 0) for t in ties[:1] + ties[-1:]]
                 + [("tie, above the cutoff", t, 4000, 40, 0xFF) for t in ties[-1:]] + [("tie, one event", t, 1, 8, 0) for t in ties[-1:]])
        for kind, tie, need, n_bits, fill in cases:
            results = {}
            for b in run.backends:
                out = np.zeros((-(-need // n_bits), (n_bits + 7) // 8), dtype=np.uint8)
                seg = sparse.SparseSegment(need, n_bits, out, tb, kernels.select("sparse_runs", None, b))
                n1, n2, _ = seg.sizes
                block = SeededRandomSource(seed + 3).random_bytes(seg.first_bytes).copy()
                if tie is None:
                    block[:] = 0xFF
                else:
                    word = tie[1].to_bytes(8, "big")
                    block[:tb.s1] = list(word[:tb.s1])
                    block[n1] = word[tb.s1]
                    block[n1 + n2:n1 + n2 + tb.len3] = list(word[tb.s1 + 1:])
                src = RecordedSource(seed + 4, script=None if tie is None else (lambda i, blk, fill=fill: np.full_like(blk, fill) if i < 2 else blk))
                seg.first(block)
                status = seg.status
                seg.settle(src.random_bytes)
                seg.finish()
                if status != (1 if tie is None else 2):
                    run.fail(f"samplers: sparse {kind} block did not reach its path (status {status}, {b})")
                zeros = None if tie is None else tie[0] - (fill == 0xFF)  # U just above L_g: below c_g; words of ones: above it
                first = _bits(out, n_bits)[: zeros + 1] if tie is not None else None
                if tie is not None and need > zeros and (first[:zeros].any() or first[zeros] != (zeros < tb.M)):
                    run.fail(f"samplers: sparse tie at g = {tie[0]}: not {zeros} zeros then {'a 1' if zeros < tb.M else 'no 1'} ({b})")
                results[b] = (out, src.requests, seg.pos >= need)
            run.same("samplers", f"sparse threshold {T:#x}, {kind}", results)


def _subsets(run: _Run, seed: int, quick: bool) -> None:
    draw = run.impl["sorted_subsets"]
    ds = [2, 3, 15, 16, 17, 63, 64, 65, 1023, 1024, 1025] + ([] if quick else [65535, 65536, 65537])
    for i, d in enumerate(ds):
        for k in sorted({1, d - 1, min(33, d - 1), max(1, d // 2)}):
            if k > 40 and d > 1100:
                continue
            n = 9
            x = np.array([0, d - 1] + [(j * 7919) % d for j in range(n - 2)], dtype=np.int64)
            inc = np.array([True, False, False, True, True, False, True, False, True])
            if k == d - 1:
                inc[:] = False
            results = {}
            for b in run.backends:
                src = RecordedSource(seed + 31 * i + k)
                out = draw(src, x, inc, d, k, b)
                results[b] = (out, src.requests)
                if b == run.backends[0]:
                    _check_subsets(run, out, x, inc, d, k)
            run.same("subsets", f"subsets d={d}, k={k}", results)
    # every word of the first block rejected (the word 0): redrawn in order; more than the kernel's buffer
    d, k, n = 1000, 300, 40
    x = np.arange(n, dtype=np.int64) * 24
    inc = np.arange(n) % 2 == 0
    results = {}
    for b in run.backends:
        src = RecordedSource(seed + 5, script=lambda i, blk: np.zeros_like(blk) if i == 0 else blk)
        out = draw(src, x, inc, d, k, b)
        results[b] = (out, src.requests)
        if len(src.requests) < 2:
            run.fail(f"subsets: the rejected words were not redrawn ({b})")
        _check_subsets(run, out, x, inc, d, k)
    run.same("subsets", "after a block of rejected words", results)
    if not quick:  # two segments of rows
        n = subsets._SUBSET_SEG_DRAWS + 5
        x = np.arange(n, dtype=np.int64) % 17
        inc = np.arange(n) % 3 == 0
        results = {}
        for b in run.backends:
            src = RecordedSource(seed + 6)
            results[b] = (draw(src, x, inc, 17, 1, b), src.requests)
        run.same("subsets", f"subsets d=17, k=1, {n} rows (two segments)", results)


def _check_subsets(run: _Run, out: np.ndarray, x: np.ndarray, inc: np.ndarray, d: int, k: int) -> None:
    a = out.astype(np.int64)
    if a.shape != (x.size, k):
        run.fail(f"subsets: d={d}, k={k}: shape {a.shape}")
        return
    if (a < 0).any() or (a >= d).any() or (k > 1 and not (a[:, 1:] > a[:, :-1]).all()):
        run.fail(f"subsets: d={d}, k={k}: a row is not a sorted subset of [0, d)")
    if not np.array_equal((a == x[:, None]).any(axis=1), inc):
        run.fail(f"subsets: d={d}, k={k}: x is in a row iff include, violated")


# -- aggregation and lookup -------------------------------------------------------------------------

def _aggregation(run: _Run, seed: int, quick: bool) -> None:
    rng = np.random.default_rng(seed)
    hist, grouped = run.impl["bounded_histogram"], run.impl["grouped_histogram"]
    big = [] if quick else [(1 << 19) + 5]
    for dtype in (np.uint8, np.int16, np.uint32, np.int64, np.uint64):
        top = int(min(np.iinfo(dtype).max, 300))
        for size in sorted({1, 2, 255, 256, 257, top} - {0}):
            if size > np.iinfo(dtype).max + 1:
                continue
            for n in [0, 1, 2047, 2048, 2049, 4 * 2048 + 3] + big:
                a = rng.integers(0, size, n).astype(dtype)
                if n > 2:
                    a[0], a[-1] = 0, size - 1
                want = np.bincount(a.astype(np.int64), minlength=size)
                res = {}
                for b in run.backends:
                    got = hist(a, size, backend=b)
                    res[b] = (got,)
                    if not np.array_equal(got, want) or got.dtype != np.int64:
                        run.fail(f"aggregation: bounded_histogram {np.dtype(dtype).name}, size {size}, n {n}: not np.bincount ({b})")
                run.same("aggregation", f"bounded_histogram {np.dtype(dtype).name} {size} {n}", res)
            # one value out of range, at a block edge, at the end, in a signed dtype below 0: refused by both
            info = np.iinfo(dtype)
            for pos, bad in ((2048, size), (4 * 2048 + 2, size), (5, -1), (2047, int(info.max)), (3, int(info.min))):
                if bad in range(size):
                    continue
                if (bad < 0 and np.iinfo(dtype).min == 0) or bad > np.iinfo(dtype).max:
                    continue
                a = rng.integers(0, size, 4 * 2048 + 3).astype(dtype)
                a[pos] = bad
                for b in run.backends:
                    run.cases["aggregation"] += 1
                    try:
                        hist(a, size, message=f"reports must be codes in [0, {size})", backend=b)
                        run.fail(f"aggregation: bounded_histogram counted a code outside [0, {size}) ({b})")
                    except LDPInputError as e:
                        if str(bad) in str(e).replace(f"[0, {size})", ""):
                            run.fail("aggregation: bounded_histogram's refusal echoes the value")
    for what, call in (("float codes", lambda b: hist(np.zeros(3), 4, backend=b)),
                       ("2-d codes", lambda b: hist(np.zeros((2, 2), np.int64), 4, backend=b)),
                       ("unequal lengths", lambda b: grouped(np.zeros(3, np.int64), np.zeros(2, np.int64), 2, 2, backend=b))):
        for b in run.backends:
            run.cases["aggregation"] += 1
            try:
                call(b)
                run.fail(f"aggregation: {what} counted ({b})")
            except LDPInputError:
                pass
    for n_groups, size in ((1, 1), (3, 5), (7, 64)):
        for n in [0, 1, 1000] + big:
            g, v = rng.integers(0, n_groups, n), rng.integers(0, size, n).astype(np.uint16)
            want = np.zeros((n_groups, size), np.int64)
            np.add.at(want, (g, v.astype(np.int64)), 1)
            res = {b: (grouped(g, v, n_groups, size, backend=b),) for b in run.backends}
            for b, (got,) in res.items():
                if not np.array_equal(got, want):
                    run.fail(f"aggregation: grouped_histogram {n_groups}x{size}, n {n}: wrong counts ({b})")
            run.same("aggregation", f"grouped_histogram {n_groups}x{size} {n}", res)
        g = rng.integers(0, n_groups, 50)
        g[-1] = n_groups
        for b in run.backends:
            run.cases["aggregation"] += 1
            try:
                grouped(g, np.zeros(50, np.int64), n_groups, size, backend=b)
                run.fail(f"aggregation: grouped_histogram counted a group outside [0, {n_groups}) ({b})")
            except LDPInputError:
                pass
    _columns(run, rng, quick)
    _matching(run, rng, quick)


def _columns(run: _Run, rng: np.random.Generator, quick: bool) -> None:
    counts = run.impl["packed_column_counts"]
    shapes = [(n, d) for d in (1, 7, 8, 9, 63, 64, 65, 255, 256, 257, 320, 511, 512, 513) for n in (0, 1, 15, 16, 255, 256, 257)]
    shapes += [((1 << 15) + 1, 72)] + ([] if quick else [((1 << 18) + 3, 64), ((1 << 18) + 3, 600)])  # a tree chunk; a thread split
    for n, d in shapes:
        nb = (d + 7) // 8
        p = rng.integers(0, 256, (n, nb), dtype=np.uint8)
        if d % 8 and n:
            p[:, -1] &= (1 << (d % 8)) - 1
        want = np.unpackbits(p, axis=1, bitorder="little")[:, :d].sum(axis=0).astype(np.int64) if n else np.zeros(d, np.int64)
        res = {b: (counts(p, d, backend=b),) for b in run.backends}
        for b, (got,) in res.items():
            if not np.array_equal(got, want):
                run.fail(f"aggregation: packed_column_counts {n}x{d}: not the unpacked sums ({b})")
        run.same("aggregation", f"packed_column_counts {n}x{d}", res)
    wide = rng.integers(0, 256, (300, 20), dtype=np.uint8)  # a strided band of a wider matrix
    band = wide[:, 3:11]
    want = np.unpackbits(band, axis=1, bitorder="little").sum(axis=0).astype(np.int64)
    res = {b: (counts(band, 64, backend=b),) for b in run.backends}
    if any(not np.array_equal(g, want) for (g,) in res.values()):
        run.fail("aggregation: packed_column_counts of a strided band: not the unpacked sums")
    run.same("aggregation", "packed_column_counts strided", res)


def _matching(run: _Run, rng: np.random.Generator, quick: bool) -> None:
    match, support, rows_hist = run.impl["rows_match"], run.impl["hashed_support"], run.impl["sorted_rows_histogram"]
    for m in (0, 1, 5, 1000):
        buf = rng.integers(0, 3, (m, 40), dtype=np.uint8)
        for off, L in ((0, 0), (0, 1), (3, 7), (8, 8), (1, 9), (20, 16), (23, 17)):
            pat = bytes(buf[0, off:off + L]) if m else bytes(L)
            want = (buf[:, off:off + L] == np.frombuffer(pat, np.uint8)).all(axis=1) if m else np.ones(0, bool)
            res = {b: (match(buf, off, pat, backend=b),) for b in run.backends}
            for b, (got,) in res.items():
                if not np.array_equal(got, want):
                    run.fail(f"aggregation: rows_match m={m}, offset {off}, length {L}: wrong rows ({b})")
            run.same("aggregation", f"rows_match {m} {off} {L}", res)
    if "numba" in run.backends:  # the compiled hashed support against its definition (the numpy path is the caller's loop)
        for n, d in ((0, 3), (1, 1), (257, 65), (3000, 17)) + (() if quick else (((1 << 18) + 1, 64),)):  # the last: a thread split
            a = rng.integers(0, 2**64, n, dtype=np.uint64) | np.uint64(1)
            bb = rng.integers(0, 2**64, n, dtype=np.uint64)
            width = rng.integers(0, 2**64, n, dtype=np.uint64)
            keys = np.concatenate([np.array([0, 2**64 - 1], np.uint64), rng.integers(0, 2**64, max(0, d - 2), dtype=np.uint64)])[:d]
            want = np.zeros(d, np.int64)
            for lo in range(0, n, 1 << 14):
                sl = slice(lo, lo + (1 << 14))
                want += (((a[sl, None] * keys[None, :]) + bb[sl, None]) < width[sl, None]).sum(axis=0)
            got = support(a, bb, width, keys, backend="numba")
            run.cases["aggregation"] += 1
            if got is None or not np.array_equal(got, want):
                run.fail(f"aggregation: hashed_support n={n}, d={d}: not the definition")
        run.cases["aggregation"] += 1
        if support(np.ones(2, np.uint64), np.ones(2, np.uint64), np.ones(2, np.uint64), np.ones(2, np.uint64), backend="numpy") is not None:
            run.fail("aggregation: hashed_support on the numpy backend did not leave the count to the caller")
    for m, k, size in ((0, 3, 10), (1, 1, 1), (500, 4, 50), (70000, 3, 600)) + (() if quick else ((700001, 3, 600),)):
        a = np.zeros((0, k), np.uint16)
        if m:
            a = np.sort(np.stack([rng.choice(size, k, replace=False) for _ in range(min(m, 300))]), axis=1).astype(np.uint16)
        if m > 300:
            a = np.tile(a, (-(-m // 300), 1))[:m]
        for variant in ("ok", "out of range", "not increasing"):
            b_ = a.copy()
            if m and variant == "out of range":
                b_[-1, -1] = size
            if m and k > 1 and variant == "not increasing":  # at a step boundary of the numpy twin when the batch spans one
                at = min(m - 1, agg._ROWS_STEP)
                b_[at, :2] = b_[at, 1], b_[at, 0]
            res = {b: rows_hist(b_, size, backend=b) for b in run.backends}
            want_flags = (1 if variant == "out of range" and m else 0) | (2 if variant == "not increasing" and m and k > 1 else 0)
            for b, (cnt, flags) in res.items():
                if flags != want_flags:
                    run.fail(f"aggregation: sorted_rows_histogram {m}x{k} ({variant}): flags {flags}, expected {want_flags} ({b})")
                if flags == 0 and not np.array_equal(cnt, np.bincount(b_.ravel().astype(np.int64), minlength=size)):
                    run.fail(f"aggregation: sorted_rows_histogram {m}x{k}: not np.bincount ({b})")
            run.same("aggregation", f"sorted_rows_histogram {m}x{k} {variant}", {b: (c if f == 0 else None, f) for b, (c, f) in res.items()})


def _reference_codes(values: np.ndarray, categories: tuple) -> tuple:
    index = {c: i for i, c in enumerate(categories)}
    if values.dtype.kind == "S" and all(isinstance(c, str) for c in categories):
        index = {c.encode("utf-8", "surrogatepass"): i for i, c in enumerate(categories)}
    codes = np.array([index.get(v, -1) for v in values.tolist()], dtype=np.int64)
    bad = np.flatnonzero(codes < 0)
    return codes, int(bad[0]) if bad.size else -1


def _lookup(run: _Run, seed: int, quick: bool) -> None:
    lookup = run.impl["fixed_width_codes"]
    rng = np.random.default_rng(seed + 11)
    texts = ("a", "bc", "déf", "ghij", "klmnopqr", "s" * 9, "tu\x00", "\x00v", "", "日本")
    collide = tuple("".join(p) for p in itertools.product("ab", repeat=9))  # 512 labels alike on any 3 columns
    n_step = row_lookup._STEP + 1
    cases = [(texts, "U1"), (texts, "U3"), (texts, "U8"), (texts, "U9"), (texts, "S9"), (texts, "S4"),
             (tuple(t.encode() for t in texts), "S8"), (collide, "U9"), (("wide",), "U2")]
    for cats, dtype in cases:
        width = int(dtype[1:])
        labels = [c.encode() if dtype[0] == "S" and isinstance(c, str) else c for c in cats]
        fits = [c for c in labels if len(c) <= width and not c.endswith("\x00" if isinstance(c, str) else b"\x00")]
        pool = np.array(fits or ["x"], dtype=dtype)
        pool_codes = _reference_codes(pool, cats)[0]  # the dictionary lookup of each distinct value
        unknown = np.array(["zz" if dtype[0] == "U" else b"zz"], dtype=dtype)
        unknown_code = int(_reference_codes(unknown, cats)[0][0])
        for n in (0, 1, 333, n_step) + (() if quick else ((1 << 19) + 7,)):
            idx = rng.integers(0, pool.size, n)
            values = pool[idx] if n else np.zeros(0, dtype=dtype)
            variants = [(values, pool_codes[idx])]
            if n > 2:  # a strided view (read through a contiguous copy)
                variants.append((values[::2], pool_codes[idx][::2]))
            for pos in sorted({0, n - 1, min(n - 1, row_lookup._STEP)}) if n else ():
                v, want = values.copy(), pool_codes[idx]
                v[pos], want[pos] = unknown[0], unknown_code
                variants.append((v, want))
            for j, (v, want_codes) in enumerate(variants):
                missing = np.flatnonzero(want_codes < 0)
                want_bad = int(missing[0]) if missing.size else -1
                res = {}
                for b in run.backends:
                    codes, bad = lookup(v, cats, backend=b)
                    res[b] = (codes if bad < 0 else None, bad)
                    if bad != want_bad or (bad < 0 and not np.array_equal(codes, want_codes)):
                        run.fail(f"lookup: {dtype}, {len(cats)} categories, n {n}, variant {j}: not the dictionary lookup ({b})")
                run.same("lookup", f"{dtype} {len(cats)} {n} {j}", res)
    many = tuple(f"{(i * 2654435761) % 10**9:09d}" for i in range(1 << 15))  # categories x varying columns beyond the column search
    for values, want in ((np.array(many[::97], dtype="U9"), -1), (np.array(many[::97] + ("zz",), dtype="U9"), 338)):
        for b in run.backends:
            codes, bad = lookup(values, many, backend=b)
            run.cases["lookup"] += 1
            if bad != want or (bad < 0 and not np.array_equal(codes, np.arange(0, 1 << 15, 97))):
                run.fail(f"lookup: 2**15 categories: not the dictionary lookup ({b})")
    run.cases["lookup"] += 1
    if row_lookup.lookup_backend() != agg.aggregate_backend():
        run.fail("lookup: the text lookup and the aggregation report different backends for one call size")
    lst = ["a", b"bc", "zz", 3]
    run.cases["lookup"] += 1
    got = row_lookup.list_codes(lst, texts)
    if got is None or got[1] != 2 or got[0][:2].tolist() != [0, 1]:
        run.fail("lookup: list_codes against str categories: not the dictionary lookup (bytes read as UTF-8)")
    if row_lookup.list_codes([["unhashable"]], texts) is not None or row_lookup.list_codes(["a"], (1, 2)) is not None:
        run.fail("lookup: list_codes did not leave an unhashable value or non-text categories to the general path")
    _list_lookup(run, rng, quick)
    _layout_probe(run)


#: texts of every canonical width (1 byte ASCII and Latin-1, 2 bytes, 4 bytes; lone surrogates),
#: with pairs of one byte string in two widths ("ab" and U+6261 are both the bytes ``ab``;
#: "\x00\x01" and U+0100 both ``00 01``; U+6261 and "ab\x00\x00" in four and one byte): a value
#: matches a category only at its own width
_WIDTH_TEXTS = ("", "a", "ab", "\u6261", "ab\x00\x00", "\x00\x01", "\u0100", "\U00006261", "é", "été", "日本", "مرحبا",
                "\ud800", "a\ud800", "😀", "a😀", "𠀀𠀁", "x" * 17, "日" * 9, "😀" * 5)


def _list_lookup(run: _Run, rng: np.random.Generator, quick: bool) -> None:
    """The list lookup (a list, tuple or object array of ``str``/``bytes``) on both backends equals
    the dictionary lookup, on texts of every width and their UTF-8 bytes, whole or with a value
    that is no category (a text one character off, or the same bytes in another width)."""
    lookup = run.impl["list_codes"]
    cats = tuple(c for c in _WIDTH_TEXTS if c != "\U00006261")  # its one-byte twin "ab\x00\x00" is a category
    index = {c: i for i, c in enumerate(cats)}
    index.update({c.encode("utf-8", "surrogatepass"): i for i, c in enumerate(cats)})
    for n in (1, 7, 300) + (() if quick else (70_001,)):
        picks = rng.integers(0, len(cats), n)
        values = ["".join(chr(ord(ch)) for ch in cats[i]) for i in picks.tolist()]  # fresh objects
        if n > 3:
            values[1] = values[1].encode("utf-8", "surrogatepass")
        variants = [values]
        for miss in ("\U00006261", "aé", "日", b"\xe9"):
            v = list(values)
            v[n // 2] = miss
            variants.append(v)
        for j, v in enumerate(variants):
            want = np.array([index.get(x, -1) for x in v], dtype=np.int64)
            want_bad = int(np.flatnonzero(want < 0)[0]) if (want < 0).any() else -1
            arr = np.empty(len(v), dtype=object)
            arr[:] = v
            for form, seq in (("list", v), ("tuple", tuple(v)), ("object array", arr)):
                for b in run.backends:
                    run.cases["lookup"] += 1
                    got = lookup(seq, cats, backend=b)
                    if got is None or got[1] != want_bad or (want_bad < 0 and not np.array_equal(got[0], want)):
                        run.fail(f"lookup: a {form} of {n} texts of every width, variant {j}: not the dictionary lookup ({b})")
    _two_thread_list(run, lookup, cats, index, rng)


def _two_thread_list(run: _Run, lookup: Callable, cats: tuple, index: dict, rng: np.random.Generator) -> None:
    """Past ``2·_SPLIT`` items the compiled list lookup runs on two threads, chunk by chunk: it
    equals the dictionary lookup, whole and with misses in two chunks (the first one's position),
    with the pool thread joining and with it cancelled (a wait of 0 s: the caller runs alone)."""
    n = 2 * row_lookup._SPLIT + 3
    values = ["".join(chr(ord(ch)) for ch in cats[i]) for i in rng.integers(0, len(cats), n).tolist()]
    want = np.array([index[x] for x in values], dtype=np.int64)
    missed = list(values)
    first = int(rng.integers(row_lookup._CHUNK, n // 2))
    missed[first], missed[n - 2] = "\U00006261", None
    wait = row_lookup._HELPER_WAIT
    try:
        for helper_wait in (5.0, 0.0):
            row_lookup._HELPER_WAIT = helper_wait
            for b in run.backends:
                run.cases["lookup"] += 2
                got, bad = lookup(values, cats, backend=b), lookup(missed, cats, backend=b)
                if got is None or got[1] != -1 or not np.array_equal(got[0], want) or bad is None or bad[1] != first:
                    run.fail(f"lookup: a list of {n} texts (two threads, helper wait {helper_wait} s): not the dictionary lookup ({b})")
    finally:
        row_lookup._HELPER_WAIT = wait


def _layout_probe(run: _Run) -> None:
    """The object layout the compiled list lookup reads is confirmed field by field: with any one
    header field moved the probe gives None (and the list lookup then takes the dictionary pass);
    restored, it confirms the layout again."""
    probe = object_layout.object_layout
    if probe() is None:
        return  # another interpreter: the dictionary pass runs, and is held to the reference above
    header = object_layout._HEADER
    for field, value in list(header.items()):
        if field == "list_items_offset":
            continue  # followed as a pointer: reached only after every other field is confirmed
        for wrong in (value - 1, value + 1, value + 8):
            run.cases["lookup"] += 1
            header[field] = wrong
            probe.cache_clear()
            try:
                if probe() is not None:
                    run.fail(f"lookup: the object layout probe confirmed {field} = {wrong} (it is {value})")
            finally:
                header[field] = value
                probe.cache_clear()
    if probe() is None:
        run.fail("lookup: the object layout probe no longer confirms this interpreter's layout")


# -- the secure source and the sampling API ---------------------------------------------------------

#: χ² of 256 byte counts (255 degrees of freedom) at α = 1e-9
_CHI2_BYTES = float(stats.chi2.isf(1e-9, 255))


def _uniform(block: np.ndarray) -> bool:
    counts = np.bincount(block, minlength=256)
    expected = block.size / 256
    return float(((counts - expected) ** 2 / expected).sum()) < _CHI2_BYTES


class _ConcurrentSource(RandomSource):
    """A thread-safe source that declares ``concurrent_draws`` and keeps the base class's worker
    draw (the OS CSPRNG through :meth:`random_bytes`): how a third-party source joins the workers."""

    concurrent_draws = True

    def random_bytes(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(n), dtype=np.uint8).copy()


def _secure(run: _Run, quick: bool) -> dict:
    src = SecureRandomSource()
    n = SecureRandomSource._PARALLEL_MIN + 4099
    with PathTrace() as trace:
        block = src.random_bytes(n)
    workers = int(trace.counts.get("threaded-request", 0))
    run.cases["secure"] += 1
    if block.shape != (n,) or block.dtype != np.uint8:
        run.fail("secure: a split request returned the wrong size")
    if workers >= 2:
        bounds = np.linspace(0, n, workers + 1).astype(np.int64)
        shares = [block[bounds[i]:bounds[i + 1]] for i in range(workers)]
        if not all(_uniform(s) for s in shares):
            run.fail("secure: a worker's share of a split request is not uniform (χ², α = 1e-9)")
        if len({bytes(s[:64]) for s in shares}) != workers:
            run.fail("secure: two workers' shares of a split request start alike (a reused key or counter)")
    if not _uniform(block):
        run.fail("secure: a split request is not uniform (χ², α = 1e-9)")
    paths = {"split_workers": workers, "backend": src.backend}
    if not quick:  # two segments drawn by the workers themselves (the secure source; a source that only says it may): the law
        T = 3 << 62
        rows = bernoulli._SEG_EVENTS // 64 + 3
        for name, source in (("the secure source", src), ("a concurrent source", _ConcurrentSource())):
            with PathTrace() as trace:
                out = source.bernoulli_packed(T, rows, 64)
            ones = int(np.unpackbits(out).sum())
            n_ev = rows * 64
            run.cases["secure"] += 1
            if abs(ones - 0.75 * n_ev) > 6.5 * (0.75 * 0.25 * n_ev) ** 0.5:
                run.fail(f"secure: a two-segment batch's rate of ones on {name} is not 3/4 (beyond 6.5 sd)")
            paths.setdefault("worker_draws", int(trace.counts.get("worker-draws", 0)))
            if (os.cpu_count() or 1) >= 2 and not trace.counts.get("worker-draws", 0):
                run.fail(f"secure: a two-segment batch on {name} was not drawn by the workers")
    run.cases["secure"] += 1
    if random_backend() != src.backend or repr(src) != "SecureRandomSource()" or not src.secure:
        run.fail("secure: the secure source does not label itself")
    seeded = SeededRandomSource(3, stream=(1, 2))
    if seeded.secure or "not secure" not in repr(seeded):
        run.fail("secure: a seeded source is not labelled not secure")
    return paths


def _refused(run: _Run, what: str, call: Callable, parameter: str, value: Any = None, kind: type = LDPParameterError) -> None:
    """``call(source)`` must be refused (:func:`~ldp_plugin.verification.refusals.refusal_problems`):
    ``kind`` naming ``parameter``, without ``value``'s digits, drawing nothing from the source."""
    src = RecordedSource(0)
    run.cases["refusals"] += 1
    for why in refusal_problems(lambda: call(src), errors=(kind,), names=(parameter,), values=() if value is None else (value,),
                                unchanged={"the randomness drawn": lambda: len(src.requests)}):
        run.fail(f"refusals: {what}: {why}")


def _api(run: _Run) -> None:
    big = TWO64 + 12345
    _refused(run, "bernoulli above 2**64", lambda s: s.bernoulli(big, 3), "threshold", big)
    _refused(run, "bernoulli below 0", lambda s: s.bernoulli(-7, 3), "threshold")
    _refused(run, "packed threshold", lambda s: s.bernoulli_packed(big, 2, 3), "threshold", big)
    _refused(run, "packed rows", lambda s: s.bernoulli_packed(1 << 63, -5, 3), "n_rows")
    _refused(run, "rows positions shape", lambda s: s.bernoulli_rows(1, 2, 8, np.zeros(2, np.int64), 1), "positions")
    _refused(run, "rows positions range", lambda s: s.bernoulli_rows(1, 2, 8, np.full((2, 1), 8123), 1), "positions", 8123)
    _refused(run, "rows p threshold", lambda s: s.bernoulli_rows(1, 2, 8, np.zeros((2, 1), np.int64), big), "threshold", big)
    _refused(run, "uniform_int range", lambda s: s.uniform_int((1 << 32) + 77, 2), "range r", (1 << 32) + 77)
    _refused(run, "uniform_int_each range", lambda s: s.uniform_int_each(np.array([3, 0])), "ranges")
    _refused(run, "subset size", lambda s: s.sorted_subsets(np.zeros(2, np.int64), np.zeros(2, bool), 5, 5), "k")
    _refused(run, "subset items", lambda s: s.sorted_subsets(np.array([0, 9377]), np.zeros(2, bool), 5, 2), "items x", 9377)
    _refused(run, "subset shapes", lambda s: s.sorted_subsets(np.zeros(2, np.int64), np.zeros(3, bool), 5, 2), "include")
    _refused(run, "subset domain", lambda s: s.sorted_subsets(np.zeros(1, np.int64), np.zeros(1, bool), (1 << 32) + 2, 1), "d <= 2**32")
    _refused(run, "shuffle prefix", lambda s: s.partial_shuffle_prefix(2, 3, 4), "subset size")
    _refused(run, "poisson m", lambda s: poisson.poisson_dyadic(s, 0, 1, 2), "m")
    _refused(run, "poisson threshold", lambda s: poisson.poisson_dyadic(s, 1, (1 << 63) + 5, 2), "threshold", (1 << 63) + 5)
    _refused(run, "poisson size", lambda s: poisson.poisson_dyadic(s, 1, 1, -3), "size")
    _refused(run, "dyadic rate", lambda s: poisson.dyadic_rate(0), "mu")
    _refused(run, "dyadic rate too small", lambda s: poisson.dyadic_rate(2.0 ** -80), "mu")
    _refused(run, "seed", lambda s: SeededRandomSource(-4), "seed")
    _refused(run, "rng", lambda s: as_source("not a source"), "rng")
    _refused(run, "chunk rng", lambda s: chunk_source(2.5, 1), "rng")
    _refused(run, "sparse tables", lambda s: sparse.sparse_tables(0), "threshold", kind=ValueError)
    _refused(run, "kernel backend", lambda s: kernels.select("decode_runs", 1, "fortran"), "backend")
    with kernel_env("fortran"):
        _refused(run, "LDP_PLUGIN_KERNELS", lambda s: kernels.kernel_backend(), "LDP_PLUGIN_KERNELS", "fortran", kind=ValueError)
    with kernel_env("numpy"):  # the plain value: no compiled kernel runs, whatever is loaded (an explicit backend still may)
        run.cases["refusals"] += 1
        chosen = (kernels.preload(1 << 62), agg.aggregate_backend(), row_lookup.lookup_backend(), kernels.select("sparse_runs", 1 << 62))
        if chosen != ("numpy", "numpy", "numpy", None):
            run.fail("refusals: LDP_PLUGIN_KERNELS=numpy did not keep every dispatch on the numpy twins")
    with kernel_env("numba"):  # the fast value without its package: an ImportError naming the extra
        _refused(run, "fast path without its package", lambda s: _env.use_fast("LDP_PLUGIN_KERNELS", "numpy", "numba", lambda: None, "numba"),
                 "ldp-plugin[fast]", kind=ImportError)
    # unary rows: the listed positions redrawn with p, on the dense, sparse and complemented paths
    for q in (1 << 63, 1 << 40, TWO64 - (1 << 40)):
        src = RecordedSource(5)
        pos = np.array([[0, 8], [9, 9], [3, 16], [16, 1]])
        for p_t, bit in ((TWO64, 1), (0, 0)):
            rows = src.bernoulli_rows(q, 4, 17, pos, p_t)
            run.cases["refusals"] += 1
            if not (_bits(rows, 17).reshape(4, 17)[np.arange(4)[:, None], pos] == bit).all() or (rows[:, -1] >> 1).any():
                run.fail(f"refusals: bernoulli_rows with p = {bit}: a listed position is not {bit}, or padding set (q {q:#x})")
    # a uniform word equal to the threshold, digit by digit (W == T is not below T), and one below it
    T = 0x9E3779B97F4A7C15
    digits = ((T & ((1 << 60) - 1)) << 4).to_bytes(8, "big")
    for last, want in ((digits[7], False), (digits[7] - 1, True)):
        def script(i: int, blk: np.ndarray, last: int = last) -> np.ndarray:
            fill = (T >> 60) * 17 if i == 0 else (digits[i - 1] if i < 8 else last)
            return np.full_like(blk, fill)
        src = RecordedSource(6, script=script)
        got = src.bernoulli(T, 6)
        run.cases["refusals"] += 1
        if not (got == want).all() or len(src.requests) != 9:
            run.fail(f"refusals: bernoulli with a word {'equal to' if not want else 'just below'} the threshold is not {want}")
    # the exact edges draw nothing
    src = RecordedSource(0)
    edges = [src.bernoulli(0, 5).sum() == 0, src.bernoulli(TWO64, 5).all(), (src.uniform_int(1, 4) == 0).all(),
             (src.uniform_int_each(np.ones(3, np.uint64)) == 0).all(), (src.bernoulli_rows(0, 3, 9, np.array([[0], [8], [4]]), TWO64)
                                                                       == np.array([[1, 0], [0, 1], [16, 0]], np.uint8)).all()]
    run.cases["refusals"] += 1
    if not all(edges) or src.requests:
        run.fail("refusals: an exact edge (probability 0 or 1, range 1) drew randomness or is not exact")
    # per-chunk streams: the same chunk, the same stream; another chunk or partition, another
    run.cases["refusals"] += 1
    a, b, c = (chunk_source(SeededRandomSource(9), 1), chunk_source(9, 1), chunk_source(9, 2, partition=0))
    if not (np.array_equal(a.random_bytes(16), b.random_bytes(16)) and not np.array_equal(chunk_source(9, 1).random_bytes(16), c.random_bytes(16))
            and chunk_source(None, 3).secure and kernels.preload(1) in ("numpy", "numba")):
        run.fail("refusals: chunk streams are not one per chunk and partition")


def _numba_loads() -> bool:
    """Whether the compiled kernels load here (numba installed, importable and compiling)."""
    if not numba_available():
        return False
    try:
        return kernels.select("decode_runs", None, "numba") is not None
    except ImportError:
        return False


#: a fresh interpreter in which the fast extra's packages cannot be imported
_PLAIN = """
import json, os, sys
sys.modules["numba"] = None
sys.modules["cryptography"] = None
import numpy as np
from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource, cipher, kernels
out = {"kernels": kernels.kernel_backend(), "random": cipher.random_backend(), "secure": SecureRandomSource().random_bytes(1 << 17).size}
for var, value, call in (("LDP_PLUGIN_KERNELS", "numba", kernels.kernel_backend), ("LDP_PLUGIN_RANDOM", "aes", cipher.random_backend)):
    os.environ[var] = value
    try:
        call()
        out[var] = ""
    except ImportError as e:
        out[var] = str(e)
    del os.environ[var]
src = SeededRandomSource(7)
out["packed"] = src.bernoulli_packed(3 << 62, 50, 33).tobytes().hex()
out["subsets"] = src.sorted_subsets(np.arange(20) % 9, np.arange(20) % 2 == 0, 9, 4).tobytes().hex()
print(json.dumps(out))
"""


def _plain(run: _Run) -> None:
    """Without the ``fast`` extra (numba and cryptography unimportable, in a fresh interpreter): the
    kernels fall back to the numpy twins and the secure source to ``os.urandom``, a seeded release is
    the one the numpy twins give here, and asking for either fast path is an ImportError naming the extra."""
    env = {k: v for k, v in os.environ.items() if k not in ("LDP_PLUGIN_KERNELS", "LDP_PLUGIN_RANDOM")}
    done = subprocess.run([sys.executable, "-c", _PLAIN], env=env, capture_output=True, text=True, timeout=300, check=False)
    run.cases["plain"] += 1
    if done.returncode != 0:
        run.fail("plain: the interpreter without the fast extra failed")
        return
    out = json.loads(done.stdout.strip().splitlines()[-1])
    src = SeededRandomSource(7)
    packed = src._packed(3 << 62, 50, 33, backend="numpy").tobytes().hex()
    subs = subsets.sorted_subsets(src, np.arange(20) % 9, np.arange(20) % 2 == 0, 9, 4, "numpy").tobytes().hex()
    if (out["kernels"], out["random"], out["secure"]) != ("numpy", "os.urandom", 1 << 17):
        run.fail("plain: without the fast extra the backends are not numpy and os.urandom")
    if (out["packed"], out["subsets"]) != (packed, subs):
        run.fail("plain: a seeded release without the fast extra differs from the numpy twins'")
    if not all("ldp-plugin[fast]" in out[v] for v in ("LDP_PLUGIN_KERNELS", "LDP_PLUGIN_RANDOM")):
        run.fail("plain: asking for a fast path without its package is not an ImportError naming the extra")


#: the layer's families of checks, in order (``plain`` runs in the full run only: it starts an interpreter)
FAMILIES = ("samplers", "subsets", "aggregation", "lookup", "secure", "refusals", "plain")


def kernels_layer(*, seed: int = 0, quick: bool = False, directory: Any = None, impl: Optional[dict] = None,
                  only: Optional[tuple] = None) -> dict:
    """Every check of the module docstring: ``{"layer", "passed", "failures", "cases", "backends",
    "secure", "seconds"}``. ``impl`` replaces entries of :data:`IMPLEMENTATIONS` (a seeded bug);
    ``only`` runs some of :data:`FAMILIES` (default: all); ``directory`` is unused (nothing is written)."""
    t0 = time.perf_counter()
    backends = ("numpy", "numba") if _numba_loads() else ("numpy",)
    run = _Run(backends, {**IMPLEMENTATIONS, **(impl or {})})
    todo = FAMILIES if only is None else tuple(only)
    if set(todo) - set(FAMILIES):
        raise LDPParameterError(f"only must name some of {FAMILIES}")
    secure: dict = {}
    for family in todo:
        if family == "samplers":
            _dense_and_sparse(run, seed, quick)
        elif family == "subsets":
            _subsets(run, seed, quick)
        elif family == "aggregation":
            _aggregation(run, seed, quick)
        elif family == "lookup":
            _lookup(run, seed, quick)
        elif family == "secure":
            secure = _secure(run, quick)
        elif family == "refusals":
            _api(run)
        elif not quick:
            _plain(run)
    return {"layer": "kernels", "passed": not run.failures, "failures": run.failures, "cases": dict(run.cases), "backends": list(backends),
            "secure": secure, "seconds": round(time.perf_counter() - t0, 2)}
