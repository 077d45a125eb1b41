"""Operations that must not surprise: ``ldp federated certs`` never silently replaces a CA and its
keys, the ``ldp federated`` subcommands accept ``--json``, a ledger's missing directory is refused
(``--parents`` creates it), and ``ldp aggregate`` answers for every family in text and JSON."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.accountant import LedgerError
from ldp_plugin.mechanisms.reports import reports_to_frame
from ldp_plugin.persist import AccumulatorState, write_reports

from .harness import assert_clear_cli, run_cli

pytest.importorskip("cryptography")


def test_certs_refuse_an_existing_directory(tmp_path):
    d = str(tmp_path / "certs")
    rc, out, _, _ = run_cli(["federated", "certs", d, "--nodes", "1", "--json"])
    assert rc == 0 and "tls" in json.loads(out)
    before = (tmp_path / "certs" / "server.key").read_bytes()
    assert_clear_cli(["federated", "certs", d, "--nodes", "1"], ["--force"])
    assert_clear_cli(["federated", "certs", d, "--nodes", "1", "--json"], ["--force"])
    assert (tmp_path / "certs" / "server.key").read_bytes() == before
    rc, _, _, _ = run_cli(["federated", "certs", d, "--nodes", "1", "--force"])
    assert rc == 0 and (tmp_path / "certs" / "server.key").read_bytes() != before


def test_federated_subcommands_take_json(tmp_path):
    rc, out, _, _ = run_cli(["federated", "new", str(tmp_path / "app"), "--json"])
    assert rc == 0 and "pyproject.toml" in json.loads(out)["written"]
    rc, out, _, _ = run_cli(["federated", "analyzer-keys", str(tmp_path / "ak"), "--json"])
    assert rc == 0 and json.loads(out)
    assert_clear_cli(["federated", "device", "init", str(tmp_path / "missing.toml"), "--json"], ["missing.toml"])


def test_ledger_parent_directory_is_not_created_silently(tmp_path):
    path = tmp_path / "typo" / "ledger.sqlite"
    with pytest.raises(LedgerError, match="does not exist: create it first, or pass parents=True"):
        ldp.Accountant.create(path, ldp.Population(name="p", lifetime_cap="1"))
    assert not path.parent.exists()
    assert_clear_cli(["budget", "init", str(path), "--population", "p", "--lifetime-cap", "1"], ["--parents"])
    rc, _, _, _ = run_cli(["budget", "init", str(path), "--population", "p", "--lifetime-cap", "1", "--parents"])
    assert rc == 0 and path.exists()


FAMILIES = [(ldp.SquareWave(epsilon=1.0, grid=16), lambda g: g.random(300)),
            (ldp.HierarchicalHistogram(epsilon=1.0, buckets=8), lambda g: g.random(300)),
            (ldp.HaarHRR(epsilon=1.0, buckets=8), lambda g: g.random(300)),
            (ldp.Piecewise(epsilon=1.0), lambda g: g.random(300)),
            (ldp.PCKV(epsilon=1.0, d=3, ell=1), lambda g: [[(int(i % 3), 0.5)] for i in range(300)]),
            (ldp.SMP(epsilon=1.0, domains=(3, 4)), lambda g: g.integers(0, [3, 4], size=(300, 2)))]


@pytest.mark.parametrize("mech,make", FAMILIES, ids=[m.name for m, _ in FAMILIES])
def test_aggregate_every_family(tmp_path, mech, make):
    gen = np.random.default_rng(0)
    for i in range(2):
        write_reports(reports_to_frame(mech, mech.randomize(make(gen), rng=i)), tmp_path / f"r{i}.parquet", mech)
    state = str(tmp_path / "state.json")
    rc, out, err, _ = run_cli(["aggregate", str(tmp_path / "r0.parquet"), "--mechanism-from-metadata", "--state", state])
    assert rc == 0 and "Traceback" not in out + err and "ldp aggregate: 300 reports" in out
    rc, out, _, _ = run_cli(["aggregate", os.path.join(tmp_path, "r*.parquet"), "--mechanism-from-metadata", "--state", state, "--json"])
    doc = json.loads(out)
    assert rc == 0 and doc["n"] == 600 and doc["files_added"] == 1 and doc["estimates"]
    assert AccumulatorState.load(state).n == 600
    if mech.input_kind != "value":  # frequency-oracle options are refused, not ignored
        assert_clear_cli(["aggregate", str(tmp_path / "r0.parquet"), "--mechanism-from-metadata", "--postprocess", "none"], ["postprocess"])


def test_multi_attribute_and_key_value_adapters_spend_from_a_ledger(tmp_path):
    import polars as pl

    import ldp_plugin.adapters  # noqa: F401  (the ldp namespace)

    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="2"))
    smp = ldp.SMP(epsilon=1.0, domains=(3, 4))
    df = pl.DataFrame({"a": [0, 1, 2], "b": [3, 0, 1]})
    with pytest.raises(ldp.LDPParameterError, match="need an accountant"):
        df.ldp.privatize_attributes(["a", "b"], smp, query_id="q0")
    bad = pl.DataFrame({"a": [0, 1, 5], "b": [3, 0, 1]})
    with pytest.raises(ldp.LDPInputError, match="outside"):
        bad.ldp.privatize_attributes(["a", "b"], smp, accountant=acc, query_id="q0")
    assert acc.remaining() == 2  # a failed check spends nothing
    r = df.ldp.privatize_attributes(["a", "b"], smp, accountant=acc, query_id="q1", keep_reports=True)
    assert r.height == 3 and acc.remaining() == 1
    assert df.ldp.privatize_attributes(["a", "b"], smp, accountant=acc, query_id="q1", keep_reports=True).equals(r)  # a retry
    assert acc.remaining() == 1
    pckv = ldp.PCKV(epsilon=1.0, d=3, ell=2)
    long = pl.DataFrame({"k": [[0, 1, 2], [2]], "v": [[0.5, -0.5, 0.1], [0.1]]})
    with pytest.raises(ldp.LDPInputError, match="more than ell=2"):
        long.ldp.privatize_key_values("k", pckv, values="v", accountant=acc, query_id="q2")
    assert acc.remaining() == 1
    kv = pl.DataFrame({"k": [[0, 1], [2]], "v": [[0.5, -0.5], [0.1]]})
    assert kv.ldp.privatize_key_values("k", pckv, values="v", accountant=acc, query_id="q2").height == 2
    assert acc.remaining() == 0
    with pytest.raises(ldp.BudgetExceededError):
        kv.ldp.privatize_key_values("k", pckv, values="v", accountant=acc, query_id="q3")


@pytest.mark.parametrize("name", ["square-wave", "bucketed", "haar-hrr", "hierarchical-histogram", "piecewise", "duchi", "pckv", "smp",
                                  "smp-pairs", "rsfd", "spl"])
def test_demo_knows_every_family(name):
    rc, out, err, _ = run_cli(["demo", "--mechanism", name, "--epsilon", "2", "--n", "3000", "--seed", "1", "--json"], seconds=60)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["rows"] and doc["interval_kind"] in ("interval", "bound", "variance-only")
    rc, out, _, _ = run_cli(["demo", "--mechanism", name, "--epsilon", "2", "--n", "3000", "--seed", "1"], seconds=60)
    assert rc == 0 and "true values inside their intervals" in out


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs a /proc pseudo-filesystem")
def test_unwritable_output_under_a_pseudo_filesystem_costs_nothing(tmp_path):
    import polars as pl

    import ldp_plugin.adapters  # noqa: F401  (the ldp namespace)

    acc = ldp.Accountant.create(tmp_path / "l.sqlite", ldp.Population(name="p", lifetime_cap="2"))
    df = pl.DataFrame({"user": [1, 2, 3], "x": ["a", "b", "a"]})
    krr = ldp.KRR(epsilon=1.0, categories=["a", "b"])
    with pytest.raises(ldp.LDPParameterError, match="cannot be created"):
        df.ldp.privatize("x", krr, user_id="user", sink="/proc/ldp-plugin-test/reports", accountant=acc, query_id="q")
    assert acc.remaining() == 2


@pytest.mark.parametrize("name,params", [("square-wave", "params = {grid = 32}"), ("piecewise", ""), ("bucketed", "params = {buckets = 8}")])
def test_collect_knows_number_families(tmp_path, name, params):
    import polars as pl

    pl.DataFrame({"user": np.arange(500), "x": np.random.default_rng(0).beta(2, 5, 500)}).write_parquet(tmp_path / "u.parquet")
    (tmp_path / "job.toml").write_text(f"[input]\npath='u.parquet'\ncolumn='x'\n[mechanism]\nname='{name}'\nepsilon=1.0\n{params}\n"
                                       "[output]\nestimates='e.csv'\n")
    rc, out, err, _ = run_cli(["collect", str(tmp_path / "job.toml"), "--json"], seconds=60)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["mechanism"]["mechanism"] == name and doc["top"] and (tmp_path / "e.csv").exists()
    rc, out, _, _ = run_cli(["collect", str(tmp_path / "job.toml")], seconds=60)
    assert rc == 0 and "Traceback" not in out


def test_collect_refuses_families_of_several_columns(tmp_path):
    import polars as pl

    pl.DataFrame({"x": [1, 2]}).write_parquet(tmp_path / "u.parquet")
    (tmp_path / "job.toml").write_text("[input]\npath='u.parquet'\ncolumn='x'\n[mechanism]\nname='pckv'\nepsilon=1.0\nd=3\n"
                                       "[output]\nestimates='e.csv'\n")
    assert_clear_cli(["collect", str(tmp_path / "job.toml")], ["privatize_key_values"])
