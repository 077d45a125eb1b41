"""Federated runtime on a real local deployment (issue 34): round time against SuperNodes × devices.

One TLS SuperLink with SuperNode authentication on 127.0.0.1 (certificates and keys made by
``ldp federated certs``), N ``flower-supernode`` processes each hosting D generated devices (their
owner's device TOML: ``devices`` from the node's ``--node-config``), and ``flwr run`` of a one-round
OUE plan (d = 16, ε = 1). Per configuration: the wall time of the run (``flwr run`` to the round's
summary on disk: the ServerApp's start, registration, the query, validation, Parquet parts) and the
round's own time (the summary's ``seconds``: push the query, wait for every node's reply, validate,
collect). The SuperLink is started once per node count; the SuperNodes are restarted per device
count. Everything is killed on exit.

Usage: python benchmarks/federated_deploy.py [--nodes 2 5] [--devices 1000 10000 100000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ldp_plugin.federated.certs import make_node_keys, make_tls
from ldp_plugin.federated.cli import new_project
from ldp_plugin.federated.config import DeviceConfig
from ldp_plugin.federated.deploy import Spawned, flower_tool, flwr_run, free_port, tool_env, write_connection
from ldp_plugin.federated.device import DeviceFleet

PLAN = """[plan]
name = "bench"
rounds = 1
min_batch = 1
out_dir = "results"
round_timeout = 900
max_devices_per_node = 1000000
expected_nodes = {nodes}
node_wait = 300

[[query]]
name = "apps"
mechanism = "oue"
epsilon = "1"
params = {{d = 16}}
"""

DEVICE = """[device]
name = "edge-{partition-id}"
ledger = "state/{devices}/{partition-id}/ledger.sqlite"
keystore = "state/{devices}/{partition-id}/keystore.json"

[policy]
lifetime_cap = "100"
max_epsilon_per_query = "2"

[data]
source = "ldp_plugin.federated.synthetic:zipf_values"
[data.args]
devices = "{devices}"
d = 16
seed = "3-{partition-id}"
"""


def _wait(cond, timeout, what, procs):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        for p in procs:
            if not p.alive():
                raise RuntimeError(f"{what}: a Flower process exited:\n{p.tail()}")
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def sweep(nodes: int, device_counts: list, root: Path) -> list:
    certs = make_tls(root / "certs")
    keys = [make_node_keys(root / "certs", f"node-{i}") for i in range(nodes)]
    app = root / "app"
    new_project(app, nodes=nodes, force=True)
    (app / "plan.toml").write_text(PLAN.format(nodes=nodes))
    (app / "device.toml").write_text(DEVICE)
    port = free_port()
    env = tool_env(FLWR_HOME=str(root / "flwr-home"))
    write_connection(root / "flwr-home", "bench", f"127.0.0.1:{port}", root_certificates=certs["ca"])
    procs: list = []
    rows = []
    try:
        link = Spawned([flower_tool("flower-superlink"), "--ssl-ca-certfile", certs["ca"], "--ssl-certfile", certs["cert"], "--ssl-keyfile", certs["key"],
                        "--enable-supernode-auth", "--host", "127.0.0.1", "--port", str(port), "--database", str(root / "superlink.db"),
                        "--disable-runtime-dependency-installation"], env=env, log=root / "superlink.log")
        procs.append(link)
        _wait(lambda: "Uvicorn running on https://" in link.tail(20000), 120, "the SuperLink", procs)
        regs = [subprocess.Popen([flower_tool("flwr"), "supernode", "register", k["public"], "bench"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for k in keys]
        for reg in regs:
            out, _ = reg.communicate(timeout=300)
            if reg.returncode != 0:
                raise RuntimeError(out)
        for devices in device_counts:
            for pid in range(nodes):
                DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid, "devices": devices}))
            nodes_procs = []
            for pid, k in enumerate(keys):
                log = root / f"supernode-{devices}-{pid}.log"
                nodes_procs.append(Spawned([flower_tool("flower-supernode"), "--superlink", f"127.0.0.1:{port}", "--root-certificates", certs["ca"],
                                            "--auth-supernode-private-key", k["private"], "--port", str(free_port()), "--node-config",
                                            f'device-config="{app / "device.toml"}" partition-id={pid} devices={devices}'], env=env, log=log))
            procs += nodes_procs
            for pid, p in enumerate(nodes_procs):
                _wait(lambda p=p: "SuperNode ID" in p.tail(20000), 120, f"SuperNode {pid}", procs)
            out = root / f"results-{devices}"
            t0 = time.perf_counter()
            flwr_run(app, "bench", env=env, run_config={"out-dir": str(out)})
            summary = out / "bench" / "round-0001.json"
            _wait(summary.exists, 1800, "the round summary", procs)
            wall = time.perf_counter() - t0
            row = json.loads(summary.read_text())["queries"][0]
            assert row["reports_accepted"] == nodes * devices and row["node_errors"] == {}, row
            rows.append({"nodes": nodes, "devices_per_node": devices, "run_wall_seconds": round(wall, 1), "round_seconds": row["seconds"],
                         "reports": row["reports_accepted"], "bytes_received": row["bytes_received"], "load_average": os.getloadavg()})
            print(f"nodes={nodes} devices/node={devices:>7,}: run {wall:6.1f} s (flwr run -> summary), round {row['seconds']:6.1f} s, "
                  f"{row['reports_accepted']:,} reports, load {os.getloadavg()[0]:.1f}", flush=True)
            for p in nodes_procs:
                p.stop()
                procs.remove(p)
    finally:
        for p in reversed(procs):
            p.stop()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[2, 5])
    ap.add_argument("--devices", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    for n in a.nodes:
        with tempfile.TemporaryDirectory(prefix="ldp-deploy-bench-") as d:
            rows += sweep(n, a.devices, Path(d))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                                "flower": __import__("flwr").__version__ if hasattr(__import__("flwr"), "__version__") else None},
                       "deployment": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
