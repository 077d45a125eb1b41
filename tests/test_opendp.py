"""OpenDP integration: maps at their exact edge, chaining with >>, compositors and filters, OpenDP's features
asserted (never turned on) by every constructor, and LDP queries composed in OpenDP's Context (local and
population units; the docs page docs/opendp.md runs as written)."""

import inspect
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import opendp.prelude as dp
import pytest
from opendp.extras._utilities import supports_partial, to_then
from opendp.mod import GLOBAL_FEATURES

import ldp_plugin as ldp

dp.enable_features("contrib", "honest-but-curious")

MAKERS = [
    ("krr", lambda e, **kw: ldp.make_krr(epsilon=e, d=5, **kw)),
    ("warner", lambda e, **kw: ldp.make_warner(epsilon=e, **kw)),
    ("rappor", lambda e, **kw: ldp.make_rappor(epsilon=e, d=5, **kw)),
    ("oue", lambda e, **kw: ldp.make_oue(epsilon=e, d=5, **kw)),
    ("k-subset", lambda e, **kw: ldp.make_k_subset(epsilon=e, d=5, **kw)),
    ("olh", lambda e, **kw: ldp.make_olh(epsilon=e, d=5, **kw)),
    ("hadamard", lambda e, **kw: ldp.make_hadamard(epsilon=e, d=5, **kw)),
    ("orr", lambda e, **kw: ldp.make_orr(epsilon=e, k=3, cohorts=4, d=5, **kw)),
    ("orappor", lambda e, **kw: ldp.make_orappor(epsilon=e, k=8, h=2, cohorts=4, d=5, **kw)),
    ("sample-one-krr", lambda e, **kw: ldp.make_set_ldp(ldp.SampleOne(mechanism=ldp.KRR(epsilon=e, d=5), m=2), **kw)),
]


@pytest.mark.parametrize("name,make", MAKERS, ids=[m[0] for m in MAKERS])
@pytest.mark.parametrize("eps", [0.1, 1.0, 1 / 3, 5.0])
def test_user_map_at_edge(name, make, eps):
    m = make(eps)
    assert str(m.input_metric) == "DiscreteDistance()"
    assert str(m.output_measure) == "MaxDivergence"
    assert m.map(1) == eps
    assert m.map(0) == 0.0
    assert m.check(1, eps)
    assert not m.check(1, eps * (1 - 1e-9))


@pytest.mark.parametrize("name,make", MAKERS, ids=[m[0] for m in MAKERS])
def test_population_map_scales_and_rounds_up(name, make):
    eps = 0.1
    m = make(eps, unit="population", rng=1)
    assert str(m.input_metric) == "HammingDistance()"
    for d_in in (1, 3, 10):
        got = m.map(d_in)
        assert got >= d_in * eps and got == ldp.exact.scale_epsilon_up(d_in, eps)
        assert not m.check(d_in, math.nextafter(got, 0))
    values = [True, False, True] if name == "warner" else [0, 1, 4]
    if name.startswith("sample-one"):
        values = [[0, 1], [4], []]
    out = m(values)
    assert len(out) == 3


def test_user_measurement_runs_and_validates():
    m = ldp.make_krr(epsilon=1.0, categories=["a", "b", "c"], rng=4)
    assert all(m("b") in ("a", "b", "c") for _ in range(20))
    s = ldp.make_k_subset(epsilon=1.0, categories=["a", "b", "c", "d"], k=2, rng=4)("a")
    assert len(s) == 2 and set(s) <= {"a", "b", "c", "d"}
    with pytest.raises(Exception) as exc:
        m("secret-value-zzz")
    assert "secret-value-zzz" not in str(exc.value)
    with pytest.raises(Exception):
        m.map(1.0)  # d_in must be an int


def test_chaining_a_user_transformation():
    mech = ldp.KRR(epsilon=1.0, d=4)
    t = dp.t.make_user_transformation(
        dp.user_domain("AppName", lambda _: True),
        dp.discrete_distance(),
        ldp.category_domain(mech),
        dp.discrete_distance(),
        lambda s: len(s) % 4,  # a deterministic per-user feature
        lambda d_in: d_in,
    )
    chain = t >> ldp.then_ldp(mech, rng=2)
    assert chain("maps") in range(4)
    assert chain.map(1) == 1.0
    chain2 = t >> ldp.then_krr(epsilon=1.0, d=4)
    assert chain2.map(1) == 1.0


