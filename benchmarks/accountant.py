"""Issue 5 bars for the budget accountant.

1. 32 concurrent writer processes × 100 queries on one SQLite ledger, 20 runs: zero overspend,
   zero lost spends (every spend a worker saw succeed is a ledger row, and only those; the exact
   per-cohort totals equal the sum of the successes and never exceed the cap).
2. SIGKILL at random points, 200 trials: a child spends and then "releases" (appends the query id
   to a file, fsync) in a loop; it is killed at a random time; every released id must be in the
   ledger (the ledger never under-counts a released query).
3. Spend-check overhead with a 10^5-row ledger: latency of `check` (read only) and `spend`
   (a committed, fsync'ed transaction), median and 99th percentile over 500 operations each.

Usage: python benchmarks/accountant.py [--runs 20] [--writers 32] [--queries 100] [--kills 200]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from ldp_plugin import Accountant, BudgetExceededError, Population


def writer(path, seed, n_queries, out_q):
    rng = random.Random(seed)
    acc = Accountant(path)
    ok = []
    for i in range(n_queries):
        eps = rng.choice([Fraction(1, 100), Fraction(1, 50), Fraction(3, 100), Fraction(1, 7)])
        cs = rng.sample(range(8), rng.randint(1, 8))
        try:
            acc.spend(f"w{seed}-{i}", eps, cohorts=cs)
            ok.append((f"w{seed}-{i}", eps.numerator, eps.denominator, sorted(cs)))
        except BudgetExceededError:
            pass
    out_q.put(ok)


def concurrent_run(tmp: Path, run: int, writers: int, queries: int) -> dict:
    cap = Fraction(40)
    acc = Accountant.create(tmp / f"c{run}.sqlite", Population(name="p", lifetime_cap=cap, cohorts=8))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    t0 = time.perf_counter()
    procs = [ctx.Process(target=writer, args=(str(acc.path), 1000 * run + s, queries, q)) for s in range(writers)]
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    secs = time.perf_counter() - t0
    ok = [r for res in results for r in res]
    rows = {r.query_id: r for r in acc.history()}
    lost = len({o[0] for o in ok} - set(rows))
    extra = len(set(rows) - {o[0] for o in ok})
    over = 0
    mismatch = 0
    for k in range(8):
        total = sum((Fraction(n, d) for _, n, d, cs in ok if k in cs), Fraction(0))
        over += total > cap
        mismatch += total != acc.spent([k])
    return {"run": run, "spends": len(ok), "refused": writers * queries - len(ok), "lost": lost, "extra": extra,
            "overspent_cohorts": int(over), "total_mismatch": int(mismatch), "seconds": round(secs, 2),
            "exit_codes_ok": all(p.exitcode == 0 for p in procs)}


def crashy(path, marker, start):
    acc = Accountant(path)
    i = start
    while True:
        qid = f"q{i}"
        acc.spend(qid, Fraction(1, 10**9))
        with open(marker, "a") as f:
            f.write(qid + "\n")
            f.flush()
            os.fsync(f.fileno())
        i += 1


def kill_trials(tmp: Path, trials: int) -> dict:
    acc = Accountant.create(tmp / "k.sqlite", Population(name="p", lifetime_cap="1000"))
    marker = tmp / "released.txt"
    ctx = mp.get_context("fork")
    rng = random.Random(11)
    undercounts = 0
    for t in range(trials):
        p = ctx.Process(target=crashy, args=(str(acc.path), str(marker), t * 1_000_000))
        p.start()
        time.sleep(rng.uniform(0.02, 0.25))
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        released = set(marker.read_text().split()) if marker.exists() else set()
        spent = {r.query_id for r in Accountant(acc.path).history()}
        undercounts += len(released - spent)
    spent = {r.query_id for r in Accountant(acc.path).history()}
    return {"trials": trials, "released": len(released), "ledger_rows": len(spent),
            "charged_not_released": len(spent - released), "undercounted_releases": undercounts}


def overhead(tmp: Path, rows: int) -> dict:
    acc = Accountant.create(tmp / "big.sqlite", Population(name="p", lifetime_cap=str(rows), cohorts=16))
    con = acc._con  # bulk-fill the audit rows and their exact totals in one transaction
    con.execute("BEGIN IMMEDIATE")
    eps = Fraction(1, 1000)
    con.executemany(
        "INSERT INTO spend(query_id, time, period, mechanism, params, epsilon, epsilon_float, cohorts) VALUES (?,?,?,?,?,?,?,?)",
        ((f"fill-{i}", "2026-01-01T00:00:00+00:00", None, "krr", "{}", "1/1000", 0.001, json.dumps([i % 16])) for i in range(rows)),
    )
    con.executemany("INSERT OR REPLACE INTO cohort_total(cohort, total) VALUES (?, ?)", [(c, f"{rows // 16}/1000") for c in range(16)])
    con.execute("COMMIT")
    acc = Accountant(acc.path)
    assert len(acc.history()) == rows
    checks, spends = [], []
    for i in range(500):
        cs = random.sample(range(16), 4)
        t0 = time.perf_counter()
        acc.check(eps, cohorts=cs)
        checks.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        acc.spend(f"new-{i}", eps, cohorts=cs)
        spends.append(time.perf_counter() - t0)
    ms = lambda xs, q: round(1000 * float(np.quantile(xs, q)), 3)  # noqa: E731
    return {"rows": rows, "check_ms_median": ms(checks, 0.5), "check_ms_p99": ms(checks, 0.99),
            "spend_ms_median": ms(spends, 0.5), "spend_ms_p99": ms(spends, 0.99)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--writers", type=int, default=32)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    runs = [concurrent_run(tmp, r, args.writers, args.queries) for r in range(args.runs)]
    for r in runs:
        print(json.dumps(r), flush=True)
    kills = kill_trials(tmp, args.kills)
    print(json.dumps(kills), flush=True)
    ov = overhead(tmp, args.rows)
    print(json.dumps(ov), flush=True)
    summary = {
        "concurrent": {"runs": len(runs), "writers": args.writers, "queries_each": args.queries,
                       "total_lost": sum(r["lost"] + r["extra"] for r in runs), "total_overspent": sum(r["overspent_cohorts"] for r in runs),
                       "total_mismatch": sum(r["total_mismatch"] for r in runs), "spends": sum(r["spends"] for r in runs),
                       "refused": sum(r["refused"] for r in runs), "mean_seconds": round(float(np.mean([r["seconds"] for r in runs])), 2)},
        "sigkill": kills, "overhead": ov,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, **summary}, indent=1))


if __name__ == "__main__":
    main()
