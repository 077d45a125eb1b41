"""Issue 20: no silent reuse of a query id, one-file durability, integrity of the totals, every
cheap check before the spend, race-free creation, exact CLI ε."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction

import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.accountant import Accountant, LedgerError, Population


def _acc(tmp_path, cap="4", cohorts=2):
    return Accountant.create(tmp_path / "l.sqlite", Population(name="p", lifetime_cap=cap, cohorts=cohorts))


def test_reused_query_id_with_other_parameters_is_refused(tmp_path):
    acc = _acc(tmp_path)
    df = pl.DataFrame({"uid": range(50), "app": ["a", "b"] * 25})
    a = ldp.KRR(epsilon=0.5, categories=["a", "b"])
    df.ldp.privatize("app", a, user_id="uid", accountant=acc, query_id="daily", keep_reports=True)
    # the same query is a retry: no new spend, the kept reports come back
    again = df.ldp.privatize("app", a, user_id="uid", accountant=acc, query_id="daily", keep_reports=True)
    assert again.height == 50 and acc.spent() == Fraction(1, 2)
    # the categories in another order would swap the kept reports' labels: refused
    with pytest.raises(LDPParameterError, match="other mechanism parameters"):
        df.ldp.privatize("app", ldp.KRR(epsilon=0.5, categories=["b", "a"]), user_id="uid", accountant=acc, query_id="daily")
    with pytest.raises(LDPParameterError, match="different query"):
        acc.spend("daily", ldp.KRR(epsilon=0.25, categories=["a", "b"]))
    assert acc.spent() == Fraction(1, 2)


def _writer(path, ready, stop):
    acc = Accountant(path)
    for i in range(50):
        acc.spend(f"q{i}", Fraction(1, 100))
    ready.set()
    stop.wait(30)  # keep the connection open while the copy is made


def test_a_copy_of_the_ledger_file_alone_holds_every_spend(tmp_path):
    acc = _acc(tmp_path, cap="10")
    ctx = mp.get_context("fork")
    ready, stop = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_writer, args=(str(acc.path), ready, stop))
    p.start()
    assert ready.wait(60)
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(acc.path, copy)  # the main file only, while the writer is still open
    stop.set()
    p.join()
    assert not (tmp_path / "l.sqlite-wal").exists()
    assert len(Accountant(copy).history()) == 50 and Accountant(copy).spent() == Fraction(1, 2)
    # and the backup command gives a consistent copy too
    dst = tmp_path / "backup.sqlite"
    out = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "budget", "backup", str(acc.path), str(dst), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(Accountant(dst).history()) == 50


def test_edited_totals_are_detected(tmp_path):
    acc = _acc(tmp_path)
    acc.spend("q1", Fraction(3))
    acc.close()
    con = sqlite3.connect(str(tmp_path / "l.sqlite"))
    con.execute("UPDATE cohort_total SET total = '0/1'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="differ from the sum of its audit rows"):
        Accountant(tmp_path / "l.sqlite")


def test_existing_sink_and_late_unknown_category_spend_nothing(tmp_path):
    acc = _acc(tmp_path)
    mech = ldp.KRR(epsilon=1.0, categories=["a", "b"])
    sink = tmp_path / "out"
    sink.mkdir()
    (sink / "part-000000.parquet").write_bytes(b"x")
    df = pl.DataFrame({"uid": range(300_000), "app": ["a", "b"] * 150_000})
    with pytest.raises(LDPParameterError, match="already holds report parts"):
        df.ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="q", sink=sink)
    late = df.with_columns(app=pl.when(pl.col("uid") == 299_998).then(pl.lit("zzz-secret")).otherwise(pl.col("app")))
    with pytest.raises(LDPInputError, match="row 299998") as e:
        late.lazy().ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="q", sink=tmp_path / "out2")
    assert "zzz-secret" not in str(e.value)
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").glob("part-*"))
    assert acc.spent() == 0 and acc.history() == []
    # power: the same frame without the bad value is released and charged once
    df.lazy().ldp.privatize("app", mech, user_id="uid", accountant=acc, query_id="q", sink=tmp_path / "out3")
    assert acc.spent() == 1 and acc.release_status("q") == "released"


def _init(path, q):
    try:
        Accountant.create(path, Population(name="p", lifetime_cap="1"), exist_ok=True).close()
        q.put("ok")
    except Exception as e:  # pragma: no cover - the failure this test guards against
        q.put(f"{type(e).__name__}: {e}")


def test_racing_exist_ok_creations_all_succeed(tmp_path):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    path = str(tmp_path / "race.sqlite")
    procs = [ctx.Process(target=_init, args=(path, q)) for _ in range(32)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    assert results == ["ok"] * 32
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_cohorts_must_be_integers_in_range(tmp_path):
    acc = _acc(tmp_path)
    for bad in ([0.5], ["1"], [True]):
        with pytest.raises(LDPParameterError, match="cohorts must be integers"):
            acc.spend("q", 1, cohorts=bad)
    with pytest.raises(LDPParameterError, match=r"\[0, 2\)"):
        acc.spend("q", 1, cohorts=[2])
    assert acc.history() == []


class _SlowKRR(ldp.KRR):
    """k-RR whose client stalls (so the test can kill the process mid-release)."""

    def _randomize_codes(self, codes, source):
        time.sleep(60)
        return super()._randomize_codes(codes, source)


_FRAME = pl.DataFrame({"uid": range(100), "app": ["a", "b"] * 50})


def _crash_mid_release(path):
    acc = Accountant(path)
    _FRAME.ldp.privatize("app", _SlowKRR(epsilon=0.5, categories=["a", "b"]), user_id="uid", accountant=acc, query_id="crashy")


def test_a_crash_mid_release_is_reported_on_retry(tmp_path):
    acc = _acc(tmp_path)
    ctx = mp.get_context("spawn")  # Polars' thread pool is not fork-safe
    p = ctx.Process(target=_crash_mid_release, args=(str(acc.path),))
    p.start()
    deadline = time.time() + 120
    while time.time() < deadline and Accountant(acc.path).release_status("crashy") != "started":
        time.sleep(0.05)
    assert Accountant(acc.path).release_status("crashy") == "started"
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    mech = ldp.KRR(epsilon=0.5, categories=["a", "b"])
    with pytest.raises(LDPParameterError, match="did not complete"):
        _FRAME.ldp.privatize("app", mech, user_id="uid", accountant=Accountant(acc.path), query_id="crashy")
    assert Accountant(acc.path).spent() == Fraction(1, 2)  # charged once, never twice
    # a finished release whose reports were not kept says so differently
    a2 = Accountant(acc.path)
    _FRAME.ldp.privatize("app", mech, user_id="uid", accountant=a2, query_id="done")
    with pytest.raises(LDPParameterError, match="already released"):
        _FRAME.ldp.privatize("app", mech, user_id="uid", accountant=a2, query_id="done")


def test_the_charge_and_its_started_mark_commit_together(tmp_path):
    """No instant at which a killed process leaves a charge without its release status (a retry
    would then be 'in progress' forever instead of refused as interrupted): the ``started`` row is
    written inside the spend's own transaction, before its COMMIT."""
    acc = _acc(tmp_path)
    seen = []
    acc._con.set_trace_callback(seen.append)
    acc.release("q", 1, lambda: [1, 2])
    acc._con.set_trace_callback(None)
    begin = next(i for i, s in enumerate(seen) if s.startswith("BEGIN IMMEDIATE"))
    commit = next(i for i, s in enumerate(seen) if i > begin and s.startswith("COMMIT"))
    inside = seen[begin:commit]
    assert any(s.startswith("INSERT INTO spend") for s in inside)
    assert any("release_status" in s and "'started'" in s for s in inside)
    assert acc.release_status("q") == "released"
    with pytest.raises(LDPParameterError, match="release\\(\\) takes only"):
        acc.release("q2", 1, lambda: [1], bogus=1)
    assert acc.spent() == 1  # the refused call spent nothing


