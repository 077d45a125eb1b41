"""Issue 34, faults on a real deployment (the walkthrough's TLS + SuperNode-auth command lines, real
processes: :mod:`tests.federated_deployment`). Node 0 hosts 40 devices, node 1 20,000 (so its
release lasts long enough to be caught):

* **a device killed mid-release, a node dropping out mid-round**: node 1's ClientApp process is
  SIGKILLed the moment its ledger shows the round's release ``started`` (charged, reports not yet
  kept), and its SuperNode stopped (the walkthrough's ``kill``). The round ends with node 1 counted as a
  node error (no reply) and only node 0's reports — complete at the minimum batch, never silently
  smaller. Node 1 is restarted with the same command and the round rerun: its devices refuse
  ``interrupted`` (charged once, never randomized twice), node 0 answers from its kept reply.
* **concurrent queries to one device**: two ServerApp runs ask the same round at the same time;
  every device is charged once and the two runs hold the same reports (one answered fresh, the
  other from the kept reply)."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("flwr")

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.federated.query import Query  # noqa: E402
from tests.federated_deployment import Deployment, release_status, spends  # noqa: E402

SMALL, BIG = 40, 20_000

PLAN = """[plan]
name = "faults"
rounds = 1
min_batch = 40
out_dir = "results"
round_timeout = 25
max_devices_per_node = 50000
expected_nodes = 2
node_wait = 40

[[query]]
name = "apps"
mechanism = "oue"
epsilon = "1"
params = {d = 8}
"""

DEVICE = """[device]
name = "edge-{partition-id}"
ledger = "state/{partition-id}/ledger.sqlite"
keystore = "state/{partition-id}/keystore.json"

[policy]
lifetime_cap = "4"
max_epsilon_per_query = "2"
allowed_mechanisms = ["oue"]

[data]
source = "ldp_plugin.federated.synthetic:zipf_values"
[data.args]
devices = "{devices}"
d = 8
seed = "9-{partition-id}"
"""


def _qid(r: int) -> str:
    return Query.for_mechanism(f"faults/apps/r{r}", ldp.OUE(epsilon=1.0, d=8), min_batch=40).content_hash.hex()


def _reports(row: dict) -> list:
    frame = pl.concat([pl.read_parquet(p) for p in sorted(Path(row["parts"]).glob("part-*.parquet"))])
    return sorted(map(str, frame.rows()))


@pytest.mark.slow
def test_dropout_kill_mid_release_and_concurrent_queries_on_a_deployment(tmp_path):
    dep = Deployment(tmp_path, plan=PLAN, device=DEVICE, node_config={0: {"devices": SMALL}, 1: {"devices": BIG}})
    ledgers = [dep.app / "state" / str(pid) / "ledger.sqlite" for pid in range(2)]
    try:
        dep.start()
        # round 1: node 1 killed (SuperNode + ClientApp, SIGKILL) while its devices' release is under way
        dep.run()
        deadline, status = time.time() + 120, None
        while time.time() < deadline:
            status = release_status(ledgers[1], _qid(1))
            if status is not None:
                break
            time.sleep(0.005)
        assert status == "started", f"node 1's release was {status!r} when first seen (expected to catch it under way)"
        dep.kill_node(1)
        assert release_status(ledgers[1], _qid(1)) == "started"  # killed mid-release: charged, nothing kept
        row = dep.wait_summary(dep.summary("faults", 1))["queries"][0]
        assert row["nodes_asked"] == 2 and sum(row["node_errors"].values()) == 1 and set(row["node_errors"]) <= {"no_reply", "flower_error"}
        assert row["reports_accepted"] == SMALL and row["status"] == "complete"  # at the minimum batch, the dropout reported

        # node 1 restarted by its owner (same command); the round rerun
        dep.wait(lambda: not dep.serverapps(), 60, "round 1's ServerApp to finish")
        dep.start_node(1)
        (dep.summary("faults", 1)).unlink()
        dep.run()
        row = dep.wait_summary(dep.summary("faults", 1))["queries"][0]
        assert row["node_errors"] == {} and row["nodes_answered"] == 2
        assert row["refused_by_reason"] == {"interrupted": BIG}  # refuses rather than randomize twice
        assert row["reports_accepted"] == SMALL and row["reports_from_kept_replies"] == SMALL
        assert [spends(lg, _qid(1)) for lg in ledgers] == [1, 1]

        # round 2 asked by two ServerApp runs at once: one charge per device, the same reports in both
        dep.wait(lambda: not dep.serverapps(), 60, "the rerun's ServerApp to finish")
        other = tmp_path / "other-results"
        job = dep.app / "concurrent.toml"  # the same plan, with a deadline for two runs a SuperNode answers one message at a time
        job.write_text(PLAN.replace("round_timeout = 25", "round_timeout = 240"))
        dep.repin()  # the job file is part of the app bundle: its owners accept the new bundle
        dep.run(**{"job": str(job), "first-round": 2})
        dep.run(**{"job": str(job), "first-round": 2, "out-dir": str(other)})
        a = dep.wait_summary(dep.summary("faults", 2), 300)["queries"][0]
        b = dep.wait_summary(dep.summary("faults", 2, other), 300)["queries"][0]
        for row in (a, b):
            assert row["status"] == "complete" and row["reports_accepted"] == SMALL + BIG and row["node_errors"] == {}
        assert a["reports_from_kept_replies"] + b["reports_from_kept_replies"] == SMALL + BIG  # each node: one fresh reply, one kept
        assert [spends(lg, _qid(2)) for lg in ledgers] == [1, 1]
        assert _reports(a) == _reports(b)  # the same randomization, counted by each run once
    finally:
        dep.stop()
