"""The numba kernels of the sampling layer, at module level so that numba's on-disk cache works
(kernels defined inside a function were recompiled by every process: ~3 s per CLI call).
Imported only by :mod:`ldp_plugin.sampling.kernels` when numba is installed; ``LDP_PLUGIN_NUMBA_CACHE=0``
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
    # The zeros carried out of a byte b depend on s only when b == 0 (min(s + 8, 64)); else they
    # are the row s = 0 entry's, table[b] >> 12. Taking them from there, not from the entry
    # just loaded, keeps the table load off the loop-carried chain of s (same bits, ~1.5x faster).
    n = v.shape[0]
    produced = pos * 8 + nacc
    while i < n and produced < need:
        b = np.int64(v[i])
        e = np.int64(table[s * 256 + b])
        i += 1
        c = (e >> 8) & 15
        acc |= (e & 255) << nacc
        nacc += c
        produced += c
        s8 = s + 8
        s = (np.int64(table[b]) >> 12) if b != 0 else (s8 if s8 < 64 else 64)
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
    dense = n_other <= 32 * k  # a vector memset of N bytes beats k dependent clears (~3 cycles each)
    for i in range(m):
        bm[:] = 0  # O(d/64) words; the byte marks are cleared below: O(k) picks or one memset
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
        if dense:  # clear this row's marks: one memset of N bytes when that is cheaper ...
            mark[:] = 0
        else:  # ... else one store per pick
            for w in range(nw):
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


ro_i16 = nb.types.Array(nb.int16, 1, "C", readonly=True)
ro_u64 = nb.types.Array(nb.uint64, 1, "C", readonly=True)
ro_u8 = nb.types.Array(nb.uint8, 1, "C", readonly=True)
i8 = nb.int64


@nb.njit(
    nb.types.UniTuple(nb.int64, 6)(ro_u8, i8, i8, i8, i8, i8, i8, i8, ro_i16, ro_i16, ro_u64, ro_u8, i8, i8, i8, i8, nb.uint8[:, ::1]),
    nogil=True,
    cache=_CACHE,
)
def sparse_runs(v, n1, n2, s1, len3, i1, i2, i3, t1, t2, L, frac, M, pos, need, n_bits, out):  # pragma: no cover - compiled
    # The sparse sampler (ldp_plugin.sampling.sparse): one exact geometric draw per 1 (or per M
    # zeros), stage 1 from s1 bytes of region 1, stage 2 from one byte of region 2, stage 3 from
    # len3 bytes of region 3. A table entry e >= 0 advances e >> 1 zeros, then a 1 if e & 1.
    # Returns (status, i1, i2, i3, pos, u64): 0 done, 1 a region too short for another draw,
    # 2 a stage-4 tie (u64 = U's first 64 bits; pos not advanced past the tied draw).
    b3 = n1 + n2
    n3 = v.shape[0] - b3
    nb_ = out.shape[1]
    flat = out.reshape(out.shape[0] * nb_)
    whole = n_bits == 8 * nb_  # rows are whole bytes: the flat bit index is the event index
    while pos < need:
        # draws that fit in every region whatever their stages (each takes <= 1 of each)
        safe = min((n1 - i1) // s1, n2 - i2, (n3 - i3) // len3)
        if safe <= 0:
            return 1, i1, i2, i3, pos, 0
        e = 0
        for _ in range(safe):  # the tight loop: stages 1 and 2 only
            if pos >= need:
                break
            if s1 == 2:
                e = np.int64(t1[(np.int64(v[i1]) << 8) | np.int64(v[i1 + 1])])
                if e < 0:  # rare with two bytes: a branch
                    e = np.int64(t2[(-e - 1) * 256 + np.int64(v[n1 + i2])])
                    i2 += 1
            else:  # one byte: stage 2 is common, taken without a branch
                e1 = np.int64(t1[np.int64(v[i1])])
                neg = e1 >> 63  # -1 if stage 1 left it open, else 0
                e2 = np.int64(t2[(((-e1 - 1) & neg) << 8) + np.int64(v[n1 + i2])])
                i2 -= neg
                e = (e1 & ~neg) | (e2 & neg)
            i1 += s1
            if e < 0:
                break  # stage 3, below
            pos += e >> 1
            if e & 1:
                if pos < need:
                    if whole:
                        flat[pos >> 3] |= np.uint8(1 << (pos & 7))
                    else:
                        r = pos // n_bits
                        c = pos - r * n_bits
                        flat[r * nb_ + (c >> 3)] |= np.uint8(1 << (c & 7))
                pos += 1
        if e >= 0:
            continue
        # stage 3 of the draw just read: the rest of a 64-bit U
        p = np.int64(v[i1 - 1]) if s1 == 1 else (np.int64(v[i1 - 2]) << 8) | np.int64(v[i1 - 1])
        u = (np.uint64(p) << np.uint64(8)) | np.uint64(v[n1 + i2 - 1])
        for t in range(len3):
            u = (u << np.uint64(8)) | np.uint64(v[b3 + i3 + t])
        i3 += len3
        lo = 0
        hi = M
        while lo < hi:  # first g - 1 with L[g - 1] <= u (L decreases)
            mid = (lo + hi) >> 1
            if L[mid] > u:
                lo = mid + 1
            else:
                hi = mid
        if lo < M and L[lo] == u and frac[lo] != 0:
            return 2, i1, i2, i3, pos, np.int64(u)
        e = 2 * lo + 1 if lo < M else 2 * M
        pos += e >> 1
        if e & 1:
            if pos < need:
                r = pos // n_bits
                c = pos - r * n_bits
                flat[r * nb_ + (c >> 3)] |= np.uint8(1 << (c & 7))
            pos += 1
    return 0, i1, i2, i3, pos, 0

KERNELS = {"sparse_runs": sparse_runs, "decode_runs": decode_runs, "batched_rejects": batched_rejects, "floyd_sorted": floyd_sorted}