def test_adaptive_composition_and_privacy_filter():
    mech = ldp.KRR(epsilon=0.5, d=4)
    dom = ldp.category_domain(mech)
    m = ldp.make_ldp(dom, dp.discrete_distance(), mech, rng=3)
    comp = dp.c.make_adaptive_composition(dom, dp.discrete_distance(), dp.max_divergence(), d_in=1, d_mids=[0.5, 0.5])
    assert comp.map(1) == 1.0
    qi = comp(2)
    assert qi(m) in range(4) and qi(m) in range(4)
    with pytest.raises(dp.OpenDPException):
        qi(m)
    odo = dp.c.make_fully_adaptive_composition(dom, dp.discrete_distance(), dp.max_divergence())
    filt = dp.c.make_privacy_filter(odo, d_in=1, d_out=1.2)
    q = filt(1)
    q(m)
    q(m)
    with pytest.raises(dp.OpenDPException):
        q(m)  # 1.5 > 1.2


def test_population_batch_is_vectorized_output():
    m = ldp.make_rappor(epsilon=2.0, d=10, unit="population", rng=8)
    reports = m(np.arange(1000) % 10)
    assert reports.shape == (1000, 2) and reports.dtype == np.uint8


def test_bad_unit_and_metric():
    with pytest.raises(ValueError, match="unit"):
        ldp.make_krr(epsilon=1.0, d=3, unit="everyone")


# -- OpenDP's features: asserted by every constructor, never turned on by one -----------------------------
@pytest.fixture
def features_off():
    """OpenDP's two features off for one test, restored after (the process-wide state this library never changes)."""
    before = set(GLOBAL_FEATURES)
    dp.disable_features(*ldp.measurements.FEATURES)
    yield GLOBAL_FEATURES
    dp.disable_features(*ldp.measurements.FEATURES)
    dp.enable_features(*(before & set(ldp.measurements.FEATURES)))


#: a user transformation built while the features are on (OpenDP's own constructor asserts them too)
_LOWER = dp.t.make_user_transformation(dp.atom_domain(T=str), dp.discrete_distance(), dp.atom_domain(T=str), dp.discrete_distance(),
                                       str.lower, lambda d_in: d_in)

CONSTRUCTORS = [
    ("make_krr", lambda: ldp.make_krr(epsilon=1.0, d=3)),
    ("make_krr-population", lambda: ldp.make_krr(epsilon=1.0, d=3, unit="population")),
    ("then_krr", lambda: _LOWER >> ldp.then_krr(epsilon=1.0, d=3)),
    ("make_ldp", lambda: ldp.make_ldp(dp.atom_domain(T=str), dp.discrete_distance(), ldp.KRR(epsilon=1.0, d=3))),
    ("category_domain", lambda: ldp.category_domain(ldp.KRR(epsilon=1.0, d=3))),
    ("batch_domain", lambda: ldp.batch_domain(ldp.KRR(epsilon=1.0, d=3))),
    ("space_of", lambda: ldp.space_of(ldp.OUE(epsilon=1.0, d=3), "population")),
    ("make_set_ldp", lambda: ldp.make_set_ldp(ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=3), m=2))),
    ("make_duchi", lambda: ldp.make_duchi(epsilon=1.0, lower=0, upper=1)),
    ("make_longitudinal", lambda: ldp.make_longitudinal(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=4))),
    ("make_shuffle_amplified", lambda: ldp.amplification.make_shuffle_amplified(ldp.KRR(epsilon=1.0, d=3), 100)),
]


