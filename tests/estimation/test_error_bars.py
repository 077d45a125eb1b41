"""Issue 22: error bars you can trust. Coverage is measured over fixed-seed repeats against the
issue's bars, and each test has its power check: the same measurement fails for the estimator
the issue found wrong (SampleOne without the slot variance, sample-target intervals against a
population, O-RAPPOR's old random-partition prediction)."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.estimation import retarget
from ldp_plugin.simulate import draw_sets, simulate
from ldp_plugin.theory import mse_cohort

pytestmark = pytest.mark.slow


def _coverage(hits: np.ndarray) -> tuple[float, float]:
    per_item = hits.mean(axis=0)
    return float(per_item.mean()), float(per_item.min())


@pytest.mark.parametrize("eps", [4.0, 6.0])
def test_sample_one_intervals_cover_with_the_slot_variance(eps):
    d, m, n, R = 8, 4, 10_000, 150
    gen = np.random.default_rng(int(eps))
    theta = gen.dirichlet(np.ones(d))
    s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=eps, d=d), m=m)
    new, old = [], []
    for r in range(R):
        sets, f = draw_sets(theta, n, m, gen)
        acc = s.accumulator().add(s.randomize(sets, rng=1000 * int(eps) + r))
        est = s.estimate_from(acc, postprocess="none")
        new.append((est.ci_lower <= f) & (f <= est.ci_upper))
        # the interval the issue measured: m · the padded estimator's standard error only
        inner = acc.estimate(postprocess="none")
        se_old = m * np.asarray(inner.std_error)[:d]
        old.append(np.abs(est.raw - f) <= 1.959964 * se_old)
    mean, worst = _coverage(np.array(new))
    assert mean >= 0.93 and worst >= 0.88, (mean, worst)
    o_mean, o_worst = _coverage(np.array(old))
    assert o_mean < 0.93 or o_worst < 0.88, (o_mean, o_worst)  # power: the old intervals fail


def test_population_target_covers_theta_for_iid_users():
    d, eps, n, R = 8, 4.0, 100_000, 200
    gen = np.random.default_rng(22)
    theta = gen.dirichlet(np.ones(d) * 0.8)
    mech = ldp.KRR(epsilon=eps, d=d)
    pop, samp = [], []
    for r in range(R):
        users = gen.choice(d, size=n, p=theta)
        est = mech.estimate(mech.randomize_encoded(users, rng=r), postprocess="none", target="population")
        assert est.target == "population"
        pop.append((est.ci_lower <= theta) & (theta <= est.ci_upper))
        s_est = mech.estimate(mech.randomize_encoded(users, rng=r), postprocess="none")
        samp.append((s_est.ci_lower <= theta) & (theta <= s_est.ci_upper))
    mean, worst = _coverage(np.array(pop))
    assert mean >= 0.93 and worst >= 0.88, (mean, worst)
    s_mean, s_worst = _coverage(np.array(samp))
    assert s_mean < 0.93 or s_worst < 0.88, (s_mean, s_worst)  # power: the sample target misses θ


def test_retarget_formula_and_validation():
    mech = ldp.KRR(epsilon=1.0, d=4)
    est = mech.estimate(mech.randomize_encoded(np.arange(4000) % 4, rng=0), postprocess="none")
    pop = retarget(est, "population")
    f = np.clip(est.raw, 0, 1)
    assert np.allclose(pop.std_error**2, est.std_error**2 + f * (1 - f) / est.n)
    assert retarget(est, "sample") is est and est.to_dict()["target"] == "sample"
    with pytest.raises(ldp.LDPParameterError, match="target"):
        retarget(est, "everyone")


@pytest.mark.slow
@pytest.mark.parametrize("d,k,h,C", [(64, 32, 1, 8), (64, 128, 2, 4), (16, 32, 4, 4)])
def test_orappor_predicted_mse_matches_simulation(d, k, h, C):
    mech = ldp.ORAPPOR(epsilon=2.0, d=d, k=k, h=h, cohorts=C)
    r = simulate(mech, n=20_000, repeats=40, seed=3, postprocess="none", distribution="uniform")
    ratio = r.mean_l2_squared_raw / r.analytic_mse
    assert 0.85 <= ratio <= 1.15, ratio
    # power: the random-partition shortcut the issue measured is off by more than 15% here
    if (d, k, h) != (64, 32, 1):
        old = mse_cohort(d, 20_000, k, C, mech.p, mech.q, h=h, covariance="bernoulli", closed=True)
        assert not 0.85 <= r.mean_l2_squared_raw / old <= 1.15
