"""The refusal layer (``ldp_plugin.verification.system.refusals``) and the library bugs it found,
each pinned by a regression test of its own."""

from __future__ import annotations


import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
import ldp_plugin.adapters  # noqa: F401  (registers the ldp namespace)
from ldp_plugin._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.verification.refusals import SENTINEL_CODE, Case, input_cases, judge, parameter_cases, refusal_problems, server_cases
from ldp_plugin.verification.system.refusals import WRAPPERS, refusals_layer
from ldp_plugin.verification.system.seeded_bugs import SYSTEM_BUGS

REG = load_registry(kinds=KINDS)


@pytest.fixture(autouse=True)
def _features():
    ldp.enable_ldp_features()


def test_the_quick_layer_passes_on_the_library(tmp_path):
    r = refusals_layer(seed=0, quick=True, directory=tmp_path)
    assert r["passed"], r["failures"]
    assert r["names"] == len(REG) + len(WRAPPERS) and r["measurements"] == "run"
    # every door is driven
    assert {"constructor", "randomize", "randomize_one", "randomize_encoded", "add", "merge", "estimate", "measurement", "spend", "theory"} <= set(r["by_surface"])


@pytest.mark.parametrize("bug", [b for b, layer, _ in SYSTEM_BUGS if layer == "refusals"])
def test_the_layer_catches_its_seeded_bugs(bug, tmp_path):
    kw = next(k for b, _, k in SYSTEM_BUGS if b == bug)
    r = refusals_layer(seed=0, quick=True, directory=tmp_path, **kw)
    assert not r["passed"]
    want = {"lax-domain-krr": "d one-below-min: accepted", "echoing-krr": "the message repeats the value",
            "spend-before-check": "the refused call changed the remaining budget"}[bug]
    assert any(want in f for f in r["failures"]), r["failures"]


def test_parameter_cases_visit_both_edges_of_every_declared_size():
    labels = {c.label for c in parameter_cases(REG["pckv"])}
    assert {"pckv: d one-below-min", "pckv: ell one-below-min", "pckv: ell one-above-max", "pckv: on_long not-a-choice",
            "pckv: epsilon at-open-min", "pckv: epsilon missing", "pckv: an unknown keyword"} <= labels
    labels = {c.label for c in parameter_cases(REG["smp"])}
    assert {"smp: domains one-entry-too-few", "smp: domains one-entry-too-many", "smp: domains entry-above-max"} <= labels


def test_judge_rejects_each_way_a_refusal_goes_wrong():
    def raises(exc):
        def call():
            raise exc
        return call

    names = ("value",)
    assert judge(Case("x", "clean", raises(LDPInputError("the value at position 3 is out of range")), names)) is None
    assert judge(Case("x", "echo", raises(LDPInputError(f"the value {SENTINEL_CODE} is out of range")), names)) == "the message repeats the value"
    assert "TypeError" in judge(Case("x", "raw", raises(TypeError("bad")), names))
    assert judge(Case("x", "silent", lambda: None, names)) == "accepted"
    assert "names none" in judge(Case("x", "vague", raises(LDPInputError("bad input")), names))
    assert "raw engine" in judge(Case("x", "engine", raises(LDPInputError("value: invalid literal for int() with base 10")), names))

    def chained():
        try:
            int(f"{SENTINEL_CODE}x")
        except ValueError:
            raise LDPInputError("the value at position 0 is not a code")
    assert "chained" in judge(Case("x", "chained", chained, names))


def test_the_one_refusal_check_watches_the_callers_values_names_and_state():
    """:func:`refusal_problems`, which every layer's refusals go through: a caller's own values,
    names matched as written, and a snapshot that must read the same after the refusal."""
    spent = []

    def spends():
        spent.append(1)
        raise LDPParameterError("threshold must be in [0, 2**64]")

    watch = {"the randomness drawn": lambda: len(spent)}
    assert refusal_problems(spends, names=("threshold",), unchanged=watch) == ["the refused call changed the randomness drawn"]
    assert refusal_problems(spends, names=("Threshold",)) == ["the message names none of ['Threshold']"]
    assert refusal_problems(lambda: None, unchanged=watch) == ["accepted"]
    leaks = LDPInputError("label-x-q7 is not a category")
    assert refusal_problems(lambda: (_ for _ in ()).throw(leaks), values=("label-x-q7",)) == ["the message repeats the value"]
    assert refusal_problems(lambda: (_ for _ in ()).throw(leaks), values=("label-y-q7",)) == []
    assert refusal_problems(lambda: (_ for _ in ()).throw(leaks), errors=(LDPParameterError,)) == ["raised LDPInputError, not the library's error (LDPParameterError)"]


