"""Client and server throughput (reports/s) of ldp-plugin beside pure-ldp 1.2.0 and
multi-freq-ldpy 0.2.5, measured in the same run.

Pairs: k-RR vs DE (pure-ldp) / GRR (multi-freq-ldpy); RAPPOR vs UE(SUE) / UE(optimal=False);
OUE vs UE(use_oue) / UE(optimal=True); k-subset (k#) vs SS (multi-freq-ldpy; pure-ldp has none).
Ours: n = 10^6 users per call, OS CSPRNG ("secure") and seeded PCG64-DXSM ("seeded"). Peers are
per-user Python loops, timed on a subsample (n_peer users) and reported as reports/s.
Server: ours = accumulate (support counts) + estimate with projection; peers = their aggregation
of the same number of reports + estimate.

Usage: python benchmarks/throughput.py [--n 1000000] [--n-peer 20000] [--json OUT]
       [--mechanisms krr,rappor,oue,k-subset] [--no-peers]
(`LDP_PLUGIN_KERNELS=numpy` measures the numpy path of the samplers, without the compiled kernels)
Needs: pip install -e ".[benchmark]"
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from ldp_plugin import KRR, OUE, RAPPOR, KSubset
from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource

from _common import best_of, time_pure_ldp


def ours(mech, values, repeats):
    secure_t, _ = best_of(lambda: mech.randomize_encoded(values, rng=SecureRandomSource()), repeats)
    seeded_t, reports = best_of(lambda: mech.randomize_encoded(values, rng=SeededRandomSource(1)), repeats)
    server_t, _ = best_of(lambda: mech.accumulator().add(reports).estimate(postprocess="projection"), repeats)
    n = values.size
    return {"client_secure": n / secure_t, "client_seeded": n / seeded_t, "server": n / server_t}


def peer_pure_ldp(kind, d, eps, values):
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    if kind == "krr":
        client, server = DEClient(epsilon=eps, d=d), DEServer(epsilon=eps, d=d)
    elif kind in ("rappor", "oue"):
        client, server = UEClient(epsilon=eps, d=d, use_oue=kind == "oue"), UEServer(epsilon=eps, d=d, use_oue=kind == "oue")
    else:
        return None
    return time_pure_ldp(client, server, values)


def peer_mfl(kind, d, eps, values):
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.SS import SS_Aggregator_MI, SS_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    vals = values.tolist()
    t0 = time.perf_counter()
    if kind == "krr":
        reports = [GRR_Client(v, d, eps) for v in vals]
    elif kind in ("rappor", "oue"):
        reports = [UE_Client(v, d, eps, optimal=kind == "oue") for v in vals]
    else:
        reports = [SS_Client(v, d, eps) for v in vals]
    t1 = time.perf_counter()
    if kind == "krr":
        GRR_Aggregator_MI(reports, d, eps)
    elif kind in ("rappor", "oue"):
        UE_Aggregator_MI(reports, eps, optimal=kind == "oue")
    else:
        SS_Aggregator_MI(reports, d, eps)
    t2 = time.perf_counter()
    n = len(vals)
    out = {"client": n / (t1 - t0), "server": n / (t2 - t1)}
    if kind == "k-subset":
        # multi-freq-ldpy returns the true value first whenever it is included: order leaks it
        first_is_true = float(np.mean([r[0] == v for r, v in zip(reports, vals)]))
        out["report_first_element_equals_input"] = first_is_true
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--n-peer", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--mechanisms", default="krr,rappor,oue,k-subset", help="comma-separated subset to run")
    ap.add_argument("--no-peers", action="store_true", help="measure ours only (e.g. LDP_PLUGIN_KERNELS=numpy)")
    args = ap.parse_args()
    wanted = set(args.mechanisms.split(","))
    gen = np.random.default_rng(0)
    rows = []
    for d in (64, 1024):
        for eps in (1.0, 4.0):
            values = gen.integers(0, d, args.n)
            for kind, mech in (("krr", KRR(epsilon=eps, d=d)), ("rappor", RAPPOR(epsilon=eps, d=d)), ("oue", OUE(epsilon=eps, d=d)), ("k-subset", KSubset(epsilon=eps, d=d))):
                if kind not in wanted:
                    continue
                n_peer = args.n_peer if kind == "krr" or d == 64 else max(2000, args.n_peer // 4)
                row = {"mechanism": kind, "d": d, "epsilon": eps, "n": args.n, "n_peer": n_peer}
                if kind == "k-subset":
                    row["k"] = mech.k
                row["ours"] = ours(mech, values, args.repeats)
                if args.no_peers:
                    rows.append(row)
                    o = row["ours"]
                    print(f"{kind:<9} d={d:<5} eps={eps:<4} ours client secure {o['client_secure']:>12,.0f}/s seeded {o['client_seeded']:>12,.0f}/s server {o['server']:>12,.0f}/s", flush=True)
                    continue
                row["pure_ldp"] = peer_pure_ldp(kind, d, eps, values[:n_peer])
                row["multi_freq_ldpy"] = peer_mfl(kind, d, eps, values[:n_peer])
                peers = [p for p in (row["pure_ldp"], row["multi_freq_ldpy"]) if p]
                best_client = max(p["client"] for p in peers)
                best_server = max(p["server"] for p in peers)
                row["ratio_client_secure"] = row["ours"]["client_secure"] / best_client
                row["ratio_server"] = row["ours"]["server"] / best_server
                rows.append(row)
                print(
                    f"{kind:<9} d={d:<5} eps={eps:<4} ours client secure {row['ours']['client_secure']:>12,.0f}/s "
                    f"seeded {row['ours']['client_seeded']:>12,.0f}/s server {row['ours']['server']:>12,.0f}/s | "
                    f"best peer client {best_client:>9,.0f}/s server {best_server:>10,.0f}/s | "
                    f"x{row['ratio_client_secure']:,.0f} client, x{row['ratio_server']:,.0f} server",
                    flush=True,
                )
    from ldp_plugin.sampling.kernels import kernel_backend

    meta = {"python": platform.python_version(), "machine": platform.machine(), "processor": platform.processor(), "cpus": __import__("os").cpu_count(), "kernels": kernel_backend()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
