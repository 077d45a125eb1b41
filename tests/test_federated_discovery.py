"""Issue 34, heavy-hitter discovery over the wire: the ServerApp's round logic (``run_plan``) sends one
query per group (each discovery level, then the held-out group) through real Flower messages to
nodes running the real device side (device TOML, ledger, keystore; the loopback grid of
test_federated_server.py replaces only the transport). Checked: every device answers exactly one
group's query and is charged ε once per collection; the groups are data-independent and sized by
the protocol's shares; the top strings are discovered with intervals; a rerun answers from the kept
replies; a forged group description or a repeated collection under another group gets nothing more."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, RecordDict  # noqa: E402

from ldp_plugin.federated import DeviceConfig, DeviceFleet, Query  # noqa: E402
from ldp_plugin.federated.app import device_answer, run_plan  # noqa: E402
from ldp_plugin.federated.discovery import device_groups, in_domain, level_queries  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from ldp_plugin.federated.synthetic import WORDS, zipf_words  # noqa: E402
from tests.test_federated_server import LoopbackGrid, _honest, flower_task  # noqa: E402,F401

DEVICES = 1500
PARAMS = {"alphabet": "abcdefghijklmnopqrstuvwxyz", "max_length": 5, "top_k": 3}


def _app(tmp_path: Path, nodes: int = 2) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "device.toml").write_text(
        '[device]\nname = "n{partition-id}"\nledger = "s/{partition-id}/l.sqlite"\nkeystore = "s/{partition-id}/k.json"\n\n'
        '[policy]\nlifetime_cap = "4"\nmax_epsilon_per_query = "3"\nallowed_mechanisms = ["pem", "oue"]\n\n'
        '[data]\nsource = "ldp_plugin.federated.synthetic:zipf_values"\n'
        f'[data.args]\ndevices = {DEVICES}\nd = 8\nseed = "1-{{partition-id}}"\n\n'
        '[strings]\nsource = "ldp_plugin.federated.synthetic:zipf_words"\n'
        f'[strings.args]\ndevices = {DEVICES}\nwords = 5\nseed = "2-{{partition-id}}"\n')
    for pid in range(nodes):
        DeviceFleet.init(DeviceConfig.load(app / "device.toml", {"partition-id": pid}))
    return app


def _plan(tmp_path: Path, epsilon: str = "3") -> Plan:
    return Plan.from_dict({"name": "hh", "rounds": 1, "min_batch": 100, "out_dir": "out", "round_timeout": 5, "max_devices_per_node": 10_000,
                           "expected_nodes": 2, "node_wait": 0}, [{"name": "words", "mechanism": "pem", "epsilon": epsilon, "params": PARAMS}], tmp_path)


def _charges(ledger: Path) -> np.ndarray:
    con = sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT epsilon, cohorts FROM spend").fetchall()
    finally:
        con.close()
    per = np.zeros(DEVICES, dtype=object)
    per[:] = Fraction(0)
    for eps, cohorts in rows:
        for c in json.loads(cohorts):
            per[c] += Fraction(eps)
    return per


@pytest.mark.slow
def test_discovery_over_the_wire_charges_each_device_once_and_finds_the_top_words(tmp_path):
    app = _app(tmp_path)
    grid = LoopbackGrid({10 + pid: _honest(app, pid) for pid in range(2)})
    plan = _plan(tmp_path)
    [summary] = run_plan(grid, plan)
    [row] = summary["queries"]
    assert row["kind"] == "discovery" and row["status"] == "complete", row.get("incomplete_reason")
    groups = row["groups"]
    protocol, _ = level_queries("pem", "3", PARAMS, "hh/words/r1")
    assert len(groups) == len(protocol.shares) and groups[-1]["held_out"]
    # every device answered exactly one group's query; the others counted it as another group's
    assert sum(g["reports_accepted"] for g in groups) == 2 * DEVICES
    for g in groups:
        assert g["reports_accepted"] + g["devices_in_other_groups"] == 2 * DEVICES and g["node_errors"] == {}
    # group sizes follow the shares (binomial, ±5 sd): the assignment is the protocol's, not all devices everywhere
    total = sum(protocol.shares)
    for g, share in zip(groups, protocol.shares):
        p = share / total
        assert abs(g["reports_accepted"] - 2 * DEVICES * p) <= 5 * np.sqrt(2 * DEVICES * p * (1 - p)), (g["group"], g["reports_accepted"])
    # each device charged ε = 3 exactly once for the whole collection
    for pid in range(2):
        per = _charges(app / "s" / str(pid) / "l.sqlite")
        assert set(per.tolist()) == {Fraction(3)}
    # the discovered strings: the two most frequent words, the heaviest inside its interval (truth from the devices' data)
    truth = np.concatenate([zipf_words(DEVICES, f"2-{pid}", words=5) for pid in range(2)])
    found = {r["item"]: r for r in row["discovered"]["items"]}
    assert {WORDS[0], WORDS[1]} <= set(found), (sorted(found), row["discovered"]["levels"], [(g["reports_accepted"], g["refused_by_reason"]) for g in groups])
    top = found[WORDS[0]]
    f0 = float(np.mean(truth == WORDS[0]))
    assert abs(top["estimate"] - f0) <= 5 * top["std_error"] and top["ci_lower"] <= top["ci_upper"]
    assert (tmp_path / "out" / "hh" / "round-0001" / "words" / "group-0").is_dir()

    # a rerun of the round: the same group queries, answered from the kept replies, charged once
    [again] = run_plan(LoopbackGrid({10 + pid: _honest(app, pid) for pid in range(2)}), plan)
    row2 = again["queries"][0]
    assert row2["status"] == "complete" and row2["reports_from_kept_replies"] == 2 * DEVICES
    assert set(_charges(app / "s" / "0" / "l.sqlite").tolist()) == {Fraction(3)}


def test_a_forged_group_or_collection_gets_no_second_report(tmp_path):
    app = _app(tmp_path, nodes=1)
    node_config = {"device-config": str(app / "device.toml"), "partition-id": 0}
    _, queries = level_queries("pem", "3", PARAMS, "hh/words/r1")

    def ask(q: Query) -> dict:
        return device_answer(RecordDict({"query": ConfigRecord({"json": q.to_json()})}), node_config)

    first = ask(queries[0])
    n0 = len(first["reports"])
    assert 0 < n0 < DEVICES and first["refused"] == {"other_group": DEVICES - n0}
    # the same collection's group 0 again but claiming level 1: the devices in group 1 answer, nobody answers twice
    forged = Query.for_mechanism(queries[1].query_id + "x", queries[1].mechanism(), discovery=queries[1].discovery)
    second = ask(forged)
    # a query whose spec is not its group's oracle (e.g. level 0's oracle under level 1's description) is refused whole
    mixed = Query.for_mechanism(queries[1].query_id, queries[0].mechanism(), discovery=queries[1].discovery)
    assert ask(mixed)["refused"] == {"malformed_query": DEVICES}
    # the group description cannot move devices already charged: a rebuilt level-0 query asks the same devices, who refuse
    relabel = Query.for_mechanism(queries[0].query_id + "-again", queries[0].mechanism(), discovery=queries[0].discovery)
    third = ask(relabel)
    assert third["reports"] == [] and third["refused"].get("already_answered") == n0
    per = _charges(app / "s" / "0" / "l.sqlite")
    assert max(per.tolist()) == Fraction(3) and sum(1 for x in per if x) == n0 + len(second["reports"])
    # a discovery the device's policy does not allow (treehist) or above its max ε is refused before anything
    _, tq = level_queries("treehist", "3", PARAMS, "hh/other/r1")
    assert ask(tq[0])["refused"] == {"mechanism_not_allowed": DEVICES}
    _, big = level_queries("pem", "3.5", PARAMS, "hh/big/r1")
    assert ask(big[0])["refused"] == {"epsilon_above_policy": DEVICES}
    # a discovery description that carries anything but protocol parameters (a ledger, a cap) is refused whole
    for extra in ({"ledger": str(tmp_path / "elsewhere")}, {"lifetime_cap": "1000"}):
        d = {**queries[2].discovery, "params": {**queries[2].discovery["params"], **extra}}
        assert ask(Query.for_mechanism("forged", queries[2].mechanism(), discovery=d))["refused"] == {"malformed_query": DEVICES}
    assert ask(Query.for_mechanism("forged", queries[2].mechanism(), discovery={**queries[2].discovery, "budget": "9"}))["refused"] == {
        "malformed_query": DEVICES}
    assert not (tmp_path / "elsewhere").exists() and max(_charges(app / "s" / "0" / "l.sqlite").tolist()) == Fraction(3)


def test_groups_are_keyed_uniform_and_strings_are_cut_to_the_domain():
    keys = [bytes([i % 256, i // 256]) * 16 for i in range(6000)]
    g = device_groups(keys, "collection-a", (1, 1, 2))
    counts = np.bincount(g, minlength=3)
    expected = np.array([0.25, 0.25, 0.5]) * len(keys)
    assert np.all(np.abs(counts - expected) <= 5 * np.sqrt(expected))  # power: the shares (1, 1, 2), not uniform thirds
    assert not np.all(np.abs(counts - len(keys) / 3) <= 5 * np.sqrt(len(keys) / 3))
    assert (device_groups(keys, "collection-b", (1, 1, 2)) != g).mean() > 0.4  # a new collection redraws the groups
    assert in_domain(["maps!", "Mail", "toolongword"], "abcdefghijklmnopqrstuvwxyz", 5).to_list() == ["maps", "", "toolo"]
