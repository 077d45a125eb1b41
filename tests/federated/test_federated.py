"""Issue 15: the device enforces its own budget and can refuse; the collector validates every
report; the real Flower simulation engine runs the apps end to end."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.accountant import Accountant
from ldp_plugin.federated import Collector, DeviceFleet, DevicePolicy, Query
from ldp_plugin.mechanisms.reports import to_wire_each


def _fleet(tmp_path, n=50, cap="4", **kw):
    return DeviceFleet(tmp_path / "dev.sqlite", np.arange(n) % 4, lifetime_cap=cap, **kw)


def test_device_refuses_over_budget_and_charges_a_retry_once(tmp_path):
    fleet = _fleet(tmp_path)
    mech = ldp.KRR(epsilon=2.0, d=4)
    q1, q2, q3 = (Query.for_mechanism(f"q{i}", mech) for i in (1, 2, 3))
    r1 = fleet.respond(q1.to_json())
    assert len(r1["reports"]) == 50 and r1["refused"] == {} and not r1["retry"]
    again = fleet.respond(q1.to_json())  # a retried query: the same reports, no new spend
    assert again["retry"] and again["reports"] == r1["reports"]  # the same envelopes, nonces included
    assert fleet.ledger.spent() == 2
    assert len(fleet.respond(q2.to_json())["reports"]) == 50
    r3 = fleet.respond(q3.to_json())
    assert r3["reports"] == [] and r3["refused"] == {"budget_exhausted": 50}
    assert fleet.ledger.spent() == 4  # a refused query spends nothing


def test_device_policy_refusals(tmp_path):
    fleet = _fleet(tmp_path, policy=DevicePolicy(max_epsilon_per_query=Fraction(1), allowed_mechanisms=("krr",)))
    assert fleet.respond(Query.for_mechanism("a", ldp.KRR(epsilon=2.0, d=4)).to_json())["refused"] == {"epsilon_above_policy": 50}
    assert fleet.respond(Query.for_mechanism("b", ldp.OUE(epsilon=0.5, d=4)).to_json())["refused"] == {"mechanism_not_allowed": 50}
    assert fleet.respond("{not json")["refused"] == {"malformed_query": 50}
    assert fleet.respond('{"version": 99}')["refused"] == {"unsupported_version": 50}
    assert fleet.ledger.spent() == 0


#: the ledger of the stalling device (set in the spawned process only)
_STALLING_LEDGER: list = []


class _SlowKRR(ldp.KRR):
    """k-RR whose randomizer stalls once its device's ledger holds the charge: the timed dry run of
    the work check (before the spend, on no device's value) runs at full speed."""

    def _randomize_codes(self, codes, source):
        if Accountant(_STALLING_LEDGER[0]).spent() > 0:
            time.sleep(60)
        return super()._randomize_codes(codes, source)


def _respond_slowly(path):
    fleet = DeviceFleet(path, np.arange(20) % 4, lifetime_cap="4")
    q = Query.for_mechanism("slow", ldp.KRR(epsilon=1.0, d=4))
    _STALLING_LEDGER.append(path)
    Query.mechanism = lambda self: _SlowKRR(epsilon=1.0, d=4)  # this (spawned) process only: a client that stalls
    fleet.respond(q.to_json())


def test_a_killed_device_never_under_counts(tmp_path):
    path = str(tmp_path / "dev.sqlite")
    p = mp.get_context("spawn").Process(target=_respond_slowly, args=(path,))
    p.start()
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(path):
            try:
                if Accountant(path).spent() > 0:
                    break
            except Exception:
                pass
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    fleet = DeviceFleet(path, np.arange(20) % 4, lifetime_cap="4")
    assert fleet.ledger.spent() == 1  # charged before any report existed
    again = fleet.respond(Query.for_mechanism("slow", ldp.KRR(epsilon=1.0, d=4)).to_json())
    assert again["reports"] == [] and again["refused"] == {"interrupted": 20}  # never randomized twice
    assert fleet.ledger.spent() == 1


def test_collector_rejects_every_malformed_class_and_never_crashes(tmp_path):
    fleet = _fleet(tmp_path, n=40)
    mech = ldp.KRR(epsilon=1.0, d=4)
    q = Query.for_mechanism("c", mech, min_batch=30)
    envs = fleet.respond(q.to_json())["reports"]
    col = Collector(q)
    with pytest.raises(ldp.LDPParameterError, match="min_batch"):
        col.estimate()
    nonce = os.urandom
    out_of_range = nonce(16) + to_wire_each(mech, np.array([7], dtype=np.uint32), tag=q.content_hash)[0]  # value 7 >= d
    other = nonce(16) + to_wire_each(ldp.KRR(epsilon=0.5, d=4), np.array([1], dtype=np.uint16), tag=q.content_hash)[0]
    e = envs[1]
    hostile = [
        envs[0][:-1],                                # truncated (a wrong length: not exactly one report)
        e[:24] + bytes(16) + e[40:],                 # wrong query hash (the tag after nonce + 8-byte header)
        other,                                       # another mechanism's report
        out_of_range,                                # a value outside the domain
        envs[2],                                     # a replayed envelope (same nonce)
        b"", "text", None, nonce(200),
    ]
    first = col.ingest(envs)
    assert first == {"accepted": 40, "rejected": {}}
    before = col.acc.counts.copy()
    res = col.ingest(hostile)
    assert res["accepted"] == 0
    assert res["rejected"] == {"not_one_report": 1, "malformed": 4, "wrong_tag": 1, "wrong_mechanism": 1, "out_of_range": 1, "duplicate": 1}
    assert np.array_equal(col.acc.counts, before)  # the estimate is unchanged
    est = col.estimate()
    assert est.n == 40


def test_query_is_versioned_and_hashed():
    q = Query.for_mechanism("x", ldp.OUE(epsilon=1.0, d=8), min_batch=10)
    again = Query.from_json(q.to_json())
    assert again == q and again.content_hash == q.content_hash and len(q.content_hash) == 16
    assert Query.for_mechanism("y", ldp.OUE(epsilon=1.0, d=8)).content_hash != q.content_hash
    with pytest.raises(ldp.LDPInputError, match="version"):
        Query.from_json('{"version": 2}')


class _Run:
    """A command started in its own process, its output in files: :meth:`result` waits for it."""

    def __init__(self, cmd: list, out_dir):
        self.out, self.err = out_dir / "stdout", out_dir / "stderr"
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen(cmd, stdout=o, stderr=e, text=True)

    def result(self, timeout: float = 600) -> subprocess.CompletedProcess:
        self.proc.wait(timeout=timeout)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, self.out.read_text(), self.err.read_text())


