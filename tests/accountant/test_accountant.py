"""The budget accountant: exact composition per cohort, atomic check-then-spend, persistence,
concurrency (many processes), crashes (SIGKILL), retries, OpenDP filters."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp_plugin as ldp
from ldp_plugin import Accountant, BudgetExceededError, LedgerError, Population
from ldp_plugin.accountant import PrecheckedFilter

dp.enable_features("contrib", "honest-but-curious")


def _new(tmp_path, **kw):
    pop = Population(**{"name": "users", "lifetime_cap": "1", "cohorts": 4, **kw})
    return Accountant.create(tmp_path / "ledger.sqlite", pop)


def test_basic_spend_refuse_and_exact_arithmetic(tmp_path):
    acc = _new(tmp_path)
    assert acc.remaining() == 1
    acc.spend("a", ldp.make_krr(epsilon=0.25, d=4))
    assert acc.remaining() == Fraction(3, 4)
    with pytest.raises(BudgetExceededError) as e:
        acc.spend("b", ldp.make_krr(epsilon=0.8, d=4))
    assert isinstance(e.value, ValueError)
    assert e.value.requested == Fraction(0.8) and e.value.remaining == Fraction(3, 4) and e.value.cap == "lifetime"
    assert [r.query_id for r in acc.history()] == ["a"]  # the refused query spent nothing
    # ten measurements reporting 0.1 (a float above 1/10) do not fit a cap of exactly 1
    acc2 = Accountant.create(tmp_path / "l2.sqlite", Population(name="p", lifetime_cap=1.0))
    for i in range(9):
        acc2.spend(f"q{i}", 0.1)
    with pytest.raises(BudgetExceededError):
        acc2.spend("q9", 0.1)
    # ...while exact tenths do
    acc3 = Accountant.create(tmp_path / "l3.sqlite", Population(name="p", lifetime_cap=1.0))
    for i in range(10):
        acc3.spend(f"q{i}", Fraction(1, 10))
    assert acc3.remaining() == 0


def test_parallel_cohorts_and_periods(tmp_path):
    acc = _new(tmp_path, period_cap="0.5", period="day")
    d1 = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)
    acc.spend("c0", 0.5, cohorts=[0], when=d1)
    acc.spend("c1", 0.5, cohorts=[1, 2], when=d1)  # disjoint cohorts: parallel composition
    assert acc.remaining([3], when=d1) == Fraction(1, 2)
    with pytest.raises(BudgetExceededError) as e:
        acc.spend("c0-again", 0.25, cohorts=[0, 3], when=d1)  # period cap of cohort 0
    assert e.value.cap == "day"
    acc.spend("c0-next-day", 0.5, cohorts=[0, 3], when=d1 + timedelta(days=1))
    assert acc.remaining([0], when=d1 + timedelta(days=2)) == 0  # lifetime cap reached
    with pytest.raises(BudgetExceededError) as e:
        acc.spend("c0-day3", 0.1, cohorts=[0], when=d1 + timedelta(days=2))
    assert e.value.cap == "lifetime"
    with pytest.raises(ldp.LDPParameterError):
        Population(name="p", lifetime_cap=1, period_cap=2, period="day")  # no silent renewal beyond the lifetime cap


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from([0.1, 0.25, 1 / 3, 0.5, 0.7, Fraction(1, 7), Fraction(3, 10)]),
            st.sets(st.integers(0, 3), min_size=1, max_size=4),
            st.integers(0, 2),
        ),
        max_size=25,
    )
)
def test_remaining_equals_brute_force(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("prop") / "l.sqlite"
    acc = Accountant.create(path, Population(name="p", lifetime_cap="1.5", period_cap="1", period="day", cohorts=4))
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    accepted = []
    for i, (eps, cs, day) in enumerate(ops):
        when = base + timedelta(days=day)
        e = Fraction(eps)
        life = max(sum((a for a, c, d in accepted if k in c), Fraction(0)) for k in cs)
        per = max(sum((a for a, c, d in accepted if k in c and d == day), Fraction(0)) for k in cs)
        fits = life + e <= Fraction(3, 2) and per + e <= 1
        if fits:
            acc.spend(f"q{i}", eps, cohorts=cs, when=when)
            accepted.append((e, cs, day))
        else:
            with pytest.raises(BudgetExceededError):
                acc.spend(f"q{i}", eps, cohorts=cs, when=when)
    for k in range(4):
        assert acc.spent([k]) == sum((a for a, c, d in accepted if k in c), Fraction(0))
    assert len(acc.history()) == len(accepted)
    acc.close()


def _ledger_bytes(path):
    out = []
    for suffix in ("", "-wal"):
        p = str(path) + suffix
        out.append(Path(p).read_bytes() if os.path.exists(p) else b"")
    return out


def test_refused_query_leaves_ledger_unchanged_byte_for_byte(tmp_path):
    acc = _new(tmp_path)
    acc.spend("a", 0.9)
    before = _ledger_bytes(acc.path)
    for eps in (0.2, 5.0):
        with pytest.raises(BudgetExceededError):
            acc.spend(f"big-{eps}", eps)
    assert _ledger_bytes(acc.path) == before


def test_restart_reload_and_ledger_errors(tmp_path):
    acc = _new(tmp_path)
    acc.spend("a", 0.3, cohorts=[1])
    acc.close()
    again = Accountant(tmp_path / "ledger.sqlite")
    assert again.spent([1]) == Fraction(0.3) and again.population.cohorts == 4
    with pytest.raises(LedgerError, match="another definition"):
        Accountant(tmp_path / "ledger.sqlite", Population(name="users", lifetime_cap="2", cohorts=4))
    with pytest.raises(LedgerError, match="does not exist"):
        Accountant(tmp_path / "nope.sqlite")
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError):
        Accountant(bad)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE x (y)").connection.close()
    with pytest.raises(LedgerError, match="not an ldp-plugin ledger"):
        Accountant(other)
    con = sqlite3.connect(tmp_path / "ledger.sqlite")
    con.execute("UPDATE meta SET value = replace(value, '\"1/1\"', '\"9/1\"') WHERE key = 'population'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="fingerprint"):
        Accountant(tmp_path / "ledger.sqlite")


def test_retry_is_charged_once_and_returns_kept_reports(tmp_path):
    acc = _new(tmp_path)
    m = ldp.make_krr(epsilon=0.4, d=5, unit="population")
    data = np.arange(100) % 5
    r1 = acc.run("daily-1", m, data, keep_reports=True)
    r2 = acc.run("daily-1", m, data, keep_reports=True)
    assert np.array_equal(r1, r2) and acc.spent() == Fraction(0.4)
    with pytest.raises(ldp.LDPParameterError, match="different query"):
        acc.spend("daily-1", ldp.make_krr(epsilon=0.5, d=5))
    m2 = ldp.make_krr(epsilon=0.1, d=5)
    assert acc.run("nokeep", m2, 1) in range(5)
    with pytest.raises(ldp.LDPParameterError, match="not kept"):
        acc.run("nokeep", m2, 1)  # a second release would need new budget
    assert acc.spent() == Fraction(0.4) + Fraction(0.1)


def test_measurement_cost_and_chains(tmp_path):
    acc = _new(tmp_path)
    s = ldp.SampleOne(mechanism=ldp.KRR(epsilon=0.5, d=4), m=2)
    chain = ldp.make_set_ldp(s)  # a >> chain: cost = map(1)
    rec = acc.spend("sets", chain)
    assert rec.epsilon == Fraction(0.5)
    with pytest.raises(ldp.LDPParameterError, match="max_divergence"):
        acc.spend("gauss", dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0))


def test_privacy_filter_is_prechecked_and_reserved(tmp_path):
    acc = _new(tmp_path)
    mech = ldp.KRR(epsilon=0.25, d=4)
    f = acc.privacy_filter("session", 0.6, input_domain=ldp.category_domain(mech))
    assert isinstance(f, PrecheckedFilter) and acc.remaining() == 1 - Fraction(0.6)  # reserved up front
    m = ldp.make_ldp(*ldp.space_of(mech), mech, rng=1)
    f(m)
    f(m)
    with pytest.raises(BudgetExceededError):
        f(m)  # 0.75 > 0.6: refused *before* the OpenDP filter sees it ...
    small_mech = ldp.KRR(epsilon=0.05, d=4)
    small = ldp.make_ldp(*ldp.space_of(small_mech), small_mech, rng=1)
    assert f(small) in range(4)  # ... so the filter is not exhausted
    comp = acc.compositor("comp", [0.1, 0.2], input_domain=ldp.category_domain(mech))
    assert comp.map(1) == pytest.approx(0.3)
    assert acc.spent() == Fraction(0.6) + Fraction(comp.map(1))


# -- many processes ----------------------------------------------------------------------------------
def _worker(path, seed, n_queries, out_q):
    rng = random.Random(seed)
    acc = Accountant(path)
    ok = []
    for i in range(n_queries):
        eps = rng.choice([Fraction(1, 100), Fraction(1, 50), Fraction(3, 100)])
        cs = rng.sample(range(4), rng.randint(1, 4))
        try:
            acc.spend(f"w{seed}-{i}", eps, cohorts=cs)
            ok.append((f"w{seed}-{i}", eps, tuple(sorted(cs))))
        except BudgetExceededError as e:
            assert e.requested == eps
    out_q.put(ok)


@pytest.mark.slow
def test_concurrent_processes_never_overspend(tmp_path):
    acc = Accountant.create(tmp_path / "c.sqlite", Population(name="p", lifetime_cap="3", cohorts=4))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(acc.path), s, 20, q)) for s in range(32)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    ok = [r for res in results for r in res]
    rows = {r.query_id: r for r in acc.history()}
    assert set(rows) == {qid for qid, _, _ in ok}  # zero lost spends, nothing extra
    for k in range(4):
        total = sum((e for _, e, cs in ok if k in cs), Fraction(0))
        assert total == acc.spent([k]) <= 3  # zero overspend, totals exact
    assert 50 < len(ok) < 400  # both successes and refusals happened


# -- crashes ---------------------------------------------------------------------------------------
def _crashy(path, marker, start):
    acc = Accountant(path)
    i = start
    while True:
        qid = f"q{i}"
        acc.spend(qid, Fraction(1, 10**6))
        with open(marker, "a") as f:  # the "release": only after the spend committed
            f.write(qid + "\n")
            f.flush()
            os.fsync(f.fileno())
        i += 1


@pytest.mark.slow
def test_sigkill_never_undercounts(tmp_path):
    acc = Accountant.create(tmp_path / "k.sqlite", Population(name="p", lifetime_cap="1000"))
    marker = tmp_path / "released.txt"
    ctx = mp.get_context("fork")
    rng = random.Random(3)
    for trial in range(15):
        p = ctx.Process(target=_crashy, args=(str(acc.path), str(marker), trial * 100_000))
        p.start()
        time.sleep(rng.uniform(0.05, 0.3))
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        released = set(marker.read_text().split()) if marker.exists() else set()
        spent = {r.query_id for r in Accountant(acc.path).history()}
        assert released <= spent  # every released query was charged
    assert len(released) > 10


def test_polars_privatize_spends_first_and_retries(tmp_path):
    import polars as pl

    acc = _new(tmp_path)
    df = pl.DataFrame({"uid": range(100), "app": ["a", "b"] * 50})
    mech = ldp.KRR(epsilon=0.6, categories=["a", "b"])
    r1 = df.ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="day1", keep_reports=True)
    r2 = df.ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="day1", keep_reports=True)
    assert r1.equals(r2) and acc.spent() == Fraction(0.6)
    before = _ledger_bytes(acc.path)
    with pytest.raises(BudgetExceededError):
        df.ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="day2")
    assert _ledger_bytes(acc.path) == before
    # validation happens before the spend: a bad frame costs nothing
    with pytest.raises(ldp.LDPInputError):
        df.with_columns(uid=pl.lit(1)).ldp.privatize("app", ldp.KRR(epsilon=0.1, categories=["a", "b"]), user_id="uid", accountant=acc, query_id="bad")
    assert [r.query_id for r in acc.history()] == ["day1"]
    with pytest.raises(ldp.LDPParameterError, match="query_id"):
        df.ldp.privatize("app", mech, accountant=acc)


def test_budget_cli(tmp_path, capsys):
    import json

    from ldp_plugin.cli import main

    led = str(tmp_path / "b.sqlite")
    assert main(["budget", "init", led, "--population", "p", "--lifetime-cap", "1", "--cohorts", "2", "--json"]) == 0
    capsys.readouterr()
    acc = Accountant(led)
    acc.spend("q", 0.75, cohorts=[0])
    assert main(["budget", "spend-check", led, "--epsilon", "0.5", "--cohorts", "0", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["fits"] is False and out["remaining"]["exact"] == "1/4"
    assert main(["budget", "spend-check", led, "--epsilon", "0.5", "--cohorts", "1", "--json"]) == 0
    capsys.readouterr()
    assert main(["budget", "history", led, "--json"]) == 0
    hist = json.loads(capsys.readouterr().out)["history"]
    assert [h["query_id"] for h in hist] == ["q"] and hist[0]["cohorts"] == [0]
    assert main(["budget", "show", led, "--json"]) == 0
    show = json.loads(capsys.readouterr().out)
    assert show["cohorts"][1]["remaining"]["value"] == 1.0
    assert main(["budget", "show", str(tmp_path / "missing.sqlite"), "--json"]) == 2
    assert "does not exist" in json.loads(capsys.readouterr().out)["message"]
    assert main(["budget", "init", led, "--population", "p", "--lifetime-cap", "2", "--exist-ok", "--json"]) == 2
    assert "another definition" in json.loads(capsys.readouterr().out)["message"]
