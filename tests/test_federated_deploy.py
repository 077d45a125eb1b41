"""Issue 34, a secure deployment with real processes, started with the walkthrough's own command lines
(:mod:`tests.federated_deployment`): certificates and SuperNode keys from ``ldp federated certs``,
a ``flower-superlink`` with TLS and SuperNode authentication, two ``flower-supernode`` processes
(each registered with ``flwr supernode register``, each with its owner's device TOML in
``--node-config``) on free 127.0.0.1 ports, and ``flwr run`` of the app ``ldp federated new``
writes. The ServerApp process is killed (SIGKILL) mid-round — after the devices have charged and
answered, before the server recorded the round — and the run is started again: the devices answer
the retried query with the kept reply (same reports), nothing is charged or counted twice.
Readiness is polled, and every process is killed in ``finally``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from tests.federated_deployment import Deployment, spends  # noqa: E402

DEVICES = 40

PLAN = """[plan]
name = "deploy"
rounds = 1
min_batch = 40
out_dir = "results"
round_timeout = 45
max_devices_per_node = 1000
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
devices = %d
d = 8
seed = "7-{partition-id}"
""" % DEVICES


@pytest.mark.slow
def test_tls_deployment_with_node_auth_and_a_killed_serverapp_rerun_from_kept_replies(tmp_path):
    dep = Deployment(tmp_path, plan=PLAN, device=DEVICE)
    ledgers = [dep.app / "state" / str(pid) / "ledger.sqlite" for pid in range(2)]
    try:
        dep.start()
        # run 1: its ServerApp process killed once both nodes' devices have charged and answered
        run1 = dep.run()
        dep.wait(lambda: all(spends(lg) == 1 for lg in ledgers), 90, "both nodes to answer round 1")
        summary = dep.summary("deploy", 1)
        recorded_before_kill = summary.exists()
        for pid in dep.serverapps():
            os.kill(pid, signal.SIGKILL)
        if summary.exists() and not recorded_before_kill:
            summary.unlink()  # (the server raced the kill: the rerun must reproduce the round exactly anyway)

        # run 2: the same plan, the same query id: every device answers from its kept reply
        run2 = dep.run()
        doc = dep.wait_summary(summary)
        row = doc["queries"][0]
        assert doc["nodes_registered"] == 2 and doc["registration_errors"] == {}
        assert row["status"] == "complete" and row["nodes_answered"] == 2 and row["node_errors"] == {}
        assert row["reports_accepted"] == 2 * DEVICES and row["reports_rejected"] == 0 and row["devices_refused"] == 0
        assert row["reports_from_kept_replies"] == 2 * DEVICES  # the retried query: kept replies, no new randomization
        assert [spends(lg) for lg in ledgers] == [1, 1]  # charged once per device, across the kill and the rerun
        assert len(row["estimate"]) == 8 and all(e["ci_lower"] <= e["ci_upper"] for e in row["estimate"])
        import polars as pl

        parts = sorted(Path(row["parts"]).glob("part-*.parquet"))
        assert sum(pl.read_parquet(p).height for p in parts) == 2 * DEVICES  # Parquet parts of exactly the accepted reports
        dep.wait(lambda: not dep.serverapps(), 60, "run 2's ServerApp to finish")
        status = dep.runs()
        assert status[run2] == "finished:completed", status
        assert status[run1] != "finished:completed"  # the killed run never completed
        assert "--insecure" not in " ".join(map(str, dep.link.proc.args))
    finally:
        dep.stop()