@pytest.fixture(scope="module")
def simulations(tmp_path_factory):
    """The module's two ``ldp federated simulate`` runs, started together when the first test that
    reads one begins: each is mostly waiting on Flower (Ray's start-up, the runs' polls), so the
    two overlap instead of queueing. ``end_to_end`` completes; ``fails`` is given an output
    directory its ServerApp cannot write (``results`` is a file)."""
    pytest.importorskip("flwr")
    cli = [sys.executable, "-m", "ldp_plugin.cli", "federated", "simulate"]
    e2e, bad = tmp_path_factory.mktemp("end-to-end"), tmp_path_factory.mktemp("fails")
    (bad / "app").mkdir()
    (bad / "app" / "results").write_text("not a directory")
    runs = {
        "end_to_end": _Run(cli + ["--nodes", "3", "--users-per-node", "60", "--mechanism", "oue", "--d", "8", "--epsilon", "2", "--rounds", "3",
                                  "--device-cap", "4", "--seed", "2", "--json"], e2e),
        "fails": _Run(cli + ["--nodes", "1", "--users-per-node", "10", "--mechanism", "oue", "--d", "4", "--epsilon", "1", "--device-cap", "4",
                             "--out", str(bad)], bad),
    }
    yield runs
    for run in runs.values():  # a test that failed before reading its run: SIGTERM, on which the command stops its SuperLink
        if run.proc.poll() is None:
            run.proc.terminate()
            try:
                run.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.proc.kill()


@pytest.mark.slow
def test_flower_simulation_end_to_end(simulations):
    """Through the CLI, as a user runs it, in its own process: `flwr run` on a private simulation
    SuperLink (Ray and gRPC never live in the test process). Every device's lifetime cap is 4 and
    each round charges 2, so the third round is refused by every device and reported incomplete."""
    proc = simulations["end_to_end"].result()
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    r1, r2, r3 = out["rounds"]
    for r in (r1, r2):
        assert r["nodes_asked"] == 3 and r["nodes_answered"] == 3 and r["reports_accepted"] == 180 and r["status"] == "complete"
        assert r["reports_rejected"] == 0 and r["node_errors"] == {}
        assert len(r["estimate"]) == 8 and all(e["truth"] is not None for e in r["estimate"])
    assert r3["reports_accepted"] == 0 and r3["refused_by_reason"] == {"budget_exhausted": 180} and r3["status"] == "incomplete"
    assert r3["estimate"] is None


