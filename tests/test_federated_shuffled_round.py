"""Issue 35, item 4 over Flower: the shuffler ServerApp (``run_shuffled_plan``) with the real device
side (``device_answer``: device TOML with the owner-pinned analyzer key, ledger, keystore) through
Flower ``Message`` objects on the loopback grid of test_federated_server.py; then the analyzer.
Done-when: a shuffled collection over Flower records its central (ε, δ) in the ledger, and the
analyzer's only input (the batch file) holds no node id and no order that follows the nodes. The
same through ``flwr run`` on a simulation SuperLink is the slow test at the end."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("nacl")

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.federated import DeviceConfig, DeviceFleet, Query  # noqa: E402
from ldp_plugin.federated.analyzer import analyze_batch  # noqa: E402
from ldp_plugin.federated.batch import HEADER_KEYS, iter_ciphertexts, read_batch  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from ldp_plugin.federated.envelope import NONCE_BYTES  # noqa: E402
from ldp_plugin.federated.sealed import generate_analyzer_keys, open_reports, private_key  # noqa: E402
from ldp_plugin.federated.shuffler import Shuffler  # noqa: E402
from ldp_plugin.federated.shuffler_app import BATCH_FILE, run_shuffled_plan  # noqa: E402
from ldp_plugin.federated.app import _record, device_answer  # noqa: E402
from flwr.app import ConfigRecord, Message, RecordDict  # noqa: E402

from .test_federated_server import DEVICES, LoopbackGrid, _dropout, _honest, _is_query, flower_task  # noqa: E402,F401
from ldp_plugin.mechanisms.reports import from_wire_many

DELTA = 1e-6
NODE_IDS = (2**63 - 25, 4611686018427400000 + 12345, 987654321987654321)  # Flower's node ids are random 64-bit integers

DEVICE = """[device]
name = "n{partition-id}"
ledger = "s/{partition-id}/l.sqlite"
keystore = "s/{partition-id}/k.json"
%s
[policy]
lifetime_cap = "4"
max_epsilon_per_query = "2"

