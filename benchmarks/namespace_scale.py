"""Issue 3 bar: ``privatize`` + ``estimate`` through the ``ldp`` namespace on 10^7 users × 8
items (ints, d = 1024) with pad-and-sample O-RR, eager and streamed from Parquet.

    python3 benchmarks/namespace_scale.py --make /tmp/ldp_sets.parquet      # once: the input file
    /usr/bin/time -v python3 benchmarks/namespace_scale.py --mode lazy  /tmp/ldp_sets.parquet
    /usr/bin/time -v python3 benchmarks/namespace_scale.py --mode eager /tmp/ldp_sets.parquet

Prints one JSON line (wall seconds of each phase, rows, the max l1 error vs the true
frequencies); peak memory is the ``Maximum resident set size`` of ``/usr/bin/time -v``.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import polars as pl

import ldp_plugin as ldp

D, M = 1024, 8


def make(path: str, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    base = np.minimum(rng.geometric(1 / 100, size=n) - 1, D - 1)
    stride = 2 * rng.integers(0, 64, size=n) + 1  # odd: the 8 items of a user are distinct
    items = (base[:, None] + stride[:, None] * np.arange(M)[None, :]) % D
    df = pl.DataFrame({"uid": np.arange(n, dtype=np.int64), "items": pl.Series(items.astype(np.int32)).cast(pl.List(pl.Int32))})
    df.write_parquet(path, row_group_size=1 << 17)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--mode", choices=["lazy", "eager"], default="lazy")
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--sink", default=None, help="write the reports as Parquet parts to this (new) directory")
    ap.add_argument("--no-user-check", action="store_true", help="no user_id (skips the O(n) duplicate-id check)")
    args = ap.parse_args()
    if args.make:
        make(args.path, args.n)
        return
    choice = ldp.theory.choose_orr(D + 1, args.epsilon, args.n)
    mech = ldp.SampleOne(mechanism=ldp.ORR(epsilon=args.epsilon, k=choice["k"], cohorts=choice["cohorts"], d=D), m=M)
    t0 = time.perf_counter()
    frame = pl.scan_parquet(args.path) if args.mode == "lazy" else pl.read_parquet(args.path)
    t1 = time.perf_counter()
    t_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if args.no_user_check:
        reports = frame.ldp.privatize("items", mech, sink=args.sink)
    else:
        reports = frame.ldp.privatize("items", mech, user_id="uid", cohorts=7, sink=args.sink)
    t2 = time.perf_counter()
    rss_privatize = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    est = reports.ldp.estimate(mech)
    t3 = time.perf_counter()
    rss_estimate = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    truth = (
        pl.scan_parquet(args.path).select(pl.col("items").explode()).group_by("items").len().collect(engine="streaming")
    )
    f = np.zeros(D)
    n_users = pl.scan_parquet(args.path).select(pl.len()).collect().item()
    f[truth["items"].to_numpy()] = truth["len"].to_numpy() / n_users
    l1 = float(np.abs(est["estimate"].to_numpy() - f).sum())
    print(json.dumps({
        "mode": args.mode + (" +sink" if args.sink else "") + (" no-user-check" if args.no_user_check else ""),
        "users": n_users, "peak_rss_mb_before": t_base, "k": choice["k"], "cohorts": choice["cohorts"],
        "read_seconds": round(t1 - t0, 2), "privatize_seconds": round(t2 - t1, 2), "estimate_seconds": round(t3 - t2, 2),
        "total_seconds": round(t3 - t0, 2), "l1_error": round(l1, 4), "sum_f": round(float(f.sum()), 3),
        "peak_rss_mb_after_privatize": rss_privatize, "peak_rss_mb_after_estimate": rss_estimate,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))


if __name__ == "__main__":
    main()
