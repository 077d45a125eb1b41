"""Issue 3 throughput: OLH, Hadamard response and O-RR (client and server, reports/s) beside
pure-ldp 1.2.0 (LHClient/LHServer with use_olh, HadamardResponseClient/Server) and
multi-freq-ldpy 0.2.5 (LH_Client / LH_Aggregator_MI, optimal=True), measured in the same run.

Ours: n = 10^6 users per call, OS CSPRNG ("secure") and seeded ("seeded"); server = support
counts (OLH: n·d hash checks) or the least-squares decode (O-RR) + estimate. Peers are per-user
Python loops timed on subsamples. The OLH server is also reported in (report, item) checks/s.
O-RR has no peer implementation (it is reported alone, with its tuned k and C).

Also the Hadamard mechanism (pure-ldp HadamardMechClient/Server, t = 1) and THE (pure-ldp HE with
use_the; multi-freq-ldpy HE_Client + HE_Aggregator_MI with the threshold).

Usage: python benchmarks/throughput_hashed.py [--n 1000000] [--n-peer 20000] [--json OUT]
Needs: pip install -e ".[benchmark]"
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from ldp_plugin import OLH, ORR, THE, HadamardMechanism, HadamardResponse
from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource
from ldp_plugin.theory import choose_orr

from _common import best_of, time_pure_ldp


def ours(mech, values, repeats, n_server=None):
    rand = lambda src: mech.randomize_encoded(values, rng=src)  # noqa: E731
    secure_t, _ = best_of(lambda: rand(SecureRandomSource()), repeats)
    seeded_t, reports = best_of(lambda: rand(SeededRandomSource(1)), repeats)
    if n_server is not None:
        reports = reports[:n_server]
    n_srv = len(reports) if not isinstance(reports, np.ndarray) else reports.shape[0]
    server_t, _ = best_of(lambda: mech.accumulator().add(reports).estimate(postprocess="projection"), repeats)
    n = values.size
    return {"client_secure": n / secure_t, "client_seeded": n / seeded_t, "server": n_srv / server_t}


def peer_pure_ldp(kind, d, eps, values, n_server):
    if kind == "olh":
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

        client, server = LHClient(epsilon=eps, d=d, use_olh=True), LHServer(epsilon=eps, d=d, use_olh=True)
    elif kind == "hadamard":
        from pure_ldp.frequency_oracles.hadamard_response import HadamardResponseClient, HadamardResponseServer

        server = HadamardResponseServer(epsilon=eps, d=d)
        client = HadamardResponseClient(epsilon=eps, d=d, hash_funcs=server.get_hash_funcs())
    elif kind == "hadamard-mechanism":
        from pure_ldp.frequency_oracles.hadamard_mechanism import HadamardMechClient, HadamardMechServer

        client, server = HadamardMechClient(epsilon=eps, d=d, t=1), HadamardMechServer(epsilon=eps, d=d, t=1)
    elif kind == "the":
        from pure_ldp.frequency_oracles.histogram_encoding import HEClient, HEServer

        client, server = HEClient(epsilon=eps, d=d), HEServer(epsilon=eps, d=d, use_the=True)
    else:
        return None
    return time_pure_ldp(client, server, values, n_server)


def peer_mfl(kind, d, eps, values, n_server):
    if kind == "the":
        from multi_freq_ldpy.pure_frequency_oracles.HE import HE_Aggregator_MI, HE_Client

        vals = values.tolist()
        t0 = time.perf_counter()
        reports = [HE_Client(v, d, eps) for v in vals]
        t1 = time.perf_counter()
        HE_Aggregator_MI(reports[:n_server], d, eps, use_thresh=True)
        t2 = time.perf_counter()
        return {"client": len(vals) / (t1 - t0), "server": min(n_server, len(vals)) / (t2 - t1)}
    if kind != "olh":
        return None
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client

    vals = values.tolist()
    t0 = time.perf_counter()
    reports = [LH_Client(v, d, eps, optimal=True) for v in vals]
    t1 = time.perf_counter()
    LH_Aggregator_MI(reports[:n_server], d, eps, optimal=True)
    t2 = time.perf_counter()
    return {"client": len(vals) / (t1 - t0), "server": min(n_server, len(vals)) / (t2 - t1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--n-peer", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    gen = np.random.default_rng(0)
    rows = []
    for d in (64, 1024):
        for eps in (1.0, 4.0):
            values = gen.integers(0, d, args.n)
            c = choose_orr(d, eps, args.n)
            mechs = (
                ("olh", OLH(epsilon=eps, d=d)),
                ("hadamard", HadamardResponse(epsilon=eps, d=d)),
                ("orr", ORR(epsilon=eps, k=c["k"], cohorts=c["cohorts"], d=d)),
                ("hadamard-mechanism", HadamardMechanism(epsilon=eps, d=d)),
                ("the", THE(epsilon=eps, d=d)),
            )
            for kind, mech in mechs:
                n_server_peer = 2000 if (kind == "olh" and d == 1024) else args.n_peer
                n_server_ours = 200_000 if kind == "olh" else None
                row = {"mechanism": kind, "d": d, "epsilon": eps, "n": args.n, "n_peer": args.n_peer, "params": mech.params()}
                row["ours"] = ours(mech, values, args.repeats, n_server_ours)
                if kind == "olh":
                    row["ours"]["server_checks_per_s"] = row["ours"]["server"] * d
                row["pure_ldp"] = peer_pure_ldp(kind, d, eps, values[: args.n_peer], n_server_peer)
                row["multi_freq_ldpy"] = peer_mfl(kind, d, eps, values[: args.n_peer], n_server_peer)
                peers = [p for p in (row["pure_ldp"], row["multi_freq_ldpy"]) if p]
                line = (
                    f"{kind:<9} d={d:<5} eps={eps:<4} ours client secure {row['ours']['client_secure']:>12,.0f}/s "
                    f"seeded {row['ours']['client_seeded']:>12,.0f}/s server {row['ours']['server']:>12,.0f}/s"
                )
                if peers:
                    best_client = max(p["client"] for p in peers)
                    best_server = max(p["server"] for p in peers)
                    row["ratio_client_secure"] = row["ours"]["client_secure"] / best_client
                    row["ratio_server"] = row["ours"]["server"] / best_server
                    line += (
                        f" | best peer client {best_client:>9,.0f}/s server {best_server:>9,.0f}/s"
                        f" | x{row['ratio_client_secure']:,.0f} client, x{row['ratio_server']:,.0f} server"
                    )
                rows.append(row)
                print(line, flush=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "processor": platform.processor(), "cpus": os.cpu_count()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