[data]
source = "ldp_plugin.federated.synthetic:zipf_values"
[data.args]
devices = %d
d = 8
seed = "9-{partition-id}"
"""


def _setup(tmp_path):
    keys = generate_analyzer_keys(tmp_path / "analyzer")
    app = tmp_path / "app"
    app.mkdir()
    (app / "device.toml").write_text(DEVICE % (f'analyzer_key = "{os.path.relpath(keys["public_key"], app)}"\n', DEVICES))
    (app / "plain.toml").write_text(DEVICE % ("", DEVICES))  # an owner who pinned no analyzer key: its reports stay plaintext
    for pid, toml in ((0, "device.toml"), (1, "device.toml"), (2, "plain.toml")):
        DeviceFleet.init(DeviceConfig.load(app / toml, {"partition-id": pid}))
    plan = Plan.from_dict({"name": "t", "rounds": 1, "min_batch": 2 * DEVICES, "out_dir": "out", "round_timeout": 1.5, "max_devices_per_node": 50,
                           "expected_nodes": 3, "node_wait": 0}, [{"name": "apps", "mechanism": "krr", "epsilon": "1", "params": {"d": 8}}], tmp_path)
    ledger = tmp_path / "analyzer.sqlite"
    ldp.Accountant.create(ledger, ldp.Population(name="analyzer", lifetime_cap="10")).close()
    return app, keys, plan, ledger


def _node(app, toml, pid, sent):
    """The real device side of node ``pid`` (its owner's TOML), recording what it sent."""
    node_config = {"device-config": str(app / toml), "partition-id": pid}

    def handler(m):
        rep = Message(content=_record(device_answer(m.content, node_config)), reply_to=m)
        if _is_query(m) and "blob" in rep.content["reply"]:  # the reports, one blob on the wire
            blob = rep.content["reply"]["blob"]
            size = len(blob) // DEVICES
            sent[pid] = [blob[i:i + size] for i in range(0, len(blob), size)]
        return rep

    return handler


def _z(order, mine):
    """Standardized sum of the positions of ``mine`` in ``order`` (mean m(N-1)/2, variance
    m(N-m)(N+1)/12 under a uniform permutation)."""
    pos = [i for i, c in enumerate(order) if c in mine]
    m, N = len(pos), len(order)
    return (sum(pos) - m * (N - 1) / 2) / np.sqrt(m * (N - m) * (N + 1) / 12)


def test_a_shuffled_round_over_flower_is_recorded_and_the_analyzer_sees_no_node_id(tmp_path):
    app, keys, plan, ledger = _setup(tmp_path)
    sent: dict = {}
    nodes = {NODE_IDS[0]: _node(app, "device.toml", 0, sent), NODE_IDS[1]: _node(app, "device.toml", 1, sent),
             NODE_IDS[2]: _node(app, "plain.toml", 2, sent)}
    (summary,) = run_shuffled_plan(LoopbackGrid(nodes), plan)
    row = summary["queries"][0]
    assert row["status"] == "forwarded" and row["nodes_answered"] == 3 and row["node_errors"] == {}
    assert row["ciphertexts_held"] == 2 * DEVICES and row["rejected_by_reason"] == {"not_sealed": DEVICES}  # the unpinned node's plaintexts
    batch = Path(row["batch"])
    assert batch == plan.out_dir / "t" / "round-0001" / "apps" / BATCH_FILE

    # the analyzer's only input: a header with fixed keys, then equal-length ciphertexts; no node id in any encoding
    raw = batch.read_bytes()
    header, body = read_batch(batch)
    assert set(header) == HEADER_KEYS and header["n"] == 2 * DEVICES and json.loads(header["query"])["query_id"] == row["query_id"]
    for nid in NODE_IDS:
        for enc in (str(nid).encode(), nid.to_bytes(8, "little"), nid.to_bytes(8, "big"), f"{nid:x}".encode()):
            assert enc not in raw
    order = list(iter_ciphertexts(header, body))
    assert set(order) == set(sent[0]) | set(sent[1])  # exactly the sealed reports, nothing of node 2's
    assert abs(_z(order, set(sent[0]))) < 5  # node 0 answered first: its reports are not first in the batch
    assert _z(sent[0] + sent[1], set(sent[0])) < -7.5  # (power: the arrival order would show it: -7.7, the extreme)

    out = analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=DELTA, expect_query_id=row["query_id"])
    assert out["reports_accepted"] == 2 * DEVICES and out["rejected_by_reason"] == {}
    # (that the record is amplify() at the accepted size is shown in test_federated_shuffler.py: one amplification here)
    assert out["epsilon_central_lower"] <= out["epsilon_central"] < 1.0 and out["n_amplified"] == 2 * DEVICES
    with ldp.Accountant(ledger) as acc:
        (rec,) = acc.shuffle_records()
        assert (rec.query_id, rec.batch_id, rec.n_min, rec.epsilon_central) == (row["query_id"], row["batch_id"], 2 * DEVICES, out["epsilon_central"])
        assert float(acc.spent()) == 1.0 and acc.central_epsilon(2 * DELTA)["epsilon"] == pytest.approx(out["epsilon_central"], rel=1e-3)
    truth = np.bincount(np.concatenate([DeviceConfig.load(app / "device.toml", {"partition-id": p}).load_values() for p in (0, 1)]), minlength=8)
    est = np.array([e["estimate"] for e in out["estimate"]])
    # the estimate is k-RR's unbiased one (Wang et al. 2017, eq. 2) of exactly the sealed reports, opened here
    opened, bad = open_reports(sent[0] + sent[1], private_key(keys["private_key"]))
    assert bad == 0
    krr = ldp.KRR(epsilon=1.0, d=8)
    reports, _ = from_wire_many(krr, [e[NONCE_BYTES:] for e in opened])
    n = len(opened)
    p, q = math.e / (math.e + 7), 1 / (math.e + 7)
    direct = (np.bincount(np.asarray(reports, dtype=np.int64), minlength=8) / n - q) / (p - q)
    assert np.allclose(est, direct, rtol=0, atol=1e-12)
    # and it estimates the sealed nodes' values: every item within 5.3 analytic standard deviations
    # (Bonferroni at 1e-6 over 8 items; the devices draw from the secure source, so this is not seeded)
    f = truth / truth.sum()
    sd = np.sqrt((q * (1 - q) + f * (p - q) * (1 - p - q)) / (n * (p - q) ** 2))
    assert (np.abs(est - f) / sd).max() < 5.3


