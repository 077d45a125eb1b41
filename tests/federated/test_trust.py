"""The owner's trust section and pinned membership, without processes (the real deployment is in
``test_owner_runtime.py``): FAB admission (pinned digest, allowed installed component, a bundle that
cannot be read), the pins file and refusal record (owner-only modes), membership proofs bound to
the run, the node id and the challenge, and the ServerApp's registration against members,
non-members, forged and replayed proofs (real device side over a loopback grid)."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("flwr")
pytest.importorskip("cryptography")

from flwr.app import ConfigRecord, Message, RecordDict  # noqa: E402

from ldp_plugin._errors import LDPParameterError  # noqa: E402
from ldp_plugin.federated import DeviceConfig, DeviceFleet  # noqa: E402
from ldp_plugin.federated.app import _record, device_answer, run_plan  # noqa: E402
from ldp_plugin.federated.certs import make_node_keys  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from ldp_plugin.federated.trust import (DeviceTrust, fab_component, fab_digest, load_member_public_key, sign_membership,  # noqa: E402
                                        verify_membership)
from tests.test_federated_server import LoopbackGrid, flower_task  # noqa: E402,F401

DEVICES = 12


def _fab(component: str = "ldp_plugin.federated.app:client_app", extra: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("pyproject.toml", f'[tool.flwr.app.components]\nclientapp = "{component}"\nserverapp = "x:y"\n')
        z.writestr("code.py", b"print('hello')\n" + extra)
    return buf.getvalue()


def _trust(tmp_path, **kw) -> DeviceTrust:
    return DeviceTrust.from_dict({"pins": "pins", **kw}, tmp_path, ledger=tmp_path / "ledger.sqlite")


def test_only_a_pinned_bundle_naming_an_allowed_installed_component_is_admitted(tmp_path):
    trust = _trust(tmp_path)
    good, other, hostile = _fab(), _fab(extra=b"# one byte more"), _fab("ldp_plugin.federated.shuffler_app:server_app")
    assert trust.admit(good)[2] == "app_not_pinned"  # nothing pinned: nothing answered
    assert trust.pin(fab_digest(good)) and not trust.pin(fab_digest(good))
    assert trust.admit(good) == ("ldp_plugin.federated.app:client_app", fab_digest(good), None)
    assert trust.admit(other)[2] == "app_not_pinned"  # any change to the bundle is another bundle
    trust.pin(fab_digest(hostile))
    assert trust.admit(hostile)[2] == "component_not_allowed"
    junk = b"not a zip file"
    trust.pin(fab_digest(junk))
    assert trust.admit(junk)[2] == "app_unreadable" and fab_component(junk) is None
    assert stat.S_IMODE((tmp_path / "pins").stat().st_mode) == 0o600


def test_inline_pins_and_the_refusal_record_are_the_owners(tmp_path):
    fab = _fab()
    trust = DeviceTrust.from_dict({"apps": [fab_digest(fab).upper()], "refusal_log": "state/refusals.jsonl"}, tmp_path, ledger=tmp_path / "l.sqlite")
    assert trust.admit(fab)[2] is None
    trust.record_refusal({"run_id": 7, "fab_hash": "ab" * 32, "reason": "app_not_pinned"})
    trust.record_refusal({"run_id": 8, "fab_hash": "cd" * 32, "reason": "app_not_pinned"})
    assert [r["run_id"] for r in trust.refusals()] == [7, 8]
    assert stat.S_IMODE((tmp_path / "state" / "refusals.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    default = DeviceTrust.from_dict(None, tmp_path, ledger=tmp_path / "x" / "l.sqlite")
    assert default.refusal_log == tmp_path / "x" / "l.sqlite.refusals.jsonl" and default.pinned() == frozenset()


@pytest.mark.parametrize("doc, says", [
    ({"apps": ["abc"]}, "64 hex digits"),
    ({"apps": "x" * 64}, "list of FAB digests"),
    ({"components": ["os:system"]}, "installed ldp_plugin ClientApps"),
    ({"components": []}, "non-empty list"),
    ({"pins": 3}, "[trust] pins must be a path"),
    ({"member_key": ""}, "[trust] member_key must be a path"),
    ({"pinz": "x"}, "unknown key(s) ['pinz'] in [trust]"),
])
def test_a_malformed_trust_section_names_the_key(tmp_path, doc, says):
    with pytest.raises(LDPParameterError) as e:
        DeviceTrust.from_dict(doc, tmp_path, ledger=tmp_path / "l.sqlite")
    assert says in str(e.value)


def test_a_membership_proof_binds_the_run_the_node_and_the_challenge(tmp_path):
    keys = make_node_keys(tmp_path, "node-0")
    other = make_node_keys(tmp_path, "node-1")
    ch = bytes(range(32))
    pub, sig = sign_membership(Path(keys["private"]), 5, 101, ch)
    assert pub == load_member_public_key(Path(keys["public"]).read_text())
    assert verify_membership(pub, sig, 5, 101, ch)
    assert not verify_membership(pub, sig, 6, 101, ch)  # another run
    assert not verify_membership(pub, sig, 5, 102, ch)  # replayed by another node
    assert not verify_membership(pub, sig, 5, 101, bytes(32))  # an old challenge
    assert not verify_membership(load_member_public_key(Path(other["public"]).read_text()), sig, 5, 101, ch)  # another key
    assert not verify_membership(pub, "zz", 5, 101, ch) and not verify_membership("not a key", sig, 5, 101, ch)


def _deployment(tmp_path, n_members=2):
    app = tmp_path / "app"
    app.mkdir()
    for i in range(3):
        make_node_keys(app / "keys", f"node-{i}")
    (app / "device.toml").write_text(
        '[device]\nname = "n{partition-id}"\nledger = "s/{partition-id}/l.sqlite"\nkeystore = "s/{partition-id}/k.json"\n\n'
        '[trust]\nmember_key = "keys/node-{partition-id}"\n\n'
        '[policy]\nlifetime_cap = "4"\nmax_epsilon_per_query = "2"\n\n[data]\nsource = "ldp_plugin.federated.synthetic:zipf_values"\n'
        f'[data.args]\ndevices = {DEVICES}\nd = 4\nseed = "5-{{partition-id}}"\n')
    for pid in range(3):
        DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid}))
    plan = Plan.from_dict({"name": "t", "min_batch": 1, "out_dir": "out", "round_timeout": 1.5, "node_wait": 0,
                           "members": [f"app/keys/node-{i}.pub" for i in range(n_members)]},
                          [{"name": "apps", "mechanism": "krr", "epsilon": "1", "params": {"d": 4}}], tmp_path)
    return app, plan


def _node(app, pid, as_node=None):
    node_config = {"device-config": str(app / "device.toml"), "partition-id": pid}
    return lambda m: Message(content=_record(device_answer(m.content, node_config, node_id=as_node if as_node is not None else m.metadata.dst_node_id)), reply_to=m)


def test_only_listed_members_are_asked_and_counted(tmp_path):
    app, plan = _deployment(tmp_path)
    assert plan.expected_nodes == 2 and len(plan.members) == 2
    asked: list = []

    def intruder(m):  # a node whose key is not in the plan: it would answer every query
        asked.append("query" in m.content)
        return _node(app, 2)(m)

    member0 = _node(app, 0)
    member0_device = _node(app, 0, as_node=101)  # a device signs as the node its own SuperNode is

    def replayer(m):  # holds no key: relays the challenge to member 0's device and replays its proof
        rep = member0_device(m)
        return Message(content=rep.content, reply_to=m)

    def duplicate(m):  # member 1's key on a second node
        return _node(app, 1)(m)

    (summary,) = run_plan(LoopbackGrid({101: member0, 102: _node(app, 1), 103: intruder, 104: replayer, 105: duplicate}), plan)
    assert summary["nodes_registered"] == 2
    assert summary["registration_errors"] == {"not_a_member": 1, "bad_membership_proof": 1, "duplicate_member": 1}
    row = summary["queries"][0]
    assert row["nodes_asked"] == 2 and row["reports_accepted"] == 2 * DEVICES and row["status"] == "complete"
    assert asked == [False]  # the intruder got the registration only, never a query
    ledger = DeviceFleet.open(DeviceConfig.load(app / "device.toml", {"partition-id": 2}))
    try:
        assert ledger.ledger.history() == []  # nothing charged on the intruder's devices
    finally:
        ledger.close()


def test_a_device_without_a_member_key_cannot_join_a_plan_with_members(tmp_path):
    app, plan = _deployment(tmp_path)
    text = (app / "device.toml").read_text().replace('[trust]\nmember_key = "keys/node-{partition-id}"\n\n', "")
    (app / "device.toml").write_text(text)
    (summary,) = run_plan(LoopbackGrid({101: _node(app, 0), 102: _node(app, 1)}), plan)
    assert summary["nodes_registered"] == 0 and summary["registration_errors"] == {"not_a_member": 2}
    assert summary["queries"][0]["status"] == "incomplete"


@pytest.mark.parametrize("plan, says", [
    ({"members": []}, "non-empty list of public keys"),
    ({"members": ["nope.pub"]}, "cannot be read"),
    ({"members": ["ecdsa-sha2-nistp384 AAAAnot"]}, "OpenSSH EC public key"),
])
def test_a_malformed_member_list_is_refused_when_the_plan_is_read(tmp_path, plan, says):
    with pytest.raises(LDPParameterError) as e:
        Plan.from_dict(plan, [{"name": "q", "mechanism": "krr", "epsilon": "1", "params": {"d": 4}}], tmp_path)
    assert says in str(e.value)


def test_the_member_list_is_the_node_count(tmp_path):
    keys = [make_node_keys(tmp_path, f"n{i}")["public"] for i in range(2)]
    q = [{"name": "q", "mechanism": "krr", "epsilon": "1", "params": {"d": 4}}]
    with pytest.raises(LDPParameterError, match="must equal the number of members"):
        Plan.from_dict({"members": keys, "expected_nodes": 3}, q, tmp_path)
    with pytest.raises(LDPParameterError, match="same public key twice"):
        Plan.from_dict({"members": [keys[0], keys[0]]}, q, tmp_path)
    assert json.dumps(list(Plan.from_dict({"members": keys}, q, tmp_path).members))


def test_the_owner_sees_pins_budget_and_refusals(tmp_path, monkeypatch, capsys):
    """``ldp federated device pin / status / refusals``: the owner's commands, in process."""
    from ldp_plugin.cli import main as ldp_main

    monkeypatch.chdir(tmp_path)
    assert ldp_main(["federated", "new", "app", "--nodes", "1"]) == 0
    assert ldp_main(["federated", "device", "init", "app/device.toml", "--node-config", "partition-id=0"]) == 0
    assert ldp_main(["federated", "device", "pin", "app/device.toml", "app", "--node-config", "partition-id=0"]) == 0
    assert ldp_main(["federated", "app-digest", "app"]) == 0
    capsys.readouterr()
    cfg = DeviceConfig.load(tmp_path / "app" / "device.toml", {"partition-id": 0})
    cfg.trust.record_refusal({"run_id": 3, "fab_hash": "ef" * 32, "reason": "app_not_pinned"})
    assert ldp_main(["federated", "device", "status", "app/device.toml", "--node-config", "partition-id=0", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["devices"] == 2000 and st["remaining_min"] == st["remaining_max"] == "12" and st["spends"] == 0 and st["state"] == "ok"
    assert len(st["pinned_apps"]) == 1 and st["refused_runs"] == 1
    assert ldp_main(["federated", "device", "refusals", "app/device.toml", "--node-config", "partition-id=0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["refusals"][0]["run_id"] == 3
    (tmp_path / "app" / "state" / "node-0" / "ledger.sqlite").unlink()  # a lost ledger: the status says why the devices refuse
    assert ldp_main(["federated", "device", "status", "app/device.toml", "--node-config", "partition-id=0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "ledger_missing"
