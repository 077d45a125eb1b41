"""Issue 34, the ServerApp's round logic (``run_plan``) against hostile and failing nodes.

The Flower transport is replaced by a loopback grid (``push_messages`` / ``pull_messages`` /
``get_node_ids``, the Grid API ``run_plan`` uses) that hands each real Flower ``Message`` to a
node handler; honest nodes run the real device side (``device_answer``: device TOML, ledger,
keystore), hostile ones forge replies. The real deployment is tested in test_federated_deploy.py.
Checked: a sybil registration is capped, a flood/replay/batch/hostile reply is that node's error
(counted by reason) and never changes the estimate, a node that drops out is ``no_reply`` and the
round completes at the minimum batch or is reported ``incomplete``; nothing ends the run."""

from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Error, Message, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.federated import DeviceConfig, DeviceFleet, Query  # noqa: E402
from ldp_plugin.federated.app import _record, device_answer, run_plan  # noqa: E402
from ldp_plugin.federated.envelope import seal  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire, to_wire_each

DEVICES = 40


@pytest.fixture(autouse=True)
def flower_task():
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    yield
    TaskIdentity._run_id = TaskIdentity._task_id = TaskIdentity._node_id = None


class LoopbackGrid:
    def __init__(self, handlers: dict):
        self.handlers = handlers
        self.replies: dict = {}

    def get_node_ids(self):
        return list(self.handlers)

    def push_messages(self, msgs):
        ids = []
        for m in msgs:
            m.metadata._message_id = uuid.uuid4().hex
            ids.append(m.metadata.message_id)
            rep = self.handlers[m.metadata.dst_node_id](m)
            if rep is not None:
                self.replies[m.metadata.message_id] = rep
        return ids

    def pull_messages(self, ids):
        return [self.replies.pop(i) for i in list(ids) if i in self.replies]


def _honest(app_dir, pid):
    node_config = {"device-config": str(app_dir / "device.toml"), "partition-id": pid}
    return lambda m: Message(content=_record(device_answer(m.content, node_config, node_id=m.metadata.dst_node_id)), reply_to=m)


def _reply(m, devices, reports, refused="{}", retry=False):  # a node's reply on the wire (version 2: one blob)
    rec = {"wire": 2, "devices": devices, "refused": refused, "retry": retry}
    if reports:
        rec["blob"] = b"".join(reports)
    return Message(content=RecordDict({"reply": ConfigRecord(rec)}), reply_to=m)


def _is_query(m):
    return "query" in m.content


def _tag(m):
    return Query.from_json(str(m.content["query"]["json"])).content_hash


MECH = ldp.OUE(epsilon=1.0, d=8)


def _sybil(m):  # registers a million devices, then floods 100x its cap with fresh, well-formed reports of item 7
    if not _is_query(m):
        return _reply(m, 10**6, [])
    envs = seal(to_wire_each(MECH, MECH.randomize_encoded(np.full(5000, 7)), tag=_tag(m)))
    return _reply(m, 5000, envs)


def _batcher(m):  # one "envelope" holding a whole batch of reports: on the wire, a blob of no whole number of envelopes
    if not _is_query(m):
        return _reply(m, DEVICES, [])
    return _reply(m, DEVICES, [os.urandom(16) + to_wire(MECH, MECH.randomize_encoded(np.full(30, 7)), tag=_tag(m))])


def _hostile_metadata(m):
    if not _is_query(m):
        return _reply(m, DEVICES, [])
    return Message(content=RecordDict({"reply": ConfigRecord({"wire": 2, "devices": DEVICES, "refused": "[1, 2]", "retry": False})}), reply_to=m)


def _nan(m):
    if not _is_query(m):
        return _reply(m, DEVICES, [])
    return _reply(m, DEVICES, [], refused=json.dumps({"budget_exhausted": float("nan")}))


def _no_reply_record(m):
    return Message(content=RecordDict({"other": ConfigRecord({"x": 1})}), reply_to=m)


def _crash(m):
    return Message(Error(code=1, reason="ClientApp crashed"), reply_to=m)


def _dropout(m):  # registers, then never answers a query (the round's deadline ends the wait)
    return None if _is_query(m) else _reply(m, DEVICES, [])


