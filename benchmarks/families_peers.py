"""RS+FD[GRR] and SMP[GRR] against multi-freq-ldpy 0.2.5 on the same input (issue 37).

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install "multi-freq-ldpy==0.2.5" "xxhash<4" numpy
    python benchmarks/families_peers.py --peer-python /tmp/peer/bin/python [--n 20000] [--runs 20]

multi-freq-ldpy needs ``xxhash<4``, so it lives in its own venv; this script writes the users'
tuples to a temporary file and runs the peer there (``--as-peer``, which imports only numpy and
multi_freq_ldpy). The configuration is the paper's: ``ε`` per attribute, k-RR at
``ε' = ln(A(e^ε − 1) + 1)`` — ours is ``RSFD.from_attribute_epsilon(ε)`` (its ``epsilon``, the
whole-tuple guarantee, is ``ε'``). Accuracy: per-attribute MSE of each library's post-processed
estimate (peer: clip and normalize; ours: projection onto the simplex, and the peer's clip and
normalize on our raw estimate — the like-for-like ratio) against the users' own frequencies,
averaged over ``runs``. Speed: client + server wall time for the ``n`` users. The peer runs with
``python -P`` (this folder holds a ``coverage.py`` that would shadow the package numba imports).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

A, K, EPS = 5, 10, 2.0


def peer(path: str, runs: int) -> dict:
    from multi_freq_ldpy.mdim_freq_est.RSpFD_solution import RSpFD_GRR_Aggregator_MI, RSpFD_GRR_Client
    from multi_freq_ldpy.mdim_freq_est.SMP_solution import SMP_GRR_Aggregator_MI, SMP_GRR_Client

    x = np.load(path)
    n = x.shape[0]
    truth = [np.bincount(x[:, j], minlength=K) / n for j in range(A)]
    out = {}
    for name, client, agg in (("rsfd", RSpFD_GRR_Client, RSpFD_GRR_Aggregator_MI), ("smp", SMP_GRR_Client, SMP_GRR_Aggregator_MI)):
        mse, secs = [], []
        for s in range(runs):
            np.random.seed(s)
            t0 = time.perf_counter()
            reports = [client(row, [K] * A, A, EPS) for row in x]
            est = agg(reports, [K] * A, A, EPS)
            secs.append(time.perf_counter() - t0)
            mse.append(np.mean([np.sum((np.asarray(est[j], dtype=float) - truth[j]) ** 2) for j in range(A)]))
        out[name] = {"mse": float(np.mean(mse)), "mse_sd": float(np.std(mse, ddof=1)), "seconds": float(np.median(secs))}
    return out


def ours(x: np.ndarray, runs: int) -> dict:
    import ldp_plugin as ldp

    n = x.shape[0]
    truth = [np.bincount(x[:, j], minlength=K) / n for j in range(A)]
    out = {}
    for name, m in (("rsfd", ldp.RSFD.from_attribute_epsilon(EPS, domains=(K,) * A)), ("smp", ldp.SMP(epsilon=EPS, domains=(K,) * A))):
        mse, raw, clip, secs = [], [], [], []
        for s in range(runs):
            t0 = time.perf_counter()
            e = m.estimate(m.randomize(x, rng=s))
            secs.append(time.perf_counter() - t0)
            mse.append(np.mean([np.sum((a.estimate - truth[j]) ** 2) for j, a in enumerate(e.attributes)]))
            raw.append(np.mean([np.sum((a.raw - truth[j]) ** 2) for j, a in enumerate(e.attributes)]))
            # the peer's post-processing on our raw estimate: clip at 0, normalize
            clip.append(np.mean([np.sum((np.clip(a.raw, 0, None) / np.clip(a.raw, 0, None).sum() - truth[j]) ** 2)
                                 for j, a in enumerate(e.attributes)]))
        out[name] = {"mse": float(np.mean(mse)), "mse_raw": float(np.mean(raw)), "mse_clip_normalize": float(np.mean(clip)),
                     "mse_clip_normalize_sd": float(np.std(clip, ddof=1)), "seconds": float(np.median(secs)), "epsilon_user": m.epsilon}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-python", default=None)
    ap.add_argument("--as-peer", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.as_peer:
        print(json.dumps(peer(args.as_peer, args.runs)))
        return
    gen = np.random.default_rng(0)
    theta = [np.r_[0.3, np.full(K - 1, 0.7 / (K - 1))]] + [np.full(K, 1 / K)] * (A - 1)
    x = np.stack([gen.choice(K, args.n, p=theta[j]) for j in range(A)], 1)
    result = {"n": args.n, "runs": args.runs, "attributes": A, "k": K, "epsilon_per_attribute": EPS, "ours": ours(x, args.runs)}
    if args.peer_python:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.npy")
            np.save(path, x)
            p = subprocess.run([args.peer_python, "-P", __file__, "--as-peer", path, "--runs", str(args.runs)], capture_output=True, text=True, check=True)
            result["multi_freq_ldpy"] = json.loads(p.stdout.strip().splitlines()[-1])
    for name in ("rsfd", "smp"):
        o = result["ours"][name]
        line = (f"{name}: ours MSE projection {o['mse']:.3e}, clip+normalize {o['mse_clip_normalize']:.3e} (raw {o['mse_raw']:.3e}) "
                f"in {o['seconds'] * 1e3:.1f} ms")
        if "multi_freq_ldpy" in result:
            p = result["multi_freq_ldpy"][name]
            R = args.runs
            ratio = o["mse_clip_normalize"] / p["mse"]  # the same post-processing on both sides
            sd = ratio * math.sqrt((o["mse_clip_normalize_sd"] / o["mse_clip_normalize"]) ** 2 / R + (p["mse_sd"] / p["mse"]) ** 2 / R)
            o["clip_normalize_ratio_to_peer"], o["ratio_sd"], o["speedup"] = ratio, sd, p["seconds"] / o["seconds"]
            line += (f"; multi-freq-ldpy (clip+normalize) MSE {p['mse']:.3e} in {p['seconds'] * 1e3:.0f} ms — MSE ratio (same post-processing) "
                     f"{ratio:.3f} ± {sd:.3f}, {p['seconds'] / o['seconds']:.0f}x faster")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
