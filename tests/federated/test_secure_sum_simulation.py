"""A secure-sum round on Flower's simulation engine (``flwr.simulation.run_simulation``): the real
``SecAggPlusWorkflow`` and ``secaggplus_mod``, the installed ClientApp's train handler, devices
with their own ledgers. One node drops after masking (its vector is still summed), one before
(not summed, nothing spent); the server's sum equals, exactly, the sum of the vectors the summed
devices kept in their ledgers, and the accounting names who was summed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.client.mod import secaggplus_mod  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage  # noqa: E402
from flwr.serverapp import ServerApp  # noqa: E402
from flwr.simulation import run_simulation  # noqa: E402

from ldp_plugin.accountant import Accountant  # noqa: E402
from ldp_plugin.federated import secure_sum  # noqa: E402
from ldp_plugin.federated.config import ENV_DEVICE_CONFIG, DeviceConfig  # noqa: E402
from ldp_plugin.federated.device import DeviceFleet  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from ldp_plugin.federated.secure_sum_server import run_secure_plan  # noqa: E402

NODES = 5


def _device_toml(tmp: Path, users: int = 1) -> Path:
    p = tmp / "device.toml"
    p.write_text("\n".join([
        "[device]", 'name = "sim-{partition-id}"', 'ledger = "state/node-{partition-id}/ledger.sqlite"',
        'keystore = "state/node-{partition-id}/keystore.json"', "", "[policy]", 'lifetime_cap = "10"', 'max_epsilon_per_query = "4"',
        "secure_sum_min_participants = 3", "secure_sum_max_bins = 64", "", "[data]", 'source = "ldp_plugin.federated.synthetic:zipf_values"',
        "[data.args]", f"devices = {users}", "d = 8", 'seed = "5-{partition-id}"', ""]))
    for pid in range(NODES):
        DeviceFleet.init(DeviceConfig.load(p, {"partition-id": pid}))
    return p


def _drops(msg, ctxt, call_next):
    """Partition 0 drops after sending its masked vector; partition 1 before sending it."""
    if msg.metadata.message_type == "train" and RECORD_KEY_CONFIGS in msg.content.config_records:
        stage = msg.content.config_records[RECORD_KEY_CONFIGS].get(Key.STAGE)
        pid = ctxt.node_config.get("partition-id")
        if (pid == 0 and stage == Stage.UNMASK) or (pid == 1 and stage == Stage.COLLECT_MASKED_VECTORS):
            raise RuntimeError("simulated dropout")
    return call_next(msg, ctxt)


def _run(tmp: Path, plan: Plan, client_app) -> list:
    out: list = []
    server = ServerApp()

    @server.main()
    def _main(grid, context):
        out.extend(run_secure_plan(grid, context, plan))

    old = os.environ.get(ENV_DEVICE_CONFIG)
    os.environ[ENV_DEVICE_CONFIG] = str(tmp / "device.toml")
    try:
        run_simulation(server_app=server, client_app=client_app, num_supernodes=NODES,
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": 1}})
    finally:
        if old is None:
            os.environ.pop(ENV_DEVICE_CONFIG, None)
        else:
            os.environ[ENV_DEVICE_CONFIG] = old
    return out


def _kept(tmp: Path, pid: int) -> list:
    cfg = DeviceConfig.load(tmp / "device.toml", {"partition-id": pid})
    with Accountant(cfg.ledger) as led:
        return [(r, led.kept_reports(r.query_id)) for r in led.history()]


def test_secure_sum_exact_with_dropouts_and_accounting(tmp_path):
    _device_toml(tmp_path)
    plan = Plan.from_dict({"name": "ss", "mode": "secure-sum", "expected_nodes": NODES, "round_timeout": 60, "node_wait": 60},
                          [{"name": "noise", "mechanism": "skellam", "epsilon": "1", "params": {"d": 8},
                            "secure": {"delta": 1e-6, "min_participants": 3}}], tmp_path)
    app = ClientApp(mods=[_drops, secaggplus_mod])
    app.train()(secure_sum._train)
    summaries = _run(tmp_path, plan, app)
    row = summaries[0]["queries"][0]
    assert row["status"] == "released", json.dumps(row)[:2000]
    assert row["nodes_sampled"] == NODES and row["nodes_summed"] == NODES - 1  # partition 1 never sent its masked vector
    kept = {pid: _kept(tmp_path, pid) for pid in range(NODES)}
    assert kept[1] == []  # dropped before masking: nothing spent
    vectors = [np.asarray(k[0][1]["vector"]) for pid, k in kept.items() if pid != 1]
    assert all(len(k) == 1 for pid, k in kept.items() if pid != 1)
    total = np.sum(vectors, axis=0)
    assert [e["count"] for e in row["estimate"]] == total[:8].tolist()  # exact, with partition 0 dropped after masking
    assert row["users_summed"] == NODES - 1
    # the devices charged the noise of t = 3 devices; the server reports the noise of the 4 summed
    rec = kept[0][0][0]
    assert rec.params["threshold"] == 3 and float(rec.epsilon) == pytest.approx(rec.params["epsilon"])
    assert row["central"]["n_summed"] == 4 and row["central"]["epsilon"] < float(rec.epsilon)
    assert row["central"]["delta"] == 1e-6
