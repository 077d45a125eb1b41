"""Issue 39: the aggregation kernels (ldp_plugin.sampling.aggregate_kernels) return exactly the
counts of the reference paths (np.bincount, np.unpackbits(...).sum) on both backends, through the
mechanisms' accumulators too, and refuse out-of-range reports with the same errors."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError
from ldp_plugin.sampling import aggregate_kernels as ak

BACKENDS = ["numpy", "numba"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", request.param)
    assert ak.aggregate_backend() == request.param
    return request.param


_SMALL = [(n, size) for n, size in [(1, 3), (7, 200), (10_001, 1024)]]
_CASES = [(dt, n, size) for dt in (np.uint8, np.uint16, np.uint32, np.int32, np.int64, np.uint64) for n, size in _SMALL]
_CASES += [(np.uint16, 3_000_000, 37), (np.int64, 3_000_000, 1024)]  # large: the two-thread split


@pytest.mark.parametrize("dtype,n,size", _CASES)
def test_bounded_histogram_equals_bincount(backend, dtype, n, size):
    size = min(size, np.iinfo(dtype).max + 1)
    a = np.random.default_rng(n).integers(0, size, n).astype(dtype)
    a[: min(n, 5)] = size - 1  # a run of equal values at the top of the range
    assert np.array_equal(ak.bounded_histogram(a, size), np.bincount(a.astype(np.int64), minlength=size))


@pytest.mark.parametrize("dtype", [np.uint16, np.int64, np.uint64])
def test_bounded_histogram_refuses_any_value_outside(backend, dtype):
    size = 100
    for bad in ([size], [np.iinfo(dtype).max], [-1] if np.iinfo(dtype).min < 0 else [size + 7]):
        for where in (0, 4, 9998):  # inside the 4-way unrolled loop and in its tail
            a = np.zeros(9999, dtype=dtype)
            a[where] = bad[0]
            with pytest.raises(LDPInputError, match=r"\[0, 100\)") as e:
                ak.bounded_histogram(a, size)
            assert str(bad[0]) not in str(e.value).replace("[0, 100)", "")  # never echoes the value
    with pytest.raises(LDPInputError):
        ak.bounded_histogram(np.zeros((2, 2), dtype=np.int64), size)
    with pytest.raises(LDPInputError):
        ak.bounded_histogram(np.zeros(3), size)


@pytest.mark.parametrize("n,d", [(1, 3), (15, 64), (16, 64), (256, 1024), (1000, 13), (40_000, 130), (300_001, 64), (3001, 1024)])
def test_packed_column_counts_equal_unpack_and_sum(backend, n, d):
    rng = np.random.default_rng(n + d)
    bits = rng.random((n, d)) < rng.uniform(0.05, 0.95)
    bits[: min(n, 300)] = True  # > 255 rows of ones: every counter level carries
    packed = np.packbits(bits, axis=1, bitorder="little")
    assert np.array_equal(ak.packed_column_counts(packed, d), bits.sum(axis=0))
    if n > 2:  # a non-contiguous view counts the same
        assert np.array_equal(ak.packed_column_counts(packed[::2], d), bits[::2].sum(axis=0))


def test_grouped_histogram_equals_bincount_of_pairs(backend):
    rng = np.random.default_rng(3)
    g, v = rng.integers(0, 9, 50_001), rng.integers(0, 17, 50_001).astype(np.uint16)
    ref = np.bincount(g * 17 + v, minlength=9 * 17).reshape(9, 17)
    assert np.array_equal(ak.grouped_histogram(g, v, 9, 17), ref)
    v[77] = 17
    with pytest.raises(LDPInputError):
        ak.grouped_histogram(g, v, 9, 17)


@pytest.mark.parametrize("make", [lambda: ldp.KRR(epsilon=1.0, d=1024), lambda: ldp.HadamardResponse(epsilon=1.0, d=1000),
                                  lambda: ldp.OUE(epsilon=1.0, d=1024), lambda: ldp.RAPPOR(epsilon=2.0, d=77),
                                  lambda: ldp.WarnerRR(epsilon=1.0)])
def test_accumulators_count_exactly_as_the_reference(backend, make):
    m = make()
    x = np.random.default_rng(5).integers(0, m.d, 20_000)
    r = m.randomize_encoded(x, rng=7)
    acc = m.accumulator().add(r).add(r[:999])
    ref = m.support_counts(m.validate_reports(r)) + m.support_counts(m.validate_reports(r[:999]))
    if m.name in ("krr", "hadamard"):  # the reference histogram, without the fused kernel
        hist = np.bincount(np.asarray(r, dtype=np.int64), minlength=m.output_alphabet_size())
        assert np.array_equal(m.support_counts(np.asarray(r)), ref - m.support_counts(np.asarray(r[:999])))
        assert hist.sum() == r.shape[0]
    if m.name in ("oue", "rappor"):
        ref_bits = np.unpackbits(r, axis=1, count=m.d, bitorder="little").sum(axis=0) + np.unpackbits(r[:999], axis=1, count=m.d, bitorder="little").sum(axis=0)
        assert np.array_equal(acc.counts, ref_bits)
    assert np.array_equal(acc.counts, ref) and acc.n == 20_999


def test_krr_and_hadamard_refuse_out_of_range_reports_as_before(backend):
    krr, hr = ldp.KRR(epsilon=1.0, d=10), ldp.HadamardResponse(epsilon=1.0, d=6)
    with pytest.raises(LDPInputError, match=r"krr reports must be item codes in \[0, 10\)"):
        krr.accumulator().add(np.array([1, 2, 10]))
    with pytest.raises(LDPInputError, match=r"krr reports must be item codes in \[0, 10\)"):
        krr.accumulator().add(np.array([1, -2, 3]))
    with pytest.raises(LDPInputError, match="krr reports must hold integers"):
        krr.accumulator().add(np.array([1.0, 2.0]))
    with pytest.raises(LDPInputError, match=r"hadamard reports must be in \[0, 8\)"):
        hr.accumulator().add(np.array([8], dtype=np.uint32))
    acc = krr.accumulator()
    with pytest.raises(LDPInputError):
        acc.add(np.array([3, 3, 99]))
    assert acc.n == 0 and not acc.counts.any()  # nothing of a refused batch is counted


@pytest.mark.parametrize("d", [2, 50, 1024])
def test_olh_support_counts_equal_the_per_report_definition(backend, d):
    from ldp_plugin.hashing import seeded_hash
    from ldp_plugin.mechanisms.local_hashing import olh_support_counts

    m = ldp.OLH(epsilon=2.0, d=d)
    r = m.randomize_encoded(np.random.default_rng(d).integers(0, d, 3000), rng=9)
    keys = m.item_keys()
    ref = np.zeros(d, dtype=np.int64)
    for s, y in r[:300]:  # the definition: report (s, y) supports v iff h_s(key_v) = y
        ref += seeded_hash(keys, np.uint64(s), m.g) == y
    assert np.array_equal(olh_support_counts(r[:300, 0], r[:300, 1], m.g, keys), ref)
    full = olh_support_counts(r[:, 0], r[:, 1], m.g, keys)
    assert np.array_equal(full, sum(olh_support_counts(r[i:i + 97, 0], r[i:i + 97, 1], m.g, keys) for i in range(0, 3000, 97)))
    assert np.array_equal(m.accumulator().add(r).counts, full)


@pytest.mark.parametrize("d,eps", [(64, 1.0), (1024, 1.0), (50, 4.0)])
def test_k_subset_counts_and_checks_in_one_pass(backend, d, eps):
    m = ldp.KSubset(epsilon=eps, d=d)
    r = m.randomize_encoded(np.random.default_rng(d).integers(0, d, 70_001), rng=3)
    acc = m.accumulator().add(r)
    assert np.array_equal(acc.counts, np.bincount(r.ravel().astype(np.int64), minlength=d)) and acc.n == 70_001
    if m.k > 1:
        bad = r.copy()
        bad[69_999, [0, 1]] = bad[69_999, [1, 0]]  # one row out of order, in the last step
        with pytest.raises(LDPInputError, match="strictly increasing"):
            m.accumulator().add(bad)
    bad = r.astype(np.int64)
    bad[5, -1] = d
    with pytest.raises(LDPInputError, match=rf"item codes in \[0, {d}\)"):
        m.accumulator().add(bad)
    bad[5, -1] = -1  # negative: out of range (it is also out of order: the range error is named)
    with pytest.raises(LDPInputError, match=rf"item codes in \[0, {d}\)"):
        m.accumulator().add(bad)


def test_bounded_histogram_blocks_check_every_value(backend):
    """The compiled kernel range-checks per block of HIST_BLOCK reports (a min/max pass, then an
    unchecked count): an outside value at a block edge, a negative int8 below a size > 128 (its
    unsigned bits lie inside) and random dtypes/lengths/offsets all give bincount's answer or the
    refusal, like the numpy twin."""
    B = 2048  # _numba_aggregate.HIST_BLOCK
    for where in (B - 1, B, 2 * B - 1, 3 * B + 1):
        a = np.ones(3 * B + 5, dtype=np.uint16)
        a[where] = 300
        with pytest.raises(LDPInputError):
            ak.bounded_histogram(a, 300)
    a = np.zeros(2 * B + 3, dtype=np.int8)
    a[B + 1] = -1  # 255 as a byte: inside [0, 200)
    with pytest.raises(LDPInputError):
        ak.bounded_histogram(a, 200)
    rng = np.random.default_rng(39)
    for _ in range(40):
        dtype = rng.choice([np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int64, np.uint64])
        size = int(rng.integers(1, min(np.iinfo(dtype).max, 5000) + 1))
        n = int(rng.integers(1, 5 * B))
        a = rng.integers(0, size, n).astype(dtype)
        view = a[int(rng.integers(0, 3)) :: int(rng.integers(1, 3))]  # offsets and strides
        assert np.array_equal(ak.bounded_histogram(view, size), np.bincount(view.astype(np.int64), minlength=size))