def _setup(tmp_path, min_batch):
    app = tmp_path / "app"
    app.mkdir()
    (app / "device.toml").write_text(
        '[device]\nname = "n{partition-id}"\nledger = "s/{partition-id}/l.sqlite"\nkeystore = "s/{partition-id}/k.json"\n\n'
        '[policy]\nlifetime_cap = "4"\nmax_epsilon_per_query = "2"\n\n[data]\nsource = "ldp_plugin.federated.synthetic:zipf_values"\n'
        f'[data.args]\ndevices = {DEVICES}\nd = 8\nseed = "5-{{partition-id}}"\n')
    for pid in range(2):
        DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid}))
    plan = Plan.from_dict({"name": "t", "rounds": 1, "min_batch": min_batch, "out_dir": "out", "round_timeout": 1.5, "max_devices_per_node": 50,
                           "expected_nodes": 2, "node_wait": 0}, [{"name": "apps", "mechanism": "oue", "epsilon": "1", "params": {"d": 8}}], tmp_path)
    return app, plan


def test_hostile_and_failing_nodes_never_change_the_estimate(tmp_path):
    app, plan = _setup(tmp_path, min_batch=2 * DEVICES)
    honest = {1: _honest(app, 0), 2: _honest(app, 1)}
    hostile = {10: _sybil, 11: _batcher, 12: _hostile_metadata, 13: _nan, 14: _no_reply_record, 15: _crash, 16: _dropout}
    (summary,) = run_plan(LoopbackGrid({**honest, **hostile}), plan)  # the dropout ends at the round's deadline: no_reply below
    row = summary["queries"][0]
    assert summary["registration_errors"] == {"malformed": 1, "flower_error": 1}  # the two that cannot even register
    assert row["nodes_asked"] == 7  # 2 honest + sybil (capped at 50) + batcher + metadata + nan + dropout
    assert row["node_errors"] == {"over_quota": 1, "bad_field": 3, "no_reply": 1}  # the batcher's blob is no whole number of envelopes
    assert row["rejected_by_reason"] == {}
    assert row["reports_accepted"] == 2 * DEVICES and row["status"] == "complete"
    hostile_est = [e["estimate"] for e in row["estimate"]]
    written = json.loads((plan.out_dir / "t" / "round-0001.json").read_text())
    assert written["queries"][0]["reports_accepted"] == 2 * DEVICES
    # the same round again with the honest nodes only: their kept replies, so the estimate must be identical
    (clean,) = run_plan(LoopbackGrid(honest), plan)
    crow = clean["queries"][0]
    assert crow["reports_from_kept_replies"] == 2 * DEVICES and crow["node_errors"] == {}
    assert [e["estimate"] for e in crow["estimate"]] == hostile_est


def test_a_round_below_its_minimum_batch_is_reported_incomplete(tmp_path):
    app, plan = _setup(tmp_path, min_batch=2 * DEVICES)
    (summary,) = run_plan(LoopbackGrid({1: _honest(app, 0), 2: _dropout}), plan)
    row = summary["queries"][0]
    assert row["reports_accepted"] == DEVICES and row["node_errors"] == {"no_reply": 1}
    assert row["status"] == "incomplete" and row["estimate"] is None


def _robust_setup(tmp_path, nodes, robust, devices=DEVICES):
    app = tmp_path / "app"
    app.mkdir()
    (app / "device.toml").write_text(
        '[device]\nname = "n{partition-id}"\nledger = "s/{partition-id}/l.sqlite"\nkeystore = "s/{partition-id}/k.json"\n\n'
        '[policy]\nlifetime_cap = "4"\nmax_epsilon_per_query = "2"\n\n[data]\nsource = "ldp_plugin.federated.synthetic:zipf_values"\n'
        f'[data.args]\ndevices = {devices}\nd = 8\nseed = "5-{{partition-id}}"\n')
    for pid in range(nodes):
        DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid}))
    plan = Plan.from_dict({"name": "t", "rounds": 1, "min_batch": devices, "out_dir": "out", "round_timeout": 30, "max_devices_per_node": devices,
                           "expected_nodes": nodes, "node_wait": 0},
                          [{"name": "apps", "mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": robust}], tmp_path)
    return app, plan


ROBUST_DEVICES = 4000  # per node: a node's standard error (≈ 0.03 at ε = 1) well below the attack's shift


