"""Iterative Bayesian update (:mod:`ldp_plugin.estimation.bayes`): the exact k-RR likelihood,
the composite support-count likelihood, the ``postprocess="ibu"`` option, and the coverage of its
parametric-bootstrap intervals at drawn parameters and shapes (with a power check)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.estimation import em_single_item
from ldp_plugin.estimation.bayes import _gradient, _loglik, ibu, ibu_bootstrap

PURE = [ldp.KRR, ldp.OUE, ldp.RAPPOR, ldp.OLH, ldp.HadamardResponse, ldp.KSubset]


def likelihood_of(mech) -> str:
    """k-RR's report names one item (the exact multinomial likelihood); the others count supports."""
    return "multinomial" if isinstance(mech, ldp.KRR) else "binomial"


def _counts(mech, theta, n, seed):
    x = np.random.default_rng(seed).choice(theta.size, size=n, p=theta)
    acc = mech.accumulator().add(mech.randomize(x, rng=seed + 1))
    return acc


def test_krr_ibu_is_the_exact_multinomial_mle():
    m = ldp.KRR(epsilon=1.0, d=6)
    acc = _counts(m, np.array([0.5, 0.3, 0.2, 0, 0, 0]), 5000, 3)
    got = ibu(acc.counts, acc.n, m.p_star, m.q_star, likelihood="multinomial", tol=1e-9)
    ref = em_single_item(acc.counts, acc.n, m.p_star, m.q_star)
    assert np.abs(got - ref).max() < 1e-4


@pytest.mark.parametrize("mech", [ldp.OUE, ldp.OLH, ldp.KSubset])
def test_binomial_ibu_satisfies_the_optimality_conditions(mech):
    m = mech(epsilon=2.0, d=8)
    acc = _counts(m, np.array([0.4, 0.3, 0.2, 0.1, 0, 0, 0, 0]), 20_000, 5)
    th = ibu(acc.counts, acc.n, m.p_star, m.q_star, likelihood="binomial", tol=1e-8)
    c, n = acc.counts.astype(float)[None], np.array([[float(acc.n)]])
    g = _gradient(th[None], c, n, m.p_star, m.q_star, "binomial")[0]
    lam = float(np.sum(th * g))
    assert abs(th.sum() - 1) < 1e-12 and th.min() >= 0
    assert np.all(g <= lam + 1e-3)  # KKT: no ascent direction left on the simplex
    # a perturbed point along the simplex is worse (the maximum, not a saddle)
    other = 0.9 * th + 0.1 / 8
    assert _loglik(th[None], c, n, m.p_star, m.q_star, "binomial")[0] >= _loglik(other[None], c, n, m.p_star, m.q_star, "binomial")[0]


@pytest.mark.parametrize("mech", PURE)
def test_postprocess_ibu_on_every_pure_oracle(mech):
    m = mech(epsilon=2.0, d=8)
    reports = m.randomize(np.arange(8).repeat(300), rng=7)
    est = m.estimate(reports, postprocess="ibu")
    assert est.postprocess == "ibu" and abs(est.estimate.sum() - 1) < 1e-9
    # conservative intervals whose std_error leaves out the shrinkage's bias: labelled, also in the Polars frame
    assert est.interval_kind == "bound" and m.estimate(reports).interval_kind == "interval"
    frame = ldp.adapters.estimate(ldp.adapters.reports_to_frame(m, reports), m, postprocess="ibu")
    assert frame["interval_kind"].to_list() == ["bound"] * 8 and "interval_kind" not in ldp.adapters.estimate(
        ldp.adapters.reports_to_frame(m, reports), m).columns
    assert np.all(est.ci_lower <= est.ci_upper) and np.all(est.std_error > 0)
    assert m.estimate(reports).postprocess == "projection"  # the default is unchanged
    with pytest.raises(LDPParameterError, match="target"):
        m.estimate(reports, postprocess="ibu", target="population")


