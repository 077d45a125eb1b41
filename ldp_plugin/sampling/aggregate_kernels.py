"""Server-side aggregation kernels: report histograms and column sums of packed bit matrices at
close to memory speed.

Every function here returns *counts* (int64), exactly: nothing is sampled, so both backends —
the compiled numba kernels of :mod:`ldp_plugin.sampling._numba_aggregate` and the numpy twins
below — return identical arrays (tested against each other and against the reference
``np.bincount`` / ``np.unpackbits(...).sum``). The backend follows ``LDP_PLUGIN_KERNELS``
(:func:`ldp_plugin._kernels.kernel_backend`; ``auto`` loads numba only for calls of at least
:data:`~ldp_plugin._kernels.LAZY_WORK` elementary steps unless it is loaded already).

* :func:`bounded_histogram` — k-RR, Hadamard response, any report that is one code in
  ``[0, size)``: one pass that counts and range-checks together (4 interleaved sub-histograms per
  thread, both cores), instead of ``min``/``max`` passes and a cast to ``intp`` before
  ``np.bincount``.
* :func:`packed_column_counts` — unary encodings (RAPPOR, OUE, THE, ...): the number of rows with
  bit ``j`` set, read from the packed bytes without unpacking them. Numba: byte-lane SWAR
  counters (8 columns per 64-bit word and bit plane, flushed every 255 rows); numpy: a bit-sliced
  adder tree (rows added pairwise with word-wide half/full adders).
* :func:`grouped_histogram` — cohort mechanisms: per-cohort counts of the reported cell, one pass.

Every function takes ``backend`` (None: the ``LDP_PLUGIN_KERNELS`` rule; ``"numpy"``/``"numba"``:
that implementation, :func:`ldp_plugin.sampling.kernels.select_table`), so both can run in one
process (the verification's kernels layer holds each kernel to its twin).
* :func:`admit_nonce_rows` — the collector's nonce admission (compiled only; the numpy twin is
  :class:`~ldp_plugin.federated.nonces.NonceSet`'s sorted arrays), its scan of the rows on both cores.
"""

from __future__ import annotations

import os

import numpy as np

from .._errors import LDPInputError
from .kernels import select_table
from .runner import _thread_pool

__all__ = ["bounded_histogram", "packed_column_counts", "grouped_histogram", "aggregate_backend", "rows_match", "aggregate_kernel", "hashed_support", "sorted_rows_histogram",
           "admit_nonce_rows"]

#: rows per adder-tree chunk of the numpy twin (bounds its working memory at a few MB)
_TREE_ROWS = 1 << 15
#: the smallest batch split over threads (thread start-up costs more below)
_SPLIT_MIN = 1 << 17
#: rows of at most this many 64-bit words take the register-blocked column-count kernel
_NARROW_WORDS = 4
#: nonce admission: the smallest share of one thread in its scan of the rows
_SCAN_SPLIT = 1 << 18
#: histograms: the smallest share of one thread (a histogram pass is ~0.5 ns per report: from
#: 2**19 reports on, two threads save more than their hand-off costs)
_HIST_SPLIT = 1 << 18


def _kernels(work: int, backend: str | None = None) -> dict | None:
    """The compiled aggregation kernels when the numba backend runs a call of ``work`` steps."""
    return select_table("_numba_aggregate", work, backend)


def aggregate_kernel(name: str, work: int, backend: str | None = None):
    """The compiled kernel ``name`` of :mod:`._numba_aggregate` for a call of ``work`` steps, or
    None (the caller runs its numpy twin)."""
    k = _kernels(work, backend)
    return None if k is None else k[name]


def aggregate_backend(work: int = 1 << 62) -> str:
    """``"numba"`` or ``"numpy"``: which implementation a call of ``work`` steps uses."""
    return "numba" if _kernels(work) is not None else "numpy"


