"""Federated runtime (issue 15): Flower simulation wall time and per-round time against the number
of SuperNodes and devices per node, and the collector's ingest + validation throughput.

Usage: python benchmarks/federated.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import tempfile
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.flower import simulate


def collector_throughput(mech, n=200_000, repeats=3):
    q = Query.for_mechanism("bench", mech)
    reports = mech.randomize_encoded(np.random.default_rng(0).integers(0, mech.d, n))
    blobs = mech.to_wire_each(reports, tag=q.content_hash)
    ids = [os.urandom(16) for _ in blobs]
    best = 1e9
    for _ in range(repeats):
        col = Collector(q)
        t0 = time.perf_counter()
        col.ingest(ids, blobs)
        best = min(best, time.perf_counter() - t0)
    return n / best, len(blobs[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    logging.getLogger("flwr").setLevel(logging.ERROR)
    rows = []
    for nodes, users in ((10, 500), (60, 500), (200, 500), (60, 2000)):
        with tempfile.TemporaryDirectory() as led:
            out = simulate(nodes=nodes, users_per_node=users, mechanism=ldp.OUE(epsilon=2.0, d=16), rounds=3, device_cap="4",
                           malformed_nodes=0, seed=1, ledger_dir=led)
        per = [r["seconds"] for r in out["rounds"]]
        rows.append({"nodes": nodes, "users_per_node": users, "wall_seconds": out["seconds"], "round_seconds": per})
        print(f"nodes={nodes:<4} users/node={users:<5} wall {out['seconds']:>6.1f} s  rounds {per}", flush=True)
    thr = {}
    for name, mech in (("oue-1024", ldp.OUE(epsilon=4.0, d=1024)), ("krr-1024", ldp.KRR(epsilon=4.0, d=1024))):
        rate, size = collector_throughput(mech)
        thr[name] = {"reports_per_second": rate, "bytes_per_report": size}
        print(f"collector ingest+validation {name}: {rate:,.0f} reports/s ({size} bytes per wire report)", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
                       "simulation": rows, "collector": thr}, f, indent=1)


if __name__ == "__main__":
    main()