def test_cli_epsilon_is_exact_decimal_text(tmp_path, cli):
    ledger = tmp_path / "c.sqlite"
    run = lambda *a: cli("budget", *a, "--json")  # noqa: E731
    assert run("init", str(ledger), "--population", "p", "--lifetime-cap", "1").returncode == 0
    acc = Accountant(ledger)
    for i in range(9):
        acc.spend(f"q{i}", "0.1")
    out = run("spend-check", str(ledger), "--epsilon", "0.1")
    assert out.returncode == 0, out.stdout + out.stderr  # the tenth 0.1 fits a cap of 1 exactly
    assert json.loads(out.stdout)["remaining_after"]["exact"] == "0/1"
    bad = run("spend-check", str(ledger), "--epsilon", "0.1x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_period_error_wording(tmp_path):
    acc = Accountant.create(tmp_path / "d.sqlite", Population(name="p", lifetime_cap="4", period_cap="1", period="day"))
    acc.spend("a", 1)
    with pytest.raises(ldp.BudgetExceededError) as e:
        acc.spend("b", 1)
    assert "per-day budget" in str(e.value) and "dayly" not in str(e.value)


def test_a_failed_release_is_partial_and_aggregate_refuses_it(tmp_path):
    from ldp_plugin.executors import aggregate

    acc = _acc(tmp_path)
    mech = ldp.KRR(epsilon=1.0, categories=["a", "b"])
    n = 300_000  # three chunks: the first is written before the bad one is reached
    df = pl.DataFrame({"uid": range(n), "app": ["a", "b"] * (n // 2)})
    bad = df.with_columns(app=pl.when(pl.col("uid") == n - 1).then(pl.lit("c")).otherwise(pl.col("app")))
    # without an accountant there is no pre-scan: the error comes after parts were written
    with pytest.raises(LDPInputError):
        bad.ldp.privatize("app", mech, sink=tmp_path / "part", seed=1)
    assert any((tmp_path / "part").glob("part-*.parquet"))
    with pytest.raises(LDPInputError, match="did not complete"):
        aggregate(str(tmp_path / "part"))
    assert aggregate(str(tmp_path / "part"), allow_partial=True).n > 0
    # a complete release aggregates normally
    df.ldp.privatize("app", mech, sink=tmp_path / "full", seed=1)
    assert aggregate(str(tmp_path / "full")).n == n
    assert acc.spent() == 0


def test_collect_refuses_unwritable_output_before_spending(tmp_path):
    from ldp_plugin.collect import load_job, run_job

    pl.DataFrame({"uid": range(100), "app": ["a", "b"] * 50}).write_parquet(tmp_path / "in.parquet")
    acc = _acc(tmp_path)
    (tmp_path / "blocker").write_text("a file where the output directory should be")

    def job(out):
        path = tmp_path / "job.toml"
        path.write_text(
            '[input]\npath = "in.parquet"\ncolumn = "app"\nuser_id = "uid"\n'
            '[mechanism]\nname = "krr"\nepsilon = 1.0\ncategories = ["a", "b"]\n'
            f'[collection]\nseed = 1\n[output]\nestimates = "{out}"\n'
            '[budget]\nledger = "l.sqlite"\nquery_id = "q1"\n'
        )
        return load_job(path)

    with pytest.raises(LDPParameterError, match="not writable"):
        run_job(job("blocker/sub/est.parquet"))
    assert acc.spent() == 0
    first = run_job(job("est.parquet"))
    assert first["budget"]["charged"] is True and acc.spent() == 1
    again = run_job(job("est.parquet"))  # the same job again: a retry, no new spend, said so
    assert again["budget"]["charged"] is False and "retry" in again["budget"]["note"] and acc.spent() == 1
