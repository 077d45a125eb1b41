"""The one client signature, and every client entry point for every registered name.

For EVERY registered name (all kinds: frequency, mean, longitudinal) and the wrappers (SampleOne,
Memoized), each entry point either works or refuses at its edge with an ``LDPParameterError``
that names the entry point serving the mechanism (``make_longitudinal`` / ``user_keys=``) — never a
late AttributeError, TypeError or OpenDP exception:

* ``make_ldp(*space_of(mech), mech)`` (one user) and ``make_ldp(*space_of(mech, "population"), mech)`` (a batch);
* ``df.ldp.privatize(column, mech)``;
* the federated device (a fleet answering a query for the mechanism; the collector ingests it);
* ``randomize`` / ``randomize_encoded`` / ``randomize_one`` with the keyword-only signature
  ``rng=, cohorts=, user_keys=`` (``offsets=`` for sets), and the old positional keyed call.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.federated import Collector, DeviceFleet, Query
from ldp_plugin.mechanisms.reports import report_schema, to_wire

from ._helpers import registry_instances

N = 24
KEYS = [bytes([i, 3]) * 16 for i in range(N)]


@pytest.fixture(params=[pytest.param(f, id=i) for i, f in registry_instances()])
def mech(request):
    return request.param()


def _values(mech, n=N):
    """One valid value per user (a single item for set mechanisms: a set of one)."""
    if mech.input_kind == "number":
        return np.linspace(mech.lower, mech.upper, n)
    if mech.input_kind == "key-value":  # one (key, value) pair per user (issue 37)
        out = np.empty(n, dtype=object)
        out[:] = [[(i % mech.d, (i % 7) / 7 - 0.5)] for i in range(n)]
        return out
    if mech.input_kind == "tuple":  # one value per attribute (issue 37)
        out = np.empty(n, dtype=object)
        out[:] = [tuple(i % k for k in mech.domains) for i in range(n)]
        return out
    codes = np.arange(n) % mech.domain_size
    items = getattr(mech, "items", None)
    return codes if items is None else np.array([items[c] for c in codes])


def _first(x, mech=None):
    v = x[0]
    v = v.item() if isinstance(v, np.generic) else v
    return [v] if mech is not None and mech.input_kind == "set" else v  # one user's set of one item


def _refused_for_keys(exc: LDPParameterError) -> bool:
    return "make_longitudinal" in str(exc) and "user_keys" in str(exc)


def test_make_ldp_works_or_names_the_entry_point(mech):
    x = _values(mech)
    for unit in ("user", "population"):
        try:
            meas = ldp.make_ldp(*ldp.space_of(mech, unit), mech, rng=3)
        except LDPParameterError as e:
            assert mech.needs_user_keys and _refused_for_keys(e)
            continue
        assert not mech.needs_user_keys
        out = meas(_first(x, mech)) if unit == "user" else meas(list(x.tolist()))
        assert out is not None
        assert meas.map(1) >= float(mech.epsilon) - 1e-12


def test_privatize_works_or_names_the_entry_point(mech):
    x = _values(mech)
    if mech.input_kind in ("key-value", "tuple"):  # refused before the column is read
        df = pl.DataFrame({"x": list(range(N))})
    else:
        df = pl.DataFrame({"x": x.tolist() if mech.input_kind != "set" else [[v] for v in x.tolist()]})
    try:
        out = df.ldp.privatize("x", mech, seed=5)
    except LDPParameterError as e:
        own = {"key-value": "privatize_key_values", "tuple": "privatize_attributes"}.get(mech.input_kind)
        assert (mech.needs_user_keys and _refused_for_keys(e)) or (own is not None and own in str(e))
        return
    assert not mech.needs_user_keys
    assert out.height == N and out.schema == report_schema(mech)


def test_the_federated_device_answers_every_mechanism(mech, tmp_path):
    fleet = DeviceFleet(tmp_path / "dev.sqlite", _values(mech), lifetime_cap="1000")
    try:
        q = Query(query_id="q", spec=mech.spec(), epsilon=repr(float(mech.epsilon)))
        rep = fleet.respond(q.to_json())
        assert rep["refused"] == {} and len(rep["reports"]) == N
        assert Collector(q).ingest(rep["reports"]) == {"accepted": N, "rejected": {}}
    finally:
        fleet.close()


def test_one_client_signature(mech):
    x = _values(mech, 8)
    if mech.input_kind == "tuple":  # the client takes an n × attributes array of codes
        x = np.array([list(v) for v in x], dtype=np.int64)
    keys = KEYS[:8] if mech.needs_user_keys else None
    a = mech.randomize(x, rng=9, cohorts=None, user_keys=keys)
    codes = mech.encode(x) if mech.input_kind == "value" else None
    if codes is not None:
        b = mech.randomize_encoded(codes, rng=9, cohorts=None, user_keys=keys, offsets=None)
        assert to_wire(mech, a) == to_wire(mech, b)  # randomize is randomize_encoded(encode(values))
    one = mech.randomize_one(_first(x) if x.ndim == 1 else tuple(x[0].tolist()), rng=9, user_key=None if keys is None else keys[0])
    assert one is not None
    if not mech.needs_user_keys:
        with pytest.raises(LDPParameterError, match="user_keys= applies only to keyed"):
            mech.randomize(x, rng=9, user_keys=KEYS[:8])
    if mech.needs_user_keys:
        with pytest.raises(LDPParameterError, match="make_longitudinal"):
            mech.randomize(x, rng=9)
        assert to_wire(mech, mech.randomize(x, keys, rng=9)) == to_wire(mech, a)  # the old positional call
    if not mech.takes_cohorts:
        with pytest.raises(LDPParameterError, match="cohorts= applies only"):
            mech.randomize(x, rng=9, user_keys=keys, cohorts=np.zeros(8, dtype=np.int64))
    if mech.input_kind != "set" and codes is not None:
        with pytest.raises(LDPParameterError, match="offsets= applies only to set"):
            mech.randomize_encoded(codes, rng=9, user_keys=keys, offsets=np.arange(9))
