"""Issue 34, a secure deployment with real processes: certificates and SuperNode keys generated at
test time (``cryptography``), a ``flower-superlink`` with TLS and SuperNode authentication, two
``flower-supernode`` processes (each registered with ``flwr supernode register``, each with its
owner's device TOML in ``--node-config``), on free 127.0.0.1 ports; ``flwr run`` of the app
project ``ldp federated new`` writes. The ServerApp run is stopped mid-round — after the devices
have charged and answered, before the server recorded the round — and rerun: the devices answer
the retried query with the kept reply (same nonces), nothing is charged or counted twice.

Every process runs in its own process group and is killed in ``finally``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from ldp_plugin.federated.certs import make_node_keys, make_tls  # noqa: E402
from ldp_plugin.federated.cli import new_project  # noqa: E402
from ldp_plugin.federated.config import DeviceConfig  # noqa: E402
from ldp_plugin.federated.deploy import Spawned, flower_tool, flwr_run, free_port, run_status, tool_env, wait_for_run, write_connection  # noqa: E402
from ldp_plugin.federated.device import DeviceFleet  # noqa: E402

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


def _spends(ledger: Path) -> int:
    con = sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        return int(con.execute("SELECT COUNT(*) FROM spend").fetchone()[0])
    finally:
        con.close()


def _wait(cond, timeout: float, what: str, procs=()):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        for p in procs:
            assert p.alive(), f"{what}: a Flower process exited:\n{p.tail()}"
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def start_deployment(tmp_path: Path, app: Path, procs: list) -> dict:
    """A TLS SuperLink with SuperNode authentication and two registered SuperNodes, each started
    with its owner's device TOML (``app/device.toml``, partition-id 0 and 1). Every process is
    appended to ``procs`` as it starts (the caller stops them in ``finally``). Returns the
    environment of the ``flwr`` CLI (connection ``ldp-tls``)."""
    certs = make_tls(tmp_path / "certs")
    keys = [make_node_keys(tmp_path / "certs", f"node-{i}") for i in range(2)]
    port = free_port()
    env = tool_env(FLWR_HOME=str(tmp_path / "flwr-home"))
    write_connection(tmp_path / "flwr-home", "ldp-tls", f"127.0.0.1:{port}", root_certificates=certs["ca"])
    link = Spawned([flower_tool("flower-superlink"), "--ssl-ca-certfile", certs["ca"], "--ssl-certfile", certs["cert"], "--ssl-keyfile", certs["key"],
                    "--enable-supernode-auth", "--host", "127.0.0.1", "--port", str(port), "--database", str(tmp_path / "superlink.db"),
                    "--disable-runtime-dependency-installation"], env=env, log=tmp_path / "superlink.log")
    procs.append(link)
    _wait(lambda: "Uvicorn running on https://" in link.tail(20000), 40, "the SuperLink (TLS)", procs)
    regs = [subprocess.Popen([flower_tool("flwr"), "supernode", "register", k["public"], "ldp-tls"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for k in keys]  # SuperNode authentication: only registered keys connect
    for reg in regs:
        out, _ = reg.communicate(timeout=60)
        assert reg.returncode == 0, out
    for pid, k in enumerate(keys):
        node_config = f'device-config="{app / "device.toml"}" partition-id={pid}'
        procs.append(Spawned([flower_tool("flower-supernode"), "--superlink", f"127.0.0.1:{port}", "--root-certificates", certs["ca"],
                              "--auth-supernode-private-key", k["private"], "--node-config", node_config, "--port", str(free_port())],
                             env=env, log=tmp_path / f"supernode-{pid}.log"))
    return env


@pytest.mark.slow
def test_tls_deployment_with_node_auth_and_a_rerun_answered_from_kept_replies(tmp_path):
    app = tmp_path / "app"
    new_project(app, nodes=2)
    (app / "plan.toml").write_text(PLAN)
    (app / "device.toml").write_text(DEVICE)
    for pid in range(2):  # each node's owner initializes its devices, once
        DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid}))
    ledgers = [app / "state" / str(pid) / "ledger.sqlite" for pid in range(2)]
    procs: list = []
    try:
        env = start_deployment(tmp_path, app, procs)

        # run 1: stopped once both nodes' devices have charged and answered, before the round is recorded
        run1 = flwr_run(app, "ldp-tls", env=env)
        _wait(lambda: all(_spends(lg) == 1 for lg in ledgers), 60, "both nodes to answer round 1", procs)
        summary = app / "results" / "deploy" / "round-0001.json"
        recorded_before_stop = summary.exists()
        subprocess.run([flower_tool("flwr"), "stop", str(run1), "ldp-tls"], env=env, capture_output=True, text=True, timeout=60)
        if summary.exists() and not recorded_before_stop:
            summary.unlink()  # (the server raced the stop: the rerun must reproduce the round exactly anyway)

        # run 2: the same plan, the same query id: every device answers from its kept reply
        run2 = flwr_run(app, "ldp-tls", env=env)
        _wait(summary.exists, 90, "the rerun's round summary", procs)
        st2 = wait_for_run(run2, "ldp-tls", env=env, timeout=60)
        assert st2["status"] == "finished:completed", st2
        assert run_status(run1, "ldp-tls", env=env)["status"].startswith("finished:")  # the first run ended (stopped), never completed twice
        doc = json.loads(summary.read_text())
        row = doc["queries"][0]
        assert doc["nodes_registered"] == 2 and doc["registration_errors"] == {}
        assert row["status"] == "complete" and row["nodes_answered"] == 2 and row["node_errors"] == {}
        assert row["reports_accepted"] == 2 * DEVICES and row["reports_rejected"] == 0 and row["devices_refused"] == 0
        assert row["reports_from_kept_replies"] == 2 * DEVICES  # the retried query: kept replies, no new randomization
        assert [_spends(lg) for lg in ledgers] == [1, 1]  # charged once per device, across the stop and the rerun
        assert len(row["estimate"]) == 8 and all(e["ci_lower"] <= e["ci_upper"] for e in row["estimate"])
        parts = sorted(Path(row["parts"]).glob("part-*.parquet"))
        import polars as pl

        assert sum(pl.read_parquet(p).height for p in parts) == 2 * DEVICES  # Parquet parts of exactly the accepted reports
        assert "--insecure" not in " ".join(map(str, procs[0].proc.args))
    finally:
        for p in reversed(procs):
            p.stop()
