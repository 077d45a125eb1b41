"""Issue 4 benchmarks: the wheel against RAPPOR-for-sets and PrivSet (Wang et al. (PVLDB 2020) §6).

1. Client time per user and server throughput, d ∈ {512, 1024, 2048}, m ∈ {1, 16}, ε = 1
   (n = 20,000 users with m distinct items each, OS CSPRNG; best of 3).
2. Accuracy at n = 10^5, d = 512, ε = 1 (Wang et al. (PVLDB 2020) §6.3.1): total variation error (mean l1 of the
   projected estimates, scaled to sum to m; and of the raw estimates) and l∞ for m ∈ {1, 2, 4, 8, 16},
   20 repeats (zipf(1.1) item popularity, sets drawn without replacement), and the measured raw MSE
   against the analytic formula (Thm 4/6).

Usage: python benchmarks/sets_bench.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from ldp_plugin import PrivSet, RapporSet, Wheel
from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource
from ldp_plugin.simulate import draw_sets, true_distribution

from _common import best_of


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    gen = np.random.default_rng(0)
    speed = []
    for m in (1, 16):
        for d in (512, 1024, 2048):
            data, _ = draw_sets(np.full(d, 1 / d), 20_000, m, gen)
            for mech in (Wheel(epsilon=1.0, d=d, m=m), RapporSet(epsilon=1.0, d=d, m=m), PrivSet(epsilon=1.0, d=d, m=m)):
                tc, rep = best_of(lambda: mech.randomize(data, rng=SecureRandomSource()))
                ts, _ = best_of(lambda: mech.accumulator().add(rep), 1)
                row = {"mechanism": mech.name, "d": d, "m": m, "client_us_per_user": 1e6 * tc / 20_000, "server_reports_per_s": 20_000 / ts,
                       "server_checks_per_s": 20_000 * d / ts}
                if mech.name == "privset":
                    row["k"] = mech.k
                speed.append(row)
                print(json.dumps(row), flush=True)
    acc = []
    n, d = 100_000, 512
    for m in (1, 2, 4, 8, 16):
        for mech in (Wheel(epsilon=1.0, d=d, m=m), RapporSet(epsilon=1.0, d=d, m=m)):
            l1s, linfs, sq, an, raw1 = [], [], [], [], []
            for r in range(20):
                theta = true_distribution("zipf", d, gen)
                data, f = draw_sets(theta, n, m, gen)
                est = mech.estimate(mech.randomize(data, rng=SeededRandomSource(100 * m + r)))
                l1s.append(float(np.abs(est.estimate - f).sum()))
                linfs.append(float(np.abs(est.estimate - f).max()))
                sq.append(float(((est.raw - f) ** 2).sum()))
                raw1.append(float(np.abs(est.raw - f).sum()))
                an.append(mech.mse(n, f))
            row = {"mechanism": mech.name, "m": m, "tve_l1": float(np.mean(l1s)), "tve_l1_raw": float(np.mean(raw1)),
                   "rmse_raw": float(np.sqrt(np.mean(sq))), "linf": float(np.mean(linfs)),
                   "mse_measured_over_analytic": float(np.sum(sq) / np.sum(an))}
            acc.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"speed": speed, "accuracy": acc}, fh, indent=1)


if __name__ == "__main__":
    main()
