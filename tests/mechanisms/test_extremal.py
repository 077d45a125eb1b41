"""Extremal mechanisms (Kairouz, Oh & Viswanath, JMLR 2016): the staircase LP is the optimum (never below binary, RR or
geometric), binary is optimal for total variation (Thm 6) and at small ε, RR at large ε;
the realized channels pass every verification layer."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin import LDPParameterError
from ldp_plugin.mechanisms.extremal import pattern_utilities, solve_staircase
from ldp_plugin.registry import verify_instance
from ldp_plugin.theory import mutual_information


def _util(Q, utility, prior=None, p0=None, p1=None):
    return float(pattern_utilities(Q, utility, prior=prior, p0=p0, p1=p1).sum())


def _rr(eps, k):
    e = math.exp(eps)
    return (np.ones((k, k)) + (e - 1) * np.eye(k)) / (e + k - 1)


@pytest.mark.parametrize("utility", ["mutual_information", "kl", "tv", "chi2"])
def test_lp_optimum_dominates_registered_mechanisms(utility):
    rng = np.random.default_rng(3)
    for _ in range(15):
        k = int(rng.integers(3, 7))
        prior, p0, p1 = (rng.dirichlet(np.ones(k)) for _ in range(3))
        for eps in (0.3, 1.0, 3.0):
            kw = {"prior": prior} if utility == "mutual_information" else {"p0": p0, "p1": p1}
            opt, Q = solve_staircase(k, eps, utility, **kw)
            assert abs(_util(Q, utility, **kw) - opt) < 1e-9
            others = [
                ldp.BinaryMechanism(epsilon=eps, p0=p0, p1=p1).matrix(),
                _rr(eps, k),
                ldp.GeometricMechanism(epsilon=eps, d=k).matrix(),
                ldp.KSubset(epsilon=eps, d=k, k=max(1, k // 2)).channel().as_float_array(),
            ]
            for M in others:
                assert _util(M, utility, **kw) <= opt * (1 + 1e-7) + 1e-12
            if utility == "mutual_information":
                assert abs(mutual_information(Q, prior) - opt) < 1e-9


def test_binary_optimal_for_tv_and_small_eps_rr_for_large_eps():
    rng = np.random.default_rng(11)
    for _ in range(20):
        p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        for eps in (0.5, 2.0, 5.0):  # Thm 6: binary maximizes TV at every ε
            opt, _ = solve_staircase(6, eps, "tv", p0=p0, p1=p1)
            assert abs(_util(ldp.BinaryMechanism(epsilon=eps, p0=p0, p1=p1).matrix(), "tv", p0=p0, p1=p1) / opt - 1) < 1e-6
        opt, _ = solve_staircase(6, 0.05, "kl", p0=p0, p1=p1)  # Thm 5: small ε
        assert _util(ldp.BinaryMechanism(epsilon=0.05, p0=p0, p1=p1).matrix(), "kl", p0=p0, p1=p1) / opt > 1 - 1e-6
        opt, _ = solve_staircase(6, 15.0, "kl", p0=p0, p1=p1)  # Thm 8: large ε
        assert _util(_rr(15.0, 6), "kl", p0=p0, p1=p1) / opt > 1 - 1e-4


@pytest.mark.parametrize(
    "make",
    [
        lambda: ldp.BinaryMechanism(epsilon=1.5, d=4, subset=[1, 3]),
        lambda: ldp.GeometricMechanism(epsilon=2.0, d=5),
        lambda: ldp.StaircaseMechanism(epsilon=1.0, utility="mutual_information", prior=[0.5, 0.2, 0.2, 0.1]),
        lambda: ldp.StaircaseMechanism(epsilon=3.0, utility="chi2", p0=[0.5, 0.3, 0.2], p1=[0.2, 0.2, 0.6]),
    ],
    ids=["binary", "geometric", "staircase-mi", "staircase-chi2"],
)
def test_realized_channels_pass_all_layers(make):
    m = make()
    r = verify_instance(m, name=m.name, instance=m.params(), seed=2, quick=True)
    assert r["passed"] and r["exact"]["rows_sum_to_one"] and r["realized_epsilon"] <= m.epsilon
    assert ldp.make_ldp(*ldp.space_of(m), m, rng=1).map(1) == m.epsilon


def test_estimate_inverts_an_invertible_channel():
    m = ldp.GeometricMechanism(epsilon=3.0, d=4)
    vals = np.repeat(np.arange(4), [4000, 3000, 2000, 1000])
    e = m.estimate(m.randomize(vals, rng=5), postprocess="none")
    assert np.all(np.abs(e.raw - np.array([0.4, 0.3, 0.2, 0.1])) < 5 * e.std_error)


def test_validation():
    with pytest.raises(LDPParameterError, match="k must be in"):
        solve_staircase(15, 1.0, "kl", p0=np.full(15, 1 / 15), p1=np.full(15, 1 / 15))
    with pytest.raises(LDPParameterError, match="at most 14"):
        ldp.StaircaseMechanism(epsilon=1.0, prior=np.full(16, 1 / 16))
    with pytest.raises(LDPParameterError, match="proper"):
        ldp.BinaryMechanism(epsilon=1.0, d=3, subset=[0, 1, 2])
    with pytest.raises(LDPParameterError, match="p1 must be a positive distribution"):
        ldp.BinaryMechanism(epsilon=1.0, p0=[0.5, 0.5], p1=[1.2, -0.2])
    with pytest.raises(LDPParameterError, match="utility"):
        ldp.StaircaseMechanism(epsilon=1.0, utility="entropy", d=3)


def test_unidentified_items_get_the_whole_interval():
    """The binary mechanism reports only whether the value is in T: an item outside T alone is not
    identified, so its interval is [0, 1] with an infinite standard error (a Zipf population covered
    it 30% of the time when it was given the minimum-norm share's narrow interval)."""
    m = ldp.BinaryMechanism(epsilon=0.5, d=3, subset=[0])
    vals = np.repeat(np.arange(3), [1000, 3000, 500])
    e = m.estimate(m.randomize(vals, rng=2))
    assert np.isfinite(e.std_error[0]) and abs(e.raw[0] - 1000 / 4500) < 5 * e.std_error[0]
    assert np.all(np.isinf(e.std_error[1:])) and np.all(e.ci_lower[1:] == 0) and np.all(e.ci_upper[1:] == 1)


def test_finite_channel_variance_is_the_randomizations_given_the_users():
    """``std_error`` covers the users who reported (target "sample"): at ε = 8 the geometric mechanism
    flips few reports, and the variance over 200 collections of the same users matches the reported
    one; the multinomial plug-in ``diag(m̂) − m̂m̂ᵀ`` (the former formula) is about 10x too large here."""
    m = ldp.GeometricMechanism(epsilon=8.0, d=3)
    vals = np.repeat(np.arange(3), [600, 300, 100])
    truth = np.array([0.6, 0.3, 0.1])
    ests = [m.estimate(m.randomize(vals, rng=s), postprocess="none") for s in range(200)]
    mse = np.mean([(e.raw - truth) ** 2 for e in ests], axis=0)
    var = np.mean([e.std_error ** 2 for e in ests], axis=0)
    assert np.all((mse / var > 0.6) & (mse / var < 1.6)), mse / var
    multinomial = truth * (1 - truth) / 1000  # what the marginal output covariance adds: the users' own spread
    assert np.all(multinomial / mse > 5)
