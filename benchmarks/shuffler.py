"""Encode–shuffle–analyze (issue 35): throughput of each stage at 10^5 and 10^6 reports, and the
central ε a batch earns against its size.

Stages, each timed alone on the same reports: the devices' sealing (one libsodium sealed box per
envelope, PyNaCl), the shuffler (hold the ciphertexts in a set, byte-sort, CSPRNG Fisher–Yates,
write the batch file), and the analyzer (read the batch, open every box, the collector's checks
and aggregation). The central ε is :func:`ldp_plugin.amplification.amplify` (what
``record_shuffle`` records) at δ = 10^-6 (``--delta``).

Usage: python benchmarks/shuffler.py [--sizes 100000 1000000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.amplification import amplify
from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.batch import iter_ciphertexts, read_batch
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.reports import to_wire_each
from ldp_plugin.federated.sealed import generate_analyzer_keys, open_reports, private_key, public_key, seal_reports
from ldp_plugin.federated.shuffler import Shuffler


def stages(mech, n: int, workdir: Path) -> dict:
    q = Query.for_mechanism("bench", mech, min_batch=n)
    keys = generate_analyzer_keys(workdir / f"keys-{n}", force=True)
    envs = seal(to_wire_each(mech, mech.randomize_encoded(np.random.default_rng(0).integers(0, mech.domain_size, n)), tag=q.content_hash))
    pk, sk = public_key(keys["public_key"]), private_key(keys["private_key"])
    t0 = time.perf_counter()
    cts = seal_reports(envs, pk)
    t_seal = time.perf_counter() - t0
    t0 = time.perf_counter()
    sh = Shuffler(q)
    sh.add(cts)
    sh.forward(workdir / f"batch-{n}.ldpbatch")
    t_shuffle = time.perf_counter() - t0
    del cts
    t0 = time.perf_counter()
    header, body = read_batch(workdir / f"batch-{n}.ldpbatch")
    opened, bad = open_reports(iter_ciphertexts(header, body), sk)
    t_open = time.perf_counter() - t0
    t0 = time.perf_counter()
    col = Collector(q)
    col.ingest(opened)
    t_collect = time.perf_counter() - t0
    assert bad == 0 and col.accepted == n
    return {"n": n, "envelope_bytes": len(envs[0]), "ciphertext_bytes": sh.ciphertext_size,
            "seal_per_s": n / t_seal, "shuffle_per_s": n / t_shuffle, "open_per_s": n / t_open, "collect_per_s": n / t_collect,
            "analyzer_per_s": n / (t_open + t_collect), "seconds": {"seal": t_seal, "shuffle": t_shuffle, "open": t_open, "collect": t_collect}}


def central_table(delta: float, sizes) -> list:
    mechs = [ldp.KRR(epsilon=1.0, d=8), ldp.KRR(epsilon=2.0, d=8), ldp.KRR(epsilon=4.0, d=1024), ldp.OUE(epsilon=1.0, d=16), ldp.OUE(epsilon=2.0, d=16)]
    rows = []
    for m in mechs:
        for n in sizes:
            t0 = time.perf_counter()
            a = amplify(m, n, delta)
            rows.append({"mechanism": f"{m.name} d={m.domain_size} eps0={float(m.epsilon):g}", "n": n, "epsilon": a["epsilon"],
                         "epsilon_lower": a["epsilon_lower"], "method": a["method"], "seconds": time.perf_counter() - t0})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--central-sizes", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--skip-stages", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()}, "stages": [], "central": []}
    if not args.skip_stages:
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.sizes:
                res = stages(ldp.OUE(epsilon=2.0, d=16), n, Path(tmp))
                print(json.dumps(res), flush=True)
                out["stages"].append(res)
    out["central"] = central_table(args.delta, args.central_sizes)
    out["machine"]["load_average_end"] = os.getloadavg()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