def _max_gain(m):  # a node of fake users: well-formed maximal-gain OUE reports for item 7 (Cao, Jia, Gong 2021)
    if not _is_query(m):
        return _reply(m, ROBUST_DEVICES, [])
    return _reply(m, ROBUST_DEVICES, seal(to_wire_each(MECH, MECH.max_gain_reports([7], ROBUST_DEVICES), tag=_tag(m))))


def test_a_plan_with_robust_combination_bounds_a_hostile_node(tmp_path):
    """Five honest nodes and one node of maximal-gain fakes: the pooled estimate of the target is
    dragged up by about a sixth of the attack's gain, the trimmed mean stays within its stated
    bound of the honest devices' frequency (robust/aggregation.py: z·σ/√n_min, from the mechanism and the median node size)."""
    from ldp_plugin.federated.synthetic import zipf_values

    # α = 1e-6: the devices draw from the secure source (not seeded), so the bound's own failure rate is the test's
    app, plan = _robust_setup(tmp_path, 5, {"rule": "trimmed", "f": 1, "alpha": 1e-6}, devices=ROBUST_DEVICES)
    grid = LoopbackGrid({**{pid + 1: _honest(app, pid) for pid in range(5)}, 99: _max_gain})
    (summary,) = run_plan(grid, plan)
    row = summary["queries"][0]
    assert row["status"] == "complete" and row["reports_accepted"] == 6 * ROBUST_DEVICES
    truth = np.bincount(np.concatenate([zipf_values(ROBUST_DEVICES, 8, f"5-{p}") for p in range(5)]), minlength=8) / (5 * ROBUST_DEVICES)
    rob = row["robust"]
    assert rob["rule"] == "trimmed" and rob["f"] == 1 and rob["alpha"] == 1e-6 and rob["nodes"] == 6 and "error" not in rob
    est, bound = np.array(rob["estimate"]), np.array(rob["bound"])
    assert (np.abs(est - truth) <= bound).all()
    pooled = np.array([e["estimate"] for e in row["estimate"]])
    assert np.allclose(pooled, rob["pooled"], atol=1e-12)
    # power: the pooled estimate of the target moves by ~ (1/6)·(1 − q)/(p − q) ≈ 0.5, far outside the bound
    assert pooled[7] - truth[7] > bound[7]


def test_a_round_with_too_few_nodes_for_the_robust_rule_says_why_beside_its_pooled_estimate(tmp_path):
    app, plan = _robust_setup(tmp_path, 2, {"rule": "trimmed", "f": 1})
    (summary,) = run_plan(LoopbackGrid({1: _honest(app, 0), 2: _honest(app, 1)}), plan)
    row = summary["queries"][0]
    assert row["status"] == "complete" and len(row["estimate"]) == 8
    assert row["robust"]["nodes"] == 2 and "needs more than 2 nodes" in row["robust"]["error"]


@pytest.mark.parametrize("query, says", [
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"rule": "mean"}}, "rule must be one of"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"f": 1}}, "must be a table with a rule"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"rule": "trimmed", "f": -1}}, "robust.f"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"rule": "trimmed", "groups": 3}}, "median-of-means' only"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"rule": "median-of-means", "f": 1, "groups": 2}}, "robust.groups"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": {"rule": "trimmed", "alpha": 1.5}}, "robust.alpha"),
    ({"mechanism": "oue", "epsilon": "1", "params": {"d": 8}, "robust": "trimmed"}, "must be a table"),
    ({"mechanism": "duchi", "epsilon": "1", "params": {"lower": 0.0, "upper": 1.0}, "robust": {"rule": "trimmed"}}, "not to 'duchi'"),
    ({"mechanism": "loloha", "params": {"d": 8, "epsilon_perm": 2.0, "epsilon_1": 1.0}, "robust": {"rule": "trimmed"}}, "not to 'loloha'"),
    ({"mechanism": "pem", "epsilon": "2", "params": {"alphabet": "ab", "max_length": 4, "top_k": 2}, "robust": {"rule": "trimmed"}},
     "not to a heavy-hitter discovery"),
])
def test_a_plans_robust_table_is_checked_when_the_plan_is_read(tmp_path, query, says):
    from ldp_plugin._errors import LDPParameterError

    with pytest.raises(LDPParameterError, match=None) as e:
        Plan.from_dict({"name": "t"}, [{"name": "q", **query}], tmp_path)
    assert says in str(e.value)