@pytest.mark.parametrize("name,build", CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
def test_constructors_assert_the_features_and_never_enable_them(name, build, features_off):
    with pytest.raises(ldp.LDPParameterError) as exc:
        build()
    msg = str(exc.value)
    assert "ldp.enable_ldp_features()" in msg and 'dp.enable_features("contrib", "honest-but-curious")' in msg
    assert not set(ldp.measurements.FEATURES) & features_off, "a constructor turned a feature on"
    dp.enable_features("contrib")  # one of the two is not enough, and the other is not added
    with pytest.raises(ldp.LDPParameterError, match="enable_ldp_features"):
        build()
    assert "honest-but-curious" not in features_off


def test_the_one_explicit_call_enables_both(features_off):
    ldp.enable_ldp_features()
    assert set(ldp.measurements.FEATURES) <= features_off
    assert ldp.make_krr(epsilon=1.0, d=3).map(1) == 1.0


def test_no_constructor_touches_the_features_when_enabled():
    before = set(GLOBAL_FEATURES)
    for _, build in CONSTRUCTORS:
        build()
    assert set(GLOBAL_FEATURES) == before


# -- OpenDP's Context: dp.register(ldp.make_ldp), keyword and positional, local and population units -----
def _register_once():
    try:
        dp.register(ldp.make_ldp)
    except ValueError as e:  # registered by an earlier test of this process (OpenDP refuses a second registration)
        assert "already registered" in str(e)


def test_make_ldp_supports_partial_application():
    assert supports_partial(ldp.make_ldp)
    assert list(inspect.signature(ldp.then_ldp).parameters) == list(inspect.signature(to_then(ldp.make_ldp)).parameters) == ["mechanism", "rng"]
    mech = ldp.KRR(epsilon=0.5, d=4)
    for partial in (ldp.then_ldp(mechanism=mech, rng=1), to_then(ldp.make_ldp)(mechanism=mech, rng=1), ldp.then_ldp(mech)):
        m = ldp.space_of(mech) >> partial
        assert m.map(1) == 0.5 and m(2) in range(4)
        pop = ldp.space_of(mech, "population") >> partial
        assert pop.map(3) == ldp.exact.scale_epsilon_up(3, 0.5) and len(pop([0, 1, 2])) == 3


def test_context_composes_several_queries_of_one_user():
    _register_once()
    krr = ldp.KRR(epsilon=1.0, categories=["yes", "no", "unsure"])
    oue = ldp.OUE(epsilon=0.5, categories=["yes", "no", "unsure"])
    ctx = dp.Context.compositor(data="no", privacy_unit=dp.unit_of(local=True), privacy_loss=dp.loss_of(epsilon=2.0),
                                split_by_weights=[2, 1, 1], domain=ldp.category_domain(krr))
    assert ctx.query().ldp(mechanism=krr).release() in ("yes", "no", "unsure")  # keyword
    assert len(ctx.query().ldp(oue, rng=3).release()) <= 3  # positional; OUE: the set bits of one report
    with pytest.raises(dp.OpenDPException):  # ε 1.0 > the 0.5 left for the third query: refused, not charged
        ctx.query().ldp(mechanism=krr).release()
    assert ctx.query().ldp(mechanism=oue).release() is not None
    with pytest.raises(ValueError, match="exhausted"):
        ctx.query()


def test_context_population_unit_and_estimate():
    _register_once()
    cats = ["a", "b", "c"]
    krr = ldp.KRR(epsilon=2.0, categories=cats)
    rappor = ldp.RAPPOR(epsilon=2.0, categories=cats)
    users = ["a"] * 600 + ["b"] * 300 + ["c"] * 100
    ctx = dp.Context.compositor(data=users, privacy_unit=dp.unit_of(changes=1, ordered=True), privacy_loss=dp.loss_of(epsilon=4.0),
                                split_evenly_over=2, domain=ldp.batch_domain(krr))
    for mech in (krr, rappor):
        reports = ctx.query().ldp(mechanism=mech, rng=11).release()
        est = mech.estimate(reports).to_polars()
        truth = np.array([0.6, 0.3, 0.1])
        z = np.abs(est["estimate"].to_numpy() - truth) / est["std_error"].to_numpy()
        assert z.max() < 5.0, (mech.name, z)  # fixed seed; 5 standard errors of the estimator's own variance
        wrong = np.abs(est["estimate"].to_numpy() - truth[::-1]) / est["std_error"].to_numpy()
        assert wrong.max() > 5.0  # power: the same check rejects the reversed truth
    assert ctx.d_mids_consumed == [2.0, 2.0]


def test_docs_opendp_page_blocks_run(tmp_path):
    """docs/opendp.md's Python blocks, in order, in a fresh process (its own feature call, its own registration)."""
    page = Path(__file__).resolve().parent.parent / "docs" / "opendp.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) >= 4 and any("dp.Context.compositor" in b and "unit_of(local=True)" in b for b in blocks)
    assert any("unit_of(changes=1, ordered=True)" in b for b in blocks)
    script = tmp_path / "opendp_page.py"
    script.write_text("\n".join(blocks))
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused: k-RR at ε = 1 does not fit the third query" in out.stdout
    assert "refused: the query's domain is not the Context's" in out.stdout and "k-RR at ε = 0.5: " in out.stdout
    assert out.stdout.count("estimate") == 2  # two population estimates printed
