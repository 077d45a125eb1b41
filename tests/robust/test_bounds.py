"""Certified poisoning bounds against the maximal-gain attack (Cao, Jia, Gong, USENIX Security 2021).

For every linear estimator the bound is attained by the attack, so the measured gain and the
reported ``poison_shift`` agree to rounding; the measured gain is also compared with Cao et al.'s
analytic gain ``β(hi − f_t)`` within the honest estimate's analytic standard error (fixed seeds), and
a deliberately wrong bound (``β`` in place of ``β/(1 − β)``) is shown to fail the same check."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from ldp_plugin import HCMS, KRR, OLH, OUE
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.robust import measure_gain, poison_bound, worst_case_gain

D = 1024
N = 20_000
Z = NormalDist().inv_cdf(1 - 1e-6)


def _population(n: int = N, d: int = D) -> np.ndarray:
    return np.minimum(np.random.default_rng(11).zipf(1.3, n) - 1, d - 1)


def _check(mech, eps_seed: int, beta: float) -> None:
    x = _population()
    target = 777
    honest = mech.randomize(x, rng=eps_seed)
    r = measure_gain(mech, honest, [target], fraction=beta, rng=eps_seed + 1)
    b = poison_bound(mech, r.after, poison_fraction=r.fraction)
    gain = float(r.gain[0])
    shift = float(b.poison_shift[target])
    assert gain > 0
    assert shift >= gain * (1 - 1e-9) - 1e-12          # certified: never below the attack's gain
    assert shift <= 1.10 * gain                          # and within 10% of it (here: attained)
    # the honest-only estimate lies in the certified interval
    assert b.honest_lower[target] - 1e-12 <= r.before.raw[target] <= b.honest_upper[target] + 1e-12
    # Cao et al.'s analytic gain β(hi − f_t), within the honest estimate's analytic error
    f_t = float(np.mean(x == target))
    hi = float(mech.report_influence()[1][target])
    se = float(r.before.std_error[target])
    assert abs(gain - r.fraction * (hi - f_t)) <= Z * r.fraction * se + 1e-12
    # power: a bound that forgets the 1/(1 − β) factor is below the measured gain
    wrong = r.fraction * (hi - float(r.after.raw[target]))
    assert wrong < gain * (1 - 1e-9)


@pytest.mark.parametrize("eps", [1.0, 4.0])
@pytest.mark.parametrize("beta", [0.01, 0.05])
@pytest.mark.parametrize("family", ["krr", "oue", "olh"])
def test_poison_shift_matches_the_maximal_gain_attack(family, eps, beta):
    mech = {"krr": KRR, "oue": OUE, "olh": OLH}[family](epsilon=eps, d=D)
    _check(mech, 3 + int(eps), beta)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 4.0])
@pytest.mark.parametrize("beta", [0.01, 0.05])
def test_poison_shift_matches_the_attack_on_hcms(eps, beta):
    _check(HCMS(epsilon=eps, k=D, cohorts=4, d=D), 5 + int(eps), beta)


def test_issue_numbers_at_five_percent():
    """The issue's figures: 5% fakes at ε = 1, d = 1024 move a target by ≈ +15.8 points (OUE),
    +16.7 (OLH) and ≈ +29.8 in frequency units (k-RR): ``β · hi`` at f = 0."""
    assert worst_case_gain(OUE(epsilon=1.0, d=D), 0.05) == pytest.approx(0.158, abs=5e-4)
    assert worst_case_gain(OLH(epsilon=1.0, d=D), 0.05) == pytest.approx(0.1664, abs=5e-4)
    assert worst_case_gain(KRR(epsilon=1.0, d=D), 0.05) == pytest.approx(29.82, abs=0.01)


@pytest.mark.parametrize("post", ["projection", "normalize"])
def test_postprocessed_bound_contains_the_honest_estimate(post):
    d = 64
    x = np.minimum(np.random.default_rng(2).zipf(1.5, 5000) - 1, d - 1)
    for mech in (OUE(epsilon=1.0, d=d), KRR(epsilon=2.0, d=d), OLH(epsilon=1.0, d=d)):
        honest = mech.randomize(x, rng=4)
        r = measure_gain(mech, honest, [5, 9], fraction=0.05, rng=5, postprocess=post)
        b = poison_bound(mech, r.after, poison_fraction=r.fraction)
        h = np.asarray(r.before.estimate)
        assert np.all(h >= b.honest_lower - 1e-9) and np.all(h <= b.honest_upper + 1e-9)
        est = np.asarray(r.after.estimate)
        assert np.all(est - h <= b.poison_shift + 1e-9) and np.all(h - est <= b.poison_shift_down + 1e-9)


def test_refusals():
    mech = KRR(epsilon=1.0, d=8)
    est = mech.estimate(mech.randomize([0, 1, 2] * 30, rng=0), postprocess="em")
    with pytest.raises(LDPParameterError, match="em"):
        poison_bound(mech, est, poison_fraction=0.01)
    est = mech.estimate(mech.randomize([0, 1, 2] * 30, rng=0))
    with pytest.raises(LDPParameterError, match="poison_fraction"):
        poison_bound(mech, est, poison_fraction=1.0)
    with pytest.raises(LDPParameterError, match="exactly one"):
        poison_bound(mech, est)
    with pytest.raises(LDPParameterError, match="d == k"):
        HCMS(epsilon=1.0, k=16, cohorts=4, d=8).report_influence()


def test_polars_estimate_has_the_poison_columns_next_to_the_interval():
    import polars as pl

    import ldp_plugin.adapters  # noqa: F401  (registers the ldp namespace)
    from ldp_plugin.mechanisms.reports import frame_to_reports

    m = OUE(epsilon=1.0, d=16)
    df = pl.DataFrame({"x": np.arange(16).repeat(30)})
    reps = df.ldp.privatize("x", m, seed=1)
    out = reps.ldp.estimate(m, postprocess="none", poison_fraction=0.02)
    assert out.columns[:7] == ["item", "estimate", "std_error", "ci_lower", "ci_upper", "poison_shift", "poison_shift_down"]
    est = m.estimate(frame_to_reports(m, reps.select("report")), postprocess="none")
    b = poison_bound(m, est, poison_fraction=0.02)
    assert np.allclose(out["poison_shift"].to_numpy(), b.poison_shift)
    assert "poison_shift" not in reps.ldp.estimate(m).columns
    with pytest.raises(LDPParameterError, match="poison_count"):
        reps.ldp.estimate(m, poison_count=10**9)


def test_choose_shows_the_worst_case_gain(capsys):
    from ldp_plugin.choose import rank_mechanisms
    from ldp_plugin.cli import main

    rows = {c.label: c for c in rank_mechanisms(64, 1.0, n=10_000, poison_fraction=0.05)}
    assert rows["oue"].worst_case_gain == pytest.approx(worst_case_gain(OUE(epsilon=1.0, d=64), 0.05))
    assert rows["krr"].worst_case_gain > rows["oue"].worst_case_gain
    assert main(["choose", "--d", "64", "--epsilon", "1", "--poison-fraction", "0.05"]) == 0
    assert "poison gain" in capsys.readouterr().out
