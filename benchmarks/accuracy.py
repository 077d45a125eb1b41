"""Measured mean squared error of the raw estimator against the analytic MSE, n = 10^6, d = 1024.

For each mechanism and ε, R collections of n users (Zipf-like truth), raw (unbiased) estimates,
l2² error against the users' empirical distribution, averaged; ratio to the analytic MSE
[p*(1−p*) + (d−1) q*(1−q*)] / (n (p*−q*)²). Seeded randomness (reproducible).

Usage: python benchmarks/accuracy.py [--n 1000000] [--d 1024] [--repeats 20] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math

from ldp_plugin import KRR, OUE, RAPPOR, KSubset
from ldp_plugin.simulate import simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for eps in (1.0, 4.0):
        for mech in (KRR(epsilon=eps, d=args.d), RAPPOR(epsilon=eps, d=args.d), OUE(epsilon=eps, d=args.d), KSubset(epsilon=eps, d=args.d)):
            res = simulate(mech, n=args.n, repeats=args.repeats, distribution="zipf", postprocess="none", seed=7)
            ratio = res.mean_l2_squared_raw / res.analytic_mse
            # standard error of the ratio from the per-item chi-square: ≈ sqrt(2/d/R) (items ~independent)
            se = math.sqrt(2 / args.d / args.repeats)
            rows.append({"mechanism": mech.params(), "measured_mse": res.mean_l2_squared_raw, "analytic_mse": res.analytic_mse, "ratio": ratio, "approx_se_of_ratio": se})
            print(f"{mech.name:<9} eps={eps:<4} measured {res.mean_l2_squared_raw:.4e} analytic {res.analytic_mse:.4e} ratio {ratio:.4f} (±{se:.3f})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "d": args.d, "repeats": args.repeats, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
