"""One contract per capability, parametrized from the registry over EVERY kind (frequency, mean,
longitudinal, distribution, multi-attribute, key-value) and the wrappers (SampleOne, Memoized): a
mechanism declares its capabilities on its class (``capabilities``), ONE function answers
(``has(m, Capability)``, :mod:`ldp_plugin.mechanisms.protocol`) — the declaration, never the
attribute shape —, a declared capability's members are all there and its contract holds, and
every capability is declared by at least one registered mechanism (no contract runs on nothing)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.mechanisms import reports
from ldp_plugin.mechanisms.protocol import (
    CAPABILITIES, Analytic, ClosedDomain, Cohorted, Distribution, InputKind, Keyed, Mechanism, Numeric, SupportRates, Verifiable, capabilities,
    has,
)
from ldp_plugin.registry import KINDS, from_spec
from ldp_plugin.sampling import SeededRandomSource

from ._helpers import REG, registry_instances, valid_reports, valid_values

INSTANCES = registry_instances()
IDS = [i for i, _ in INSTANCES]


@pytest.fixture(params=[f for _, f in INSTANCES], ids=IDS)
def mech(request):
    return request.param()


def declaring(capability):
    """The registry instances (every kind, the wrappers) that declare ``capability``."""
    return pytest.mark.parametrize("m", [pytest.param(f(), id=i) for i, f in INSTANCES if has(f(), capability)])


def test_every_capability_is_declared_by_some_registered_mechanism():
    built = [f() for _, f in INSTANCES]
    for cap in CAPABILITIES.values():
        assert any(has(m, cap) for m in built), cap.__name__
    kinds = {decl.kind for decl in REG.values()}
    assert kinds == set(KINDS)


def test_core(mech):
    """Every mechanism: the core protocol, a spec that rebuilds it, and reports whose columns and
    wire encoding round-trip through the free codecs of mechanisms/reports.py."""
    assert isinstance(mech, Mechanism)
    again = from_spec(json.loads(json.dumps(mech.spec())))
    assert again == mech
    r = valid_reports(mech)
    cols = mech.to_columns(r)
    assert set(cols) == {f.name for f in mech.base.report_fields()}
    back = mech.from_columns(cols)
    assert reports.to_wire(mech, back) == reports.to_wire(mech, r)
    decoded, rejected = reports.from_wire(mech, reports.to_wire(mech, r, tag=b"t"), tag=b"t")
    assert rejected == {} and reports.report_count(mech, decoded) == 32
    acc = mech.accumulator().add(r)
    assert mech.estimate_from(acc) is not None


@declaring(ClosedDomain)
def test_closed_domain(m):
    mech = m
    if mech.closed:
        assert len(mech.items) == mech.domain_size >= 2


@declaring(Cohorted)
def test_cohorted(m):
    mech = m
    assert mech.takes_cohorts and mech.cohorts >= 1
    coh = np.arange(32) % mech.cohorts
    r = mech.randomize(valid_values(mech), rng=1, cohorts=coh)
    assert np.array_equal(np.asarray(mech.to_columns(r)["cohort"]).astype(np.int64), coh)


@declaring(Keyed)
def test_keyed(m):
    mech = m
    assert mech.needs_user_keys
    assert Fraction(mech.collection_cost(1)) > 0
    with pytest.raises(LDPParameterError, match="user_keys"):
        mech.randomize(valid_values(mech), rng=1)
    a, b = valid_reports(mech, seed=2), valid_reports(mech, seed=2)
    assert reports.to_wire(mech, a) == reports.to_wire(mech, b)  # same keys, same seed: same reports


@declaring(Numeric)
def test_numeric(m):
    mech = m
    assert mech.lower < mech.upper and mech.grid >= 2
    est = mech.estimate(mech.randomize(np.full(4000, mech.upper), rng=3))
    assert est is not None


@declaring(SupportRates)
def test_support_rates(m):
    mech = m
    p, q = Fraction(mech.p_star_exact), Fraction(mech.q_star_exact)
    assert 0 <= q < p <= 1
    assert Fraction(mech.realized_ratio) >= 1
    assert math.log(Fraction(mech.realized_ratio)) <= mech.epsilon * (1 + 1e-12)
    assert mech.channel_shape in (None, "randomized-response", "unary", "subset")


@declaring(Verifiable)
def test_verifiable(m):
    mech = m
    try:
        ch = mech.channel()
    except LDPParameterError:
        pytest.skip("channel too large to enumerate")
    assert ch.rows_sum_to_one()
    assert math.log(ch.max_ratio()) <= mech.epsilon * (1 + 1e-12)
    idx = mech.sample_verification_outputs(0, 50, SeededRandomSource(5))
    assert idx.shape == (50,) and idx.min() >= 0 and idx.max() < len(ch.outputs)


@declaring(Analytic)
def test_analytic(m):
    mech = m
    d = mech.domain_size
    theta = np.full(d, 1.0 / d)
    mse = mech.analytic_mse(1000, theta=theta)
    assert np.isfinite(mse) and mse > 0


def _members(cap) -> set:
    """The members a capability protocol names (its annotations, methods and properties)."""
    return {n for n in vars(cap) if not n.startswith("_")} | {n for n in getattr(cap, "__annotations__", {}) if not n.startswith("_")}


def test_declared_equals_answered(mech):
    """For every registered name: the one function answers exactly the class's declaration, the
    attribute shape answers nothing (``isinstance`` refuses a capability), every declared
    capability's members are there, and the flags the core keeps agree with the declaration."""
    declared = type(mech).capabilities
    assert capabilities(mech) == declared and declared <= set(CAPABILITIES.values())
    for cap in CAPABILITIES.values():
        assert has(mech, cap) == (cap in declared), cap.__name__
        with pytest.raises(TypeError):
            isinstance(mech, cap)
    for cap in declared:
        assert not [n for n in _members(cap) if not hasattr(mech, n)], cap.__name__
    assert has(mech, Keyed) == mech.needs_user_keys
    assert has(mech, Cohorted) == mech.takes_cohorts
    assert isinstance(mech.input_kind, InputKind)
    assert has(mech, Numeric) == (mech.input_kind is InputKind.NUMBER)
    assert not (has(mech, Keyed) and has(mech, SupportRates))  # memoized reports: no one-report closed forms


def test_has_refuses_what_is_not_a_capability():
    with pytest.raises(TypeError):
        has(ldp.KRR(epsilon=1.0, d=4), Mechanism)
    assert capabilities(object()) == frozenset() and not has(object(), Verifiable)


@declaring(Distribution)
def test_distribution(m):
    mech = m
    est = mech.estimate_from(mech.accumulator().add(valid_reports(mech, n=400)))
    qs = est.quantiles([0.5])
    assert len(qs) == 1 and mech.lower <= qs[0]["estimate"] <= mech.upper
    whole = est.range_count(mech.lower, mech.upper)
    assert whole.n == 400 and abs(whole.fraction - 1) < 1e-9  # the estimate is a distribution: mass one on the range
