"""The sampling layer: exactness of thresholds, unbiased integers, uniform subsets."""

import itertools
import math

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


def test_bernoulli_equals_full_64bit_comparison():
    """The lazy byte-wise comparison decides exactly W < T for the 64-bit word W it consumes."""
    rng = np.random.default_rng(5)
    for T in [1, 2**63, 2**64 - 1, 0x12_34_56_78_9A_BC_DE_F0, 0x80_00_00_00_00_00_00_01]:
        tb = T.to_bytes(8, "big")
        # words that share long prefixes with T, to exercise every tie level
        words = []
        for level in range(9):
            for _ in range(20):
                prefix = tb[:level]
                rest = rng.integers(0, 256, 8 - level, dtype=np.uint8).tobytes()
                words.append(prefix + rest)
        for w in words:
            src = ReplaySource(w)
            got = bool(src.bernoulli(T, 1)[0])
            assert got == (int.from_bytes(w, "big") < T)


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
