"""Post-processing and the estimate's error bars."""

import numpy as np
import pytest
from scipy import optimize, stats

from ldp_plugin import KRR, OUE, KSubset, project_simplex
from ldp_plugin.estimation import clip_normalize, em_single_item
from ldp_plugin.sampling import SeededRandomSource


@pytest.mark.parametrize("seed", range(5))
def test_projection_matches_a_generic_solver(seed):
    v = np.random.default_rng(seed).normal(0.1, 0.3, 7)
    got = project_simplex(v)
    res = optimize.minimize(
        lambda x: np.sum((x - v) ** 2),
        np.full(7, 1 / 7),
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        bounds=[(0, None)] * 7,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert np.allclose(got, res.x, atol=1e-6)
    assert got.min() >= 0 and abs(got.sum() - 1) < 1e-12
    assert np.allclose(project_simplex(v, total=3.0).sum(), 3.0)


def test_projection_is_identity_on_the_simplex_and_normalize():
    x = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_simplex(x), x)
    assert np.allclose(clip_normalize(np.array([-0.1, 0.2, 0.6])), [0, 0.25, 0.75])
    assert np.allclose(clip_normalize(np.array([-1.0, -2.0])), [0.5, 0.5])


def test_em_is_the_maximum_likelihood():
    m = KRR(epsilon=1.0, d=5)
    counts = np.array([400, 10, 5, 30, 55])
    n = int(counts.sum())
    th = em_single_item(counts, n, m.p_star, m.q_star)

    def nll(theta):
        mk = theta * (m.p_star - m.q_star) + m.q_star
        return -np.sum(counts * np.log(mk))

    assert abs(th.sum() - 1) < 1e-9 and th.min() >= 0
    rng = np.random.default_rng(0)
    for _ in range(200):  # no feasible point has a higher likelihood
        other = rng.dirichlet(np.ones(5))
        assert nll(th) <= nll(other) + 1e-9
    # KKT: for items with positive mass, the gradient components are equal
    mk = th * (m.p_star - m.q_star) + m.q_star
    grad = counts * (m.p_star - m.q_star) / mk
    pos = th > 1e-6
    assert np.ptp(grad[pos]) / grad[pos].mean() < 1e-5


@pytest.mark.parametrize("mech", [KRR(epsilon=1.0, d=6), OUE(epsilon=1.0, d=6), KSubset(epsilon=1.0, d=6)], ids=["krr", "oue", "ksubset"])
def test_confidence_intervals_cover_at_nominal_rate(mech):
    """Coverage over 600 collections: binomial test against 95% (alpha 1e-6), and the same test
    rejects 85% (power check for intervals that are too narrow)."""
    src = SeededRandomSource(21)
    counts = np.array([500, 300, 100, 60, 30, 10])
    values = np.repeat(np.arange(6), counts)
    theta = counts / counts.sum()
    R = 600
    reports = mech._randomize_codes(np.tile(values, R), src)
    n = values.size
    covered = 0
    for r in range(R):
        est = mech.accumulator().add(reports[r * n : (r + 1) * n]).estimate(postprocess="projection")
        covered += int(np.sum((theta >= est.ci_lower) & (theta <= est.ci_upper)))
    total = R * 6
    assert stats.binomtest(covered, total, 0.95).pvalue > 1e-6
    assert stats.binomtest(covered, total, 0.85).pvalue < 1e-6


def test_estimate_frame_and_dict():
    m = KRR(epsilon=2.0, categories=["a", "b", "c"])
    est = m.estimate(m.randomize(["a"] * 30 + ["b"] * 10, rng=2))
    df = est.to_polars(truth=[0.75, 0.25, 0.0])
    assert df.columns == ["item", "estimate", "std_error", "ci_lower", "ci_upper", "truth"]
    assert df["item"].to_list() == ["a", "b", "c"]
    d = est.to_dict()
    assert d["n"] == 40 and len(d["estimate"]) == 3
    assert est.estimate.sum() == pytest.approx(1.0)