# -- regressions: the bugs the layer found -------------------------------------------------------------
def test_accountant_run_refuses_a_value_outside_the_domain_before_spending(tmp_path):
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="10"))
    mech = ldp.KRR(epsilon=1.0, d=4)
    user = ldp.make_ldp(*ldp.space_of(mech, "user"), mech)
    pop = ldp.make_ldp(*ldp.space_of(mech, "population"), mech)
    for qid, meas, data in (("u", user, 9), ("p", pop, np.array([1, 9])), ("k", ldp.make_krr(epsilon=1.0, d=4), 9)):
        with pytest.raises(LDPInputError):
            acc.run(qid, meas, data)
        assert acc.remaining() == 10
    assert acc.run("ok", pop, np.array([1, 2])).shape == (2,) and acc.remaining() == 9


def test_hadamard_oracles_refuse_a_domain_past_their_uint32_reports():
    for cls in (ldp.HadamardResponse, ldp.HadamardMechanism):
        with pytest.raises(LDPParameterError, match=r"d must be an integer in \[2, 2\^31 - 1\]"):
            cls(epsilon=0.5, d=2**31)
    m = ldp.HadamardMechanism(epsilon=0.5, d=2**31 - 1)
    assert int(m.randomize(np.array([2**31 - 2]), rng=1)[0]) < 2 * m.K <= 2**32


def test_dbitflip_refuses_epsilon_1_above_epsilon_perm():
    ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=2.0, d=4, d_bits=2)  # (0, epsilon_perm] includes its end
    with pytest.raises(LDPParameterError, match="epsilon_1"):
        ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=4.0, d=4, d_bits=2)


def test_randomize_one_refuses_an_unknown_keyword_with_the_library_error():
    with pytest.raises(LDPArgumentError, match="randomize_one has no parameter"):
        ldp.KRR(epsilon=1.0, d=4).randomize_one(1, rng=1, bogus=1)


@pytest.mark.parametrize("mech,codes", [
    (ldp.KRR(epsilon=1.0, d=4), np.array([0, 4])), (ldp.OLH(epsilon=1.0, d=4), np.array([-1])), (ldp.KRR(epsilon=1.0, d=4), np.array([0.5])),
    (ldp.HadamardResponse(epsilon=1.0, d=4), np.array([7])), (ldp.CMS(epsilon=1.0, d=4, k=4, cohorts=2), np.array([4])),
    (ldp.PrivSet(epsilon=1.0, d=4, m=2), np.array([9])), (ldp.Duchi(epsilon=1.0, grid=8), np.array([np.nan])),
    (ldp.SquareWave(epsilon=1.0, grid=8), np.array([8]))], ids=["krr-past", "olh-negative", "krr-float", "hadamard", "cms", "privset", "duchi-nan", "sw"])
def test_randomize_encoded_refuses_codes_outside_the_domain(mech, codes):
    with pytest.raises(LDPInputError, match="encoded"):
        mech.randomize_encoded(codes, rng=1)


def test_set_offsets_are_checked():
    m = ldp.RapporSet(epsilon=1.0, d=4, m=2)
    with pytest.raises(LDPInputError, match="offsets"):
        m.randomize_encoded(np.array([0, 1, 2]), rng=1, offsets=np.array([0, 2, 1, 3]))
    with pytest.raises(LDPInputError, match="offsets"):
        m.randomize_encoded(np.array([0, 1, 2]), rng=1, offsets=np.array([0, 3, 3, 3, 3, 9]))


@pytest.mark.parametrize("name", ["k-subset", "olh", "wheel", "loloha", "smp", "haar-hrr", "l-grr"])
def test_an_accumulator_refuses_reports_of_another_layout_before_counting(name):
    decl = REG[name]
    mech = decl.mechanism_class()(**{k: tuple(v) if isinstance(v, list) else v for k, v in dict(decl.canonical[0]).items()})
    bad = [c for c in server_cases(mech, None) if c.surface == "add"]
    assert bad and all(judge(c) is None for c in bad), [(c.label, judge(c)) for c in bad if judge(c)]
    acc = mech.accumulator()
    with pytest.raises(LDPInputError):
        acc.add(None)


def test_privset_refuses_negative_report_codes():
    m = ldp.PrivSet(epsilon=1.0, d=4, m=2)
    r = np.asarray(m.randomize([[0], [1]], rng=1)).astype(np.int64)
    r[0, 0] = -1
    with pytest.raises(LDPInputError, match="privset reports"):
        m.accumulator().add(r)


