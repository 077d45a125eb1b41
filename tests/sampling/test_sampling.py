"""The sampling layer: exactness of thresholds, unbiased integers, uniform subsets."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp_plugin import LDPParameterError
from ldp_plugin.sampling import RandomSource, SecureRandomSource, SeededRandomSource, as_source

ALPHA = 1e-6


class ReplaySource(RandomSource):
    """Plays back a fixed byte string and records how many bytes were used."""

    def __init__(self, data: bytes):
        self.data = np.frombuffer(data, dtype=np.uint8)
        self.pos = 0

    def random_bytes(self, n):
        out = self.data[self.pos : self.pos + n]
        assert out.size == n, "replay source exhausted"
        self.pos += n
        return out.copy()


def test_bernoulli_bytes_equals_full_64bit_comparison():
    """The byte-wise comparison decides exactly W < T for the 64-bit word W it consumes."""
    rng = np.random.default_rng(5)
    for T in [1, 2**63, 2**64 - 1, 0x12_34_56_78_9A_BC_DE_F0, 0x80_00_00_00_00_00_00_01]:
        tb = T.to_bytes(8, "big")
        words = []
        for level in range(9):  # words sharing long prefixes with T exercise every tie level
            for _ in range(20):
                rest = rng.integers(0, 256, 8 - level, dtype=np.uint8).tobytes()
                words.append(tb[:level] + rest)
        for w in words:
            assert bool(ReplaySource(w)._bernoulli_bytes(T, 1)[0]) == (int.from_bytes(w, "big") < T)


@pytest.mark.parametrize("T", [1, 5 << 60, (5 << 60) + 12345, 2**64 - 1, 0x9E37_79B9_7F4A_7C15])
def test_bernoulli_nibble_first_is_exact(T):
    """Every first nibble is decided as the top 4 bits of W would decide it; a tie is decided by
    the remaining 60 bits (drawn as a fresh word compared with 16·(T mod 2**60)). Together:
    P = t0/16 + (T mod 2**60)/2**64 = T/2**64 exactly."""
    t0, rest = T >> 60, (T & (2**60 - 1)) << 4
    assert Fraction(t0, 16) + Fraction(rest, 16 * 2**64) == Fraction(T, 2**64)
    for nibble in range(16):
        for tail in (b"\x00" * 8, b"\xff" * 8, rest.to_bytes(8, "big"), (max(rest - 1, 0)).to_bytes(8, "big")):
            src = ReplaySource(bytes([nibble << 4]) + tail)
            got = bool(src.bernoulli(T, 1)[0])
            expect = nibble < t0 or (nibble == t0 and int.from_bytes(tail, "big") < rest)
            assert got == expect


def test_bernoulli_edges_and_rate():
    src = SeededRandomSource(1)
    assert not src.bernoulli(0, 100).any()
    assert src.bernoulli(2**64, 100).all()
    with pytest.raises(LDPParameterError):
        src.bernoulli(2**64 + 1, 1)
    n, T = 400_000, 3 * 2**62  # p = 3/4
    x = src.bernoulli(T, n).sum()
    p = T / 2**64
    z = (x - n * p) / math.sqrt(n * p * (1 - p))
    assert abs(z) < 5.3  # two-sided alpha ~1e-7


@pytest.mark.parametrize("r", [2, 3, 7, 1000, 1025, 65537, 2**31 + 11])
def test_uniform_int_is_uniform(r):
    src = SeededRandomSource(r)
    n = 300_000
    x = src.uniform_int(r, n)
    assert x.min() >= 0 and x.max() < r
    if r <= 1025:
        counts = np.bincount(x, minlength=r)
        assert stats.chisquare(counts).pvalue > ALPHA
    else:
        # bucket into 64 equal-probability groups only when r is a multiple; otherwise test the mean
        mean_z = (x.mean() - (r - 1) / 2) / math.sqrt((r * r - 1) / 12 / n)
        assert abs(mean_z) < 5.3


def test_uniform_int_rejection_removes_modulo_bias():
    """With 16-bit words and r = 1000, plain multiply-shift would give some values 66/65536 and
    others 65/65536; with rejection every value has exactly floor(65536/1000) preimages."""
    r, bits = 1000, 16
    x = np.arange(1 << bits, dtype=np.uint64)
    m = x * np.uint64(r)
    keep = (m & np.uint64((1 << bits) - 1)) >= np.uint64((1 << bits) % r)
    vals = (m[keep] >> np.uint64(bits)).astype(np.int64)
    counts = np.bincount(vals, minlength=r)
    assert counts.min() == counts.max() == (1 << bits) // r


def test_partial_shuffle_subsets_uniform_and_power():
    src = SeededRandomSource(11)
    N, s, n = 6, 3, 120_000
    sub = np.sort(src.partial_shuffle_prefix(n, N, s), axis=1)
    assert ((np.diff(sub, axis=1)) > 0).all()
    combos = {c: i for i, c in enumerate(itertools.combinations(range(N), s))}
    idx = np.array([combos[tuple(r)] for r in sub.tolist()])
    counts = np.bincount(idx, minlength=len(combos))
    assert stats.chisquare(counts).pvalue > ALPHA
    # power: the same test rejects a subset sampler that favours item 0 by 10%
    w = np.array([1.1 if 0 in c else 1.0 for c in combos])
    assert stats.chisquare(counts, f_exp=w / w.sum() * n).pvalue < ALPHA


def test_sources():
    assert SecureRandomSource().secure and not SeededRandomSource(0).secure
    assert isinstance(as_source(None), SecureRandomSource)
    assert isinstance(as_source(3), SeededRandomSource)
    a, b = SeededRandomSource(42).random_bytes(64), SeededRandomSource(42).random_bytes(64)
    assert (a == b).all()
    assert SecureRandomSource().random_bytes(32).size == 32
    for bad in (-1, 1.5, "x", True):
        with pytest.raises(LDPParameterError):
            as_source(bad)


@pytest.mark.parametrize("n,d", [(1, 3), (7, 8), (1000, 13), (40_000, 130), (70_001, 64)])
def test_packed_column_counts_equals_unpack_and_sum(n, d):
    from ldp_plugin.mechanisms.unary import packed_column_counts

    bits = np.random.default_rng(n).random((n, d)) < 0.3
    packed = np.packbits(bits, axis=1, bitorder="little")
    assert np.array_equal(packed_column_counts(packed, d), bits.sum(axis=0))


def _reference_runs(data: bytes, T: int, n: int) -> list:
    """Bit-by-bit definition: read fair bits LSB first; an event ends at each 1 and is bit g
    (from the top) of T, g = zeros before it (0 when g >= 64, i.e. W == T)."""
    out, g = [], 0
    for byte in data:
        for k in range(8):
            if (byte >> k) & 1:
                out.append((T >> (63 - g)) & 1 if g < 64 else 0)
                g = 0
                if len(out) == n:
                    return out
            else:
                g += 1
    return out


@pytest.mark.parametrize("T", [1, 0x2E3F_0000_0000_0001, 5 << 60, 2**63, 2**64 - 1, 0x9E37_79B9_7F4A_7C15])
def test_geometric_run_event_probability_is_exact(T):
    """P(event) = sum over set bits g of T of 2**-(g+1) = T / 2**64: the first differing bit of a
    uniform W and T is geometric, and W < T iff T has a 1 there."""
    assert sum(Fraction((T >> (63 - g)) & 1, 2 ** (g + 1)) for g in range(64)) == Fraction(T, 2**64)
    # every 16-bit W prefix decides like the full comparison whenever it differs from T's prefix
    for w in range(0, 1 << 16, 97):
        W = w << 48
        bits = [(w >> (15 - i)) & 1 for i in range(16)]
        diff = [i for i in range(16) if bits[i] != (T >> (63 - i)) & 1]
        if diff:  # runs of the stream W XOR T, MSB first: g = first differing position
            g = diff[0]
            assert ((T >> (63 - g)) & 1) == (W < (T >> 48 << 48))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("T", [1, 0x2E3F_0000_0000_0001, 2**63 + 12345, 2**64 - 1, (1 << 57) + 3])
def test_run_decoder_matches_the_bitwise_definition(T, backend, monkeypatch):
    """Both decoders (table-driven, numpy scan and compiled kernel) give the reference events on
    the same bytes — including zero bytes (runs carried across bytes) and runs of 64+ zeros."""
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
    from ldp_plugin.sampling import kernels as _kernels
    from ldp_plugin.sampling import _RunSegment, run_table

    if backend == "numba":
        pytest.importorskip("numba")
    kernel = _kernels.compiled("decode_runs")
    rng = np.random.default_rng(T % 997)
    data = rng.integers(0, 256, 3000, dtype=np.uint8)
    data[100:103] = 0  # 24+ carried zeros
    data[700:710] = 0  # >= 64 zeros: the event is 0 (W == T)
    data[1500] = 0
    ref = _reference_runs(data.tobytes(), T, 10**9)
    for need in (len(ref), len(ref) - 5, 1, 37):
        dec = _RunSegment(need, run_table(T), kernel)
        for piece in np.array_split(data, 7):  # fed in blocks: the carried state crosses blocks
            if not dec.done:
                dec.feed(np.ascontiguousarray(piece))
        got = np.unpackbits(dec.result(), bitorder="little")
        assert np.array_equal(got[:need], ref[:need]) and not got[need:].any()


def test_bernoulli_packed_same_output_on_both_backends_and_segments(monkeypatch):
    """The compiled kernel and the numpy scan give the same reports from the same seeded stream,
    across several segments, with top-up blocks, and for widths that are not whole bytes."""
    pytest.importorskip("numba")
    import ldp_plugin.sampling.bernoulli as sampling

    monkeypatch.setattr(sampling, "_SEG_EVENTS", 5000)
    T = 0x2E3F_0000_0000_0001
    results = {}
    for backend in ("numpy", "numba"):
        monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
        for topup in (4096, 8):
            monkeypatch.setattr(sampling, "_TOPUP_BYTES", topup)
            results[backend, topup] = [SeededRandomSource(9).bernoulli_packed(T, n, d) for n, d in [(3000, 64), (999, 13), (1, 5)]]
    base = results["numpy", 4096]
    for key, got in results.items():
        assert all(np.array_equal(x, y) for x, y in zip(got, base)), key


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_bernoulli_packed_secure_parallel_segments(backend, monkeypatch):
    """The OS-CSPRNG path (each worker draws and decodes its own block): right rate, and the
    segments are independent (no block reused)."""
    import ldp_plugin.sampling.bernoulli as sampling

    if backend == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
    monkeypatch.setattr(sampling, "_SEG_EVENTS", 64 * 500)
    T = 0x4000_0000_0000_0001  # p = 1/4 + 2**-64
    out = SecureRandomSource().bernoulli_packed(T, 4000, 64)  # 8 segments, 2 rounds
    n, p = out.size * 8, T / 2**64
    ones = int(np.unpackbits(out).sum())
    assert abs((ones - n * p) / math.sqrt(n * p * (1 - p))) < 5.3
    segs = out.reshape(8, 500 * 8)
    assert len({seg.tobytes() for seg in segs}) == 8


def test_bernoulli_packed_top_up_blocks(monkeypatch):
    """A segment whose block runs out is continued on extra blocks (forced here by a tiny block
    size), and the result is still the same stream decoded end to end."""
    import ldp_plugin.sampling.bernoulli as sampling

    T = 0x6A09_E667_F3BC_C908
    data = np.random.default_rng(2).integers(0, 256, 1 << 16, dtype=np.uint8).tobytes()
    ref = _reference_runs(data, T, 4000)
    monkeypatch.setattr(sampling, "_block_bytes", lambda n: 64)
    monkeypatch.setattr(sampling, "_TOPUP_BYTES", 16)
    src = ReplaySource(data)
    out = src.bernoulli_packed(T, 50, 80)
    assert np.array_equal(np.unpackbits(out, axis=1, bitorder="little").ravel(), ref)
    assert 64 < src.pos < 2000  # mean 2 bits per event: ~1000 bytes, drawn 64 + 16·k


def test_bernoulli_packed_rate_and_padding():
    src = SeededRandomSource(3)
    T = 0x2E3F_0000_0000_0001
    out = src.bernoulli_packed(T, 20_000, 13)
    assert out.shape == (20_000, 2) and not (out[:, 1] >> 5).any()
    ones = np.unpackbits(out, axis=1, count=13, bitorder="little").sum()
    n, p = 20_000 * 13, T / 2**64
    assert abs((ones - n * p) / math.sqrt(n * p * (1 - p))) < 5.3
    assert not src.bernoulli_packed(0, 3, 9).any()
    full = src.bernoulli_packed(2**64, 3, 9)
    assert (full[:, 0] == 0xFF).all() and (full[:, 1] == 1).all()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("d,k", [(5, 2), (6, 3), (4, 1), (5, 4)])
def test_sorted_subsets_are_exactly_uniform(d, k, backend, monkeypatch):
    """Rows that must contain x are uniform over the C(d−1, k−1) such subsets, rows that must
    not over the C(d−1, k) others (chi-square at α = 1e-6, with a power check: the same test
    rejects the subsets of a sampler that never picks the largest item)."""
    if backend == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
    src = SeededRandomSource(11)
    n = 24_000
    x = (np.arange(n) // 2) % d
    include = np.arange(n) % 2 == 0
    out = src.sorted_subsets(x, include, d, k)
    assert out.shape == (n, k) and (np.diff(out.astype(int), axis=1) > 0).all()
    assert (((out == x[:, None]).any(axis=1)) == include).all()
    for xv in range(d):
        for inc in (True, False):
            rows = out[(x == xv) & (include == inc)]
            support = [c for c in itertools.combinations(range(d), k) if (xv in c) == inc]
            index = {c: i for i, c in enumerate(support)}
            counts = np.bincount([index[tuple(int(v) for v in r)] for r in rows], minlength=len(support))
            if len(support) > 1:
                assert stats.chisquare(counts).pvalue > ALPHA
                if inc and k < d - 1 and xv != d - 1:  # power: drop the subsets containing d − 1
                    biased = np.array([0 if d - 1 in c else cnt for c, cnt in zip(support, counts)])
                    assert stats.chisquare(biased, np.full(len(support), biased.sum() / len(support))).pvalue < ALPHA


def test_sorted_subsets_same_on_both_backends_with_rejections(monkeypatch):
    """The compiled kernels and the numpy twin give identical subsets from the same stream,
    across segments, including rejected words (the word 0 is rejected for every product of
    ranges that is not a power of two: 0·P mod 2**64 = 0 < 2**64 mod P), replaced in row-major
    order, round by round."""
    pytest.importorskip("numba")
    import ldp_plugin.sampling.subsets as sampling

    monkeypatch.setattr(sampling, "_SUBSET_SEG_DRAWS", 3000)
    d, k, n = 1000, 300, 40  # 6 draws per 64-bit word: 50 words per row
    rng = np.random.default_rng(4)
    words = rng.integers(0, 2**64 - 1, 4 * n * 50, dtype=np.uint64)
    words[0 : 40 * 50 : 50] = 0  # the first word of many rows: rejected, then redrawn
    words[n * 50 : n * 50 + 5] = 0  # some replacement words rejected again
    data = words.tobytes()
    x = rng.integers(0, d, n)
    include = rng.random(n) < 0.5
    for dd, kk in ((d, k), (200, 5), (200, 40)):  # numpy: a membership matrix / pairwise checks
        xx = x % dd
        got = {}
        for backend in ("numpy", "numba"):
            monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
            got[backend] = ReplaySource(data).sorted_subsets(xx, include, dd, kk)
        assert np.array_equal(got["numpy"], got["numba"]), (dd, kk)
        assert (((got["numpy"] == xx[:, None]).any(axis=1)) == include).all()
    big = SeededRandomSource(1).sorted_subsets(np.arange(7) * 9000, np.ones(7, bool), 70_000, 3)
    assert big.dtype == np.uint32 and (np.diff(big.astype(np.int64), axis=1) > 0).all()


def test_batched_lemire_digits_are_the_mixed_radix_of_w_times_p():
    """The multiply chain used by sorted_subsets peels off the digits of floor(w·P / 2**64) in
    the mixed radix of the ranges, and leaves w·P mod 2**64 (checked against Python integers)."""
    from ldp_plugin.sampling import _mul_hi_lo

    rng = np.random.default_rng(8)
    ranges = [1023, 1000, 777, 2, 1, 999]
    P = math.prod(ranges)
    w = rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True)
    w[:3] = [0, 2**64 - 1, 2**63]
    acc, digits = w.copy(), []
    for r in ranges:
        hi, acc = _mul_hi_lo(acc, np.uint64(r))
        digits.append(hi)
    for i in range(w.size):
        V, left = divmod(int(w[i]) * P, 2**64)
        expect = []
        for r in reversed(ranges):
            V, dgt = divmod(V, r)
            expect.append(dgt)
        assert [int(d[i]) for d in digits] == expect[::-1] and int(acc[i]) == left


@pytest.mark.parametrize("ranges", [(3, 5), (7, 2, 3), (10, 10, 10), (1, 6)])
def test_batched_lemire_acceptance_is_exactly_uniform(ranges):
    """The acceptance rule, exhaustively on 12-bit words (the same algebra as 64-bit words):
    accepting w iff w·P mod 2**b >= 2**b mod P leaves exactly floor(2**b / P) words for every
    value of floor(w·P / 2**b) — every tuple of digits equally likely."""
    b = 12
    P = math.prod(ranges)
    thr = (1 << b) % P
    counts = np.zeros(P, dtype=np.int64)
    for w in range(1 << b):
        V, left = divmod(w * P, 1 << b)
        if left >= thr:
            counts[V] += 1
    assert (counts == (1 << b) // P).all()
    if thr:  # power: without the rejection the values are not equally likely
        naive = np.bincount([(w * P) >> b for w in range(1 << b)], minlength=P)
        assert not (naive == naive[0]).all()


def test_kernel_backend_selection(monkeypatch):
    """LDP_PLUGIN_KERNELS picks the backend; a bad value is an error naming the variable; a
    kernel that cannot be compiled falls back to the numpy twins (same results)."""
    from ldp_plugin.sampling import kernels as _kernels

    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numpy")
    assert _kernels.kernel_backend() == "numpy" and _kernels.compiled("decode_runs") is None
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "fortran")
    with pytest.raises(ValueError, match="LDP_PLUGIN_KERNELS"):
        _kernels.kernel_backend()
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "auto")
    monkeypatch.setattr(_kernels, "_STATE", {})

    def broken(cache=True):
        raise RuntimeError("cannot cache function: no locator available")

    monkeypatch.setattr(_kernels, "_import_kernels", broken)
    assert _kernels.kernel_backend() == "numpy"
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    with pytest.raises(ImportError, match="fast"):
        _kernels.kernel_backend()


def test_small_calls_do_not_load_numba_in_auto_mode(monkeypatch):
    """Issue 21: a small one-shot call must not pay numba's import; forced numba always loads."""
    from ldp_plugin.sampling import kernels as _kernels

    pytest.importorskip("numba")
    monkeypatch.setattr(_kernels, "_STATE", {})
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "auto")
    assert _kernels.compiled("decode_runs", work=_kernels.LAZY_WORK - 1) is None and "kernels" not in _kernels._STATE
    assert _kernels.preload(1000) == "numpy" and "kernels" not in _kernels._STATE
    assert _kernels.compiled("decode_runs", work=_kernels.LAZY_WORK) is not None  # a big call loads them ...
    assert _kernels.compiled("decode_runs", work=10) is not None  # ... and then every call uses them
    monkeypatch.setattr(_kernels, "_STATE", {})
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    assert _kernels.compiled("decode_runs", work=10) is not None


def test_batch_sampler_arguments_are_checked():
    src = SeededRandomSource(0)
    with pytest.raises(LDPParameterError, match=r"k must be in \[1, d-1\]"):
        src.sorted_subsets(np.array([0]), np.array([True]), 5, 5)
    with pytest.raises(LDPParameterError, match=r"codes in \[0, d\)"):
        src.sorted_subsets(np.array([7]), np.array([True]), 5, 2)
    with pytest.raises(LDPParameterError, match="same length"):
        src.sorted_subsets(np.array([1, 2]), np.array([True]), 5, 2)
    with pytest.raises(LDPParameterError, match="non-negative"):
        src.bernoulli_packed(2**63, -1, 8)
