"""Shuffled releases in the ledger (issue 16, part 3): the local ε0 stays the enforced budget, the
central (ε, δ) of each recorded batch is composed per cohort with dp_accounting's PLD accountant,
and every refusal writes nothing."""

from __future__ import annotations

import sqlite3

import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.accountant import LedgerError
from ldp_plugin.amplification import amplify

MECH = ldp.KRR(epsilon=2.0, d=16)
N = 10**4


@pytest.fixture
def acc(tmp_path):
    a = ldp.Accountant.create(tmp_path / "ledger.sqlite", ldp.Population(name="app", lifetime_cap="10", cohorts=4))
    yield a
    a.close()


def _claims(a):
    return a._con.execute("SELECT count(*) FROM shuffle_claim").fetchone()[0]


@pytest.mark.slow
def test_record_is_the_amplified_bound_at_the_guaranteed_minimum(acc):
    acc.spend("q1", MECH)
    rec = acc.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N + 37, delta=1e-8)
    expected = amplify(MECH, N, 1e-8)  # at n_min, never at the observed size
    assert rec.epsilon_central == expected["epsilon"] and rec.epsilon_lower == expected["epsilon_lower"]
    assert rec.cohorts == (0, 1, 2, 3) and "trusted shuffler" in rec.assumption
    assert float(acc.spent()) == 2.0  # the local epsilon stays the enforced budget: recording spends nothing
    assert acc.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N + 37, delta=1e-8) == rec  # a repeat returns it
    assert acc.shuffle_records() == [rec]


@pytest.mark.slow
def test_central_epsilon_composes_per_cohort(acc):
    acc.spend("q1", MECH)
    acc.spend("q2", MECH, cohorts=[0, 1])
    acc.spend("q3", MECH, cohorts=[3])
    one = acc.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8).epsilon_central
    acc.record_shuffle("q2", MECH, batch_id="b2", n_min=N, n_observed=N, delta=1e-8, cohorts=[0])  # cohort 1 not shuffled
    out = acc.central_epsilon(1e-6)
    by = out["by_cohort"]
    assert by[2] == pytest.approx(one, rel=1e-9)                   # one shuffled release
    assert one < by[0] <= 2 * one + 1e-12                           # two shuffled releases (PLD composition)
    assert 2.0 < by[1] <= 2.0 + one + 1e-12                         # a shuffled one and a local one (ε0 centrally)
    assert by[3] == pytest.approx(2.0 + one, rel=1e-6)
    assert out["epsilon"] == max(by.values()) and out["local_epsilon"] == 4.0
    assert acc.central_epsilon(1e-6, cohorts=[2])["by_cohort"] == {2: by[2]}
    with pytest.raises(LDPParameterError, match="not above the sum"):
        acc.central_epsilon(1.5e-8)  # cohort 0 composes two releases of delta 1e-8 each


@pytest.mark.slow
def test_many_releases_compose_below_the_sum(acc):
    for i in range(12):
        acc.spend(f"q{i}", ldp.KRR(epsilon=0.5, d=16), cohorts=[0])
        acc.record_shuffle(f"q{i}", ldp.KRR(epsilon=0.5, d=16), batch_id=f"b{i}", n_min=N, n_observed=N, delta=1e-9, cohorts=[0])
    one = acc.shuffle_records()[0].epsilon_central
    total = acc.central_epsilon(1e-6)["epsilon"]
    assert one < total < 12 * one  # advanced composition beats the sum at 12 releases


def test_refusals_write_nothing(acc):
    acc.spend("q1", MECH, cohorts=[0, 1])
    acc.spend("q2", MECH, cohorts=[0])
    with pytest.raises(LedgerError, match="has not been charged"):
        acc.record_shuffle("nope", MECH, batch_id="b0", n_min=N, n_observed=N, delta=1e-8)
    with pytest.raises(LDPParameterError, match="below its guaranteed minimum"):
        acc.record_shuffle("q1", MECH, batch_id="b0", n_min=N, n_observed=N - 1, delta=1e-8)
    with pytest.raises(LDPParameterError, match="not touched"):
        acc.record_shuffle("q1", MECH, batch_id="b0", n_min=N, n_observed=N, delta=1e-8, cohorts=[2])
    with pytest.raises(LDPParameterError, match="local epsilon"):
        acc.record_shuffle("q1", ldp.KRR(epsilon=1.0, d=16), batch_id="b0", n_min=N, n_observed=N, delta=1e-8)
    for bad in ({"n_min": 1}, {"n_observed": 2.5}, {"delta": 0.0}, {"batch_id": ""}):
        kw = {"batch_id": "b0", "n_min": N, "n_observed": N, "delta": 1e-8} | bad
        with pytest.raises(LDPParameterError):
            acc.record_shuffle("q1", MECH, **kw)
    assert acc.shuffle_records() == []
    acc.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8, cohorts=[0])
    with pytest.raises(LDPParameterError, match="another query"):
        acc.record_shuffle("q2", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8)
    with pytest.raises(LDPParameterError, match="already claimed"):
        acc.record_shuffle("q1", MECH, batch_id="b2", n_min=N, n_observed=N, delta=1e-8, cohorts=[0, 1])
    with pytest.raises(LDPParameterError, match="other cohorts"):
        acc.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8, cohorts=[1])
    assert _claims(acc) == 1


def test_a_ledger_from_before_shuffle_records_gains_the_table(tmp_path):
    path = tmp_path / "old.sqlite"
    a = ldp.Accountant.create(path, ldp.Population(name="app", lifetime_cap="10"))
    a.spend("q1", MECH)
    a.close()
    con = sqlite3.connect(str(path))
    con.execute("DROP TABLE shuffle_claim")
    con.commit()
    con.close()
    a = ldp.Accountant(path)
    assert a.shuffle_records() == [] and a.central_epsilon(1e-6)["epsilon"] == pytest.approx(2.0, abs=2e-6)  # (2, 0)-DP at delta 1e-6
    a.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8)
    assert len(a.shuffle_records()) == 1
    a.close()


def test_cli_budget_central_and_choose_delta(tmp_path, cli):
    import json

    path = tmp_path / "ledger.sqlite"
    a = ldp.Accountant.create(path, ldp.Population(name="app", lifetime_cap="10"))
    a.spend("q1", MECH)
    rec = a.record_shuffle("q1", MECH, batch_id="b1", n_min=N, n_observed=N, delta=1e-8)
    a.close()

    def run(*argv):
        return cli(*argv)

    out = run("budget", "central", str(path), "--delta", "1e-6", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["central_epsilon"] == pytest.approx(rec.epsilon_central) and doc["local_epsilon"] == 2.0
    assert doc["shuffled_batches"][0]["batch_id"] == "b1"

    out = run("choose", "--d", "16", "--epsilon", "2", "--n", "2000", "--delta", "1e-8", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["ranking"]
    krr = next(r for r in rows if r["mechanism"] == "krr")
    assert krr["central_epsilon"] == pytest.approx(amplify(MECH, 2000, 1e-8)["epsilon"])
    assert all(0 < r["central_epsilon"] <= 2.0 for r in rows)
    bad = run("choose", "--d", "16", "--epsilon", "2", "--delta", "1.5")
    assert bad.returncode == 2 and "--delta" in bad.stderr and "Traceback" not in bad.stderr
