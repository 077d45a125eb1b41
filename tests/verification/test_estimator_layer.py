"""The estimator layer (``ldp_plugin.verification.estimators``): it passes correct servers, fails each
seeded server bug at the run's own ``R`` (the power check), and its statistical tests have the size
and power the module docstring states (on synthetic claims with known errors)."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.mechanisms import base, mixins
from ldp_plugin.verification.estimators import ESTIMATOR_RUNS, estimator_layer, judge, spec_refusal
from ldp_plugin.verification.readouts import Claim
from ldp_plugin.verification.seeded_bugs import OffByOneQKRR, ScaledTwiceDuchi, SquareFreeOUE, seeded_bugs

ALPHA = 1e-6 / 40  # an instance's share of the run's family-wise rate


@pytest.mark.parametrize("mech, shapes", [(ldp.KRR(epsilon=1.0, d=4), None), (ldp.OUE(epsilon=2.0, d=5), 1), (ldp.Piecewise(epsilon=1.0, grid=16), None)],
                         ids=["krr", "oue", "piecewise"])
def test_correct_servers_pass(mech, shapes):
    r = estimator_layer(mech, quick=True, alpha=ALPHA, seed=3, shapes=shapes, name="ok")
    assert r["passed"], r["failed"]
    assert r["spec_refusal"]["passed"]
    if shapes is None:
        assert {c["shape"] for c in r["cells"]} == set(
            ("smooth", "bimodal", "spiky", "heavy-tailed", "point-masses") if mech.input_kind == "number" else ("uniform", "zipf", "point-mass"))


@pytest.mark.parametrize("bug, failing_test", [
    (OffByOneQKRR(epsilon=1.0, d=4), "bias_passed"),
    (SquareFreeOUE(epsilon=1.0, d=4), "variance_passed"),
    (ScaledTwiceDuchi(epsilon=1.0, grid=8), "coverage_passed"),  # a bound: its coverage is its claim
], ids=["off-by-one-q", "square-free-variance", "scaled-twice"])
@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_each_seeded_server_bug_fails_at_the_runs_R(bug, failing_test, quick):
    r = estimator_layer(bug, quick=quick, alpha=ALPHA, seed=0, shapes=1, name="bug")
    assert not r["passed"]
    cell = r["cells"][0]
    assert cell["R"] == ESTIMATOR_RUNS["quick" if quick else "full"][0]
    assert any(not s.get(failing_test, True) for s in cell["statistics"]), cell["statistics"]


def test_the_seeded_server_bugs_are_in_the_self_test_suite():
    names = {n: expected for n, _m, expected in seeded_bugs()}
    for n in ("off-by-one-q", "square-free-variance", "scaled-twice"):
        assert names[n] == ("estimators",)


def _claims(errors: np.ndarray, se: float, truth: float = 0.3) -> list:
    z = 1.959963984540054
    return [[Claim(f"s{j}", truth + e, se, truth + e - z * se, truth + e + z * se, truth) for j, e in enumerate(row)] for row in errors]


def test_judge_size_and_power_on_synthetic_claims():
    gen = np.random.default_rng(11)
    R, k = 200, 6
    e = gen.normal(0.0, 1.0, (R, k))
    assert judge(_claims(e, 1.0), ALPHA)["passed"]  # the truth: passes
    assert judge(_claims(0.5 * e, 0.5), ALPHA)["passed"]  # any scale, if reported
    biased = judge(_claims(e + 0.8, 1.0), ALPHA)  # a bias of 0.8 standard errors
    assert not biased["passed"] and not any(s["bias_passed"] for s in biased["statistics"])
    wide = judge(_claims(e, 1.6), ALPHA)  # a variance reported 2.56x too large: coverage is fine, the variance is not
    assert not wide["passed"] and all(s["coverage_passed"] for s in wide["statistics"]) and not wide["pooled"]["passed"]
    narrow = judge(_claims(e, 0.6), ALPHA)  # too small: coverage about 0.75
    assert not narrow["passed"] and not all(s["coverage_passed"] for s in narrow["statistics"])
    # the power the rows state is what the tests detect
    p = judge(_claims(e, 1.0), ALPHA)["power"]
    assert 0.5 < p["bias_sd"] < 0.8 and p["variance_factor"][0] < 1 < p["variance_factor"][1]


def test_labels_are_tested_for_what_they_claim():
    gen = np.random.default_rng(5)
    e = gen.normal(0.0, 1.0, (200, 1))
    z = 1.959963984540054
    bound = [[Claim("m", 0.3 + x, 2.0, 0.3 + x - 2 * z, 0.3 + x + 2 * z, 0.3, "bound") for x in row] for row in e]
    assert judge(bound, ALPHA)["passed"]  # a conservative bound twice too wide is what it says
    vo = [[Claim("m", 0.3 + x + 3.0, 1.0, 0.3 + x + 3 - z, 0.3 + x + 3 + z, 0.3, "variance-only") for x in row] for row in e]
    r = judge(vo, ALPHA)
    assert r["passed"] and r["statistics"][0]["coverage"] < 0.5  # biased, labelled variance-only: measured, not claimed
    vo_wrong = [[Claim("m", 0.3 + x, 0.4, 0.3 + x - z, 0.3 + x + z, 0.3, "variance-only") for x in row] for row in e]
    assert not judge(vo_wrong, ALPHA)["passed"]  # but its variance must be right


def test_spec_refusal_passes_the_library_and_fails_a_trusting_server(monkeypatch):
    assert spec_refusal(ldp.OUE(epsilon=1.0, d=4))["passed"]
    assert spec_refusal(ldp.SquareWave(epsilon=1.0, grid=16))["passed"]
    # plant a server that trusts every batch: the origin checks of estimate and of the accumulators disabled
    monkeypatch.setattr(base, "check_origin", lambda *a, **k: None)
    monkeypatch.setattr(mixins, "check_origin", lambda *a, **k: None)
    r = spec_refusal(ldp.KRR(epsilon=1.0, d=4))
    assert not r["passed"] and not r["other_parameters_refused"]


def test_ldp_verify_runs_the_layer_on_the_first_instance_and_the_first_draw():
    from ldp_plugin.registry import load_registry, verify, verify_instance
    from ldp_plugin.registry._verify import failed_layers

    rows = verify(load_registry()["krr"], seed=1, quick=True, layers=("exact", "estimators"), draws=2)
    canonical = [r for r in rows if not r.get("random_draw")]
    draws = [r for r in rows if r.get("random_draw") and "edge" not in r]
    assert "estimators" in canonical[0] and all("estimators" not in r for r in canonical[1:])
    assert "estimators" in draws[0] and all("estimators" not in r for r in draws[1:])
    assert all(r["passed"] for r in rows if "estimators" in r)
    # a seeded server bug is caught by this layer alone
    bug = verify_instance(OffByOneQKRR(epsilon=1.0, d=4), name="off-by-one-q", instance={}, quick=True, layers=("exact", "estimators"),
                          estimator_shapes=1)
    assert failed_layers(bug) == ["estimators"]