def test_a_shuffled_round_below_its_minimum_forwards_nothing(tmp_path):
    app, keys, plan, ledger = _setup(tmp_path)
    sent: dict = {}
    plan = dataclasses.replace(plan, expected_nodes=2)
    (summary,) = run_shuffled_plan(LoopbackGrid({NODE_IDS[0]: _node(app, "device.toml", 0, sent), NODE_IDS[1]: _dropout}), plan)
    row = summary["queries"][0]
    assert row["status"] == "below_minimum" and row["batch"] is None and row["ciphertexts_held"] == DEVICES
    assert row["node_errors"] == {"no_reply": 1}
    assert list((plan.out_dir / "t" / "round-0001" / "apps").iterdir()) == []  # no batch, not even a temporary file
    assert json.loads((plan.out_dir / "t" / "round-0001.json").read_text())["queries"][0]["status"] == "below_minimum"
    series = dataclasses.replace(plan, queries=(dataclasses.replace(plan.queries[0], mechanism="loloha", epsilon=None,
                                                                     params={"d": 8, "epsilon_perm": 2.0, "epsilon_1": 1.0}),))
    asked = []
    with pytest.raises(ldp.LDPParameterError, match="memoized series"):  # refused before any node is asked (no device spends)
        run_shuffled_plan(LoopbackGrid({NODE_IDS[0]: lambda m: asked.append(m)}), series)
    assert asked == []


def test_a_device_seals_only_to_its_owners_key_and_a_bad_key_refuses_before_any_spend(tmp_path):
    app, keys, plan, ledger = _setup(tmp_path)
    q = Query.for_mechanism("t/apps/r1", ldp.KRR(epsilon=1.0, d=8), min_batch=1)
    content = RecordDict({"query": ConfigRecord({"json": q.to_json()})})
    sealed = device_answer(content, {"device-config": str(app / "device.toml"), "partition-id": 0})
    assert len(sealed["reports"]) == DEVICES and {len(c) for c in sealed["reports"]} == {Shuffler(q).ciphertext_size}
    (app / "bad.toml").write_text(DEVICE % ('analyzer_key = "00ff"\n', DEVICES))
    refused = device_answer(content, {"device-config": str(app / "bad.toml"), "partition-id": 1})
    assert refused["reports"] == [] and refused["refused"] == {"device_misconfigured": 1}
    with ldp.Accountant(app / "s" / "1" / "l.sqlite") as acc:
        assert acc.history() == []  # the key is checked when the owner's TOML is read, before any budget is spent


def test_new_shuffled_writes_a_project_flower_accepts(tmp_path, cli):
    from flwr.cli.config_utils import load_and_validate

    out = cli("federated", "new", str(tmp_path / "app"), "--shuffled")
    assert out.returncode == 0, out.stderr
    config, warnings = load_and_validate(tmp_path / "app" / "pyproject.toml")
    assert config is not None, warnings
    assert config["tool"]["flwr"]["app"]["components"] == {"serverapp": "ldp_plugin.federated.shuffler_app:server_app",
                                                          "clientapp": "ldp_plugin.federated.app:client_app"}


