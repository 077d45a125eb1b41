"""Secure-sum rounds through ``flwr run`` on a simulation SuperLink: Flower's real
``SecAggPlusWorkflow`` and ``secaggplus_mod``, the installed ClientApp's train handler, devices
with their own ledgers. In both options one node drops after masking (its vector is still
summed) and one before (not summed, nothing spent): the server's sum equals, exactly, the sum of
the vectors the summed devices kept in their ledgers, and the accounting names who was summed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, RecordDict  # noqa: E402
from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays  # noqa: E402
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_STATE  # noqa: E402
from flwr.compat.common import recorddict_compat as compat  # noqa: E402

from ldp_plugin.accountant import Accountant  # noqa: E402
from ldp_plugin.federated import secure_sum  # noqa: E402
from ldp_plugin.federated.config import ENV_DEVICE_CONFIG  # noqa: E402
from ldp_plugin.federated.secure_device import SecureSumRefusal  # noqa: E402
from ldp_plugin.federated.config import DeviceConfig  # noqa: E402
from ldp_plugin.federated.secure_simulate import run_secure_simulation, secure_device_toml  # noqa: E402
from tests.federated.test_secure_device import _fleet, _q, _setup  # noqa: E402

NODES = 5

#: a test ClientApp shipped in the app bundle: the installed secure-sum handler behind a mod that
#: makes partition 0 drop after sending its masked vector and partition 1 before sending it
DROP_APP = '''
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from ldp_plugin.federated import secure_sum


def _drops(msg, ctxt, call_next):
    if msg.metadata.message_type == "train" and RECORD_KEY_CONFIGS in msg.content.config_records:
        stage = msg.content.config_records[RECORD_KEY_CONFIGS].get(Key.STAGE)
        pid = ctxt.node_config.get("partition-id")
        if (pid == 0 and stage == Stage.UNMASK) or (pid == 1 and stage == Stage.COLLECT_MASKED_VECTORS):
            raise RuntimeError("simulated dropout")
    return call_next(msg, ctxt)


client_app = ClientApp(mods=[_drops, secaggplus_mod])
client_app.train()(secure_sum._train)
'''

PLAN = """[plan]
name = "ss"
mode = "secure-sum"
out_dir = "results"
round_timeout = 120
expected_nodes = 5
node_wait = 120

[[query]]
name = "noise"
mechanism = "skellam"
epsilon = "1"
params = {d = 8}
secure = {delta = 1e-6, min_participants = 3, site_bound = 4, min_count = 1}

[[query]]
name = "local"
mechanism = "krr"
epsilon = "2"
params = {d = 8}
secure = {delta = 1e-6, min_participants = 3, site_bound = 4}
"""


def _kept(device, pid: int) -> dict:
    cfg = DeviceConfig.load(device, {"partition-id": pid})
    with Accountant(cfg.ledger) as led:
        return {r.params["secure_sum"]["query_id"]: (r, led.kept_reports(r.query_id)) for r in led.history()}


@pytest.mark.slow
def test_secure_sum_exact_with_dropouts_and_accounting(tmp_path):
    device_toml = secure_device_toml(users_per_node=4, d=8, seed="5", device_cap="20", max_epsilon="4", min_participants=3)
    plan, summaries, _ = run_secure_simulation(tmp_path, plan_toml=PLAN, device_toml=device_toml, nodes=NODES, timeout=600,
                                               components={"clientapp": "drop_app:client_app"}, extra_files={"drop_app.py": DROP_APP})
    device = tmp_path / "app" / "device.toml"
    kept = {pid: _kept(device, pid) for pid in range(NODES)}
    assert kept[1] == {}  # dropped before masking, in both rounds: nothing spent
    rows = {row["query"]: row for row in summaries[0]["queries"]}
    for name in ("noise", "local"):
        row = rows[name]
        assert row["status"] == "released", row
        assert row["nodes_sampled"] == NODES and row["nodes_summed"] == NODES - 1
        qid = row["query_id"]
        vectors = [np.asarray(kept[pid][qid][1]["vector"]) for pid in range(NODES) if pid != 1]
        total = np.sum(vectors, axis=0)
        assert [e["count"] for e in row["estimate"]] == total[:8].tolist()  # exact, partition 0 dropped after masking
        assert row["users_summed"] == 4 * (NODES - 1) == total[8]
        rec = kept[0][qid][0]
        assert rec.cohorts == (0, 1, 2, 3)  # every device of the site charged once
    # distributed noise: the devices charged the noise of t = 3 nodes, the server the noise of the 4 summed
    rec = kept[0][rows["noise"]["query_id"]][0]
    assert rec.params["threshold"] == 3 and rec.mechanism == "secure-sum-skellam"
    assert rows["noise"]["central"]["n_summed"] == 4 and rows["noise"]["central"]["epsilon"] < float(rec.epsilon) <= 1.0 + 1e-6
    # summed local reports: each device charged eps0 = 2 and recorded the shuffle bound at t = 3 reports
    rec = kept[0][rows["local"]["query_id"]][0]
    assert float(rec.epsilon) == 2.0
    cfg = DeviceConfig.load(device, {"partition-id": 0})
    with Accountant(cfg.ledger) as led:
        claims = led.shuffle_records(rec.query_id)
    assert len(claims) == 1 and claims[0].n_min == 3
    assert rows["local"]["central"]["n_reports"] == 16 and rows["local"]["central"]["epsilon"] < 2.0


def test_installed_train_handler_answers_a_secagg_round(tmp_path, monkeypatch):
    """The installed ClientApp's handler, called as secaggplus_mod calls it at the collect-masked-vectors
    stage (the setup it stored in the node's state, the query in the fit config): the vector, with
    num_examples = 1; without the SecAgg+ state it refuses."""
    _fleet(tmp_path).close()
    monkeypatch.setenv(ENV_DEVICE_CONFIG, str(tmp_path / "device.toml"))
    q = _q()
    ins = FitIns(ndarrays_to_parameters([np.zeros(1)]), {secure_sum.QUERY_KEY: q.to_json()})
    content, state = compat.fitins_to_recorddict(ins, keep_input=True), RecordDict()
    with pytest.raises(SecureSumRefusal):
        secure_sum.train_reply(content, state, {"partition-id": 0})
    state.config_records[RECORD_KEY_STATE] = ConfigRecord(_setup(q.derive().config))
    res = compat.recorddict_to_fitres(secure_sum.train_reply(content, state, {"partition-id": 0}), keep_input=True)
    (vec,) = parameters_to_ndarrays(res.parameters)
    assert res.num_examples == 1 and vec.shape == (9,) and vec[8] == 3