def test_inputs_of_the_wrong_kind_are_refused_cleanly():
    with pytest.raises(LDPInputError, match="ragged"):
        ldp.Duchi(epsilon=1.0).randomize([[0.1], [0.2, 0.3]], rng=1)
    with pytest.raises(LDPInputError, match="list of \\(key, value\\) pairs"):
        ldp.PCKV(epsilon=1.0, d=2).randomize_one(None, rng=1)
    with pytest.raises(LDPInputError, match="booleans"):
        ldp.PCKV(epsilon=1.0, d=2).randomize([[(True, 0.5)]], rng=1)
    with pytest.raises(LDPInputError, match="booleans"):
        ldp.SMP(epsilon=1.0, domains=(2, 3)).randomize_one((0, True), rng=1)


def test_the_adapters_with_a_ledger_spend_nothing_on_a_bad_row(tmp_path):
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="10"))
    df = pl.DataFrame({"user": [1, 2], "v": [0, SENTINEL_CODE]})
    with pytest.raises(LDPInputError) as info:
        df.ldp.privatize("v", ldp.KRR(epsilon=1.0, d=4), accountant=acc, query_id="q")
    assert str(SENTINEL_CODE) not in str(info.value) and acc.remaining() == 10


def test_every_input_case_of_every_name_is_refused_cleanly():
    """Faster than the layer: the input doors of each registered name's first instance."""
    bad = []
    for name, decl in sorted(REG.items()):
        mech = decl.mechanism_class()(**{k: tuple(v) if isinstance(v, list) else v for k, v in dict(decl.canonical[0]).items()})
        bad += [f"{c.label}: {why}" for c in input_cases(mech, quick=True) if (why := judge(c))]
    assert not bad, bad


def test_sample_one_over_a_closed_domain_refuses_candidates():
    s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=4), m=2)
    with pytest.raises(LDPParameterError, match="candidates"):
        s.estimate(s.randomize([[0], [1, 2]], rng=1), candidates=["a", "b"])


def test_undeclared_constructor_keywords_are_refused_by_their_default_type():
    with pytest.raises(LDPParameterError, match="underdetermined"):
        ldp.CMS(epsilon=1.0, d=4, k=4, cohorts=2, underdetermined=2)
    with pytest.raises(LDPParameterError, match="on_long"):
        ldp.Wheel(epsilon=1.0, d=3, on_long="drop")


def test_analytic_mse_refuses_a_population_that_is_no_positive_integer():
    m = ldp.KRR(epsilon=1.0, d=4)
    for n in (0, -5, True, 2.5):
        with pytest.raises(LDPParameterError, match="n \\(the number of users\\)"):
            m.analytic_mse(n)
    with pytest.raises(LDPParameterError, match="sampling"):
        m.analytic_mse(10, sampling="bogus")
    with pytest.raises(LDPParameterError, match="sampling"):
        ldp.Wheel(epsilon=1.0, d=3).analytic_mse(10, sampling="iid")  # the set variance is at the users' own f: never ignored
    assert m.analytic_mse(10) > 0


def test_seeded_reports_of_another_width_are_refused():
    m = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=4)
    r = np.asarray(m.randomize(np.arange(4) % 4, rng=1, user_keys=[bytes([i, 7]) * 16 for i in range(4)]))
    with pytest.raises(LDPInputError, match="one column per field"):
        m.accumulator().add(np.c_[r, r[:, :1]])


def test_pckv_randomize_encoded_refuses_fractional_codes():
    with pytest.raises(LDPInputError, match="encoded codes"):
        ldp.PCKV(epsilon=1.0, d=2).randomize_encoded(np.array([0.5, 1.5]), rng=1)  # they were truncated to 0 and 1


def test_make_set_ldp_refuses_a_bad_set_cleanly_and_before_a_spend(tmp_path):
    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="10"))
    s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, categories=["a", "b", "c"]), m=2)
    for unit, bad in (("user", ["a", "zzz"]), ("user", ["a", "b", "c"]), ("population", [["a"], ["zzz"]]), ("user", "a")):
        meas = ldp.make_set_ldp(s, unit=unit)
        with pytest.raises(LDPInputError) as info:  # was OpenDP's FFI stack trace, after the spend
            acc.run(f"q-{unit}-{len(bad)}", meas, bad)
        assert "zzz" not in str(info.value) and "FFI" not in str(info.value)
        assert acc.remaining() == 10
    outputs = ("a", "b", "c", ldp.PAD)
    assert ldp.make_set_ldp(s)(["a", "b"]) in outputs and acc.run("ok", ldp.make_set_ldp(s), ["a"]) in outputs and acc.remaining() == 9
