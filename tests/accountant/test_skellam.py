"""Skellam accounting: the closed form against the Gaussian at the same variance (its limit),
calibration at its edge, the tail bound against the exact Skellam tail, the δ split."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from scipy import stats

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.accountant.skellam import (ORDERS, calibrate_skellam, skellam_epsilon, skellam_rdp, skellam_release, skellam_tail_bound,
                                           tail_beta)


def _gaussian_epsilon(variance: float, delta: float, l2: float = math.sqrt(2)) -> float:
    acc = dp_accounting.rdp.RdpAccountant(orders=list(ORDERS))
    acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(variance) / l2))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("mu", [5.0, 50.0, 5000.0])
def test_skellam_is_never_better_than_the_gaussian_of_its_variance_and_converges(mu):
    g = _gaussian_epsilon(2 * mu, 1e-6)
    s = float(skellam_epsilon(mu, 1e-6))
    assert s >= g
    if mu >= 5000:
        assert s < 1.01 * g


def test_rdp_terms():
    mu, a = 10.0, 4
    assert skellam_rdp(a, mu) == pytest.approx(a * 2 / 40 + min((7 * 2 + 12) / 1600, 6 / 40))
    with pytest.raises(LDPParameterError, match="alpha"):
        skellam_rdp(1, mu)


def test_calibration_edge_and_monotone():
    for eps in (0.5, 1.0, 3.0):
        mu = calibrate_skellam(eps, 1e-6)
        assert skellam_epsilon(mu, 1e-6) <= eps < skellam_epsilon(mu / 1.002, 1e-6)
    assert skellam_epsilon(10.0, 1e-6) > skellam_epsilon(20.0, 1e-6) > skellam_epsilon(40.0, 1e-6)


@pytest.mark.parametrize("mu", [0.05, 1.0, 30.0, 2000.0])
def test_tail_bound_holds_exactly(mu):
    beta, entries = 1e-9, 1000
    tau = skellam_tail_bound(mu, beta, entries)
    exact = 2 * stats.skellam.sf(tau, mu, mu)  # P(|X| > tau)
    assert exact <= beta / entries
    assert tau <= 2 * math.sqrt(2 * mu * math.log(4 * entries / beta)) + 2 * math.log(4 * entries / beta) + 2  # not absurdly loose


def test_release_splits_delta():
    eps = skellam_epsilon(30.0, 0.99e-6)
    r = skellam_release(30.0, 1e-6, tail_beta(1e-6, float(eps)))
    assert r.epsilon == eps and r.delta_rdp + (1 + math.exp(float(r.epsilon))) * r.beta <= 1e-6 * (1 + 1e-12)
    with pytest.raises(LDPParameterError, match="beta"):
        skellam_release(30.0, 1e-6, 1e-7)
    with pytest.raises(LDPParameterError, match="delta"):
        skellam_epsilon(30.0, 0.0)
