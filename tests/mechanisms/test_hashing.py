"""The hash family is specified (module docstring of ldp_plugin.hashing) and version-stable:
a pure-Python reference implementation and pinned golden values guard it."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ldp_plugin import LDPInputError, LDPParameterError
from ldp_plugin.hashing import (
    assign_cohorts,
    cohort_seeds,
    hash_interval,
    item_keys,
    mix64,
    seeded_hash,
    seeded_permutation,
)

M = (1 << 64) - 1


def ref_mix(z: int) -> int:
    z &= M
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def ref_key(v) -> int:
    if isinstance(v, int):
        return ref_mix((v & M) ^ 0x6C64702D696E7420)
    return int.from_bytes(hashlib.blake2b(v.encode(), digest_size=8, person=b"ldp-plugin-item").digest(), "little")


def ref_hash(key: int, seed: int, k: int) -> int:
    a = ref_mix(seed ^ 0x5D588B656C078965) | 1
    b = ref_mix(seed ^ 0x269EC3A2C5A1C3B1)
    z = (a * key + b) & M
    return ((z >> 32) * k) >> 32


def test_vectorized_equals_reference():
    ints = [0, 1, -1, 2**62, -(2**63), 12345]
    strs = ["", "apple", "é", "日本", "a" * 100]
    assert item_keys(np.array(ints)).tolist() == [ref_key(v) for v in ints]
    assert item_keys(np.array(strs, dtype=object)).tolist() == [ref_key(v) for v in strs]
    assert item_keys(pl.Series(strs)).tolist() == [ref_key(v) for v in strs]
    assert item_keys(pl.Series(ints)).tolist() == [ref_key(v) for v in ints]
    keys = [ref_key(v) for v in ints + strs]
    for seed in (0, 1, 2**63 + 5):
        for k in (2, 3, 10, 1000, 2**32):
            got = seeded_hash(np.array(keys, dtype=np.uint64), np.uint64(seed), k).tolist()
            assert got == [ref_hash(x, seed, k) for x in keys]
    assert int(mix64(np.uint64(0))) == 0 and int(mix64(np.uint64(1))) == ref_mix(1)


def test_golden_values_never_change():
    # pinned: changing these breaks every stored report and every cohort assignment
    assert item_keys(np.array([0, 1, -1, 2**62])).tolist() == [
        13814490872496340169, 14077415848661790883, 2493228624682323642, 9306002971636398753]
    assert item_keys(np.array(["", "apple", "é"], dtype=object)).tolist() == [
        16181862244701162628, 10643019547571319103, 16883892596308640013]
    assert seeded_hash(item_keys(np.array([0, 1, 2, 3])), np.uint64(12345), 10).tolist() == [5, 4, 6, 8]
    assert assign_cohorts(np.array([10, 11, 12, 13]), 8, 99).tolist() == [4, 5, 1, 5]
    assert cohort_seeds(0, 3).tolist() == [16294208416658607535, 7960286522194355700, 487617019471545679]


def test_string_paths_agree_and_large_columns():
    vals = [f"app{i % 997}" for i in range(20_000)]
    a = item_keys(np.array(vals, dtype=object))
    b = item_keys(pl.Series(vals))
    c = item_keys(np.array(vals))  # numpy unicode dtype
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert np.array_equal(item_keys(pl.Series(vals, dtype=pl.Categorical)), a)


def test_bad_items_are_refused_without_echo():
    with pytest.raises(LDPInputError, match="booleans"):
        item_keys(np.array([True, False]))
    with pytest.raises(LDPInputError, match="floats|dtype float64"):
        item_keys(np.array([1.5]))
    with pytest.raises(LDPInputError, match="null"):
        item_keys(pl.Series(["secret", None]))
    with pytest.raises(LDPInputError) as e:
        item_keys(np.array(["secret-value", 3.5], dtype=object))
    assert "secret" not in str(e.value)
    with pytest.raises(LDPParameterError):
        seeded_hash(np.zeros(2, dtype=np.uint64), 1, 0)


def test_hash_interval_is_exact_membership():
    rng = np.random.default_rng(3)
    z = rng.integers(0, 2**64, size=100_000, dtype=np.uint64, endpoint=False)
    for k in (2, 3, 7, 1000, 2**32):
        h = (z >> np.uint64(32)) * np.uint64(k) >> np.uint64(32) if k < 2**32 else z >> np.uint64(32)
        lo, w = hash_interval(h, k)
        assert ((z - lo) < w).all()
        lo, w = hash_interval((h + np.uint64(1)) % np.uint64(k), k)
        assert not ((z - lo) < w).any()


def test_pairwise_collisions_are_one_over_k():
    # over random seeds, two fixed distinct items collide with probability 1/k (binomial test, power check)
    k, n = 7, 200_000
    seeds = np.random.default_rng(5).integers(0, 2**64, size=n, dtype=np.uint64)
    keys = item_keys(np.array(["alpha", "beta"], dtype=object))
    coll = int((seeded_hash(keys[0], seeds, k) == seeded_hash(keys[1], seeds, k)).sum())
    assert stats.binomtest(coll, n, 1 / k).pvalue > 1e-6
    assert stats.binomtest(coll, n, 1.05 / k).pvalue < 1e-6  # power: a 5% excess would be seen


def test_cohorts_uniform_and_data_independent():
    ids = np.arange(300_000)
    c = assign_cohorts(ids, 16, salt=7)
    counts = np.bincount(c, minlength=16)
    assert stats.chisquare(counts).pvalue > 1e-6
    assert not np.array_equal(c, assign_cohorts(ids, 16, salt=8))
    # string ids work and give the same cohort for the same id whatever else is in the column
    s = np.array([f"user-{i}" for i in range(1000)], dtype=object)
    assert np.array_equal(assign_cohorts(s, 16, 1)[:10], assign_cohorts(s[:10], 16, 1))


def test_seeded_permutation_is_a_permutation():
    keys = item_keys(np.arange(1000))
    r = seeded_permutation(keys, 3)
    assert np.array_equal(np.sort(r), np.arange(1000))
    assert not np.array_equal(r, seeded_permutation(keys, 4))


def test_trailing_nul_labels_keep_their_identity_on_every_input_path():
    """numpy's fixed-width strings drop trailing NULs: a list of ``"a\\x00"`` must not hash as ``"a"``
    (the Polars path and a Python list gave different keys for the same label)."""
    import polars as pl

    from ldp_plugin.hashing import item_keys

    labels = ["a\x00", "a", "b\x00\x00", "b"]
    from_list = item_keys(labels)
    assert len(set(from_list.tolist())) == 4
    np.testing.assert_array_equal(from_list, item_keys(pl.Series(labels)))
    np.testing.assert_array_equal(from_list, item_keys(np.array(labels, dtype=object)))
    np.testing.assert_array_equal(from_list, item_keys(tuple(labels)))
    raw = [b"x\x00", b"x"]
    assert len(set(item_keys(raw).tolist())) == 2
    import ldp_plugin as ldp

    krr = ldp.KRR(epsilon=1.0, d=3, categories=["a", "a\x00", "b"])
    assert krr.encode(["a\x00", "a", "b"]).tolist() == [1, 0, 2]
