"""Issue 34, every query kind over the wire, device TOML → device → envelopes → collector: a
frequency oracle, a set-valued query (values from a Parquet list column), a numeric mean (a CSV
float column) and a longitudinal series (keyed, charged through ``collection_cost``); each
estimate within its analytic interval of the truth, and a wrong variant rejected (power check)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, DeviceConfig, DeviceFleet, Query
from ldp_plugin.registry import build

N = 4000
Z = 4.5  # the randomization is the devices' OS CSPRNG (never seeded by a server): a 4.5 s.e. band fails w.p. < 1e-4


def _within(est, truth) -> bool:
    """Every item within Z analytic standard errors (s.e. from the upper 95% half-width)."""
    e, up = np.asarray(est.estimate, dtype=float), np.asarray(est.ci_upper, dtype=float)
    se = (up - e) / 1.959964
    return bool(np.all(np.abs(e - truth) <= Z * se))


def _device(tmp_path, source: str, column: str, cap: str = "8"):
    path = tmp_path / "device.toml"
    path.write_text(f'[device]\nledger = "s/ledger.sqlite"\nkeystore = "s/keys.json"\n\n[policy]\nlifetime_cap = "{cap}"\n'
                    f'max_epsilon_per_query = "4"\n\n[data]\nsource = "{source}"\ncolumn = "{column}"\n')
    cfg = DeviceConfig.load(path)
    DeviceFleet.init(cfg)
    return DeviceFleet.open(cfg)


def _collect(fleet, mech, qid):
    q = Query.for_mechanism(qid, mech, min_batch=N)
    rep = fleet.respond(q.to_json())
    col = Collector(q)
    assert col.ingest(rep["reports"]) == {"accepted": N, "rejected": {}}
    return col


def test_a_numeric_mean_from_a_csv_column(tmp_path):
    x = np.random.default_rng(11).beta(2, 5, N)
    pl.DataFrame({"reading": x}).write_csv(tmp_path / "r.csv")
    fleet = _device(tmp_path, "r.csv", "reading")
    mech = build("piecewise", epsilon=2.0)
    from ldp_plugin.federated.results import estimate_rows

    (row,) = estimate_rows(_collect(fleet, mech, "mean-1").estimate())  # the row a round summary holds
    value, lo, hi = row["estimate"], row["ci_lower"], row["ci_upper"]
    se = (hi - value) / 1.959964  # the analytic interval of the mechanism
    assert abs(value - x.mean()) <= Z * se
    assert abs(value - (x.mean() + 0.2)) > Z * se  # power: a mean 0.2 off is rejected


def test_a_set_valued_query_from_a_parquet_list_column(tmp_path):
    g = np.random.default_rng(12)
    sets = [sorted(int(v) for v in g.choice(8, size=g.integers(1, 4), replace=False, p=np.linspace(2, 1, 8) / np.linspace(2, 1, 8).sum()))
            for _ in range(N)]
    pl.DataFrame({"apps": sets}).write_parquet(tmp_path / "s.parquet")
    fleet = _device(tmp_path, "s.parquet", "apps")
    est = _collect(fleet, build("privset", epsilon=2.0, d=8, m=3), "sets-1").estimate(postprocess="none")
    truth = np.array([sum(i in s for s in sets) for i in range(8)]) / N
    assert _within(est, truth)
    assert not _within(est, np.eye(8)[7])  # power: every set holding only the rarest app is rejected


def test_a_frequency_query_and_a_keyed_series_charged_by_collection_cost(tmp_path):
    vals = np.random.default_rng(13).choice(8, size=N, p=np.linspace(3, 1, 8) / np.linspace(3, 1, 8).sum())
    pl.DataFrame({"app": vals}).write_parquet(tmp_path / "a.parquet")
    fleet = _device(tmp_path, "a.parquet", "app", cap="8")
    truth = np.bincount(vals, minlength=8) / N
    est = _collect(fleet, ldp.OUE(epsilon=1.0, d=8), "freq-1").estimate(postprocess="none")
    assert _within(est, truth) and not _within(est, np.eye(8)[7])  # power: all devices on the rarest app is rejected
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    before = fleet.ledger.spent()
    charged = []
    for day in range(1, 4):
        e = _collect(fleet, lol, f"day-{day}").estimate(postprocess="none")
        assert _within(e, truth) and not _within(e, np.eye(8)[7])  # power: all devices on the rarest app is rejected
        charged.append(fleet.ledger.spent() - before)
    assert charged == [sum(lol.collection_cost(t) for t in range(1, k + 1)) for k in (1, 2, 3)]
    keys = fleet.keys
    fleet.close()
    again = DeviceFleet.open(DeviceConfig.load(tmp_path / "device.toml"))
    assert again.keys == keys  # the series' keys survive a restart (keystore)


@pytest.mark.parametrize("field", ["spec", "epsilon"])
def test_the_query_schema_rejects_a_wrong_type(field):
    q = Query.for_mechanism("x", ldp.OUE(epsilon=1.0, d=8)).to_dict()
    q[field] = 5
    import json

    with pytest.raises(ldp.LDPParameterError):
        Query.from_json(json.dumps(q))
