"""The exact Poisson / Skellam samplers follow their laws (chi-square on a fixed seed, tiny α,
with a power check: the same test rejects a rate 30% off), realize only dyadic rates, and draw
only through the source's integer comparisons."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.sampling.poisson import dyadic_rate, poisson_dyadic, skellam_dyadic

ALPHA = 1e-6


def _chi2_pvalue(sample: np.ndarray, pmf, support: np.ndarray) -> float:
    """Chi-square goodness of fit, the tails pooled into the end cells."""
    counts = np.array([np.sum(sample == k) for k in support], dtype=float)
    counts[0] += np.sum(sample < support[0])
    counts[-1] += np.sum(sample > support[-1])
    p = pmf(support).astype(float)
    p[0] += max(0.0, 1 - p.sum()) / 2
    p[-1] += max(0.0, 1 - p.sum())
    exp = p / p.sum() * sample.size
    keep = exp >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(exp[keep], exp[~keep].sum())
    obs, exp = (obs, exp) if exp[-1] > 0 else (obs[:-1], exp[:-1])
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("mu", [0.01, 0.4, 3.7, 25.0])
def test_poisson_law_and_power(mu):
    m, T = dyadic_rate(mu)
    lam = m * T / 2**64
    assert lam <= mu and mu - lam < m / 2**64 + 1e-15
    x = poisson_dyadic(SeededRandomSource(7, stream=int(mu * 100)), m, T, 60_000)
    support = np.arange(0, int(lam + 8 * np.sqrt(lam) + 8))
    assert _chi2_pvalue(x, lambda k: stats.poisson.pmf(k, lam), support) > ALPHA
    off = lam * 1.3  # power: the same samples against a rate 30% off
    assert _chi2_pvalue(x, lambda k: stats.poisson.pmf(k, off), support) < ALPHA


@pytest.mark.parametrize("mu", [0.05, 6.0])
def test_skellam_law_and_power(mu):
    m, T = dyadic_rate(mu)
    lam = m * T / 2**64
    x = skellam_dyadic(SeededRandomSource(11, stream=int(mu * 100)), m, T, 60_000)
    r = int(8 * np.sqrt(2 * lam) + 6)
    support = np.arange(-r, r + 1)
    assert _chi2_pvalue(x, lambda k: stats.skellam.pmf(k, lam, lam), support) > ALPHA
    assert _chi2_pvalue(x, lambda k: stats.skellam.pmf(k, 1.3 * lam, 1.3 * lam), support) < ALPHA


def test_sum_of_device_noises_is_skellam_of_the_sum():
    """Ten devices' Skellam(μ) sum to Skellam(10 μ): the law the server's accounting assumes."""
    m, T = dyadic_rate(0.3)
    lam = m * T / 2**64
    src = SeededRandomSource(3)
    x = sum(skellam_dyadic(src, m, T, 40_000) for _ in range(10))
    r = int(8 * np.sqrt(20 * lam) + 6)
    support = np.arange(-r, r + 1)
    assert _chi2_pvalue(x, lambda k: stats.skellam.pmf(k, 10 * lam, 10 * lam), support) > ALPHA
    assert _chi2_pvalue(x, lambda k: stats.skellam.pmf(k, 7 * lam, 7 * lam), support) < ALPHA


class _Counting(SeededRandomSource):
    """Records every threshold and range the sampler asks for."""

    def __init__(self, seed):
        super().__init__(seed)
        self.thresholds, self.ranges = set(), set()

    def bernoulli(self, threshold, size):
        self.thresholds.add(threshold)
        return super().bernoulli(threshold, size)

    def uniform_int(self, r, size):
        self.ranges.add(r)
        return super().uniform_int(r, size)


def test_only_integer_comparisons_are_asked():
    m, T = dyadic_rate(Fraction(1, 3))
    src = _Counting(5)
    poisson_dyadic(src, m, T, 5000)
    assert src.thresholds == {T}
    assert all(isinstance(r, int) and r >= 2 for r in src.ranges)


def test_refusals():
    for bad in (0, -1.0):
        with pytest.raises(LDPParameterError, match="mu"):
            dyadic_rate(bad)
    src = SeededRandomSource(1)
    with pytest.raises(LDPParameterError, match="threshold"):
        poisson_dyadic(src, 1, (1 << 63) + 1, 3)
    with pytest.raises(LDPParameterError, match="m must"):
        poisson_dyadic(src, 0, 1 << 60, 3)
