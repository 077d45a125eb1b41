"""API misuse table (issue 38): constructors, inputs, wrappers, decoders, OpenDP measurements,
the ledger. Every case must raise the library's own error naming the parameter, never a raw
Python/engine exception, never a silent result, never a data value; each with a time limit."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError, LDPParameterError, UnderdeterminedWarning

from .cases_api import _declarations, _base, api_parameter_cases
from .harness import SENTINEL, SENTINEL_NUMBER, assert_clear_api

DECLS = _declarations()

#: cases in modules this branch may not edit (mechanisms/extremal.py belongs to the privacy engineers)
EXTREMAL_XFAIL: set = set()  # the seven extremal cases of the first pass are fixed (d, subset, p0, p1 checked)


def _param_cases():
    out = []
    for cid, name, kw, pname in api_parameter_cases():
        marks = []
        if cid in EXTREMAL_XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason="mechanisms/extremal.py converts d/subset/p0/p1 with int()/float() unchecked (owned by the privacy engineers)"))
        out.append(pytest.param(name, kw, pname, id=cid, marks=marks))
    return out


@pytest.mark.parametrize("name,kwargs,pname", _param_cases())
def test_constructor_refuses_a_bad_parameter(name, kwargs, pname):
    cls = DECLS[name].mechanism_class()
    names = [pname] + (["epsilon"] if pname.startswith("epsilon") else []) + (["lower", "upper"] if pname in ("lower", "upper") else [])
    assert_clear_api(lambda: cls(**kwargs), names)


# -- epsilon at the extremes: every mechanism names the usable range --------------------------------
EPS_EXTREMES = [("tiny", 1e-300), ("below-min", 1e-7), ("overflow", 710.0), ("huge", 1e6), ("max-float", 1e308)]


def _eps_cases():
    out = []
    for name, decl in sorted(DECLS.items()):
        key = "epsilon" if "epsilon" in decl.parameters else "epsilon_perm"
        for label, eps in EPS_EXTREMES:
            out.append(pytest.param(name, key, eps, id=f"{name}-{key}-{label}"))
    return out


@pytest.mark.parametrize("name,key,eps", _eps_cases())
def test_epsilon_extremes_name_the_usable_range(name, key, eps):
    decl = DECLS[name]
    kw = _base(decl)
    kw[key] = eps
    if key == "epsilon_perm":
        kw["epsilon_1"] = eps / 2
    msg = assert_clear_api(lambda: decl.mechanism_class()(**kw), ["epsilon"])
    assert "1e-06" in msg or "700" in msg or "smallest" in msg or "largest" in msg, msg


# -- categories: ordered, one type, no None/NaN/duplicates ---------------------------------------------
BAD_CATEGORIES = [
    ("set", lambda: {"maps", "mail", "chat"}),
    ("frozenset", lambda: frozenset({"maps", "mail", "chat"})),
    ("dict-keys", lambda: {"maps": 1, "mail": 2, "chat": 3}.keys()),
    ("dict", lambda: {"maps": 1, "mail": 2, "chat": 3}),
    ("none", lambda: ["maps", None, "chat"]),
    ("nan", lambda: [1.0, float("nan"), 2.0]),
    ("mixed-int-str", lambda: [1, "1", 2]),
    ("mixed-int-float", lambda: [1, 2.0, 3]),
    ("duplicates", lambda: ["maps", "mail", "maps"]),
    ("empty", lambda: []),
    ("string", lambda: "maps"),
]
CATEGORICAL = [n for n, d in sorted(DECLS.items()) if d.kind == "frequency" and "d" in d.parameters and n not in ("binary", "staircase")]


@pytest.mark.parametrize("label,cats", BAD_CATEGORIES, ids=[b[0] for b in BAD_CATEGORIES])
@pytest.mark.parametrize("name", CATEGORICAL)
def test_categories_refused(name, label, cats):
    decl = DECLS[name]
    kw = {k: v for k, v in _base(decl).items() if k not in ("d", "p0", "p1", "prior", "subset")}
    if name in ("privset", "rappor-set"):
        kw["m"] = 1
    from ldp_plugin.registry import build

    eps = kw.pop("epsilon")
    assert_clear_api(lambda: decl.mechanism_class()(epsilon=eps, categories=cats(), **kw), ["categories"])
    assert_clear_api(lambda: build(name, epsilon=eps, categories=cats(), **kw), ["categories"])


# -- user data: errors by position, never by value -------------------------------------------------------
SIMPLE = [n for n in CATEGORICAL if n not in ("binary", "staircase", "privset", "rappor-set", "wheel")]


@pytest.mark.parametrize("name", SIMPLE)
def test_unknown_label_never_echoed(name):
    decl = DECLS[name]
    kw = {k: v for k, v in _base(decl).items() if k not in ("d",)}
    m = decl.mechanism_class()(categories=["alpha", "beta", "gamma", "delta"], **kw)
    assert_clear_api(lambda: m.randomize(["alpha", SENTINEL, "beta"], rng=1), ["position 1", "categories"])


@pytest.mark.parametrize("name", SIMPLE)
@pytest.mark.parametrize("bad", ["none", "nested", "float-codes", "out-of-range"])
def test_bad_batches(name, bad):
    decl = DECLS[name]
    m = decl.mechanism_class()(**_base(decl))
    d = m.domain_size
    batch = {"none": [0, None, 1], "nested": [[0, 1], [1, 0]], "float-codes": np.array([0.5, 1.0]), "out-of-range": [0, d + 98765]}[bad]
    msg = assert_clear_api(lambda: m.randomize(batch, rng=1), ["values", "position", "dtype", "1-d", "items"])
    assert str(d + 98765) not in msg


NUMERIC = [n for n, d in sorted(DECLS.items()) if d.kind == "mean"]


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("bad", ["numeric-strings", "booleans", "nan", "out-of-range", "nested", "none"])
def test_numeric_inputs(name, bad):
    m = DECLS[name].mechanism_class()(epsilon=1.0, lower=0.0, upper=1.0)
    batch = {"numeric-strings": ["0.5", "0.25"], "booleans": [True, False], "nan": [0.5, float("nan")], "out-of-range": [0.5, SENTINEL_NUMBER],
             "nested": [[0.5], [0.25]], "none": [0.5, None]}[bad]
    assert_clear_api(lambda: m.randomize(batch, rng=1), ["values", "value", "position"])


def test_numeric_lower_equal_upper():
    for name in NUMERIC:
        assert_clear_api(lambda: DECLS[name].mechanism_class()(epsilon=1.0, lower=1.0, upper=1.0), ["lower"])


# -- hashing oracles: a design that cannot identify the items is refused ---------------------------
COHORT = [("orr", ldp.ORR), ("cms", ldp.CMS), ("hcms", ldp.HCMS), ("count-sketch", ldp.CountSketch), ("orappor", ldp.ORAPPOR)]


@pytest.mark.parametrize("name,cls", COHORT, ids=[c[0] for c in COHORT])
@pytest.mark.parametrize("k,cohorts,d", [(4, 1, 8), (2, 2, 6), (4, 2, 16), (8, 4, 60)])
def test_rank_deficient_closed_design_refused(name, cls, k, cohorts, d):
    msg = assert_clear_api(lambda: cls(epsilon=2.0, k=k, cohorts=cohorts, d=d), ["k="])
    assert f"cohorts={cohorts}" in msg and "cohorts=" in msg.split("use at least")[-1] + msg


@pytest.mark.parametrize("name,cls", COHORT, ids=[c[0] for c in COHORT])
def test_rank_deficient_candidates_refused(name, cls):
    m = cls(epsilon=2.0, k=8, cohorts=4)
    cands = [f"c{i}" for i in range(60)]
    rng = np.random.default_rng(0)
    r = m.randomize(rng.choice(cands, 4000), rng=1)
    msg = assert_clear_api(lambda: m.estimate(r, candidates=cands), ["k=8"])
    assert "cohorts=4" in msg and "60 candidates" in msg


@pytest.mark.parametrize("name,cls", COHORT, ids=[c[0] for c in COHORT])
def test_underdetermined_opt_in_is_flagged(name, cls):
    m = cls(epsilon=2.0, k=4, cohorts=1, d=8, underdetermined=True)
    r = m.randomize(np.arange(8).repeat(50), rng=1)
    with pytest.warns(UnderdeterminedWarning, match="cannot tell"):
        est = m.estimate(r)
    assert np.all(est.ci_lower == 0) and np.all(est.ci_upper == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = cls(epsilon=2.0, k=8, cohorts=1, d=8)  # identifiable: no warning, real intervals
        e = full.estimate(full.randomize(np.arange(8).repeat(50), rng=1))
        assert np.any(e.ci_upper < 1)


def test_nested_value_for_open_alphabet():
    m = ldp.ORR(epsilon=1.0, k=8, cohorts=16)
    assert_clear_api(lambda: m.randomize([["a", "b"], ["c", "d"]], rng=1), ["1-d", "nested"])
    assert_clear_api(lambda: m.randomize([("a",), ("b",)], rng=1), ["1-d", "nested"])


# -- wrappers: checked against what they can wrap -----------------------------------------------------
WRAP = [
    ("string-name", lambda: ldp.SampleOne(mechanism="krr", m=2), ["mechanism"]),
    ("numeric", lambda: ldp.SampleOne(mechanism=ldp.Duchi(epsilon=1.0), m=2), ["duchi", "numbers"]),
    ("set-mechanism", lambda: ldp.SampleOne(mechanism=ldp.Wheel(epsilon=1.0, d=8, m=2), m=2), ["wheel", "sets"]),
    ("none", lambda: ldp.SampleOne(mechanism=None, m=2), ["mechanism"]),
    ("m-missing", lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=4)), ["'m'"]),
    ("m-zero", lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=4), m=0), ["m "]),
    ("orr-no-k", lambda: ldp.ORR(epsilon=1.0), ["'k'"]),
    ("hcms-no-k", lambda: ldp.HCMS(epsilon=1.0), ["'k'"]),
    ("orr-nothing", lambda: ldp.ORR(), ["epsilon"]),
    ("positional", lambda: ldp.KRR(1.0, 4), ["keyword"]),
    ("unknown-keyword", lambda: ldp.KRR(epsilon=1.0, d=4, eps=2), ["eps"]),
    ("warner-d", lambda: ldp.WarnerRR(epsilon=1.0, d=3), ["d "]),
    ("warner-categories", lambda: ldp.WarnerRR(epsilon=1.0, categories=["yes", "no"]), ["categories"]),
    ("underdetermined-type", lambda: ldp.ORR(epsilon=1.0, k=4, underdetermined="yes"), ["underdetermined"]),
]


@pytest.mark.parametrize("fn,names", [w[1:] for w in WRAP], ids=[w[0] for w in WRAP])
def test_wrapper_and_constructor_calls(fn, names):
    assert_clear_api(fn, names)


def test_positional_call_is_still_a_type_error():
    with pytest.raises(TypeError):
        ldp.KRR(1.0, 4)


# -- post-processing and the ledger ---------------------------------------------------------------------
def test_project_simplex_nan():
    from ldp_plugin.estimation import project_simplex

    assert_clear_api(lambda: project_simplex(np.array([0.2, math.nan, 0.3])), ["finite"])
    assert_clear_api(lambda: project_simplex(np.array([0.2, 0.3]), total=math.inf), ["total"])


@pytest.mark.parametrize("cap", ["1e309", "inf", "nan", math.inf, 1e309, "1e99999999", 10**7, "-1", "0", "abc"])
def test_ledger_caps(tmp_path, cap):
    from ldp_plugin.accountant import Accountant, Population

    assert_clear_api(lambda: Accountant.create(tmp_path / "l.db", Population(name="p", lifetime_cap=cap)), ["lifetime_cap"])


def test_ledger_misuse(tmp_path):
    from ldp_plugin.accountant import Accountant, LedgerError, Population

    assert_clear_api(lambda: Accountant.create(tmp_path / "l.db", "name"), ["population"])
    assert_clear_api(lambda: Accountant(tmp_path), ["directory"], errors=(LedgerError,))
    (tmp_path / "notdb").write_text(SENTINEL * 10)
    assert_clear_api(lambda: Accountant(tmp_path / "notdb"), ["ledger"], errors=(LedgerError,))
    acc = Accountant.create(tmp_path / "ok.db", Population(name="p", lifetime_cap="5"))
    assert_clear_api(lambda: acc.check(0), ["epsilon"])
    assert_clear_api(lambda: acc.check(1e309), ["epsilon"])
    assert_clear_api(lambda: acc.check("1e99999999"), ["epsilon"])


@pytest.mark.slow
def test_ledger_with_2_20_cohorts_spends(tmp_path):
    """SQLite binds at most 32766 variables: a spend over 2**20 cohorts is chunked."""
    from ldp_plugin.accountant import Accountant, Population

    acc = Accountant.create(tmp_path / "big.db", Population(name="p", lifetime_cap="5", cohorts=1 << 20))
    acc.release("q", ldp.KRR(epsilon=1.0, d=4), lambda: 1)
    assert float(acc.remaining()) == 4.0


# -- OpenDP measurements: checked before the FFI call ------------------------------------------------------
def _measurements():
    from ldp_plugin import measurements as M

    return [
        ("krr", lambda: M.make_krr(epsilon=1.0, categories=["a", "b", "c"]), "d"),
        ("oue", lambda: M.make_oue(epsilon=1.0, d=4), 7),
        ("rappor", lambda: M.make_rappor(epsilon=1.0, d=4), 9),
        ("olh", lambda: M.make_olh(epsilon=1.0, d=4), -1),
        ("hadamard", lambda: M.make_hadamard(epsilon=1.0, d=4), 4),
        ("warner", lambda: M.make_warner(epsilon=1.0), "yes"),
        ("orr", lambda: M.make_orr(epsilon=1.0, k=4, cohorts=2, d=4), 5),
        ("duchi", lambda: ldp.make_duchi(epsilon=1.0), 2.5),
        ("piecewise", lambda: ldp.make_piecewise(epsilon=1.0), -0.5),
    ]


MEAS = _measurements()


@pytest.mark.parametrize("make,outside", [m[1:] for m in MEAS], ids=[m[0] for m in MEAS])
@pytest.mark.parametrize("arg", ["outside", "none", "list", "dict"])
def test_measurement_argument_checked_before_ffi(make, outside, arg):
    m = make()
    value = {"outside": outside, "none": None, "list": [0, 1], "dict": {"a": 1}}[arg]
    assert_clear_api(lambda: m(value), ["argument", "values", "categories", "codes", "warner", "number"])


@pytest.mark.parametrize("make", [m[1] for m in MEAS], ids=[m[0] for m in MEAS])
@pytest.mark.parametrize("d_in", [1.0, "1", -1, None, True])
def test_measurement_map_argument(make, d_in):
    m = make()
    assert_clear_api(lambda: m.map(d_in), ["d_in"])


def test_measurement_still_composes_and_maps():
    import opendp.prelude as dp

    m = ldp.make_krr(epsilon=1.0, categories=["a", "b", "c"])
    assert m.map(1) == 1.0 and m("b") in ("a", "b", "c")
    comp = dp.c.make_composition([m, m]) if hasattr(dp.c, "make_composition") else dp.c.make_basic_composition([m, m])
    assert len(comp("a")) == 2
    pop = ldp.make_krr(epsilon=1.0, d=4, unit="population")
    assert pop.map(3) == pytest.approx(3.0) and len(pop([0, 1, 2])) == 3
    assert_clear_api(lambda: pop(3), ["batch"])


# -- sinks, reprs, the public surface ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_sink_that_is_a_file(tmp_path, kind):
    import polars as pl

    from ldp_plugin.adapters import privatize

    f = tmp_path / "afile"
    f.write_text(SENTINEL)
    sink = f if kind == "file" else f / "sub"
    m = ldp.KRR(epsilon=1.0, categories=["a", "b"])
    assert_clear_api(lambda: privatize(pl.DataFrame({"v": ["a", "b"]}).lazy(), "v", m, sink=sink), ["sink"])


def test_readable_reprs(tmp_path):
    from ldp_plugin.accountant import Accountant, Population

    m = ldp.KRR(epsilon=1.0, categories=[f"item{i}" for i in range(20)])
    text = repr(m.estimate(m.randomize([f"item{i % 20}" for i in range(400)], rng=1)))
    assert text.startswith("FrequencyEstimate(n=400, items=20") and "12 more items" in text and len(text.splitlines()) == 10
    acc = Accountant.create(tmp_path / "l.db", Population(name="app", lifetime_cap="4"))
    assert repr(acc) == f"Accountant({str(tmp_path / 'l.db')!r}, population='app', lifetime_cap=4, cohorts=1, remaining=4)"


def test_public_names_are_explicit_exports():
    for name in ("KRR", "ORR", "make_krr", "LDPInputError", "LDPArgumentError", "UnderdeterminedWarning", "FrequencyEstimate"):
        assert name in ldp.__all__
