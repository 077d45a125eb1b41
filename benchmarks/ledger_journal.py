"""Issue 20: the cost of a one-file ledger (rollback journal) against WAL, and of the integrity
check on open. Spend latency (a committed, fsync'ed transaction), median and p99 over 300 spends,
for both journal modes in the same run; then open time with 10^4 and 10^5 audit rows.

Usage: python benchmarks/ledger_journal.py
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import ldp_plugin.accountant.ledger as ledger
from ldp_plugin import Accountant, Population


def _connect_wal(path):
    con = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA busy_timeout = 60000")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    return con


def spend_latency(connect, n=300):
    original = ledger._connect
    ledger._connect = connect
    try:
        with tempfile.TemporaryDirectory() as d:
            acc = Accountant.create(Path(d) / "l.sqlite", Population(name="p", lifetime_cap="1000000", cohorts=8))
            ts = []
            for i in range(n):
                t0 = time.perf_counter()
                acc.spend(f"q{i}", "0.001")
                ts.append(time.perf_counter() - t0)
            acc.close()
    finally:
        ledger._connect = original
    ts.sort()
    return statistics.median(ts) * 1e3, ts[int(0.99 * len(ts))] * 1e3


def open_time(rows):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "l.sqlite"
        acc = Accountant.create(path, Population(name="p", lifetime_cap="1000000000", cohorts=8))
        con = acc._con
        con.execute("BEGIN")
        con.executemany("INSERT INTO spend(query_id, time, period, mechanism, params, epsilon, epsilon_float, cohorts) VALUES (?,?,?,?,?,?,?,?)",
                        [(f"q{i}", "2026-01-01T00:00:00+00:00", None, "x", "{}", "1/1000", 0.001, "[0, 1, 2, 3, 4, 5, 6, 7]") for i in range(rows)])
        con.executemany("INSERT OR REPLACE INTO cohort_total(cohort, total) VALUES (?, ?)", [(c, f"{rows}/1000") for c in range(8)])
        con.execute("COMMIT")
        acc.close()
        times = []
        for _ in range(3):  # best of 3 (the first open after a bulk insert also pays the OS's page cache)
            t0 = time.perf_counter()
            Accountant(path).close()
            times.append(time.perf_counter() - t0)
        return min(times)


def main():
    for name, connect in (("rollback journal (DELETE)", ledger._connect), ("WAL", _connect_wal)):
        med, p99 = spend_latency(connect)
        print(f"spend latency, {name}: median {med:.2f} ms, p99 {p99:.2f} ms")
    for rows in (10**4, 10**5):
        print(f"open with integrity check, {rows:,} audit rows: {open_time(rows):.2f} s")


if __name__ == "__main__":
    main()
