"""Robust aggregation across nodes: with 1 of 10 nodes hostile no estimate moves beyond its
stated bound (while the pooled estimate does: the power check), the deterministic honest-range
property, and the federated collector's per-node accumulators."""

from __future__ import annotations

import json
from statistics import NormalDist

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


# -- the bound is computed from quantities no single node controls ------------------------------------
@pytest.mark.parametrize("family", ["oue", "krr"])
def test_a_tiny_hostile_node_neither_inflates_the_bound_nor_moves_the_estimate(family):
    """A node sending 3 reports (maximal-gain fakes) used to set the bound through its own standard
    error (≈ 0.09 → 6); it is now refused (fewer than half the median count), listed, and the
    bound is the one of the honest nodes alone up to the Bonferroni count."""
    mech = {"oue": ldp.OUE, "krr": ldp.KRR}[family](epsilon=2.0, d=D)
    theta, honest = _nodes(mech, hostile=(), seed=4)
    tiny = mech.accumulator().add(mech.max_gain_reports([5], 3, rng=1))
    alone = combine_accumulators(mech, honest, rule="trimmed", f=1, alpha=1e-3)
    hostile = combine_accumulators(mech, {**honest, "tiny": tiny}, rule="trimmed", f=1, alpha=1e-3)
    assert hostile.excluded == ("tiny",) and "tiny" not in hostile.nodes and hostile.min_reports == PER // 2
    assert np.allclose(hostile.estimate, alone.estimate) and np.all(np.abs(hostile.estimate - theta) <= hostile.bound)
    assert np.all(hostile.bound <= alone.bound * 1.01)  # only z's Bonferroni count changes (N is the same here)
    # power: the old rule (z times the largest standard error of any node) follows the tiny node
    e = mech.estimate_from(tiny, postprocess="none", target="population")
    z = NormalDist().inv_cdf(1 - 1e-3 / (2 * (NODES + 1) * D))
    assert z * float(e.std_error.max()) > 10 * float(hostile.bound.max())


def test_the_bound_does_not_follow_the_hostile_nodes_reports_or_sizes():
    """Whatever f hostile nodes claim (standard errors, sizes within the honest median), the bound
    is the same function of the honest nodes: the mechanism's worst case over the plan's minimum."""
    rng = np.random.default_rng(2)
    honest = {k: (rng.normal(0.1, 0.01, 8), np.full(8, 0.01), 1000) for k in range(7)}
    base = combine(honest, rule="trimmed", f=1, report_sd=0.5, min_reports=500)
    for claim in ((np.full(8, 1e6), np.full(8, 1e6), 1000), (np.full(8, -1e6), np.full(8, 1e-9), 10**9), (np.zeros(8), np.zeros(8), 1)):
        r = combine({**honest, "h": claim}, rule="trimmed", f=1, report_sd=0.5, min_reports=500)
        z_ratio = NormalDist().inv_cdf(1 - 1e-3 / (2 * len(r.nodes) * 8)) / NormalDist().inv_cdf(1 - 1e-3 / (2 * 7 * 8))
        assert np.allclose(r.bound, base.bound * z_ratio)
    # without the mechanism's worst case: the (f+1)-th largest per-report deviation, which one node cannot raise
    est = {k: (v[0], v[1], v[2]) for k, v in honest.items()}
    a = combine(est, rule="trimmed", f=1)
    b = combine({**est, "h": (np.zeros(8), np.full(8, 1e3), 1000)}, rule="trimmed", f=1)
    assert np.all(b.bound <= a.bound * 1.01)


def test_min_reports_refuses_small_nodes_and_says_so_when_too_few_are_left():
    ests = {k: (np.zeros(4), np.full(4, 0.1), 10 if k < 3 else 1000) for k in range(6)}
    r = combine(ests, rule="trimmed", f=1, min_reports=100, report_sd=1.0)
    assert set(r.excluded) == {0, 1, 2} and r.min_reports == 100 and r.to_dict()["excluded"] == ["0", "1", "2"]
    with pytest.raises(LDPParameterError, match="after refusing 6 with fewer than 1001 reports"):
        combine(ests, rule="trimmed", f=1, min_reports=1001)
    with pytest.raises(LDPParameterError, match="min_reports"):
        combine(ests, rule="trimmed", f=1, min_reports=0)
