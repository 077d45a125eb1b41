"""The numba kernels of the server-side aggregation (:mod:`ldp_plugin.sampling.aggregate_kernels`),
at module level so that numba's on-disk cache works. Imported only by that module's loader when
the numba backend is selected; ``LDP_PLUGIN_NUMBA_CACHE=0`` compiles in memory.

Each kernel has a numpy twin in :mod:`~ldp_plugin.sampling.aggregate_kernels` that returns the
same counts exactly (tested on both backends)."""

import os

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_CACHE = os.environ.get("LDP_PLUGIN_NUMBA_CACHE", "1") != "0"


@intrinsic
def _prefetch_item(typingctx, array, index):
    # ask the cache for element `index` of a 1-d array (llvm.prefetch, read): a hint only, it
    # changes nothing a kernel computes, whatever the index
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        where = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        builder.call(fn, [where, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, types.int64), codegen


#: reports per block of :func:`bounded_histogram` (its range check is one vectorized min/max pass
#: over the block, still in L1 when the block is counted)
HIST_BLOCK = 2048


@nb.njit(nogil=True, cache=_CACHE)
def bounded_histogram(a, lo, hi, size, counts):  # pragma: no cover - compiled
    # counts[j, v] += 1 for each a[i] = v in [0, size), i in [lo, hi). Blocked: per block of
    # HIST_BLOCK reports, (1) min and max in the array's own dtype (written as selects, so LLVM
    # vectorizes them; numba's max() builtin does not), (2) if the block lies in [0, size), the
    # counting loop has no check at all, spread over 4 sub-histograms (rows j = i mod 4) so that
    # runs of equal values do not serialize on one counter; else a checked loop counts the values
    # inside and returns how many are outside (negative ones compare as huge unsigned words).
    bad = 0
    usize = np.uint64(size)
    i = lo
    while i < hi:
        e = min(hi, i + HIST_BLOCK)
        b = a[i:e]
        m = b.shape[0]
        mx = b[0]
        mn = b[0]
        for j in range(m):
            x = b[j]
            mx = x if x > mx else mx
            mn = x if x < mn else mn
        if mn >= 0 and np.uint64(mx) < usize:
            m4 = (m // 4) * 4
            for j in range(0, m4, 4):
                counts[0, np.uint64(b[j])] += 1
                counts[1, np.uint64(b[j + 1])] += 1
                counts[2, np.uint64(b[j + 2])] += 1
                counts[3, np.uint64(b[j + 3])] += 1
            for j in range(m4, m):
                counts[0, np.uint64(b[j])] += 1
        else:
            for j in range(m):
                v = np.uint64(b[j])
                if v < usize:
                    counts[0, v] += 1
                else:
                    bad += 1
        i = e
    return bad


@nb.njit(nogil=True, cache=_CACHE)
def _flush_lanes(acc, W, counts):  # pragma: no cover - compiled
    # Add the byte lanes of acc[k·W + w] (lane b counts column 64·w + 8·b + k) to counts; clear acc.
    for k in range(8):
        for w in range(W):
            x = acc[k * W + w]
            base = w * 64 + k
            for b in range(8):
                counts[base + 8 * b] += np.int64((x >> np.uint64(8 * b)) & np.uint64(255))
            acc[k * W + w] = 0


@nb.njit(nogil=True, cache=_CACHE)
def swar_column_counts(words, lo, hi, counts):  # pragma: no cover - compiled
    # Column sums of rows [lo, hi) of a packed bit matrix viewed as (m, W) little-endian uint64
    # words: bit k of byte b of word w is column 64·w + 8·b + k. Two levels of counters:
    # (1) per word, a 4-bit bit-sliced counter (planes p0..p3, a carry-save chain of 7 word ops per
    # row) takes up to 15 rows; (2) its planes are then spread into byte-lane accumulators
    # (acc[k·W + w] += Σ_j ((p_j >> k) & 0x0101..01) << j: 8 columns per word and bit k), which
    # hold up to 255 rows (17 groups of 15) before they are flushed into the int64 counts.
    W = words.shape[1]
    p0 = np.zeros(W, np.uint64)
    p1 = np.zeros(W, np.uint64)
    p2 = np.zeros(W, np.uint64)
    p3 = np.zeros(W, np.uint64)
    acc = np.zeros(8 * W, dtype=np.uint64)  # 1-d, so that the w loops vectorize
    lanes = np.uint64(0x0101010101010101)
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    g = 0
    groups = 0
    for i in range(lo, hi):
        row = words[i]
        for w in range(W):
            x = row[w]
            c1 = p0[w] & x
            p0[w] ^= x
            c2 = p1[w] & c1
            p1[w] ^= c1
            c3 = p2[w] & c2
            p2[w] ^= c2
            p3[w] ^= c3  # at most 15 rows per group: no carry out of p3
        g += 1
        if g == 15 or i == hi - 1:
            for k in range(8):
                sk = np.uint64(k)
                base = k * W
                for w in range(W):
                    acc[base + w] += (
                        ((p0[w] >> sk) & lanes)
                        + (((p1[w] >> sk) & lanes) << one)
                        + (((p2[w] >> sk) & lanes) << two)
                        + (((p3[w] >> sk) & lanes) << three)
                    )
            p0[:] = 0
            p1[:] = 0
            p2[:] = 0
            p3[:] = 0
            g = 0
            groups += 1
            if groups == 17 or i == hi - 1:  # 17 · 15 = 255 rows: a byte lane cannot overflow
                _flush_lanes(acc, W, counts)
                groups = 0
    return 0


@nb.njit(nogil=True, cache=_CACHE)
def swar_column_counts_narrow(words, lo, hi, counts):  # pragma: no cover - compiled
    # The same counts as swar_column_counts for narrow rows (few words, e.g. d <= 256): blocks of
    # 15 rows, and per word column the 4-plane counter is kept in registers (no per-row loop over
    # a tiny array), then spread into the byte lanes acc[k·W + w], flushed every 17 blocks.
    W = words.shape[1]
    acc = np.zeros(8 * W, dtype=np.uint64)
    lanes = np.uint64(0x0101010101010101)
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    blocks = 0
    i = lo
    while i < hi:
        e = min(hi, i + 15)
        for w in range(W):
            p0 = np.uint64(0)
            p1 = np.uint64(0)
            p2 = np.uint64(0)
            p3 = np.uint64(0)
            for r in range(i, e):
                x = words[r, w]
                c1 = p0 & x
                p0 ^= x
                c2 = p1 & c1
                p1 ^= c1
                c3 = p2 & c2
                p2 ^= c2
                p3 ^= c3
            for k in range(8):
                sk = np.uint64(k)
                acc[k * W + w] += (
                    ((p0 >> sk) & lanes)
                    + (((p1 >> sk) & lanes) << one)
                    + (((p2 >> sk) & lanes) << two)
                    + (((p3 >> sk) & lanes) << three)
                )
        i = e
        blocks += 1
        if blocks == 17 or i >= hi:  # 17 · 15 = 255 rows per byte lane
            _flush_lanes(acc, W, counts)
            blocks = 0
    return 0


@nb.njit(nogil=True, cache=_CACHE)
def sorted_rows_histogram(a, lo, hi, size, counts):  # pragma: no cover - compiled
    # counts[v] += 1 for every entry v of rows [lo, hi) of the (m, k) array a; returns a bit set:
    # 1 if some entry is outside [0, size), 2 if some row is not strictly increasing.
    k = a.shape[1]
    usize = np.uint64(size)
    flags = 0
    for i in range(lo, hi):
        prev = np.int64(-1)
        for j in range(k):
            v = np.int64(a[i, j])
            if np.uint64(v) < usize:
                counts[v] += 1
            else:
                flags |= 1
            if v <= prev:
                flags |= 2
            prev = v
    return flags


@nb.njit(nogil=True, cache=_CACHE)
def grouped_histogram(groups, values, lo, hi, n_groups, size, counts):  # pragma: no cover - compiled
    # counts[g, v] += 1 for each row i in [lo, hi) with g = groups[i] in [0, n_groups) and
    # v = values[i] in [0, size); returns the number of rows with either out of range (not counted).
    bad = 0
    ug, us = np.uint64(n_groups), np.uint64(size)
    for i in range(lo, hi):
        g = np.uint64(groups[i])
        v = np.uint64(values[i])
        if g < ug and v < us:
            counts[g, v] += 1
        else:
            bad += 1
    return bad


@nb.njit(nogil=True, cache=_CACHE)
def rows_match(buf, off, pattern, out):  # pragma: no cover - compiled
    # out[i] = (buf[i, off:off + len(pattern)] == pattern).all(): the OR of the bytes' XORs over
    # the whole band, with no early exit, so the per-row loop vectorizes.
    m = buf.shape[0]
    L = pattern.shape[0]
    for i in range(m):
        row = buf[i, off:off + L]
        acc = np.uint8(0)
        for j in range(L):
            acc |= row[j] ^ pattern[j]
        out[i] = acc == 0
    return 0


#: rows (keys) ahead that nonce_admit_matching asks the cache for
_AHEAD_ROWS = 64
_AHEAD_KEYS = 16


@nb.njit(nogil=True, cache=_CACHE, inline="always")
def _key_hash(a, b, salt):  # pragma: no cover - compiled
    # the keyed 64-bit hash of a 16-byte key (a, b): a multiply-xorshift mix of both words with the
    # table's secret salt (an outsider cannot aim many keys at one slot). Its low bits pick the
    # slot, its top 7 bits the slot's tag (independent of the capacity).
    h = (a ^ salt) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    h = (h ^ b) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(32)
    return h


@nb.njit(nogil=True, cache=_CACHE, inline="always")
def _tag(h):  # pragma: no cover - compiled
    # a taken slot's byte in `used`: 1..128 from the hash's top bits (0 = empty)
    return np.uint8((h >> np.uint64(57)) + np.uint64(1))


@nb.njit(nogil=True, cache=_CACHE, inline="always")
def _le_word(row, o):  # pragma: no cover - compiled
    # the little-endian uint64 at bytes [o, o + 8) of a contiguous uint8 row (one load after LLVM's
    # load combining)
    return (np.uint64(row[o]) | (np.uint64(row[o + 1]) << np.uint64(8)) | (np.uint64(row[o + 2]) << np.uint64(16))
            | (np.uint64(row[o + 3]) << np.uint64(24)) | (np.uint64(row[o + 4]) << np.uint64(32))
            | (np.uint64(row[o + 5]) << np.uint64(40)) | (np.uint64(row[o + 6]) << np.uint64(48))
            | (np.uint64(row[o + 7]) << np.uint64(56)))


@nb.njit(nogil=True, cache=_CACHE)
def nonce_admit_matching(keys, used, rows, off, pattern, salt, out, poff, payload, tmp, stage, bucket_bits):  # pragma: no cover - compiled
    # Open-addressing set of 16-byte keys (keys[s] = (k1, k2); used[s] = 0 when empty, else the
    # key's tag 1..128 from its hash, so a probe past a taken slot reads the 16-byte key only when
    # the tags agree; capacity a power of two kept at most half full by the caller), fed with the
    # C-contiguous (m, w >= 16) uint8 rows (the envelopes themselves, read in place):
    # out[i] = 2 when the band rows[i, off:off + len(pattern)] differs from pattern (compared as
    # 8-byte words; its nonce is not looked at; an empty pattern matches every row); else the
    # key = the row's first 16 bytes (two little-endian words): out[i] = 1 and inserted when not
    # in the set yet (earlier rows included), 0 when it is. Exact: both words compared. With
    # payload.shape[1] = pw > 0, the bytes rows[i, poff:poff + pw] of the k-th inserted row are
    # in payload[k] (row order). Returns the number inserted.
    # Three passes, so that the table is swept in slot order instead of hit at random (a table of
    # millions of keys does not fit in any cache): (1) over the rows — header, key words and hash
    # into tmp (m, 3), the payload of every matching row gathered, a histogram of the rows' table
    # regions (2^bucket_bits of them: slot >> shift); (2) a stable counting sort of the matching
    # rows by region into stage (m, 3): (k1, k2, row); (3) the inserts in that order — equal keys
    # fall in one region in row order, so the earliest row of a batch is the one admitted. The
    # gathered payloads are then compacted if some matching row was a replay. Table indices are
    # unsigned (a signed index costs a wrap-around test per read), and the rows _AHEAD_ROWS on and
    # the slot of the key _AHEAD_KEYS inserts on are asked of the cache ahead (the passes otherwise
    # wait on memory: 1.1-1.6x in the same run, 10^6 rows into a table reserved for 2·10^6).
    # The first pass is nonce_scan (over any share of the rows: aggregate_kernels.admit_nonce_rows
    # runs it on both cores), the rest nonce_insert.
    mask, shift, regions = nonce_regions(keys.shape[0], bucket_bits)
    start = np.zeros(regions + 1, dtype=np.int64)
    good = nonce_scan(rows, 0, rows.shape[0], off, pattern, salt, out, poff, payload, tmp, start, mask, shift)
    return nonce_insert(keys, used, salt, out, payload, tmp, good, start, stage, mask, shift)


@nb.njit(cache=_CACHE)
def nonce_regions(cap, bucket_bits):  # pragma: no cover - compiled
    # (slot mask, region shift, number of regions) of a table of cap slots (a power of two) cut
    # into 2^bucket_bits regions (fewer when the table is smaller)
    cbits = 0
    while (1 << cbits) < cap:
        cbits += 1
    return np.uint64(cap - 1), np.uint64(max(cbits - bucket_bits, 0)), 1 << min(bucket_bits, cbits)


@nb.njit(nogil=True, cache=_CACHE)
def nonce_scan(rows, lo, hi, off, pattern, salt, out, poff, payload, tmp, counts, mask, shift):  # pragma: no cover - compiled
    # Pass (1) of nonce_admit_matching over the rows [lo, hi): out[i] = 2 (band differs) or 0;
    # the g-th matching row of the share in tmp[lo + g] = (k1, k2, i) and its payload in
    # payload[lo + g]; counts[region + 1] += 1 for each. Returns g, the share's matching rows.
    L = pattern.shape[0]
    nw = L // 8
    words = np.empty(max(nw, 1), dtype=np.uint64)
    for k in range(nw):
        words[k] = _le_word(pattern, 8 * k)
    pw = payload.shape[1]
    w = rows.shape[1]
    end = rows.shape[0] * w
    flat_rows = rows.reshape(end)
    good = lo
    for i in range(lo, hi):
        r = rows[i]
        if (i + _AHEAD_ROWS) * w < end:  # the rows a few KiB on, asked for now
            _prefetch_item(flat_rows, (i + _AHEAD_ROWS) * w)
        diff = np.uint64(0)
        for k in range(nw):
            diff |= _le_word(r, off + 8 * k) ^ words[k]
        for j in range(8 * nw, L):
            diff |= np.uint64(r[off + j] ^ pattern[j])
        if diff != 0:
            out[i] = 2
            continue
        out[i] = 0
        a = _le_word(r, 0)
        b = _le_word(r, 8)
        h = _key_hash(a, b, salt)
        tmp[good, 0] = a
        tmp[good, 1] = b
        tmp[good, 2] = np.uint64(i)
        counts[((h & mask) >> shift) + np.uint64(1)] += 1
        if pw > 0:
            dst = payload[good]
            for j in range(pw):
                dst[j] = r[poff + j]
        good += 1
    return good - lo


@nb.njit(nogil=True, cache=_CACHE)
def nonce_insert(keys, used, salt, out, payload, tmp, good, start, stage, mask, shift):  # pragma: no cover - compiled
    # Passes (2) and (3) of nonce_admit_matching on the matching rows tmp[:good] (row order) and
    # their histogram start (counts[region + 1]), then the payloads' compaction. Returns the
    # number inserted.
    cap = keys.shape[0]
    pw = payload.shape[1]
    for k in range(start.shape[0] - 1):
        start[k + 1] += start[k]
    for g in range(good):
        a = tmp[g, 0]
        b = tmp[g, 1]
        q = (_key_hash(a, b, salt) & mask) >> shift
        p = start[q]
        start[q] = p + 1
        stage[p, 0] = a
        stage[p, 1] = b
        stage[p, 2] = tmp[g, 2]
    added = 0
    flat_keys = keys.reshape(2 * cap)
    for p in range(good):
        if p + _AHEAD_KEYS < good:  # the slot of the key a few inserts on, asked for now
            ahead = np.int64(_key_hash(stage[p + _AHEAD_KEYS, 0], stage[p + _AHEAD_KEYS, 1], salt) & mask)
            _prefetch_item(flat_keys, 2 * ahead)
            _prefetch_item(used, ahead)
        a = stage[p, 0]
        b = stage[p, 1]
        h = _key_hash(a, b, salt)
        t = _tag(h)
        s = h & mask
        while True:
            u = used[s]
            if u == 0:
                used[s] = t
                keys[s, 0] = a
                keys[s, 1] = b
                out[stage[p, 2]] = 1
                added += 1
                break
            if u == t and keys[s, 0] == a and keys[s, 1] == b:
                break
            s = (s + np.uint64(1)) & mask
    if pw > 0 and added < good:  # drop the replays' payloads, keeping row order
        k = 0
        for g in range(good):
            if out[np.int64(tmp[g, 2])] == 1:
                if k != g:
                    for j in range(pw):
                        payload[k, j] = payload[g, j]
                k += 1
    return added


@nb.njit(nogil=True, cache=_CACHE)
def nonce_rehash(keys, used, new_keys, new_used, salt):  # pragma: no cover - compiled
    # Move every key of (keys, used) into the larger empty table (new_keys, new_used), tags kept.
    mask = np.uint64(new_keys.shape[0] - 1)
    for s in range(keys.shape[0]):
        if used[s]:
            a = keys[s, 0]
            b = keys[s, 1]
            t = np.int64(_key_hash(a, b, salt) & mask)
            while new_used[t]:
                t = (t + 1) & np.int64(mask)
            new_used[t] = used[s]
            new_keys[t, 0] = a
            new_keys[t, 1] = b
    return 0


@nb.njit(nogil=True, cache=_CACHE)
def hashed_support(a, b, width, keys, lo, hi, counts):  # pragma: no cover - compiled
    # OLH support: counts[v] += [(a[i]·keys[v] + b[i]) mod 2**64 < width[i]] for rows [lo, hi)
    # (b already shifted by the hash interval's start). The v loop vectorizes (64-bit multiply).
    d = keys.shape[0]
    for i in range(lo, hi):
        ai, bi, wi = a[i], b[i], width[i]
        for v in range(d):
            counts[v] += np.int64((ai * keys[v] + bi) < wi)
    return 0


KERNELS = {"sorted_rows_histogram": sorted_rows_histogram, "swar_column_counts_narrow": swar_column_counts_narrow, "hashed_support": hashed_support, "rows_match": rows_match, "nonce_admit_matching": nonce_admit_matching, "nonce_regions": nonce_regions, "nonce_scan": nonce_scan, "nonce_insert": nonce_insert, "nonce_rehash": nonce_rehash, "bounded_histogram": bounded_histogram, "swar_column_counts": swar_column_counts, "grouped_histogram": grouped_histogram}
