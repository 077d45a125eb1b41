"""Federated runtime (issues 15, 34): wall time of `ldp federated simulate` (the Flower app through
`flwr run` on a local simulation SuperLink) against the number of SuperNodes and devices per node,
and the collector's validation throughput on envelopes (nonce + one wire report each).

Usage: python benchmarks/federated.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.reports import from_wire_many, to_wire_each


def collector_throughput(mech, n=200_000, repeats=3):
    q = Query.for_mechanism("bench", mech)
    reports = mech.randomize_encoded(np.random.default_rng(0).integers(0, mech.d, n))
    blobs = seal(to_wire_each(mech, reports, tag=q.content_hash))
    best = 1e9
    for _ in range(repeats):
        col = Collector(q)
        t0 = time.perf_counter()
        col.ingest(blobs)
        best = min(best, time.perf_counter() - t0)
    return n / best, len(blobs[0])


def collector_vs_kernel(mech, n=1_000_000):
    """Validated envelopes/s through Collector.ingest (length + header + nonce checks, then the
    kernel) vs the kernel alone (mechanism.from_wire_many on the bare one-report blobs), and the
    collector's peak traced memory (tracemalloc) over the 10^6 envelopes held by the caller."""
    import tracemalloc

    q = Query.for_mechanism("bench", mech)
    reports = mech.randomize_encoded(np.random.default_rng(0).integers(0, mech.domain_size, n))
    blobs = to_wire_each(mech, reports, tag=q.content_hash)
    envs = seal(blobs)
    t0 = time.perf_counter()
    from_wire_many(mech, blobs, tag=q.content_hash)
    kernel = n / (time.perf_counter() - t0)
    col = Collector(q)
    t0 = time.perf_counter()
    res = col.ingest(envs)
    rate = n / (time.perf_counter() - t0)
    assert res["accepted"] == n
    del col
    tracemalloc.start()  # a second pass for memory only (tracing slows it down)
    Collector(q).ingest(envs)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"envelopes_per_second": rate, "kernel_reports_per_second": kernel, "peak_mib": peak / 2**20,
            "input_mib": sum(map(len, envs)) / 2**20, "bytes_per_envelope": len(envs[0])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--collector-only", action="store_true", help="skip the Flower simulations")
    ap.add_argument("--sim-only", action="store_true", help="only the Flower simulations (no collector measurement)")
    ap.add_argument("--sim-nodes", type=int, nargs="+", default=[10, 50, 200], help="simulated SuperNodes per run")
    ap.add_argument("--sim-users", type=int, default=500, help="devices per simulated node")
    ap.add_argument("--sim-rounds", type=int, default=3, help="rounds per simulation")
    a = ap.parse_args()
    if a.collector_only:
        out = {}
        for name, mech in (("krr-1024", ldp.KRR(epsilon=4.0, d=1024)), ("oue-16", ldp.OUE(epsilon=2.0, d=16))):
            out[name] = collector_vs_kernel(mech)
            r = out[name]
            print(f"{name}: collector {r['envelopes_per_second']:,.0f} envelopes/s vs kernel {r['kernel_reports_per_second']:,.0f} reports/s; "
                  f"peak {r['peak_mib']:.0f} MiB traced for {r['input_mib']:.0f} MiB of envelopes ({r['bytes_per_envelope']} B each)", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                                    "load_average": os.getloadavg()}, "collector_1e6": out}, f, indent=1)
        return
    rows = []
    for nodes in a.sim_nodes:
        users = a.sim_users
        cmd = [sys.executable, "-m", "ldp_plugin.cli", "federated", "simulate", "--nodes", str(nodes), "--users-per-node", str(users),
               "--mechanism", "oue", "--d", "16", "--epsilon", "2", "--rounds", str(a.sim_rounds), "--device-cap", "100", "--seed", "1", "--json"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        total = time.perf_counter() - t0
        out = json.loads(proc.stdout)
        per = [r["seconds"] for r in out["rounds"]]
        assert all(r["reports_accepted"] == nodes * users for r in out["rounds"]), out["rounds"]
        rows.append({"nodes": nodes, "users_per_node": users, "wall_seconds": out["seconds"], "command_seconds": round(total, 1),
                     "round_seconds": per, "load_average": os.getloadavg()})
        print(f"nodes={nodes:<4} users/node={users:<5} flwr run {out['seconds']:>6.1f} s (whole command {total:.1f} s)  rounds {per}  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    thr = {}
    for name, mech in () if a.sim_only else (("oue-1024", ldp.OUE(epsilon=4.0, d=1024)), ("krr-1024", ldp.KRR(epsilon=4.0, d=1024))):
        rate, size = collector_throughput(mech)
        thr[name] = {"reports_per_second": rate, "bytes_per_report": size}
        print(f"collector ingest+validation {name}: {rate:,.0f} reports/s ({size} bytes per wire report)", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
                       "simulation": rows, "collector": thr}, f, indent=1)


if __name__ == "__main__":
    main()
