"""A secure-sum round on real processes: ``flower-superlink`` with TLS and SuperNode
authentication, three registered ``flower-supernode`` processes (each with its owner's device TOML
in ``--node-config``), ``flwr run`` of a secure-sum plan. One node drops after sending its masked
vector (SecAgg+ rebuilds its mask from the others' shares): the released sum is still exact (equal to the vectors the devices kept), the devices'
ledgers hold the central (ε, δ) they charged, and the server's summary the (ε, δ) of the nodes it
summed. Readiness is polled; every process is stopped in ``finally``."""

from __future__ import annotations

import json
import subprocess
import time

import numpy as np
import pytest

pytest.importorskip("flwr")

from ldp_plugin.accountant import Accountant  # noqa: E402
from ldp_plugin.federated.certs import make_node_keys, make_tls  # noqa: E402
from ldp_plugin.federated.config import DeviceConfig  # noqa: E402
from ldp_plugin.federated.deploy import Spawned, flower_tool, flwr_run, free_port, run_status, tool_env, wait_for_run  # noqa: E402
from ldp_plugin.federated.device import DeviceFleet  # noqa: E402
from ldp_plugin.federated.secure_simulate import secure_device_toml  # noqa: E402
from tests.federated.test_secure_sum_simulation import DROP_APP  # noqa: E402

NODES = 3

PLAN = """[plan]
name = "ssd"
mode = "secure-sum"
out_dir = "results"
round_timeout = 30
expected_nodes = 3
node_wait = 90

[[query]]
name = "noise"
mechanism = "skellam"
epsilon = "1"
params = {d = 8}
secure = {delta = 1e-6, min_participants = 2, site_bound = 5}
"""

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "secure-sum-deploy"
version = "1.0.0"
license = "Apache-2.0"
dependencies = ["ldp-plugin[flower]"]

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "ldp-plugin"

[tool.flwr.app.components]
serverapp = "ldp_plugin.federated.secure_sum_server:server_app"
clientapp = "drop_app:client_app"

[tool.flwr.app.config]
job = "%s"
"""


def _wait(cond, timeout, what, procs):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        for p in procs:
            assert p.alive(), f"{what}: a Flower process exited:\n{p.tail()}"
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(p.tail(1500) for p in procs))


def _finished(run_id: int, env: dict, summary, procs: list, timeout: float) -> dict:
    """The run's final status. Until the round summary exists its file is polled (cheap) and the
    run's status (a ``flwr ls`` process: about a CPU-second each) read every 5 s only, so a run that
    fails without a summary still ends the wait; then :func:`wait_for_run` to the end."""
    deadline = time.time() + timeout
    while time.time() < deadline and not summary.exists():
        st = run_status(run_id, "ldp-tls", env=env)
        if str(st.get("status", "")).startswith("finished"):
            return st
        until = min(deadline, time.time() + 5)
        while time.time() < until and not summary.exists():
            for p in procs:
                assert p.alive(), f"the run: a Flower process exited:\n{p.tail()}"
            time.sleep(0.2)
    return wait_for_run(run_id, "ldp-tls", env=env, timeout=max(1.0, deadline - time.time()))


@pytest.mark.slow
def test_secure_sum_on_tls_superlink_with_node_auth(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "pyproject.toml").write_text(PYPROJECT % (app / "plan.toml"))
    (app / "plan.toml").write_text(PLAN)
    (app / "drop_app.py").write_text(DROP_APP.replace(" or (pid == 1 and stage == Stage.COLLECT_MASKED_VECTORS)", ""))  # only partition 0 drops
    (app / ".gitignore").write_text("state/\nresults/\ncerts/\nflwr-home/\n")
    device = app / "device.toml"
    device.write_text(secure_device_toml(users_per_node=5, d=8, seed="9", device_cap="10", max_epsilon="4", min_participants=2))
    for pid in range(NODES):
        DeviceFleet.init(DeviceConfig.load(device, {"partition-id": pid}))
    certs = tmp_path / "certs"
    tls = make_tls(certs)
    keys = [make_node_keys(certs / "nodes", f"node-{i}") for i in range(NODES)]
    port = free_port()
    env = tool_env(FLWR_HOME=str(tmp_path / "flwr-home"))
    (tmp_path / "flwr-home").mkdir()
    (tmp_path / "flwr-home" / "config.toml").write_text(
        f'[superlink]\ndefault = "ldp-tls"\n\n[superlink.ldp-tls]\naddress = "127.0.0.1:{port}"\nroot-certificates = "{tls["ca"]}"\n')
    procs: list = []
    try:
        link = Spawned([flower_tool("flower-superlink"), "--ssl-ca-certfile", tls["ca"], "--ssl-certfile", tls["cert"], "--ssl-keyfile",
                        tls["key"], "--enable-supernode-auth", "--database", str(tmp_path / "superlink.db"),
                        "--disable-runtime-dependency-installation", "--host", "127.0.0.1", "--port", str(port)],
                       env=env, log=tmp_path / "superlink.log", cwd=tmp_path)
        procs.append(link)
        _wait(lambda: "Uvicorn running on https://" in link.tail(20000), 90, "the SuperLink (TLS)", procs)
        for k in keys:
            reg = subprocess.run([flower_tool("flwr"), "supernode", "register", k["public"], "ldp-tls"], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, timeout=120)
            assert reg.returncode == 0, reg.stdout + reg.stderr
        logs = []
        for pid, k in enumerate(keys):
            log = tmp_path / f"supernode-{pid}.log"
            logs.append(log)
            procs.append(Spawned([flower_tool("flower-supernode"), "--superlink", f"127.0.0.1:{port}", "--root-certificates", tls["ca"],
                                  "--auth-supernode-private-key", k["private"], "--port", str(free_port()), "--node-config",
                                  f'device-config="{device}" partition-id={pid}'], env=env, log=log, cwd=tmp_path))
        for pid, log in enumerate(logs):
            _wait(lambda: log.exists() and "SuperNode ID" in log.read_text(errors="replace"), 90, f"SuperNode {pid}", procs)
        run_id = flwr_run(app, "ldp-tls", env=env)
        status = _finished(run_id, env, app / "results" / "ssd" / "round-0001.json", procs, 600)
        assert status.get("status") == "finished:completed", (status, link.tail())
    finally:
        for p in reversed(procs):
            p.stop()
    summary = json.loads((app / "results" / "ssd" / "round-0001.json").read_text())
    row = summary["queries"][0]
    assert row["status"] == "released", row
    assert row["nodes_sampled"] == NODES and row["nodes_summed"] == NODES  # partition 0 dropped after masking: still summed
    kept = {}
    for pid in range(NODES):
        with Accountant(DeviceConfig.load(device, {"partition-id": pid}).ledger) as led:
            kept[pid] = [(r, led.kept_reports(r.query_id)) for r in led.history()]
    total = np.sum([np.asarray(kept[pid][0][1]["vector"]) for pid in range(NODES)], axis=0)
    assert [e["count"] for e in row["estimate"]] == total[:8].tolist()  # exact; partition 0 dropped after masking
    rec = kept[0][0][0]
    assert rec.params["delta"] == 1e-6 and float(rec.epsilon) == pytest.approx(rec.params["epsilon"])  # the device ledger's central (eps, delta)
    assert row["central"]["n_summed"] == 3 and row["central"]["epsilon"] < float(rec.epsilon)  # 3 summed, devices charged t = 2
