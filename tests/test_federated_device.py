"""Issue 34, the device: configured only by its owner (device TOML named by the SuperNode's own
node_config), a ledger anchored in the keystore (missing / truncated / edited / replaced →
refusal until an explicit re-init), device keys in a 0600 keystore that survive restarts, and a
server that cannot raise any limit or move the ledger."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import threading

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import DeviceConfig, DeviceFleet, DeviceRefusal, Query

DEVICES = 30


def _write_device(tmp_path, *, cap="4", max_eps="2", allowed=None, source="ldp_plugin.federated.synthetic:zipf_values", extra_data=""):
    allowed_line = "" if allowed is None else f"allowed_mechanisms = {json.dumps(allowed)}\n"
    args = "" if source.endswith((".csv", ".parquet", ".sqlite")) else f"[data.args]\ndevices = {DEVICES}\nd = 4\nseed = \"{{partition-id}}\"\n"
    text = (f'[device]\nname = "n{{partition-id}}"\nledger = "state/{{partition-id}}/ledger.sqlite"\nkeystore = "state/{{partition-id}}/keys.json"\n\n'
            f'[policy]\nlifetime_cap = "{cap}"\nmax_epsilon_per_query = "{max_eps}"\n{allowed_line}\n[data]\nsource = "{source}"\n{extra_data}{args}')
    path = tmp_path / "device.toml"
    path.write_text(text)
    return path


def _open(path, pid=0):
    return DeviceFleet.open(DeviceConfig.load(path, {"partition-id": pid}))


def test_every_data_source_kind_gives_one_value_per_device(tmp_path):
    import polars as pl

    vals = np.arange(DEVICES) % 4
    pl.DataFrame({"app": vals}).write_csv(tmp_path / "v.csv")
    pl.DataFrame({"app": vals}).write_parquet(tmp_path / "v.parquet")
    con = sqlite3.connect(tmp_path / "v.sqlite")
    con.execute("CREATE TABLE readings (app INTEGER)")
    con.executemany("INSERT INTO readings VALUES (?)", [(int(v),) for v in vals])
    con.commit()
    con.close()
    for src, extra in (("v.csv", 'column = "app"\n'), ("v.parquet", 'column = "app"\n'), ("v.sqlite", 'column = "app"\ntable = "readings"\n')):
        cfg = DeviceConfig.load(_write_device(tmp_path, source=src, extra_data=extra), {"partition-id": 0})
        assert np.array_equal(cfg.load_values(), vals), src
    bad = DeviceConfig.load(_write_device(tmp_path, source="v.sqlite", extra_data='column = "app; DROP TABLE x"\ntable = "readings"\n'), {"partition-id": 0})
    with pytest.raises(ldp.LDPParameterError, match="identifiers"):
        bad.load_values()
    gen = DeviceConfig.load(_write_device(tmp_path), {"partition-id": 3})
    assert gen.load_values().shape == (DEVICES,) and gen.ledger.parent.name == "3"


def test_open_never_creates_and_init_is_explicit(tmp_path):
    path = _write_device(tmp_path)
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "not_initialized" and not (tmp_path / "state").exists()
    out = DeviceFleet.init(DeviceConfig.load(path, {"partition-id": 0}))
    assert out["devices"] == DEVICES
    ks = tmp_path / "state" / "0" / "keys.json"
    assert stat.S_IMODE(ks.stat().st_mode) == 0o600
    assert not [p for p in ks.parent.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ldp.LDPParameterError, match="--reset"):
        DeviceFleet.init(DeviceConfig.load(path, {"partition-id": 0}))
    assert _open(path).n_devices == DEVICES


def _spend_once(path, qid="q1"):
    fleet = _open(path)
    rep = fleet.respond(Query.for_mechanism(qid, ldp.KRR(epsilon=1.0, d=4)).to_json())
    assert len(rep["reports"]) == DEVICES
    fleet.close()


def test_a_missing_truncated_edited_or_replaced_ledger_refuses_until_reinit(tmp_path):
    from ldp_plugin.accountant import Accountant

    path = _write_device(tmp_path)
    cfg = DeviceConfig.load(path, {"partition-id": 0})
    DeviceFleet.init(cfg)
    _spend_once(path)
    ledger = cfg.ledger
    good = tmp_path / "good.sqlite"
    shutil.copy(ledger, good)

    ledger.unlink()  # missing after having existed
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "ledger_missing" and not ledger.exists()

    ledger.write_bytes(good.read_bytes()[:4096])  # truncated
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "ledger_corrupted"

    shutil.copy(good, ledger)  # edited: the spend row removed and the totals made consistent
    con = sqlite3.connect(ledger)
    con.execute("DELETE FROM spend")
    con.execute("DELETE FROM cohort_total")
    con.commit()
    con.close()
    Accountant(ledger).close()  # the ledger's own integrity check passes: only the anchor sees it
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "ledger_tampered"

    ledger.unlink()  # replaced by a fresh ledger of the same population
    Accountant.create(ledger, cfg.population(DEVICES)).close()
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "ledger_tampered"

    shutil.copy(good, ledger)  # the genuine ledger back: answered, and its spend is still there
    fleet = _open(path)
    assert fleet.ledger.spent() == 1
    fleet.close()
    out = DeviceFleet.init(cfg, reset=True)  # the owner's explicit decision
    assert out["previous_ledger"] and os.path.exists(out["previous_ledger"])
    assert _open(path).ledger.spent() == 0


def test_a_ledger_deleted_while_the_node_runs_refuses_the_next_query(tmp_path):
    path = _write_device(tmp_path)
    DeviceFleet.init(DeviceConfig.load(path, {"partition-id": 0}))
    fleet = _open(path)
    os.unlink(fleet.ledger.path)
    rep = fleet.respond(Query.for_mechanism("q", ldp.KRR(epsilon=1.0, d=4)).to_json())
    assert rep["reports"] == [] and rep["refused"] == {"ledger_missing": DEVICES}


def test_keys_survive_a_restart_and_a_lost_keystore_refuses_the_series(tmp_path):
    path = _write_device(tmp_path, cap="8")
    cfg = DeviceConfig.load(path, {"partition-id": 0})
    DeviceFleet.init(cfg)
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=4)
    a = _open(path)
    keys = list(a.keys)
    assert len(set(keys)) == DEVICES
    r1 = a.respond(Query.for_mechanism("day-1", lol).to_json())
    assert len(r1["reports"]) == DEVICES
    a.close()
    b = _open(path)  # a restarted SuperNode: the same device keys, the series continues
    assert b.keys == keys
    b.respond(Query.for_mechanism("day-2", lol).to_json())
    charged = lol.collection_cost(1) + lol.collection_cost(2)  # the series' single charge entry point
    assert b.ledger.spent() == charged
    b.close()
    os.unlink(cfg.keystore)  # lost: every query refused (the ledger can no longer be checked against its anchor)
    with pytest.raises(DeviceRefusal) as e:
        _open(path)
    assert e.value.reason == "keystore_missing"
    with pytest.raises(ldp.LDPParameterError, match="--reset"):
        DeviceFleet.init(cfg)  # never a silent new keystore
    out = DeviceFleet.init(cfg, rekey=True)  # the owner's explicit decision: a new secret for the same ledger
    assert out["series_refused_before_spend"] == 2
    c = _open(path)
    assert c.keys != keys
    rep = c.respond(Query.for_mechanism("day-3", lol).to_json())
    assert rep["reports"] == [] and rep["refused"] == {"keystore_missing": DEVICES}  # the old series: refused for good
    other = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=4, g=3)  # a new series under the new keys is answered
    assert len(c.respond(Query.for_mechanism("new-1", other).to_json())["reports"]) == DEVICES
    assert c.ledger.spent() == charged + other.collection_cost(1)


def test_concurrent_queries_to_one_device_are_charged_once(tmp_path):
    path = _write_device(tmp_path)
    DeviceFleet.init(DeviceConfig.load(path, {"partition-id": 0}))
    q = Query.for_mechanism("same", ldp.KRR(epsilon=1.0, d=4)).to_json()
    out = []

    def ask():
        f = _open(path)
        out.append(f.respond(q))
        f.close()

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    answered = [r for r in out if r["reports"]]
    assert answered and all(r["reports"] == answered[0]["reports"] for r in answered)  # one randomization, kept
    assert all(r["reports"] or r["refused"] in ({"in_progress": DEVICES}, {"interrupted": DEVICES}) for r in out)
    assert _open(path).ledger.spent() == 1


def test_a_server_cannot_raise_a_limit_move_the_ledger_or_seed_the_data(tmp_path):
    """Forged records and forged query fields, through the ClientApp's own handler and real Flower
    records: ignored (records other than the query) or refused (fields a query does not define);
    the owner's cap holds and nothing is written anywhere but the owner's ledger."""
    pytest.importorskip("flwr")
    from flwr.app import ConfigRecord, RecordDict

    from ldp_plugin.federated.app import device_answer

    path = _write_device(tmp_path, cap="4", max_eps="2", allowed=["krr", "oue"])
    node_config = {"device-config": str(path), "partition-id": 0}
    DeviceFleet.init(DeviceConfig.load(path, node_config))
    elsewhere = tmp_path / "server-chosen"
    forged = {"sim": ConfigRecord({"ledger-dir": str(elsewhere), "device-cap": "1000", "max-epsilon": "100", "seed": 5}),
              "policy": ConfigRecord({"max_epsilon_per_query": "100", "lifetime_cap": "1000", "allowed_mechanisms": "rappor"}),
              "node_config": ConfigRecord({"device-config": str(elsewhere / "d.toml")})}

    def ask(q_json):
        return device_answer(RecordDict({"query": ConfigRecord({"json": q_json}), **forged}), node_config)

    big = ask(Query.for_mechanism("big", ldp.KRR(epsilon=50.0, d=4)).to_json())
    assert big["refused"] == {"epsilon_above_policy": DEVICES} and big["reports"] == []
    other = ask(Query.for_mechanism("rap", ldp.OLH(epsilon=1.0, d=4)).to_json())
    assert other["refused"] == {"mechanism_not_allowed": DEVICES}
    doc = json.loads(Query.for_mechanism("x", ldp.KRR(epsilon=1.0, d=4)).to_json())
    for field, value in (("max_epsilon", "100"), ("ledger", str(elsewhere)), ("lifetime_cap", "1000"), ("seed", 5), ("policy", {"max": 9})):
        rep = ask(json.dumps({**doc, field: value}))
        assert rep["refused"] == {"malformed_query": DEVICES}, field
    answered = [ask(Query.for_mechanism(f"q{i}", ldp.KRR(epsilon=2.0, d=4)).to_json()) for i in range(4)]
    assert [len(r["reports"]) for r in answered] == [DEVICES, DEVICES, 0, 0]
    assert answered[3]["refused"] == {"budget_exhausted": DEVICES}
    fleet = _open(path)
    assert fleet.ledger.spent() == 4 and max(fleet.ledger.remaining_by_cohort()) == 0
    assert not elsewhere.exists()
    # the data are the owner's: generated from the owner's seed, never the server's
    assert np.array_equal(fleet.values, DeviceConfig.load(path, node_config).load_values())
