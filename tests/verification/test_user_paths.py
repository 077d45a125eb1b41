"""The user-paths layer: the Polars discovery, key–value and several-attribute namespaces, the
collect job's other paths, simulate, the discovery protocol and the ledger's audit — each held to
the library path, charges to the realized ε, refusals to an unchanged ledger — and its seeded bugs
(a defective door swapped in for one case) are each caught."""

from __future__ import annotations

import pytest

import ldp_plugin as ldp
from ldp_plugin.accountant import Accountant, Population
from ldp_plugin.verification import user_paths as up


@pytest.fixture(autouse=True)
def _features():
    ldp.enable_ldp_features()  # the caller opts in (as ldp verify does)


@pytest.mark.parametrize("label", [label for label, _run in up.CASES])
def test_each_case_passes_on_the_library(tmp_path, label):
    (row,) = up.user_path_rows(seed=3, quick=True, only=(label,))
    assert row["passed"], row["failures"]
    assert row["workflow"] and row["name"] == label


def test_every_seeded_bug_is_caught_and_its_door_restored():
    real = {bug: getattr(module, attr) for bug, (_label, module, attr, _defect) in up.USER_PATH_BUGS.items()}
    rows = up.user_path_self_test(seed=1, quick=True)
    assert {r["name"]: r["caught"] for r in rows} == {bug: True for bug in up.USER_PATH_BUGS}, [r["failures"] for r in rows]
    assert all(r["seeded_bug"] and r["caught_by"] == [up.USER_PATH_BUGS[r["name"]][0]] for r in rows)
    assert all(getattr(module, attr) is real[bug] for bug, (_label, module, attr, _defect) in up.USER_PATH_BUGS.items())


def test_a_refusal_that_spends_is_reported(tmp_path):
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="5")) as acc:
        fails = up._refusals_spend_nothing(acc, [("a spend that is no refusal", lambda: acc.spend("q", 1.0), None),
                                                 ("a refusal that echoes", lambda: acc.spend("", 1.0, params={"x": up.SENTINEL}), None)])
        assert fails == ["a spend that is no refusal: accepted", "a spend that is no refusal: the refused call changed the ledger"]


def test_collect_refuses_params_that_are_no_table_in_its_own_words(tmp_path):
    (tmp_path / "in.csv").write_text("user,v\n1,a\n2,b\n")
    (tmp_path / "j.toml").write_text('[input]\npath="in.csv"\ncolumn="v"\n[mechanism]\nname="krr"\nepsilon=1.0\ncategories=["a","b"]\nparams=3\n'
                                     '[output]\nestimates="e.csv"\n')
    rc, _out, err = up._run(["collect", tmp_path / "j.toml"])
    assert rc == 2 and "params must be a table" in err and "TypeError" not in err
    assert up._clean_exit(["collect", tmp_path / "j.toml"], "params") == []


def test_ldp_verify_reports_the_rows_and_the_caught_bugs(tmp_path, monkeypatch, capsys):
    from ldp_plugin.cli import main, verify

    label = up.CASES[2][0]  # the several-attribute namespace (fast)
    monkeypatch.setenv("LDP_PLUGIN_STATE", str(tmp_path / "state"))
    monkeypatch.setattr(verify, "verification_rows", lambda names, **kw: up.user_path_rows(seed=kw["seed"], quick=kw["quick"], only=(label,)))
    monkeypatch.setattr(verify, "self_test", lambda **kw: [])
    monkeypatch.setattr(verify, "system_self_test", lambda **kw: [])
    monkeypatch.setattr(up, "USER_PATH_BUGS", {"attributes-next-stream": up.USER_PATH_BUGS["attributes-next-stream"]})
    assert main(["verify", "--quick", "--self-test", "--report", str(tmp_path / "v.md")]) == 0
    out = capsys.readouterr().out
    assert label in out and "PASS" in out and "attributes-next-stream" in out and "CAUGHT" in out
    text = (tmp_path / "v.md").read_text()
    assert f"| {label} |" in text and "CAUGHT by " + label in text


def test_reports_that_are_no_frame_are_refused_by_their_type():
    from ldp_plugin._errors import LDPInputError
    from ldp_plugin.adapters import polars_key_value, polars_multi

    for fn, mech in ((polars_key_value.key_values, ldp.PCKV(epsilon=1.0, d=3, ell=2)), (polars_multi.attribute_frequencies, ldp.SMP(epsilon=1.0, domains=(2, 3)))):
        with pytest.raises(LDPInputError, match="reports must be a Polars DataFrame"):  # was an AttributeError
            fn({"report": [1]}, mech)


@pytest.mark.parametrize("unknown", ["error", "other"])
def test_a_null_is_refused_before_the_spend_on_an_open_alphabet_or_with_other(tmp_path, unknown):
    import polars as pl

    from ldp_plugin._errors import LDPInputError
    from ldp_plugin.registry import build

    mech = build("orr", epsilon=1.0, k=4, cohorts=2) if unknown == "error" else ldp.KRR(epsilon=1.0, categories=["a", "b", "other"])
    with Accountant.create(tmp_path / "l", Population(name="p", lifetime_cap="5")) as acc:
        with pytest.raises(LDPInputError, match="null value at row 2"):  # found after the spend before: the budget was lost
            pl.DataFrame({"v": ["a", "zz", None]}).ldp.privatize("v", mech, unknown=unknown, accountant=acc, query_id="q")
        assert acc.spent() == 0 and acc.release_status("q") is None


@pytest.mark.parametrize("column, bad", [("x", None), ("v", "zq7")])
def test_a_partitioned_ledgered_job_checks_every_partition_before_the_spend(tmp_path, column, bad):
    import polars as pl

    for j in range(2):
        pl.DataFrame({"user": [10 * j + k for k in range(10)], "v": ["a", "b"] * 4 + ["a", bad or "b"]}).write_parquet(tmp_path / f"p-{j}.parquet")
    Accountant.create(tmp_path / "l.ledger", Population(name="p", lifetime_cap="5")).close()
    (tmp_path / "j.toml").write_text(f'[input]\npath = "p-*.parquet"\ncolumn = "{column}"\n[mechanism]\nname = "krr"\nepsilon = 1.0\n'
                                     'categories = ["a", "b"]\n[output]\nestimates = "e.csv"\nreports = "r"\n[budget]\nledger = "l.ledger"\nquery_id = "q"\n')
    rc, _out, err = up._run(["collect", tmp_path / "j.toml", "--executor", "local"])
    assert rc == 2 and ("nothing was spent" in err or "not in the frame" in err)
    assert "zq7" not in err
    with Accountant(tmp_path / "l.ledger") as acc:  # the spend came first before: the budget lost, the release partial
        assert acc.spent() == 0 and acc.history() == []
