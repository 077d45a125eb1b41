"""The production-path layers of issue 32: the secure source on AES-CTR and both kernel backends
(with the record of which paths ran), the realized channel rebuilt from every source call at its
position, the public entry points, and the joint layer across offsets, requests and processes.
Each layer passes a real mechanism and fails the seeded bug built for it."""

from __future__ import annotations

import importlib.util
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.sampling import SecureRandomSource
from ldp_plugin.sampling.cipher import random_backend
from ldp_plugin.sampling.trace import PathTrace
from ldp_plugin.verification import seeded_bugs as bugs
from ldp_plugin.verification.entry_points import entry_points_layer
from ldp_plugin.verification.joint import independence_pvalue, joint_layer
from ldp_plugin.verification.positions import EnumeratingSource, enumerated_channel, positions_layer
from ldp_plugin.verification.production import kernel_env, production_layer

HAS_NUMBA = importlib.util.find_spec("numba") is not None


def test_path_trace_records_aes_workers_and_kernels():
    with PathTrace() as t, kernel_env("numpy"):
        SecureRandomSource().random_bytes(1 << 21)
        SecureRandomSource().bernoulli_packed(1 << 62, 1 << 12, 64)
    if random_backend() == "aes-256-ctr":
        assert t.counts["aes-256-ctr"] >= 1 << 21
    assert t.ran("threaded-request") == ((__import__("os").cpu_count() or 1) >= 2)
    assert t.ran("numpy") and not t.ran("numba")
    with PathTrace() as outside:
        pass
    SecureRandomSource().random_bytes(10)  # nothing recorded without an active trace
    assert not outside.counts


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason="the numba backend needs the fast extra")
def test_production_layer_runs_both_kernels_on_the_secure_source_and_says_so():
    r = production_layer(ldp.OUE(epsilon=1.0, d=4), quick=True)
    assert r["passed"] and r["source"] == "SecureRandomSource"
    assert {"numba", "numpy"} <= set(r["paths_ran"])
    assert [run["kernels"] for run in r["runs"]] == ["numpy", "numba"]
    if random_backend() == "aes-256-ctr":
        assert "aes-256-ctr" in r["paths_ran"] and all(run["aes_bytes"] > 0 for run in r["runs"])
    # power: a client exact on the numpy kernels but not when the compiled ones run
    bad = production_layer(bugs.KernelOnlyOUE(epsilon=1.0, d=4), quick=True)
    assert not bad["passed"] and bad["runs"][0]["min_p_value"] > 1e-9 > bad["runs"][1]["min_p_value"]


@pytest.mark.skipif(random_backend() != "aes-256-ctr", reason="the AES-CTR expansion needs the cryptography package")
def test_production_layer_fails_when_a_requested_path_did_not_run():
    # a client that swaps the secure source for its own stream never reaches AES-CTR
    r = production_layer(bugs.ForkRepeatKRR(epsilon=1.0, d=4), quick=True, backends=("numpy",))
    assert not r["passed"] and "numpy:aes-256-ctr" in r["requested_not_run"]


def test_positions_rebuild_the_exact_channel_from_each_call_at_its_position():
    oue = ldp.OUE(epsilon=1.0, d=4)
    e = enumerated_channel(oue, 2)
    assert e["exact"] and e["rows"][0] == list(oue.channel().matrix[2])
    (call,) = [c for c in e["calls"] if c.kind == "bernoulli_rows"]
    assert call.thresholds[2] == oue.p_threshold and {call.thresholds[j] for j in (0, 1, 3)} == {oue.q_threshold}
    assert positions_layer(ldp.KRR(epsilon=0.02, d=2))["passed"]
    # a threshold at the wrong place: complemented, swapped between bits, or the permanent layer's
    for bug in (bugs.ComplementedKRR(epsilon=0.02, d=2), bugs.SwappedBitsRAPPOR(epsilon=0.05, d=4)):
        r = positions_layer(bug)
        assert not r["passed"] and r["mode"] == "exact" and r["mismatches"][0]["excess"] == float("inf")
    lgrr = positions_layer(ldp.mechanisms.longitudinal.LGRR(epsilon_perm=4.0, epsilon_1=1.0, d=3), quick=True)
    assert lgrr["passed"] and lgrr["mode"] == "keyed replicates"
    assert not positions_layer(bugs.PermanentInInstantaneousLGRR(epsilon_perm=4.0, epsilon_1=1.0, d=3), quick=True)["passed"]


def test_enumerating_source_weights_are_exact_probabilities():
    src = EnumeratingSource(1)
    src.uniform_int(3, 1)
    src.bernoulli(1 << 62, 1)
    full = EnumeratingSource(6, src.calls)
    v = full.uniform_int(3, 6)
    b = full.bernoulli(1 << 62, 6)
    assert sorted(zip(v.tolist(), b.tolist())) == sorted((i, j) for i in range(3) for j in (False, True))
    probs = [Fraction(int(w), full.weight_den) for w in full.weight_num]
    assert sum(probs) == 1 and set(probs) == {Fraction(1, 12), Fraction(3, 12)}


def test_entry_points_drive_the_public_randomize():
    for mech in (ldp.Duchi(epsilon=1.0, grid=8), ldp.OLH(epsilon=2.0, d=6), ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=4), m=2), ldp.KRR(epsilon=1.0, d=3)):
        r = entry_points_layer(mech, quick=True)
        assert r["passed"], (mech, r)
    assert entry_points_layer(ldp.OLH(epsilon=2.0, d=6), quick=True)["modes"] == {"seed and rate checks": 12}
    for bug, case in (
        (bugs.BiasedRoundingDuchi(epsilon=1.0, grid=8), " 4"),  # grid point 4 and cell 4
        (bugs.SeedFromValueOLH(epsilon=2.0, d=6), "value"),
        (bugs.FirstItemsSampleOne(mechanism=ldp.KRR(epsilon=1.0, d=4), m=2), "long set"),
    ):
        r = entry_points_layer(bug, quick=True)
        assert not r["passed"] and case in r["failures"][0]["case"], r


def test_joint_layer_offsets_requests_and_a_forked_child():
    ok = joint_layer(ldp.KRR(epsilon=1.0, d=4), n_pairs=5_000, inputs=1)
    assert ok["passed"] and ok["source"] == "SecureRandomSource"
    assert set(ok["pairings"]) >= {"neighbours (2i, 2i+1)", "halves (i, i+n/2)", "random pairs", "two requests", "two batches"}
    assert ok["forked_child_answered"] and ("forked child" in ok["pairings"]) == hasattr(__import__("os"), "fork")
    half = joint_layer(bugs.HalfOffsetKRR(epsilon=1.0, d=4), n_pairs=5_000, inputs=1)
    assert half["dependent"] == ["halves (i, i+n/2)"]
    if hasattr(__import__("os"), "fork"):
        fork = joint_layer(bugs.ForkRepeatKRR(epsilon=1.0, d=4), n_pairs=5_000, inputs=1)
        assert fork["dependent"] == ["forked child"]
    if random_backend() == "aes-256-ctr":
        aes = joint_layer(bugs.FixedKeyAESKRR(epsilon=1.0, d=4), n_pairs=5_000, inputs=1)
        assert {"two requests", "two batches"} <= set(aes["dependent"])


def test_independence_test_has_power_and_level():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 5, 20_000), rng.integers(0, 5, 20_000)
    assert independence_pvalue(a, b) > 1e-6
    c = np.where(rng.random(20_000) < 0.1, a, b)  # 10% of the pairs share their report
    assert independence_pvalue(a, c) < 1e-9
