"""Re-optimized unary encoding (issue 23): its (p, q) minimize the exact squared error at a
uniform distribution — checked against an independent numerical minimization — and the
simulated error matches the prediction, with the power to tell it from OUE's."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp


def _uniform_mse(p, q, d):
    return (p * (1 - p) + (d - 1) * q * (1 - q)) / (p - q) ** 2


@pytest.mark.parametrize("d,eps", [(2, 0.5), (4, 4.0), (8, 8.0), (64, 4.0), (1024, 1.0)])
def test_rue_minimizes_the_exact_uniform_mse(d, eps):
    from scipy.optimize import minimize_scalar

    e = np.exp(eps)

    def objective(log_h):  # the ε-LDP unary encodings: odds 1/h and 1/(h e^ε)
        h = np.exp(log_h)
        return _uniform_mse(1 / (h + 1), 1 / (h * e + 1), d)

    best = minimize_scalar(objective, bounds=(-30, 30), method="bounded", options={"xatol": 1e-12}).fun
    m = ldp.RUE(epsilon=eps, d=d)
    realized = _uniform_mse(m.p_star, m.q_star, d)
    assert realized == pytest.approx(best, rel=1e-9)
    oue = ldp.OUE(epsilon=eps, d=d)
    assert realized <= _uniform_mse(oue.p_star, oue.q_star, d) * (1 + 1e-12)
    from ldp_plugin.exact import ratio_within_exp

    assert ratio_within_exp(m.realized_ratio, eps)


@pytest.mark.slow
def test_simulated_error_matches_and_beats_oue():
    """d = 4, ε = 4 (RUE's error is half of OUE's): 400 repeats of n = 5,000 users on the uniform
    distribution; the measured MSE is within 4 sd (sqrt(2/400) relative) of the analytic one, and
    OUE's measured MSE is not (the power check)."""
    d, n, R = 4, 5000, 400
    values = np.arange(n) % d
    f = np.bincount(values, minlength=d) / n
    out = {}
    for m in (ldp.RUE(epsilon=4.0, d=d), ldp.OUE(epsilon=4.0, d=d)):
        err = [((m.estimate(m.randomize(values, rng=100 + r), postprocess="none").raw - f) ** 2).sum() for r in range(R)]
        out[m.name] = float(np.mean(err))
    rue = ldp.RUE(epsilon=4.0, d=d)
    analytic = _uniform_mse(rue.p_star, rue.q_star, d) / n
    tol = 4 * np.sqrt(2 / R)
    assert abs(out["rue"] / analytic - 1) <= tol
    assert abs(out["oue"] / analytic - 1) > tol
    assert ldp.rank_mechanisms(4, 4.0, n=n)[2].label == "rue"  # after k-RR and O-RR (k-RR itself)
