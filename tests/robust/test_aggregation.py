"""Robust aggregation across nodes: with 1 of 10 nodes hostile no estimate moves beyond its
stated bound (while the pooled estimate does: the power check), the deterministic honest-range
property, and the federated collector's per-node accumulators."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.robust.aggregation import combine, combine_accumulators

D, PER, NODES = 64, 3000, 10


def _nodes(mech, hostile=(3,), seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(D))
    accs = {}
    for k in range(NODES):
        x = rng.choice(D, PER, p=theta)
        reps = mech.randomize(x, rng=100 * seed + k)
        if k in hostile:  # every report of the hostile node promotes item 5 (the maximal-gain reports)
            reps = mech.max_gain_reports([5], 20 * PER, rng=k)
        accs[f"n{k}"] = mech.accumulator().add(reps)
    return theta, accs


@pytest.mark.parametrize("rule", ["trimmed", "median-of-means"])
@pytest.mark.parametrize("family", ["oue", "krr"])
def test_one_hostile_node_of_ten_stays_within_the_bound(rule, family):
    mech = {"oue": ldp.OUE, "krr": ldp.KRR}[family](epsilon=2.0, d=D)
    for seed in range(3):
        theta, accs = _nodes(mech, seed=seed)
        r = combine_accumulators(mech, accs, rule=rule, f=1, alpha=1e-3)
        assert np.all(np.abs(r.estimate - theta) <= r.bound)
        # power: the pooled estimate of the same nodes is dragged far beyond the bound on the target
        assert abs(r.pooled[5] - theta[5]) > r.bound[5]
        assert np.all(np.isfinite(r.variance_price)) and np.all(r.variance_price > 0)


def test_trimmed_mean_lies_in_the_honest_range_whatever_the_hostile_nodes_send():
    rng = np.random.default_rng(1)
    honest = rng.normal(0.1, 0.01, size=(8, 16))
    for hostile in (np.full((2, 16), 1e6), np.full((2, 16), -1e6), np.vstack([np.full(16, 1e6), np.full(16, -1e6)])):
        vals = np.vstack([honest, hostile])
        ests = {k: (vals[k], np.full(16, 0.01), 100) for k in range(10)}
        r = combine(ests, rule="trimmed", f=2)
        assert np.all(r.estimate >= honest.min(axis=0) - 1e-12) and np.all(r.estimate <= honest.max(axis=0) + 1e-12)
        mom = combine(ests, rule="median-of-means", f=2, groups=5)
        assert np.all(mom.estimate >= honest.min(axis=0) - 1e-12) and np.all(mom.estimate <= honest.max(axis=0) + 1e-12)


def test_refusals():
    ests = {k: (np.zeros(4), np.ones(4), 10) for k in range(4)}
    with pytest.raises(LDPParameterError, match="more than 4"):
        combine(ests, rule="trimmed", f=2)
    with pytest.raises(LDPParameterError, match="groups"):
        combine(ests, rule="median-of-means", f=1, groups=2)
    with pytest.raises(LDPParameterError, match="rule"):
        combine(ests, rule="mean")


def test_collector_keeps_per_node_accumulators(tmp_path):
    from ldp_plugin.federated import Collector, DeviceFleet, Query

    mech = ldp.OUE(epsilon=1.0, d=8)
    q = Query.for_mechanism("robust", mech, min_batch=10)
    col = Collector(q)
    for i in range(5):
        fleet = DeviceFleet(tmp_path / f"n{i}.sqlite", np.arange(40) % (3 + i), lifetime_cap="4")
        rep = fleet.respond(q.to_json())
        raw = {"devices": rep["devices"], "reports": list(rep["reports"]), "refused": json.dumps(rep["refused"]), "retry": rep["retry"]}
        assert col.ingest_reply(raw, quota=40, node=i)["error"] is None
    assert col.accepted == 200 and sorted(col.node_accumulators) == list(range(5))
    total = sum(np.asarray(a.counts) for a in col.node_accumulators.values())
    assert np.array_equal(total, np.asarray(col.acc.counts))
    r = combine_accumulators(col.mechanism, col.node_accumulators, rule="trimmed", f=1)
    assert r.estimate.shape == (8,)
