"""Issue 8: aggregate 5×10^7 users' reports in 20 Parquet files (k-RR, RAPPOR, O-RR).

    python3 benchmarks/aggregate_scale.py --make /tmp/ldp_agg          # once: 3 × 20 files
    python3 benchmarks/aggregate_scale.py /tmp/ldp_agg --json benchmarks/results/aggregate_scale.json

Each measurement runs in a fresh subprocess (peak RSS = its ru_maxrss): the LocalExecutor
(Polars streaming, file by file), the DaskExecutor on a local cluster (2 workers × 1 thread,
started inside the measurement), and the floor — Polars' own streaming group-by count of the
report column over the same files.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

N_FILES = 20
PER_FILE = 2_500_000


def make(root: Path) -> None:
    import polars as pl

    import ldp_plugin as ldp
    from ldp_plugin.persist import write_reports

    mechs = {
        "krr": ldp.KRR(epsilon=2.0, d=1024),
        "rappor": ldp.RAPPOR(epsilon=2.0, d=64),
        "orr": ldp.ORR(epsilon=2.0, k=9, cohorts=256, d=1024),
    }
    rng = np.random.default_rng(0)
    for name, mech in mechs.items():
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        for i in range(N_FILES):
            values = np.minimum(rng.zipf(1.3, PER_FILE) - 1, mech.d - 1)
            frame = pl.DataFrame({"v": values}).ldp.privatize("v", mech, seed=7, partition=i)
            write_reports(frame, out / f"part-{i:05d}.parquet", mech)
        print(name, "written", flush=True)


def measure(kind: str, path: str) -> dict:
    t0 = time.perf_counter()
    if kind == "polars-floor":
        import polars as pl

        cols = ["cohort", "report"] if "orr" in path else ["report"]
        res = pl.scan_parquet(path).group_by(cols).len().collect(engine="streaming")
        n = int(res["len"].sum())
    else:
        from ldp_plugin.executors import DaskExecutor, LocalExecutor, aggregate

        if kind == "local":
            state = aggregate(path, executor=LocalExecutor())
        else:
            with DaskExecutor() as ex:  # local cluster: 2 workers × 1 thread, no dashboard
                state = aggregate(path, executor=ex)
        n = state.n
    secs = time.perf_counter() - t0
    return {"kind": kind, "path": path, "n": n, "seconds": round(secs, 2), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--measure", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    root = Path(args.root)
    if args.make:
        make(root)
        return
    if args.measure:
        print(json.dumps(measure(args.measure, args.root)))
        return
    rows = []
    for name in ("krr", "rappor", "orr"):
        glob = str(root / name / "*.parquet")
        for kind in ("polars-floor", "local", "dask"):
            out = subprocess.run([sys.executable, __file__, glob, "--measure", kind], capture_output=True, text=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["mechanism"] = name
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