def _splits(n: int, parts: int) -> list:
    step = -(-n // parts)
    return [(a, min(n, a + step)) for a in range(0, n, step)] if n else []


def split_run(fn, count: int) -> list:
    """``[fn(0), …, fn(count − 1)]`` with ``fn(0)`` on the calling thread and the others on the
    pool (the compiled kernels release the GIL): one hand-off fewer than mapping every share
    onto the pool, which counts at 10^6 reports (a share takes a few hundred µs)."""
    if count <= 1:
        return [fn(0)] if count else []
    futures = [_thread_pool(count - 1).submit(fn, j) for j in range(1, count)]
    first = fn(0)
    return [first] + [f.result() for f in futures]


def _workers(n: int, split: int = _SPLIT_MIN) -> int:
    return max(1, min(os.cpu_count() or 1, 4, n // split))


def admit_nonce_rows(keys, used, rows, off, pattern, salt, out, poff, payload, tmp, stage, bucket_bits) -> int:
    """The compiled ``nonce_admit_matching`` of :mod:`._numba_aggregate` (numba loaded: the caller
    checked), with its first pass — the scan of the rows: header band, nonce words, hash, payload
    gathered — split over the cores from ``2·_SCAN_SPLIT`` rows on. Each share writes its matching
    rows from its own first row on and counts its own regions; the shares are then closed up in
    row order (a gap only where rows did not match) and the histograms summed, so the inserts see
    exactly the entries, in exactly the order, of the one-thread kernel: the same table, statuses
    and payloads (tested against it)."""
    k = _kernels(1 << 62)
    m = rows.shape[0]
    parts = _splits(m, _workers(m, _SCAN_SPLIT))
    if len(parts) <= 1:
        return int(k["nonce_admit_matching"](keys, used, rows, off, pattern, salt, out, poff, payload, tmp, stage, bucket_bits))
    mask, shift, regions = k["nonce_regions"](keys.shape[0], bucket_bits)
    counts = [np.zeros(regions + 1, dtype=np.int64) for _ in parts]
    scan = k["nonce_scan"]
    shares = split_run(lambda j: scan(rows, parts[j][0], parts[j][1], off, pattern, salt, out, poff, payload, tmp, counts[j], mask, shift), len(parts))
    good = 0
    for (lo, _), g in zip(parts, shares):
        if lo != good and g:  # rows of an earlier share did not match: close the gap, order kept
            tmp[good:good + g] = tmp[lo:lo + g]
            if payload.shape[1]:
                payload[good:good + g] = payload[lo:lo + g]
        good += int(g)
    start = np.sum(counts, axis=0)
    return int(k["nonce_insert"](keys, used, salt, out, payload, tmp, good, start, stage, mask, shift))


def bounded_histogram(codes: np.ndarray, size: int, *, message: str = "", backend: str | None = None) -> np.ndarray:
    """``np.bincount(codes, minlength=size)`` (int64, length ``size``) of a 1-d integer array
    whose every value must lie in ``[0, size)``; a value outside raises :class:`LDPInputError`
    with ``message`` (it names the range, never the value) and nothing is counted."""
    message = message or f"reports must be codes in [0, {size})"
    a = np.asarray(codes)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise LDPInputError("reports must be a 1-d array of integer codes")
    n = a.shape[0]
    if n == 0:
        return np.zeros(size, dtype=np.int64)
    k = _kernels(n, backend)
    if k is not None:
        a = np.ascontiguousarray(a)
        parts = _splits(n, _workers(n, _HIST_SPLIT))
        hists = [np.zeros((4, size), dtype=np.int64) for _ in parts]
        run = k["bounded_histogram"]
        bad = sum(split_run(lambda j: run(a, parts[j][0], parts[j][1], size, hists[j]), len(parts)))
        if bad:
            raise LDPInputError(message)
        return np.sum([h.sum(axis=0) for h in hists], axis=0) if len(hists) > 1 else hists[0].sum(axis=0)
    return _numpy_histogram(a, size, message)


def _numpy_histogram(a: np.ndarray, size: int, message: str) -> np.ndarray:
    """The numpy twin: range checks only where the dtype allows a value outside, then bincount."""
    info = np.iinfo(a.dtype)
    if info.min < 0 and int(a.min()) < 0:
        raise LDPInputError(message)
    if info.max >= size and int(a.max()) >= size:  # also keeps bincount from allocating 2**64 bins
        raise LDPInputError(message)
    return np.bincount(a, minlength=size).astype(np.int64, copy=False)


def grouped_histogram(groups: np.ndarray, values: np.ndarray, n_groups: int, size: int, *, what: str = "reports",
                      backend: str | None = None) -> np.ndarray:
    """``(n_groups, size)`` int64 counts of the pairs ``(groups[i], values[i])``, each in range
    (else :class:`LDPInputError`, nothing counted): the per-cohort histogram of reported cells."""
    g, v = np.asarray(groups), np.asarray(values)
    if g.shape != v.shape or g.ndim != 1 or g.dtype.kind not in "iu" or v.dtype.kind not in "iu":
        raise LDPInputError(f"{what}: groups and values must be 1-d integer arrays of one length")
    n = g.shape[0]
    k = _kernels(n, backend)
    if k is not None and n:
        g, v = np.ascontiguousarray(g), np.ascontiguousarray(v)
        parts = _splits(n, _workers(n))
        outs = [np.zeros((n_groups, size), dtype=np.int64) for _ in parts]
        run = k["grouped_histogram"]
        bad = sum(_thread_pool(len(parts)).map(lambda j: run(g, v, parts[j][0], parts[j][1], n_groups, size, outs[j]), range(len(parts)))) if len(parts) > 1 else run(g, v, 0, n, n_groups, size, outs[0])
        if bad:
            raise LDPInputError(f"{what} must have groups in [0, {n_groups}) and values in [0, {size})")
        return np.sum(outs, axis=0) if len(outs) > 1 else outs[0]
    if n and (int(g.min()) < 0 or int(g.max()) >= n_groups or int(v.min()) < 0 or int(v.max()) >= size):
        raise LDPInputError(f"{what} must have groups in [0, {n_groups}) and values in [0, {size})")
    flat = g.astype(np.int64) * size + v.astype(np.int64)
    return np.bincount(flat, minlength=n_groups * size).reshape(n_groups, size)


def packed_column_counts(packed: np.ndarray, d: int, backend: str | None = None) -> np.ndarray:
    """Number of rows with bit ``j`` set, for each ``j < d``, of an ``(n, ceil(d/8))`` uint8
    matrix of bits packed LSB-first — without unpacking the bits (int64, length ``d``)."""
    n, nb = packed.shape
    words = (nb + 7) // 8
    if n == 0:
        return np.zeros(d, dtype=np.int64)
    k = _kernels(n * nb, backend)
    if k is not None:
        if nb % 8 == 0:  # whole words: a view, or one contiguous copy of a strided band
            view = np.ascontiguousarray(packed).view(np.uint64)
        else:  # pad each row to whole words (one copy; only for d not a multiple of 64)
            view = np.zeros((n, words * 8), dtype=np.uint8)
            view[:, :nb] = packed
            view = view.view(np.uint64)
        parts = _splits(n, _workers(n))
        outs = [np.zeros(words * 64, dtype=np.int64) for _ in parts]
        run = k["swar_column_counts_narrow" if words <= _NARROW_WORDS else "swar_column_counts"]
        split_run(lambda j: run(view, parts[j][0], parts[j][1], outs[j]), len(parts))
        counts = np.sum(outs, axis=0) if len(outs) > 1 else outs[0]
        return counts[:d]
    starts = range(0, n, _TREE_ROWS)
    workers = min(4, os.cpu_count() or 1, len(starts))
    if workers > 1:  # numpy releases the GIL on these word operations: chunks run on all cores
        parts = list(_thread_pool(workers).map(lambda a: _tree_column_counts(packed[a : a + _TREE_ROWS], nb, words), starts))
    else:
        parts = [_tree_column_counts(packed[a : a + _TREE_ROWS], nb, words) for a in starts]
    return np.sum(parts, axis=0)[:d]


def _tree_column_counts(block: np.ndarray, nb: int, words: int) -> np.ndarray:
    """The numpy twin, one chunk: rows (as 64-bit words) are added pairwise with word-wide
    half/full adders, so after ``L`` levels each group of ``2**L`` rows holds its column counts as
    ``L + 1`` bit planes; only the final planes are unpacked. ≈ 8 word operations per row word."""
    counts = np.zeros(words * 64, dtype=np.int64)
    m = block.shape[0]
    levels = max(1, (m - 1).bit_length())
    buf = np.zeros((1 << levels, words * 8), dtype=np.uint8)
    buf[:m, :nb] = block
    planes = [buf.view(np.uint64)]
    while planes[0].shape[0] > 1:
        out = []
        carry = None
        for p in planes:
            x, y = p[0::2], p[1::2]
            t = x ^ y
            if carry is None:
                out.append(t)
                carry = x & y
            else:
                out.append(t ^ carry)
                carry = (x & y) | (carry & t)
        out.append(carry)
        planes = out
    for weight, plane in enumerate(planes):
        bits = np.unpackbits(plane.view(np.uint8), bitorder="little")
        counts += bits.astype(np.int64) << weight
    return counts


def rows_match(buf: np.ndarray, offset: int, pattern: bytes, backend: str | None = None) -> np.ndarray:
    """Bool mask of the rows of the ``(m, w)`` uint8 array ``buf`` whose bytes
    ``[offset, offset + len(pattern))`` equal ``pattern`` (a memcmp per row with the compiled
    kernels; the numpy twin compares 8-byte words of a contiguous copy of that band)."""
    m = buf.shape[0]
    pat = np.frombuffer(bytes(pattern), dtype=np.uint8)
    L = pat.size
    if m == 0 or L == 0:
        return np.ones(m, dtype=bool)
    k = aggregate_kernel("rows_match", m * L, backend)
    if k is not None:
        out = np.empty(m, dtype=np.bool_)
        k(buf, offset, pat, out)
        return out
    words = -(-L // 8)
    band = np.zeros((m, words * 8), dtype=np.uint8)
    band[:, :L] = buf[:, offset:offset + L]
    want = np.zeros(words * 8, dtype=np.uint8)
    want[:L] = pat
    return (band.view(np.uint64) == want.view(np.uint64)).all(axis=1)


def hashed_support(a: np.ndarray, b: np.ndarray, width: np.ndarray, keys: np.ndarray, backend: str | None = None) -> np.ndarray | None:
    """``counts[v] = #{i: (a[i]·keys[v] + b[i]) mod 2**64 < width[i]}`` (int64) with the compiled
    kernel (rows split over the cores), or None when the numpy backend runs (the caller's chunked
    numpy loop computes the same counts)."""
    n, d = a.shape[0], keys.shape[0]
    run = aggregate_kernel("hashed_support", n * d, backend)
    if run is None:
        return None
    a, b, width, keys = (np.ascontiguousarray(x, dtype=np.uint64) for x in (a, b, width, keys))
    parts = _splits(n, _workers(n * d // 64))
    outs = [np.zeros(d, dtype=np.int64) for _ in parts]
    if len(parts) > 1:
        list(_thread_pool(len(parts)).map(lambda j: run(a, b, width, keys, parts[j][0], parts[j][1], outs[j]), range(len(parts))))
    elif parts:
        run(a, b, width, keys, 0, n, outs[0])
    return np.sum(outs, axis=0) if len(outs) > 1 else (outs[0] if outs else np.zeros(d, dtype=np.int64))


#: rows per step of the numpy twin of :func:`sorted_rows_histogram` (bounded working memory)
_ROWS_STEP = 1 << 16


def sorted_rows_histogram(rows: np.ndarray, size: int, backend: str | None = None) -> tuple:
    """``(counts, flags)`` of an ``(m, k)`` integer array: ``counts`` = ``np.bincount`` of its
    entries that lie in ``[0, size)`` (int64, length ``size``); ``flags`` bit 1: some entry lies
    outside, bit 2: some row is not strictly increasing. One pass with the compiled kernel; the
    numpy twin works in steps of 2^16 rows in the array's own dtype (no int64 copy of the whole
    batch). The caller raises on any flag (nothing is counted then)."""
    a = np.asarray(rows)
    m = a.shape[0]
    counts = np.zeros(size, dtype=np.int64)
    if a.size == 0:
        return counts, 0
    run = aggregate_kernel("sorted_rows_histogram", a.size, backend)
    if run is not None:
        a = np.ascontiguousarray(a)
        parts = _splits(m, _workers(a.size // 8))
        outs = [np.zeros(size, dtype=np.int64) for _ in parts]
        if len(parts) > 1:
            flags = list(_thread_pool(len(parts)).map(lambda j: run(a, parts[j][0], parts[j][1], size, outs[j]), range(len(parts))))
        else:
            flags = [run(a, 0, m, size, outs[0])]
        f = 0
        for x in flags:
            f |= int(x)
        return (np.sum(outs, axis=0) if len(outs) > 1 else outs[0]), f
    f = 0
    info = np.iinfo(a.dtype)
    for s in range(0, m, _ROWS_STEP):
        b = a[s:s + _ROWS_STEP]
        if (info.min < 0 and int(b.min()) < 0) or (info.max >= size and int(b.max()) >= size):
            f |= 1
        if b.shape[1] > 1 and not (b[:, 1:] > b[:, :-1]).all():
            f |= 2
        if not f & 1:
            counts += np.bincount(b.ravel(), minlength=size)
    return counts, f