@pytest.mark.slow
def test_flwr_run_of_a_shuffled_collection_on_a_simulation_superlink(tmp_path, monkeypatch, capsys):
    """The same through Flower's own tools, as a user starts it: ``ldp federated simulate --shuffle``
    writes the shuffled app project (``ldp federated new --shuffled``), generates the analyzer key
    and pins it in the devices' TOML, runs ``flwr run`` on a private simulation SuperLink, and the
    analyzer opens the forwarded batch and records its central (ε, δ) at the size it accepted."""
    from ldp_plugin.amplification import amplify
    from ldp_plugin.cli import main as ldp_main

    out_dir = tmp_path / "sim"
    argv = ["federated", "simulate", "--nodes", "2", "--users-per-node", "40", "--mechanism", "krr", "--d", "8", "--epsilon", "1",
            "--device-cap", "4", "--min-batch", "60", "--shuffle", "--delta", str(DELTA), "--out", str(out_dir), "--json"]
    monkeypatch.setattr("ldp_plugin.progress.enabled", lambda: True)  # as on a terminal: status lines on stderr (stdout stays JSON)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert ldp_main(argv) in (0, None)
    err = capsys.readouterr().err
    assert "flwr run started on the simulation SuperLink (1 round(s)" in err and "round 1/1 summary written" in err
    doc = json.loads(buf.getvalue())
    assert doc["shuffled"] is True
    (row,) = doc["rounds"]
    assert row["status"] == "analyzed" and row["reports_accepted"] == 80 and row["rejected_by_reason"] == {}
    assert row["shuffler"]["ciphertexts_held"] == 80 and row["shuffler"]["node_errors"] == {} and row["shuffler"]["status"] == "forwarded"
    c = row["central"]
    assert c["n_amplified"] == 80 and c["epsilon_local"] == 1.0 and c["delta"] == DELTA
    assert c["epsilon_central"] == pytest.approx(amplify(ldp.KRR(epsilon=1.0, d=8), n=80, delta=DELTA)["epsilon"], rel=1e-9)
    summary = json.loads((out_dir / "app" / "results" / "sim" / "round-0001.json").read_text())["queries"][0]
    header, _ = read_batch(summary["batch"])
    assert set(header) == HEADER_KEYS and header["n"] == 80
    with ldp.Accountant(out_dir / "analyzer.sqlite") as acc:
        (rec,) = acc.shuffle_records()
        assert rec.n_min == 80 and rec.epsilon_central == c["epsilon_central"] and float(acc.spent()) == 1.0
    est = row["estimate"]  # k-RR's raw unbiased estimate of the 80 opened reports: it sums to one exactly
    assert len(est) == 8 and sum(e["estimate"] for e in est) == pytest.approx(1.0, abs=1e-12)
    assert all(0.0 <= e["ci_lower"] <= e["ci_upper"] <= 1.0 for e in est)


@pytest.mark.parametrize("extra, says", [
    (["--delta", "1e-6"], "--delta is the delta of a shuffled collection"),
    (["--shuffle"], "--shuffle needs --delta"),
    (["--shuffle", "--delta", "2"], "--delta must be in (0, 1)"),
    (["--shuffle", "--delta", "nan"], "--delta must be in (0, 1)"),
    (["--min-batch", "81"], "--min-batch must be at most the simulated devices"),
])
def test_simulate_shuffle_options_are_checked_before_anything_runs(tmp_path, capsys, extra, says):
    from ldp_plugin.cli import main as ldp_main

    out_dir = tmp_path / "sim"
    code = ldp_main(["federated", "simulate", "--nodes", "2", "--users-per-node", "40", "--mechanism", "krr", "--d", "8", "--epsilon", "1",
                     "--device-cap", "4", "--out", str(out_dir), *extra])
    assert code == 2 and says in capsys.readouterr().err
    assert not (out_dir / "analyzer.sqlite").exists() and not (out_dir / "superlink.db").exists()


