"""The mean mechanisms' intervals on skewed data (issue 37): ``target="sample"`` (default) has the
width of the estimator's real spread given the users, ``target="population"`` adds the users' own
spread, and ``target`` is honoured (and checked) everywhere a mean is estimated."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.mechanisms.reports import reports_to_frame


def _runs(m, x, target, runs):
    est = [m.estimate(m.randomize(x, rng=s), target=target) for s in range(runs)]
    means = np.array([e.mean for e in est])
    ses = np.array([e.std_error for e in est])
    cover = np.mean([e.ci_lower <= x.mean() <= e.ci_upper for e in est])
    return means, ses, cover


@pytest.mark.parametrize("cls", [ldp.Piecewise, ldp.Hybrid, ldp.Duchi])
def test_skewed_data_intervals_cover_with_the_real_width(cls):
    """Clipped log-normal on [0, 10], ε = 4, 400 seeded collections of the same 10,000 users:
    coverage within 3 binomial standard errors of 95% (±3.3%), mean standard error within 20% of
    the estimates' real spread (Piecewise, Hybrid: equal to the exact analytic one within 2%); the
    population interval (the old default) has > 30% too much variance for Piecewise and Hybrid (power)."""
    x = np.clip(np.random.default_rng(0).lognormal(0, 1, 10_000), 0, 10)
    m = cls(epsilon=4.0, lower=0, upper=10)
    means, ses, cover = _runs(m, x, "sample", 400)
    real = np.std(means, ddof=1)
    assert abs(cover - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / 400) and abs(np.mean(ses) / real - 1) < 0.2
    if cls is not ldp.Duchi:  # one bit cannot estimate mean(t²): Duchi's sample interval is the population one
        assert np.mean(ses) ** 2 == pytest.approx(m.analytic_mse(x.size, values=x), rel=0.02)
        _, pop_ses, _ = _runs(m, x, "population", 5)
        assert (np.mean(pop_ses) / real) ** 2 > 1.3  # variance over 30% too large


def test_square_decoder_is_unbiased_exactly_on_the_grid():
    for m in (ldp.Piecewise(epsilon=1.0, grid=16), ldp.Hybrid(epsilon=2.0, grid=16)):
        P = m.channel().as_float_array()
        w = m.square_decoder()
        assert np.allclose(P @ w, m.grid_values() ** 2, atol=1e-9)
    assert ldp.Duchi(epsilon=1.0).square_decoder() is None
    assert ldp.Hybrid(epsilon=0.5).square_decoder() is None  # ε <= 0.61: Duchi only


def test_target_is_honoured_and_checked():
    m = ldp.Piecewise(epsilon=4.0, lower=0, upper=10)
    x = np.clip(np.random.default_rng(1).lognormal(0, 1, 4000), 0, 10)
    r = m.randomize(x, rng=0)
    s, p = m.estimate(r), m.estimate(r, target="population")
    assert s.target == "sample" and p.target == "population" and p.std_error > s.std_error
    with pytest.raises(LDPParameterError, match="target must be"):
        m.estimate(r, target="everyone")
    frame = reports_to_frame(m, r)
    assert frame.ldp.estimate(m, target="population")["std_error"][0] == pytest.approx(p.std_error)
    assert frame.ldp.estimate(m)["std_error"][0] == pytest.approx(s.std_error)