def test_ibu_refused_where_no_support_count_likelihood():
    cms = ldp.CMS(epsilon=2.0, k=64)
    with pytest.raises(LDPParameterError, match="ibu"):
        cms.estimate(cms.randomize(["a"] * 40, rng=1), candidates=["a", "b"], postprocess="ibu")
    s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2)
    with pytest.raises(LDPParameterError, match="ibu"):
        s.estimate(s.randomize([{0, 1}] * 20, rng=1), postprocess="ibu")
    for sm in (ldp.PrivSet(epsilon=1.0, d=4, m=2), ldp.RapporSet(epsilon=1.0, d=4, m=2), ldp.Wheel(epsilon=1.0, d=4, m=2)):
        reports = sm.randomize([{0, 1}] * 20, rng=1)  # the set oracles: no single-item likelihood
        with pytest.raises(LDPParameterError, match="ibu"):
            sm.estimate(reports, postprocess="ibu")
        assert sm.estimate(reports, postprocess="projection").n == 20


def test_bootstrap_seeded_and_checked():
    m = ldp.OUE(epsilon=1.0, d=8)
    acc = _counts(m, np.full(8, 1 / 8), 2000, 1)
    a = ibu_bootstrap(acc.counts, acc.n, m.p_star, m.q_star, likelihood="binomial", replicates=40, rng=3)
    b = ibu_bootstrap(acc.counts, acc.n, m.p_star, m.q_star, likelihood="binomial", replicates=40, rng=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    for bad in (dict(replicates=0), dict(replicates=True), dict(rng="x"), dict(confidence=1.5)):
        with pytest.raises(LDPParameterError):
            ibu_bootstrap(acc.counts, acc.n, m.p_star, m.q_star, **bad)
    with pytest.raises(LDPParameterError, match="likelihood"):
        ibu(acc.counts, acc.n, m.p_star, m.q_star, likelihood="poisson")


def _shape(name, d):
    if name == "uniform":
        return np.full(d, 1 / d)
    if name == "zipf":
        w = 1 / np.arange(1, d + 1) ** 1.3
        return w / w.sum()
    if name == "point":
        t = np.zeros(d)
        t[d // 3] = 1.0
        return t
    t = np.zeros(d)  # bimodal: two bumps of width d/8
    for c in (d // 4, 3 * d // 4):
        t[max(0, c - d // 16): c + d // 16 + 1] += 1
    return t / t.sum()


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["uniform", "zipf", "point", "bimodal"])
@pytest.mark.parametrize("mech", [ldp.KRR, ldp.OUE, ldp.OLH])
def test_ibu_interval_coverage_at_drawn_parameters(mech, shape):
    """Coverage of the bootstrap interval (pooled over items and 8 seeded runs at ε, d, n drawn
    from [0.5, 4] × [4, 64] × [2e3, 2e5] log-uniform) is at least 0.93 less three binomial sds;
    power: the same intervals shrunk to 40% of their width miss (coverage below 0.85)."""
    g = np.random.default_rng(zlib.crc32(f"{mech.__name__}:{shape}".encode()))
    hits, shrunk, total = 0, 0, 0
    for run in range(8):
        eps = float(np.exp(g.uniform(np.log(0.5), np.log(4))))
        d = int(np.exp(g.uniform(np.log(4), np.log(64))))
        n = int(np.exp(g.uniform(np.log(2e3), np.log(2e5))))
        theta = _shape(shape, d)
        m = mech(epsilon=eps, d=d)
        pop = np.repeat(np.arange(d), np.round(theta * n).astype(int))  # the sample target
        acc = m.accumulator().add(m.randomize(pop, rng=100 + run))
        t_emp = np.bincount(pop, minlength=d) / pop.size
        est, se, lo, hi = ibu_bootstrap(acc.counts, acc.n, m.p_star, m.q_star, likelihood=likelihood_of(m), replicates=100, rng=run)
        hits += int(np.sum((lo <= t_emp) & (t_emp <= hi)))
        mid, half = (lo + hi) / 2, 0.2 * (hi - lo)
        shrunk += int(np.sum((mid - half <= t_emp) & (t_emp <= mid + half)))
        total += d
    cov = hits / total
    assert cov >= 0.93 - 3 * np.sqrt(0.93 * 0.07 / total), cov
    assert shrunk / total < 0.85, shrunk / total