def test_simulate_shuffle_refuses_a_memoized_series_before_flower_starts(tmp_path, capsys):
    from ldp_plugin.cli import main as ldp_main

    out_dir = tmp_path / "sim"
    code = ldp_main(["federated", "simulate", "--nodes", "2", "--users-per-node", "40", "--mechanism", "loloha", "--d", "8", "--param", "epsilon_perm=2",
                     "--param", "epsilon_1=1", "--device-cap", "4", "--shuffle", "--delta", "1e-6", "--out", str(out_dir)])
    assert code == 2 and "memoized series" in capsys.readouterr().err
    assert not (out_dir / "superlink.db").exists() and not (out_dir / "app" / "state").exists()


@pytest.mark.slow
def test_tls_deployment_of_a_shuffled_collection_the_batch_holds_no_node_id(tmp_path):
    """The real deployment of test_federated_deploy.py (TLS, SuperNode authentication, two
    ``flower-supernode`` processes with their owners' device TOMLs), the shuffler as the ServerApp:
    the node ids the SuperLink assigned (``flwr supernode list``) appear nowhere in the batch, and
    the analyzer records the central (ε, δ). Every process is stopped in ``finally``."""
    import subprocess

    from ldp_plugin.federated.deploy import flower_tool, wait_for_run
    from tests.federated_deployment import Deployment

    from .test_federated_deploy import DEVICE as DEPLOY_DEVICE, DEVICES as DEPLOY_DEVICES, PLAN

    keys = generate_analyzer_keys(tmp_path / "analyzer")
    device = (DEPLOY_DEVICE.replace('keystore = "state/{partition-id}/keystore.json"\n',
                                    f'keystore = "state/{{partition-id}}/keystore.json"\nanalyzer_key = "{keys["public_key"]}"\n')
              .replace('allowed_mechanisms = ["oue"]', 'allowed_mechanisms = ["krr"]'))
    dep = Deployment(tmp_path, plan=PLAN.replace('mechanism = "oue"', 'mechanism = "krr"'), device=device)
    pyproject = dep.app / "pyproject.toml"  # the app `ldp federated new --shuffled` writes: the shuffler is the ServerApp
    text = pyproject.read_text()
    assert 'serverapp = "ldp_plugin.federated.app:server_app"' in text
    pyproject.write_text(text.replace('serverapp = "ldp_plugin.federated.app:server_app"', 'serverapp = "ldp_plugin.federated.shuffler_app:server_app"'))
    dep.repin()  # another bundle: its owners accept it
    try:
        dep.start()
        run = dep.run()
        summary = dep.summary("deploy", 1)
        dep.wait_summary(summary, 120)
        assert wait_for_run(run, "ldp-tls", env=dep.env, timeout=60)["status"] == "finished:completed"
        listed = subprocess.run([flower_tool("flwr"), "supernode", "list", "ldp-tls", "--format", "json"], env=dep.env, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stdout + listed.stderr
    finally:
        dep.stop()
    node_ids = [int(n["node-id"]) for n in json.loads(listed.stdout)["nodes"]]
    assert len(node_ids) == 2
    row = json.loads(summary.read_text())["queries"][0]
    assert row["status"] == "forwarded" and row["ciphertexts_held"] == 2 * DEPLOY_DEVICES and row["rejected_by_reason"] == {}
    raw = Path(row["batch"]).read_bytes()
    for nid in node_ids:
        for enc in (str(nid).encode(), nid.to_bytes(8, "little"), nid.to_bytes(8, "big"), f"{nid:x}".encode()):
            assert enc not in raw
    ledger = tmp_path / "analyzer.sqlite"
    ldp.Accountant.create(ledger, ldp.Population(name="analyzer", lifetime_cap="10")).close()
    out = analyze_batch(row["batch"], key=keys["private_key"], ledger=ledger, delta=DELTA)
    assert out["reports_accepted"] == 2 * DEPLOY_DEVICES and out["epsilon_central"] < 1.0
    with ldp.Accountant(ledger) as acc:
        assert [(r.batch_id, r.n_min) for r in acc.shuffle_records()] == [(row["batch_id"], 2 * DEPLOY_DEVICES)]
