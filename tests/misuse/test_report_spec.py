"""Reports carry the spec they were made under, and every estimator refuses reports of another
mechanism or parameter set — for EVERY registered name (all kinds) and the wrappers.

A report batch is a ``ReportArray`` / ``ReportTuple`` / ``ReportDict`` (or a tagged batch object)
carrying its origin; ``estimate`` checks the producer's spec, an accumulator's ``add`` the base's,
``estimate_from`` the accumulator's mechanism. Also: ``estimate`` keywords are strict (a misspelt
one is an ``LDPArgumentError`` naming what it takes), and a batch with one dimension too many is
refused, never flattened into more users.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ldp_plugin.mechanisms.reports import report_count
from ldp_plugin.mechanisms.tagged import origin_of

from .._helpers import registry_instances
from ..test_client_entry_points import KEYS, N, _values

CASES = [pytest.param(f, id=i) for i, f in registry_instances()]


def _reports(mech, n=N):
    keys = KEYS[:n] if mech.needs_user_keys else None
    return mech.randomize(_values(mech, n), rng=0, user_keys=keys)


def _other_parameters(mech):
    """The same mechanism with one parameter changed (ε, or the wrapper's own)."""
    if isinstance(mech, ldp.SampleOne):
        return dataclasses.replace(mech, m=mech.m + 1)
    fields = {f.name for f in dataclasses.fields(mech) if f.init}
    name = "epsilon" if "epsilon" in fields else sorted(f for f in fields if f.startswith("epsilon"))[-1]
    return dataclasses.replace(mech, **{name: getattr(mech, name) * 0.8})


@pytest.fixture(params=CASES)
def mech(request):
    return request.param()


def test_batches_carry_their_spec(mech):
    r = _reports(mech)
    origin = origin_of(r)
    assert origin is not None and origin.spec == mech.spec()
    assert origin.base_spec == mech.base.spec()
    assert origin_of(pickle.loads(pickle.dumps(r))) == origin


def test_reports_of_other_parameters_are_refused(mech):
    r = _reports(mech)
    other = _other_parameters(mech)
    assert other.spec() != mech.spec()
    with pytest.raises(LDPInputError, match="were made by .* with other parameters") as info:
        other.estimate(r)
    assert "in the reports" in str(info.value)
    if other.base.spec() != mech.base.spec():
        with pytest.raises(LDPInputError, match="were made by"):
            other.accumulator().add(r)
        with pytest.raises(LDPInputError, match="were made by"):
            other.estimate_from(mech.accumulator().add(r))
    assert mech.accumulator().add(r).n == N  # the maker's own accumulator takes them


def test_reports_of_another_mechanism_are_refused(mech):
    krr = ldp.KRR(epsilon=1.0, d=2)
    r = krr.randomize(np.arange(N) % 2, rng=0)
    if mech.spec() == krr.spec():
        return
    with pytest.raises(LDPInputError, match="were made by krr"):
        mech.estimate(r)
    if mech.base.spec() != krr.spec():
        with pytest.raises(LDPInputError, match="were made by krr"):
            mech.accumulator().add(r)


def test_estimate_keywords_are_strict(mech):
    r = _reports(mech)
    with pytest.raises(LDPArgumentError, match=r"confidance"):
        mech.estimate(r, confidance=0.9)
    with pytest.raises(LDPArgumentError, match=r"confidance"):
        mech.estimate_from(mech.accumulator().add(r), confidance=0.9)


def test_two_dimensional_batches_are_never_flattened(mech):
    if mech.input_kind == "tuple":
        bad = np.zeros((3, 2, len(mech.domains)), dtype=np.int64)
    else:
        bad = np.zeros((3, 2), dtype=np.int64)
    keys = KEYS[:3] if mech.needs_user_keys else None
    with pytest.raises(LDPInputError, match="dimension"):
        mech.randomize_encoded(bad, rng=0, user_keys=keys)
    if mech.input_kind == "number":
        with pytest.raises(LDPInputError, match="dimension|1-d"):
            mech.randomize(np.zeros((3, 2)) + mech.lower, rng=0)


def test_the_issue_examples():
    """PCKV decoding k-RR reports, Square Wave on another range, SMP/PCKV with another ε/d/domains."""
    krr = ldp.KRR(epsilon=1.0, d=4)
    with pytest.raises(LDPInputError, match="made by krr, not pckv"):
        ldp.PCKV(epsilon=1.0, d=2, ell=1).estimate(krr.randomize(np.arange(100) % 4, rng=1))
    sw = ldp.SquareWave(epsilon=1.0, lower=0, upper=1000, grid=64)
    r = sw.randomize(np.linspace(0, 1000, 100), rng=1)
    with pytest.raises(LDPInputError, match=r"upper=1000.0 in the reports, 10.0 here"):
        ldp.SquareWave(epsilon=1.0, lower=0, upper=10, grid=64).estimate(r)
    smp = ldp.SMP(epsilon=1.0, domains=(3, 4))
    rs = smp.randomize(np.zeros((50, 2), dtype=np.int64), rng=1)
    for other in (ldp.SMP(epsilon=2.0, domains=(3, 4)), ldp.SMP(epsilon=1.0, domains=(3, 5))):
        with pytest.raises(LDPInputError, match="smp with other parameters"):
            other.estimate(rs)
    pckv = ldp.PCKV(epsilon=1.0, d=3, ell=1)
    rp = pckv.randomize([[(0, 0.5)]] * 50, rng=1)
    for other in (ldp.PCKV(epsilon=1.0, d=4, ell=1), ldp.PCKV(epsilon=1.0, d=3, ell=2)):
        with pytest.raises(LDPInputError, match="pckv with other parameters"):
            other.estimate(rp)
    with pytest.raises(LDPArgumentError, match="no postprocess= option"):
        pckv.estimate(rp, postprocess="none")
    assert pckv.estimate(rp, target="population").target == "population"
    with pytest.raises(LDPParameterError, match="target"):
        pckv.estimate(rp, target="everyone")


def test_selections_keep_the_tag_and_arithmetic_drops_it():
    krr = ldp.KRR(epsilon=1.0, d=4)
    r = krr.randomize(np.arange(40) % 4, rng=0)
    assert origin_of(r[:10]) == origin_of(r) and origin_of(r[r > 1]) == origin_of(r)
    assert origin_of(r + 0) is None and type(r.max()) is not type(r)
    assert repr(r[:3]).startswith("array(")
    assert report_count(krr, r[:10]) == 10
    # an untagged batch (a hand-made array, a frame read back) is accepted as before
    assert ldp.KRR(epsilon=1.0, d=4).estimate(np.asarray(r)).n == 40
