"""The contract every frequency-oracle mechanism passes (inherited by all families).

1. exact channel enumeration: rows sum to one, equal supports, worst-case ratio <= e^ε with zero
   tolerance, equal to the ratio the constructor computed from its thresholds;
2. goodness of fit of the real sampler against the channel (alpha = 1e-6) with a power check: the
   same samples reject the channel of a mechanism with ε 30% off;
3. unbiasedness and variance of the shared estimator at fixed seeds, tolerances from the analytic
   variance, with power checks;
4. the mergeable accumulator.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp_plugin.exact import exp_lower_bound, ratio_within_exp
from ldp_plugin.sampling import SeededRandomSource

from .conftest import EPSILONS

ALPHA = 1e-6
Z = stats.norm.isf(ALPHA / 2)  # ≈ 4.89


@pytest.mark.parametrize("eps", EPSILONS)
def test_exact_channel(factory, eps):
    m = factory(eps)
    ch = m.channel()
    assert ch.rows_sum_to_one()
    assert ch.equal_supports()
    ratio = ch.max_ratio()
    assert ratio == m.realized_ratio  # closed form used at construction = enumeration
    assert ratio_within_exp(ratio, eps)  # zero tolerance, exact
    assert m.realized_epsilon <= eps
    # the realized mechanism wastes almost nothing of the budget (THE has slack by design)
    if m.uses_full_budget:
        assert ratio >= exp_lower_bound(eps) * (1 - Fraction(1, 10**15))
    # support probabilities of the channel equal (p*, q*)
    P = ch.matrix
    hashed = m.q_star_over_hash
    for x in range(m.d):
        for i in range(m.d):
            supp = sum(P[x][j] for j, y in enumerate(ch.outputs) if m.supports(y, i))
            if i == x or not hashed:
                assert supp == (m.p_star_exact if i == x else m.q_star_exact)
            else:  # q* = 1/g holds in expectation over the seed; per seed it is p (i and x collide) or q_g
                assert 0 < supp <= m.p_star_exact


def _gof(m, counts_by_x, channel):
    """Smallest chi-square p-value over inputs of observed output counts vs a channel."""
    pvals = []
    for x, counts in enumerate(counts_by_x):
        expected = np.array([float(p) for p in channel.matrix[x]]) * counts.sum()
        pvals.append(stats.chisquare(counts, f_exp=expected).pvalue)
    return min(pvals) * len(pvals)  # Bonferroni over inputs


def _sample_counts(m, n_per_x, seed):
    src = SeededRandomSource(seed)
    ch = m.channel()
    out = []
    for x in range(m.d):
        codes = np.full(n_per_x, x, dtype=np.int64)
        reports = m._verification_randomize(codes, src)
        idx = m.output_index(reports)
        out.append(np.bincount(idx, minlength=len(ch.outputs)))
    return out


@pytest.mark.parametrize("eps", [0.7, 2.5])
def test_sampler_follows_channel_with_power(factory, eps):
    m = factory(eps)
    n = 60_000
    counts = _sample_counts(m, n, seed=1234)
    assert _gof(m, counts, m.channel()) > ALPHA
    wrong = dataclasses.replace(m, epsilon=eps * 1.3).channel()  # noise 30% off, same shape
    assert _gof(m, counts, wrong) < ALPHA


def _repeated_estimates(m, theta_counts, repeats, seed, p=None, q=None):
    """Raw estimates of `repeats` independent collections of the same population."""
    src = SeededRandomSource(seed)
    values = np.repeat(np.arange(m.d), theta_counts)
    n = values.size
    p = m.p_star if p is None else p
    q = m.q_star if q is None else q
    reports = m._randomize_codes(np.tile(values, repeats), src)
    est = np.empty((repeats, m.d))
    for r in range(repeats):
        c = m.support_counts(reports[r * n : (r + 1) * n])
        est[r] = (c / n - q) / (p - q)
    return est


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_unbiased_and_variance_match_analytic(factory, eps):
    m = factory(eps)
    n_per = {2: [300, 700], 3: [100, 300, 600], 4: [400, 300, 200, 100]}.get(m.d)
    if n_per is None:
        n_per = list(range(m.d * 40, 0, -40))
    counts = np.array(n_per)
    n = int(counts.sum())
    theta = counts / n
    R = 2000
    est = _repeated_estimates(m, counts, R, seed=99)
    var = m.variance(theta, n)
    # unbiased: mean over R repeats within Z standard errors of θ (Bonferroni over items)
    z_mean = (est.mean(axis=0) - theta) / np.sqrt(var / R)
    zcrit = stats.norm.isf(ALPHA / (2 * m.d))
    assert np.all(np.abs(z_mean) < zcrit)
    # variance: s²/σ² ~ χ²(R-1) within its alpha/(2d) quantiles
    s2 = est.var(axis=0, ddof=1)
    lo = stats.chi2.ppf(ALPHA / (2 * m.d), R - 1) / (R - 1)
    hi = stats.chi2.isf(ALPHA / (2 * m.d), R - 1) / (R - 1)
    assert np.all((s2 / var > lo) & (s2 / var < hi))
    # power: an analytic variance 30% off is rejected by the same test
    assert not np.all((s2 / (1.3 * var) > lo) & (s2 / (1.3 * var) < hi))
    # power: an estimator with the wrong (p*, q*) (those of ε·1.3) is detected as biased
    w = factory(eps * 1.3)
    est_w = (est * (m.p_star - m.q_star) + m.q_star - w.q_star) / (w.p_star - w.q_star)
    z_w = (est_w.mean(axis=0) - theta) / np.sqrt(var / R)
    assert np.any(np.abs(z_w) >= zcrit)
    # total MSE formula matches the per-item sum
    assert math.isclose(float(var.sum()), m.mse(n), rel_tol=1e-12)


def test_accumulator_merge_equals_single_pass(factory):
    m = factory(1.5)
    src = SeededRandomSource(7)
    values = np.arange(3000) % m.d
    r1 = m._randomize_codes(values[:1000], src)
    r2 = m._randomize_codes(values[1000:], src)
    a = m.accumulator().add(r1)
    b = m.accumulator().add(r2)
    merged = a.merge(b)
    whole = m.accumulator().add(np.concatenate([r1, r2]))
    assert merged.n == whole.n == 3000
    assert (merged.counts == whole.counts).all() and merged.counts.dtype == np.int64
    e1, e2 = merged.estimate(postprocess="none"), whole.estimate(postprocess="none")
    assert np.array_equal(e1.raw, e2.raw)
    other = factory(1.6).accumulator()
    with pytest.raises(ValueError, match="same mechanism"):
        a.merge(other)


def test_randomize_one_matches_batch_format(factory):
    m = factory(1.0)
    value = m.items[-1]
    one = m.randomize_one(value, rng=3)
    batch = m.randomize([value], rng=3)
    assert m.n_reports(m.validate_reports(batch)) == 1
    assert one is not None


def test_seeded_is_reproducible_and_secure_varies(factory):
    m = factory(1.0)
    vals = [m.items[i % m.d] for i in range(200)]
    assert np.array_equal(m.randomize(vals, rng=5), m.randomize(vals, rng=5))
    a, b = m.randomize(vals), m.randomize(vals)
    assert a.shape == b.shape
