"""Issue 18's done-when, measured: longitudinal protocols over 20 rounds (d = 64, eps_perm = 2,
eps_1 = 1, change probability 0.2) and the mean mechanisms at eps = 1, n = 10^5, 200 repeats,
over several seeds (a 200-repeat MSE scatters by about 10%, a coverage by 1.5%, one sd).

Usage: python benchmarks/series.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from ldp_plugin.simulate import LONGITUDINAL_NAMES, MEAN_NAMES, build_longitudinal, build_mean, simulate_longitudinal, simulate_mean


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = {"longitudinal": [], "mean": []}
    print("longitudinal: d=64, eps_perm=2, eps_1=1, 20 rounds, change 0.2, n=20,000, 5 populations")
    for name in LONGITUDINAL_NAMES:
        m = build_longitudinal(name, d=64, epsilon_perm=2.0, epsilon_1=1.0)
        t0 = time.perf_counter()
        out = simulate_longitudinal(m, rounds=20, change_prob=0.2, n=20_000, seed=0, repeats=5)
        secs = time.perf_counter() - t0
        per_report_us = secs / (20 * 20_000 * 5) * 1e6
        rows["longitudinal"].append({k: out[k] for k in ("max_user_spend", "mean_user_spend", "spend_bound", "max_user_spend_value_level",
                                                         "mean_user_spend_value_level", "spend_bound_value_level", "mse", "analytic_mse", "mse_ratio")}
                                    | {"mechanism": name, "seconds": round(secs, 2), "us_per_report": round(per_report_us, 2)})
        user = "unbounded" if out["spend_bound"] is None else f"{out['spend_bound']:g}"
        print(f"  {name:<9} user-level spend {user}; value level max {out['max_user_spend_value_level']:>5g} "
              f"(bound {out['spend_bound_value_level']:>5g}), mean {out['mean_user_spend_value_level']:6.3f}; "
              f"mse/analytic {out['mse_ratio']:.3f}; {per_report_us:.1f} us per report (client + server + accounting)", flush=True)
    print("means: eps=1, n=100,000, 200 repeats, seeds 0..9")
    for name in MEAN_NAMES:
        m = build_mean(name, epsilon=1.0)
        per_seed = []
        for seed in range(10):
            out = simulate_mean(m, n=100_000, repeats=200, seed=seed)
            per_seed.append({"seed": seed, "mse_ratio": out["mse"] / out["analytic_mse"], "coverage": out["coverage"]})
        ok = sum(abs(r["mse_ratio"] - 1) <= 0.15 and r["coverage"] >= 0.93 for r in per_seed)
        rows["mean"].append({"mechanism": name, "seeds": per_seed, "seeds_meeting_both": ok})
        ratios = " ".join(f"{r['mse_ratio']:.2f}" for r in per_seed)
        covs = " ".join(f"{r['coverage']:.3f}" for r in per_seed)
        print(f"  {name:<12} mse/analytic: {ratios}\n  {'':<12} coverage:     {covs}\n  {'':<12} seeds meeting both (within 15%, >= 93%): {ok}/10", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version()}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
