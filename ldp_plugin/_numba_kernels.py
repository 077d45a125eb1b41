"""The numba kernels of the sampling layer, at module level so that numba's on-disk cache works
(kernels defined inside a function were recompiled by every process: ~3 s per CLI call).
Imported only by :mod:`ldp_plugin._kernels` when numba is installed; ``LDP_PLUGIN_NUMBA_CACHE=0``
compiles in memory (set by the loader when no cache directory is usable)."""

import os

import numba as nb
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"


@intrinsic
def cttz(typingctx, x):  # count trailing zeros of a uint64 (LLVM's cttz)
    sig = nb.types.uint64(nb.types.uint64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen

@nb.njit(
    nb.types.UniTuple(nb.int64, 5)(
        nb.types.Array(nb.uint8, 1, "C", readonly=True),
        nb.int64,
        nb.types.Array(nb.uint32, 1, "C", readonly=True),
        nb.uint8[::1], nb.int64, nb.int64, nb.int64, nb.int64, nb.int64
    ),
    nogil=True,
    cache=_CACHE,
)
def decode_runs(v, i, table, out, pos, acc, nacc, s, need):  # pragma: no cover - compiled
    # One table step per random byte: state s (zeros of the current run, capped at 64) and
    # byte v give the events completed in v (count and bits) and the next state. Output bits
    # are appended LSB-first to out; the loop stops once `need` events have been produced or
    # the block is used up. Returns (next byte, s, acc, nacc, pos) to resume on a new block.
    n = v.shape[0]
    produced = pos * 8 + nacc
    while i < n and produced < need:
        e = np.int64(table[s * 256 + np.int64(v[i])])
        i += 1
        c = (e >> 8) & 15
        acc |= (e & 255) << nacc
        nacc += c
        produced += c
        s = e >> 12
        out[pos] = np.uint8(acc & 255)
        f = nacc >> 3
        pos += f
        acc >>= f << 3
        nacc -= f << 3
    if produced >= need and nacc > 0 and pos < out.shape[0]:
        out[pos] = np.uint8(acc & 255)
    return i, s, acc, nacc, pos

out_types = [nb.types.Array(t, 2, "C") for t in (nb.uint16, nb.uint32)]
x_type = nb.types.Array(nb.int64, 1, "C", readonly=True)

inc_type = nb.types.Array(nb.uint8, 1, "C", readonly=True)
u64_2d = nb.types.Array(nb.uint64, 2, "C", readonly=True)

@intrinsic
def umulhi(typingctx, a, b):  # high 64 bits of a 64×64-bit product (one mul on x86-64)
    sig = nb.types.uint64(nb.types.uint64, nb.types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen

@nb.njit(nb.int64(u64_2d, u64_2d, u64_2d, inc_type, nb.int64[::1]), nogil=True, cache=_CACHE)
def batched_rejects(words, P, thr, inc, out):  # pragma: no cover - compiled
    # Flat (row-major) indices of the rejected words: w·P mod 2**64 < 2**64 mod P for the
    # product P of the word's ranges (P[inc[i], g]). Returns the count (> out.size means
    # the buffer was too small: the caller scans with numpy).
    m, G = words.shape
    cnt = 0
    for i in range(m):
        a = inc[i]
        for g in range(G):
            if words[i, g] * P[a, g] < thr[a, g]:
                if cnt < out.shape[0]:
                    out[cnt] = i * G + g
                cnt += 1
    return cnt

@nb.njit([nb.void(u64_2d, nb.int64, nb.int64, x_type, inc_type, o) for o in out_types], nogil=True, cache=_CACHE)
def floyd_sorted(words, n_other, c, x, inc, out):  # pragma: no cover - compiled
    # Row i: Floyd's algorithm for a uniform s-subset of [0, N), N = n_other, s = k - inc[i]:
    # step j takes the next digit t of the row's words (c digits per word, peeled off by
    # multiplication with the ranges N - s + j + 1) and adds N - s + j instead when t is
    # taken; then the subset, mapped onto the items other than x[i] (v -> v + [v >= x[i]])
    # and with x[i] added when inc[i], is written in increasing order.
    m, k = out.shape
    nw = (n_other + 1 + 63) // 64  # words of a bitmap over the d = N + 1 items
    mark = np.zeros(n_other, dtype=np.uint8)  # byte marks: the fastest membership test
    bm = np.zeros(nw, dtype=np.uint64)
    G = words.shape[1]
    digits = np.empty(G * c, dtype=np.int64)
    one = np.uint64(1)
    for i in range(m):
        bm[:] = 0  # O(d/64) words; the byte marks are cleared pick by pick below: O(k)
        s = k - np.int64(inc[i])
        base = n_other - s
        # the digits first, two words at a time (two independent multiply chains); digits
        # of unused slots (j >= s, the last in their word) are computed and ignored
        for g in range(0, G - 1, 2):
            a, b = words[i, g], words[i, g + 1]
            ja, jb = g * c, g * c + c
            for jj in range(c):
                ra = np.uint64(base + ja + jj + 1)
                rb = np.uint64(base + jb + jj + 1)
                digits[ja + jj] = np.int64(umulhi(a, ra))
                digits[jb + jj] = np.int64(umulhi(b, rb))
                a = a * ra
                b = b * rb
        if G % 2:
            a = words[i, G - 1]
            for jj in range(c):
                ra = np.uint64(base + (G - 1) * c + jj + 1)
                digits[(G - 1) * c + jj] = np.int64(umulhi(a, ra))
                a = a * ra
        for j in range(s):
            t = digits[j]
            t += np.int64(mark[t]) * (base + j - t)  # branch-free: base + j if t is taken
            mark[t] = 1
            bm[t >> 6] |= one << np.uint64(t & 63)
        for w in range(nw):  # clear this row's marks: one store per pick
            word = bm[w]
            while word:
                mark[w * 64 + np.int64(cttz(word))] = 0
                word &= word - one
        # to item space: values >= x move up by one (a one-bit shift of the upper part), x
        # itself is set when included; then the set bits, in order, are the report
        xi = x[i]
        xw, xb = xi >> 6, np.uint64(xi & 63)
        carry = np.uint64(0)
        for w in range(nw):
            cur = bm[w]
            up = (cur << one) | carry
            carry = cur >> np.uint64(63)
            if w > xw:
                bm[w] = up
            elif w == xw:
                below = (one << xb) - one
                above = ~(((one << xb) << one) - one)
                bm[w] = (cur & below) | (up & above) | ((one << xb) if inc[i] else np.uint64(0))
        c2 = 0
        for w in range(nw):
            word = bm[w]
            while word:
                out[i, c2] = w * 64 + np.int64(cttz(word))
                word &= word - one
                c2 += 1

KERNELS = {"decode_runs": decode_runs, "batched_rejects": batched_rejects, "floyd_sorted": floyd_sorted}
