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
import json
import pickle
import re

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
import ldp_plugin.adapters as adapters
import ldp_plugin.adapters.polars_distribution as adapters_dist
import ldp_plugin.adapters.polars_key_value as adapters_kv
import ldp_plugin.adapters.polars_multi as adapters_multi
from ldp_plugin.accountant import Accountant, Population
from ldp_plugin._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ldp_plugin.mechanisms.frame_spec import SPEC_COLUMN, spec_dtype
from ldp_plugin.mechanisms.protocol import Distribution, has
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


# -- reports frames carry their spec (the ldp_spec column) ---------------------------------------------
def _frame_estimates(mech):
    """Every Polars estimate path that takes ``mech``'s reports frame."""
    paths = []
    if mech.input_kind == "key-value":
        paths.append(lambda f: adapters_kv.key_values(f, mech))
    elif mech.input_kind == "tuple":
        paths.append(lambda f: adapters_multi.attribute_frequencies(f, mech))
    else:
        paths.append(lambda f: adapters.estimate(f, mech))
    if has(mech, Distribution):
        paths.append(lambda f: adapters_dist.distribution(f, mech))
        paths.append(lambda f: adapters_dist.range_count(f, mech, mech.lower, mech.upper))
    paths.append(lambda f: adapters.frame_to_reports(mech, f.collect() if isinstance(f, pl.LazyFrame) else f))
    return paths


def test_reports_frames_carry_their_spec_and_every_frame_estimator_refuses_another(mech):
    """The frame ``reports_to_frame`` (hence every ``privatize``) makes names its spec; each Polars
    estimate path takes it (eager and lazy) and refuses, naming the specs: the frame of the same mechanism
    with one parameter changed, a k-RR frame, a frame without the spec column, and a frame mixing two specs."""
    frame = adapters.reports_to_frame(mech, _reports(mech))
    assert frame[SPEC_COLUMN].dtype == spec_dtype(mech) and json.loads(frame[SPEC_COLUMN].dtype.categories[0]) == mech.spec()
    other = _other_parameters(mech)
    other_frame = adapters.reports_to_frame(other, _reports(other))
    krr = ldp.KRR(epsilon=1.0, d=2)
    krr_frame = adapters.reports_to_frame(krr, krr.randomize(np.arange(N) % 2, rng=0))
    as_text = pl.col(SPEC_COLUMN).cast(pl.String)  # two specs' frames concatenate only once their Enums are cast away
    mixed = pl.concat([frame.with_columns(as_text), other_frame.select(frame.columns).with_columns(as_text)])
    for path in _frame_estimates(mech):
        path(frame)
        path(frame.lazy())
        with pytest.raises(LDPInputError, match=r"were made by .* with other parameters \(.* in the reports, .* here\)"):
            path(other_frame)
        with pytest.raises(LDPInputError, match=r"with other parameters"):
            path(other_frame.lazy())
        if mech.spec() != krr.spec() and set(frame.columns) <= set(krr_frame.columns):
            name = _name(mech)
            with pytest.raises(LDPInputError, match="were made by krr with other" if name == "krr" else f"were made by krr, not {re.escape(name)}"):
                path(krr_frame)
        with pytest.raises(LDPInputError, match="has no 'ldp_spec' column"):
            path(frame.drop(SPEC_COLUMN))
        with pytest.raises(LDPInputError, match="mixes reports made under 2 different specs"):
            path(mixed)


def _name(mech):
    spec = mech.spec()
    return spec["name"] if "name" in spec else f"{spec['set']}({spec['mechanism']['name']})"


def test_the_spec_column_survives_what_users_do_between_privatize_and_estimate(tmp_path):
    """filter, select, slicing, concat of frames of the same spec, Parquet / IPC / CSV files, a
    LazyFrame's streamed batches, the sink= directory and the ledger's kept reports: the spec stays
    and the estimate is the batch path's; frames of two specs do not even concatenate."""
    mech = ldp.KRR(epsilon=1.0, d=3)
    df = pl.DataFrame({"user": np.arange(600), "v": np.arange(600) % 3})
    reports = df.ldp.privatize("v", mech, user_id="user", seed=0, keep_user_id=True)
    want = reports.ldp.estimate(mech)["estimate"].to_list()
    reports.write_parquet(tmp_path / "r.parquet")
    reports.write_ipc(tmp_path / "r.ipc")
    reports.write_csv(tmp_path / "r.csv")
    same = [reports.filter(pl.col("user") >= 0), reports.select("report", SPEC_COLUMN), pl.concat([reports.head(100), reports.slice(100)]),
            pl.read_parquet(tmp_path / "r.parquet"), pl.scan_parquet(tmp_path / "r.parquet"), pl.read_ipc(tmp_path / "r.ipc"),
            pl.read_csv(tmp_path / "r.csv"), reports.lazy().filter(pl.col("user") >= 0)]
    for f in same:
        assert adapters.estimate(f, mech)["estimate"].to_list() == pytest.approx(want)
    sunk = df.ldp.privatize("v", mech, seed=0, sink=tmp_path / "sink")
    assert SPEC_COLUMN in sunk.collect_schema() and adapters.estimate(sunk, mech)["estimate"].to_list() == pytest.approx(want)
    with pytest.raises(LDPInputError, match="epsilon=1.0 in the reports, 2.0 here"):
        adapters.estimate(sunk, ldp.KRR(epsilon=2.0, d=3))
    with pytest.raises(LDPInputError, match="epsilon=1.0 in the reports, 2.0 here"):
        adapters.estimate(pl.read_csv(tmp_path / "r.csv"), ldp.KRR(epsilon=2.0, d=3))
    acc = Accountant.create(tmp_path / "ledger.sqlite", Population(name="users", lifetime_cap="5", cohorts=1))
    kept = df.ldp.privatize("v", mech, seed=0, accountant=acc, query_id="q", keep_reports=True)
    again = df.ldp.privatize("v", mech, seed=0, accountant=acc, query_id="q", keep_reports=True)
    assert again[SPEC_COLUMN].dtype == kept[SPEC_COLUMN].dtype == spec_dtype(mech)
    with pytest.raises(LDPInputError, match="epsilon=1.0 in the reports, 2.0 here"):
        adapters.estimate(again, ldp.KRR(epsilon=2.0, d=3))
    other = df.ldp.privatize("v", ldp.KRR(epsilon=2.0, d=3), seed=0)
    with pytest.raises(pl.exceptions.SchemaError):
        pl.concat([reports.drop("user"), other])
    nulls = pl.concat([reports.drop("user"), reports.drop("user", SPEC_COLUMN)], how="diagonal")
    with pytest.raises(LDPInputError, match="600 row\\(s\\) without a spec"):
        adapters.estimate(nulls, mech)


def test_a_spec_column_that_is_not_a_spec_is_refused_without_repeating_it():
    mech = ldp.KRR(epsilon=1.0, d=3)
    frame = adapters.reports_to_frame(mech, mech.randomize(np.arange(30) % 3, rng=0))
    secret = "alice@example.org 1984-01-01"
    for bad in (pl.lit(secret), pl.lit('{"name": 3}'), pl.lit(7)):
        with pytest.raises(LDPInputError, match="does not hold a mechanism spec") as info:
            adapters.estimate(frame.with_columns(bad.alias(SPEC_COLUMN)), mech)
        assert secret not in str(info.value)
