"""Issue 3 bar (Kairouz, Bonawitz & Ramage (ICML 2016) Fig. 3b at one n): closed-alphabet O-RR with tuned (k, C) against
k-RR and k-RAPPOR, all with projection, on n = 10^6 users from a geometric distribution with
mean S/5 over S = 256 symbols (the paper's setting), ε ∈ {1, 2, 4}.

Tuning as in the paper: a grid search over k and C on *pilot* collections (fresh data and
randomness), then the chosen (k, C) and the analytic choice of `choose_orr` are evaluated with
independent repeats beside k-RR and k-RAPPOR on the same users. Reports mean and median l1.

Usage: python benchmarks/orr_l1.py [--n 1000000] [--repeats 10] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from ldp_plugin import KRR, ORR, RAPPOR
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.theory import choose_orr

S = 256


def geometric_theta(S: int) -> np.ndarray:
    th = (1 - 5 / S) ** np.arange(S)  # geometric with mean ≈ S/5, truncated to S symbols
    return th / th.sum()


def l1_of(mech, values, emp, seed):
    rep = mech.randomize(values, rng=SeededRandomSource(seed))
    return float(np.abs(mech.estimate(rep).estimate - emp).sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--pilot-repeats", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    theta = geometric_theta(S)
    gen = np.random.default_rng(0)
    rows = []
    for eps in (1.0, 2.0, 4.0):
        t0 = time.perf_counter()
        pilot = gen.choice(S, size=args.n, p=theta)
        pilot_emp = np.bincount(pilot, minlength=S) / args.n
        grid = []
        for k in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256):
            for C in (1, 16, 64, 256, 1024):
                if k * C < S:
                    continue
                m = ORR(epsilon=eps, k=k, cohorts=C, d=S)
                l1 = np.mean([l1_of(m, pilot, pilot_emp, 1000 + r) for r in range(args.pilot_repeats)])
                grid.append((l1, k, C))
        grid.sort()
        _, k_best, C_best = grid[0]
        helper = choose_orr(S, eps, args.n)
        values = gen.choice(S, size=args.n, p=theta)  # fresh users for the evaluation
        emp = np.bincount(values, minlength=S) / args.n
        mechs = {
            "orr_tuned": ORR(epsilon=eps, k=k_best, cohorts=C_best, d=S),
            "orr_helper": ORR(epsilon=eps, k=helper["k"], cohorts=helper["cohorts"], d=S),
            "krr": KRR(epsilon=eps, d=S),
            "rappor": RAPPOR(epsilon=eps, d=S),
        }
        res = {}
        for name, m in mechs.items():
            l1s = [l1_of(m, values, emp, 10_000 + r) for r in range(args.repeats)]
            res[name] = {"mean_l1": float(np.mean(l1s)), "median_l1": float(np.median(l1s)), "sd_l1": float(np.std(l1s, ddof=1))}
        row = {
            "epsilon": eps, "n": args.n, "S": S,
            "tuned": {"k": k_best, "cohorts": C_best}, "helper": {"k": helper["k"], "cohorts": helper["cohorts"]},
            "results": res,
            "ratio_tuned_vs_krr": res["orr_tuned"]["mean_l1"] / res["krr"]["mean_l1"],
            "ratio_tuned_vs_rappor": res["orr_tuned"]["mean_l1"] / res["rappor"]["mean_l1"],
            "ratio_helper_vs_best_baseline": res["orr_helper"]["mean_l1"] / min(res["krr"]["mean_l1"], res["rappor"]["mean_l1"]),
            "seconds": round(time.perf_counter() - t0, 1),
            "grid_top5": [{"l1": g[0], "k": g[1], "cohorts": g[2]} for g in grid[:5]],
        }
        rows.append(row)
        print(
            f"eps={eps}: O-RR tuned (k={k_best}, C={C_best}) l1 {res['orr_tuned']['mean_l1']:.4f} | helper (k={helper['k']}, C={helper['cohorts']}) "
            f"{res['orr_helper']['mean_l1']:.4f} | k-RR {res['krr']['mean_l1']:.4f} | k-RAPPOR {res['rappor']['mean_l1']:.4f} | "
            f"tuned/k-RR {row['ratio_tuned_vs_krr']:.3f} tuned/RAPPOR {row['ratio_tuned_vs_rappor']:.3f} ({row['seconds']} s)",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