def test_memoized_queries_use_each_devices_secret_key(tmp_path):
    memo = ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)
    fleet = DeviceFleet(tmp_path / "m.sqlite", np.arange(40) % 4, lifetime_cap="4")
    q = Query(query_id="memo", spec=memo.spec(), epsilon=repr(memo.epsilon))
    rep = fleet.respond(q.to_json())
    col = Collector(q)
    assert col.ingest(rep["reports"]) == {"accepted": 40, "rejected": {}}
    # the permanent layer is the keyed PRF of each device's own key: same keys, same permanent reports
    codes = np.arange(40) % 4
    assert np.array_equal(memo.permanent(codes, fleet.keys), memo.permanent(codes, fleet.keys))
    assert not np.array_equal(memo.permanent(codes, fleet.keys), memo.permanent(codes, [os.urandom(32) for _ in range(40)]))


def test_a_longitudinal_series_is_charged_its_lifetime_bound_on_the_device(tmp_path):
    """Every device is charged the increment of the **user-level** bound at its collection number
    (a function of t only): LOLOHA (g = 2, ε∞ = 2, ε₁ = 1) costs 1, 2.41, 3.82, 4.82 cumulatively,
    so a cap of 4 refuses the fourth collection — on every device at once, whether its value
    stayed constant or changed every day (the refusal point reveals nothing). Named
    ``relation="value"`` (the papers' same-change-pattern relation) the series stays within
    g·ε∞ = 4 and is never refused; L-GRR's third collection exceeds the cap; dBitFlipPM (no
    instantaneous layer) is refused from its second collection at the user level. The collector
    estimates every round from the reports alone."""
    values = np.arange(60) % 8
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8)

    def run(mech, path, days, policy=None):
        fleet = DeviceFleet(tmp_path / path, values, lifetime_cap="4", **({} if policy is None else {"policy": policy}))
        spent, refused = [], []
        for day in range(days):
            fleet.values = np.where(np.arange(60) < 30, values, np.roll(values, day))  # half constant, half changing daily
            q = Query.for_mechanism(f"day-{day}", mech)
            rep = fleet.respond(q.to_json())
            refused.append(rep["refused"])
            if rep["reports"]:
                assert len(rep["reports"]) == 60 and rep["refused"] == {}
                col = Collector(q)
                col.ingest(rep["reports"])
                assert col.accepted == 60 and col.estimate().n == 60
            spent.append(fleet.ledger.spent())
        return fleet, spent, refused

    fleet, spent, refused = run(lol, "lol.sqlite", 5)
    assert spent == [lol.lifetime_bound(1), lol.lifetime_bound(2), lol.lifetime_bound(3)] + [lol.lifetime_bound(3)] * 2
    assert refused[:3] == [{}] * 3 and refused[3] == refused[4] == {"budget_exhausted": 60}
    assert len(set(fleet.ledger.remaining_by_cohort())) == 1  # constant and changing devices: the same charge
    value = dataclasses.replace(lol, relation="value")
    # a server's query cannot lower the charge: the value level is refused unless the owner's policy lists it
    _, spent_s, refused_s = run(value, "lols.sqlite", 1)
    assert refused_s == [{"relation_not_allowed": 60}] and spent_s == [0]
    owner = DevicePolicy(max_epsilon_per_query=Fraction(4), allowed_relations=("user", "value"))
    fleet_v, spent_v, refused_v = run(value, "lolv.sqlite", 5, policy=owner)
    assert spent_v == [value.lifetime_bound(t) for t in range(1, 6)] and spent_v[-1] == 4 and refused_v == [{}] * 5
    assert all(r.params["spec"]["params"]["relation"] == "value" for r in fleet_v.ledger.history())
    grr = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    _, spent_g, refused_g = run(grr, "grr.sqlite", 3)
    assert refused_g[2] == {"budget_exhausted": 60} and spent_g[-1] == grr.lifetime_bound(2)
    dbf = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    _, spent_d, refused_d = run(dbf, "dbf.sqlite", 2)
    assert refused_d == [{}, {"budget_exhausted": 60}] and spent_d == [2, 2]


@pytest.mark.slow
def test_a_run_that_fails_inside_flower_exits_2(simulations):
    """The ServerApp cannot write its results (the output directory is a file): the run fails
    inside Flower, and the command says so with exit 2 — never exit 0, never a traceback."""
    proc = simulations["fails"].result()
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr[-1000:]
    assert "did not complete (finished:failed)" in proc.stderr and "Traceback" not in proc.stderr
    log = proc.stderr.rsplit("its log is in ", 1)[1].strip()
    assert os.path.exists(log)
    os.unlink(log)
