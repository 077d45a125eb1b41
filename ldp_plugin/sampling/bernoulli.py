"""The Bernoulli engine: geometric-run decoding for packed bit matrices
(:meth:`ldp_plugin.sampling.RandomSource.bernoulli_packed`, exact, 2 random bits per event)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import math

import numpy as np

from . import kernels
from .runner import _run_segments
from .sparse import SparseSegment, sparse_tables, use_sparse
from .trace import note

if TYPE_CHECKING:  # pragma: no cover
    from .source import RandomSource

# -- geometric-run decoding (RandomSource.bernoulli_packed) -------------------------------------

#: events per segment: a segment decodes its own block of random bytes (≈ 2 MiB), on its own core
_SEG_EVENTS = 1 << 23
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


def set_row_bits(out: np.ndarray, cols: np.ndarray, bits: np.ndarray) -> None:
    """Overwrite bit ``cols[i]`` of packed row ``out[i]`` (LSB first) with ``bits[i]`` (0/1),
    in place; ``out`` is C-contiguous."""
    n, nb = out.shape
    flat = out.reshape(-1)
    cols = np.asarray(cols, dtype=np.int64)
    idx = cols >> 3
    idx += np.arange(0, n * nb, nb, dtype=np.int64)
    sh = (cols & 7).astype(np.uint8)
    cur = flat[idx]
    cur &= ~np.left_shift(np.uint8(1), sh)
    cur |= np.left_shift(bits.astype(np.uint8), sh)
    flat[idx] = cur


def _segments(n_rows: int, n_bits: int) -> list:
    """The fixed segments of rows ``[a, b)`` (about :data:`_SEG_EVENTS` events each)."""
    per = max(1, _SEG_EVENTS // n_bits)
    bounds = list(range(0, n_rows, per)) + [n_rows]
    return list(zip(bounds[:-1], bounds[1:]))


def _bernoulli_runs(source: "RandomSource", threshold: int, n_rows: int, n_bits: int, after=None, backend=None) -> np.ndarray:
    """Events of probability ``threshold / 2**64``: the sparse sampler when it is cheaper, else
    geometric-run decoding. ``after(a, b, rows)``, if given, is applied to each finished segment of
    rows ``[a, b)`` while it is still in cache (sparse path) or to all rows at the end.
    ``backend``: the kernels' (:func:`.kernels.select`; None: ``LDP_PLUGIN_KERNELS``)."""
    rare = min(threshold, (1 << 64) - threshold)  # a 1 is rare (or a 0: sample 0s, flip)
    if use_sparse(rare):
        return _bernoulli_sparse(source, rare, n_rows, n_bits, flip=rare != threshold, after=after, backend=backend)
    kernel = kernels.select("decode_runs", n_rows * n_bits, backend)
    note("numba" if kernel is not None else "numpy")
    table = run_table(int(threshold))
    nb = (n_bits + 7) // 8
    out = np.empty((n_rows, nb), dtype=np.uint8)
    segs = _segments(n_rows, n_bits)
    tasks = [_RunSegment((b - a) * n_bits, table, kernel) for a, b in segs]
    _run_segments(source, tasks)
    for (a, b), task in zip(segs, tasks):
        flat = task.result()
        if n_bits % 8 == 0:
            out[a:b] = flat.reshape(b - a, nb)
        else:
            bits = np.unpackbits(flat, count=(b - a) * n_bits, bitorder="little").reshape(b - a, n_bits)
            out[a:b] = np.packbits(bits, axis=1, bitorder="little")
    if n_bits % 8 and n_rows:
        out[:, -1] &= (1 << (n_bits % 8)) - 1
    if after is not None:
        after(0, n_rows, out)
    return out


def _bernoulli_sparse(source: "RandomSource", threshold: int, n_rows: int, n_bits: int, flip: bool, after=None, backend=None) -> np.ndarray:
    """Sparse path (:mod:`.sparse`): events of probability ``threshold / 2**64`` by exact geometric
    skips, in the same fixed segments of rows; ``flip``: the complement of every bit (padding
    bits cleared); ``after``: see :func:`_bernoulli_runs`."""
    kernel = kernels.select("sparse_runs", n_rows * n_bits, backend)
    note("numba" if kernel is not None else "numpy")
    tables = sparse_tables(int(threshold))
    out = np.zeros((n_rows, (n_bits + 7) // 8), dtype=np.uint8)
    pad = (1 << (n_bits % 8)) - 1 if n_bits % 8 else 0xFF

    def finish(a: int, b: int, rows: np.ndarray) -> None:
        if flip:
            np.invert(rows, out=rows)
            rows[:, -1] &= pad
        if after is not None:
            after(a, b, rows)

    tasks = [SparseSegment((b - a) * n_bits, n_bits, out[a:b], tables, kernel, functools.partial(finish, a, b)) for a, b in _segments(n_rows, n_bits)]
    _run_segments(source, tasks)
    return out
