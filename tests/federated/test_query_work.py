"""Every parameter that sets a node's memory or time is checked before the spend.

A query whose sizes (a unary domain of 2**28 items, a set domain, attribute domains, buckets,
keyed tables, or simply many devices) plan more memory than the owner allows — or whose timed dry
run on inputs that are not values, scaled to every device, takes longer than the owner allows —
is refused ``query_too_large`` by every device, and the ledger is unchanged (nothing charged, no
release row, the same query answered later once the owner raises the limit)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import DeviceFleet, DevicePolicy, Query
from ldp_plugin.federated.work import WORK_PER_REPORT_BYTE, query_bytes
from ldp_plugin.mechanisms.reports import wire_size
from ldp_plugin.registry import KINDS, load_registry

REG = load_registry(kinds=KINDS)


def _mk(name, **over):
    decl = REG[name]
    return decl.mechanism_class()(**{**dict(decl.canonical[0]), **over})


OVERSIZED = [
    pytest.param(lambda: ldp.OUE(epsilon=1.0, d=2**28), id="oue-d2^28"),
    pytest.param(lambda: _mk("rappor", d=2**28), id="rappor-d2^28"),
    pytest.param(lambda: _mk("rue", d=2**28), id="rue-d2^28"),
    pytest.param(lambda: _mk("the", d=2**28), id="the-d2^28"),
    pytest.param(lambda: _mk("rappor-set", d=2**28, m=2), id="rappor-set-d2^28"),
    pytest.param(lambda: _mk("l-oue", d=2**16), id="l-oue-d2^16"),
    pytest.param(lambda: _mk("l-sue", d=2**16), id="l-sue-d2^16"),
    pytest.param(lambda: _mk("dbitflip", d=2**16, d_bits=2**16), id="dbitflip-2^16-buckets"),
]


@pytest.mark.parametrize("make", OVERSIZED)
def test_an_oversized_query_is_refused_before_the_spend(make, tmp_path):
    mech = make()
    n = 512
    policy = DevicePolicy(max_epsilon_per_query=Fraction(100), max_query_bytes=256 << 20)
    assert query_bytes(mech, n) > policy.max_query_bytes
    fleet = DeviceFleet(tmp_path / "d.sqlite", np.zeros(n, dtype=np.int64), lifetime_cap="1000", policy=policy)
    try:
        q = Query.for_mechanism("big", mech)
        assert fleet.respond(q.to_json()) == {"reports": [], "refused": {"query_too_large": n}, "retry": False, "devices": n}
        assert fleet.ledger.spent() == 0 and fleet.ledger.history() == [] and fleet.ledger.release_status(q.content_hash.hex()) is None
    finally:
        fleet.close()


def test_many_devices_are_part_of_the_plan(tmp_path):
    """The same small query: answered by 64 devices, refused by 2,000 under a tight memory limit."""
    mech = ldp.OUE(epsilon=1.0, d=2**14)
    per = wire_size(mech, 1) * (2 + WORK_PER_REPORT_BYTE)
    limit = query_bytes(mech, 64) + per
    policy = DevicePolicy(max_epsilon_per_query=Fraction(4), max_query_bytes=limit)
    for n, answered in ((64, True), (2000, False)):
        fleet = DeviceFleet(tmp_path / f"{n}.sqlite", np.zeros(n, dtype=np.int64), lifetime_cap="10", policy=policy)
        try:
            r = fleet.respond(Query.for_mechanism("q", mech).to_json())
            assert (len(r["reports"]) == n) is answered and (r["refused"] == {"query_too_large": n}) is (not answered)
            assert fleet.ledger.spent() == (1 if answered else 0)
        finally:
            fleet.close()


def test_a_query_too_slow_for_the_owner_is_refused_before_the_spend(tmp_path):
    """dBitFlipPM draws its buckets with one keyed PRF each: 20,000 devices × 256 buckets is far
    above a 1-second limit on any machine (the dry run scales 16 devices' time to all of them)."""
    mech = _mk("dbitflip", d=256, d_bits=256)
    n = 20_000
    slow = DevicePolicy(max_epsilon_per_query=Fraction(100), max_query_seconds=1)
    fleet = DeviceFleet(tmp_path / "t.sqlite", np.zeros(n, dtype=np.int64), lifetime_cap="1000", policy=slow)
    try:
        q = Query.for_mechanism("slow", mech)
        assert fleet.respond(q.to_json())["refused"] == {"query_too_large": n}
        assert fleet.ledger.spent() == 0 and fleet.ledger.history() == []
    finally:
        fleet.close()


def test_the_work_limits_come_from_the_owner_toml():
    p = DevicePolicy.from_dict({"lifetime_cap": "4", "max_epsilon_per_query": "1", "max_query_bytes": 1 << 20, "max_query_seconds": 30})
    assert (p.max_query_bytes, p.max_query_seconds) == (1 << 20, 30)
    for bad in ({"max_query_bytes": 0}, {"max_query_seconds": -1}, {"max_query_seconds": 1.5}):
        with pytest.raises(ldp.LDPParameterError, match="max_query"):
            DevicePolicy.from_dict({"lifetime_cap": "4", "max_epsilon_per_query": "1", **bad})
