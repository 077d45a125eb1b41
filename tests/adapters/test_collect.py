"""`ldp collect JOB.toml` end to end (Parquet and CSV inputs, outputs, JSON summary, errors) and
`ldp simulate` with the hashed/cohort mechanisms and sets."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from ldp_plugin.cli import main

APPS = ["maps", "mail", "chat", "news"]


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    n = 20_000
    sets = [list(rng.choice(APPS, size=int(rng.integers(0, 3)), replace=False)) for _ in range(n)]
    pl.DataFrame({"user": np.arange(n), "apps": sets, "app": rng.choice(APPS, size=n)}).write_parquet(tmp_path / "u.parquet")
    pl.DataFrame({"user": np.arange(n), "apps": [";".join(s) for s in sets]}).write_csv(tmp_path / "u.csv")
    truth = {a: sum(a in s for s in sets) / n for a in APPS}
    return tmp_path, truth


def _job(tmp_path, body):
    p = tmp_path / "job.toml"
    p.write_text(body)
    return str(p)


@pytest.mark.slow
def test_collect_sets_parquet_with_plot(data, capsys):
    tmp, truth = data
    job = _job(tmp, f"""
[input]
path = "u.parquet"
column = "apps"
user_id = "user"
[mechanism]
name = "orr"
epsilon = 3.0
m = 2
[collection]
cohort_salt = 5
seed = 1
candidates = {json.dumps(APPS)}
[output]
estimates = "out/est.parquet"
plot = "out/est.png"
reports = "out/reports"
""")
    assert main(["collect", job, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["users"] == 20_000 and summary["secure_randomness"] is False
    est = pl.read_parquet(tmp / "out/est.parquet")
    assert est.columns == ["item", "estimate", "std_error", "ci_lower", "ci_upper"]
    assert est["item"].to_list() == [*APPS, "<other>"]  # open alphabet: mass outside the candidates
    for row in est.iter_rows(named=True):
        assert abs(row["estimate"] - truth.get(row["item"], 0.0)) < 6 * row["std_error"] + 1e-9
    assert (tmp / "out/est.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pl.scan_parquet(tmp / "out/reports/*.parquet").select(pl.len()).collect().item() == 20_000


def test_collect_csv_lists_and_closed_alphabet(data, capsys):
    tmp, truth = data
    job = _job(tmp, f"""
[input]
path = "u.csv"
column = "apps"
list_separator = ";"
[mechanism]
name = "olh"
epsilon = 2.0
categories = {json.dumps(APPS)}
m = 2
[output]
estimates = "est.csv"
""")
    assert main(["collect", job]) == 0
    assert "ldp collect: 20,000 users" in capsys.readouterr().out
    est = pl.read_csv(tmp / "est.csv")
    assert sorted(est["item"].to_list()) == sorted(APPS)


@pytest.mark.parametrize(
    "body,msg",
    [
        ("[input]\npath='u.parquet'\ncolumn='app'\n[mechanism]\nname='krr'\nepsilon=1.0\nd=4\n[output]\nestimates='e.csv'\nextra=1\n", "unknown key"),
        ("[input]\npath='u.parquet'\n[mechanism]\nname='krr'\nepsilon=1.0\n[output]\nestimates='e.csv'\n", "column"),
        ("[input]\npath='nope.parquet'\ncolumn='app'\n[mechanism]\nname='krr'\nepsilon=1.0\nd=4\n[output]\nestimates='e.csv'\n", "does not exist"),
        ("[input]\npath='u.parquet'\ncolumn='app'\n[mechanism]\nname='zzz'\nepsilon=1.0\n[output]\nestimates='e.csv'\n", "unknown mechanism"),
        ("[input]\npath='u.parquet'\ncolumn='app'\n[mechanism]\nname='krr'\nepsilon=-1.0\ncategories=['maps']\n[output]\nestimates='e.csv'\n", "epsilon"),
        ("[input]\npath='u.parquet'\ncolumn='app'\n[mechanism]\nname='krr'\nepsilon=1.0\ncategories=['maps','mail']\n[output]\nestimates='e.csv'\n", "declared categories"),
    ],
)
def test_collect_errors_exit_2(data, capsys, body, msg):
    tmp, _ = data
    assert main(["collect", _job(tmp, body), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert msg in out["message"]


@pytest.mark.parametrize("mech,extra", [("olh", []), ("hadamard", []), ("orr", []), ("orappor", ["--param", "k=64", "--param", "cohorts=8"])])
def test_simulate_new_mechanisms_match_analytic(mech, extra, capsys):
    args = ["simulate", "--mechanism", mech, "--d", "32", "--epsilon", "2", "--n", "20000", "--repeats", "4", "--seed", "3", "--json"]
    assert main(args + extra) == 0
    out = json.loads(capsys.readouterr().out)
    # mean of 4 raw squared errors over 32 items vs the analytic (or predicted) MSE: relative sd
    # ≈ sqrt(2/(32·4)) ≈ 0.125, so [0.6, 1.5] is about ±4 sd; a variance off by 2× falls outside
    assert 0.6 < out["mean_l2_squared_raw"] / out["analytic_mse"] < 1.5


def test_simulate_sets(capsys):
    args = ["simulate", "--mechanism", "krr", "--d", "16", "--epsilon", "2", "--n", "20000", "--repeats", "4", "--m", "3", "--seed", "3", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["m"] == 3 and out["mechanism"]["set_mechanism"] == "sample-one"
    assert 0.6 < out["mean_l2_squared_raw"] / out["analytic_mse"] < 1.5
