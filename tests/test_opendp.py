"""OpenDP integration: maps at their exact edge, chaining with >>, compositors and filters."""

import math

import numpy as np
import opendp.prelude as dp
import pytest

import ldp_plugin as ldp

dp.enable_features("contrib", "honest-but-curious")

MAKERS = [
    ("krr", lambda e, **kw: ldp.make_krr(epsilon=e, d=5, **kw)),
    ("warner", lambda e, **kw: ldp.make_randomized_response_warner(epsilon=e, **kw)),
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
