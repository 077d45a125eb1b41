"""Coverage and MSE / reported variance of the intervals changed for honest answers: the bucketed
oracle's range counts (ranges inside buckets and on bucket edges) on five data shapes, PCKV's
frequencies for the reporting users (``target="sample"``) at several (ε, ℓ), and, for reference,
Square Wave's EMS+bootstrap intervals (labelled ``variance-only``) on the same shapes.

Each cell: ``runs`` seeded repetitions over the mechanism's randomness with the users fixed;
coverage of the 95% intervals and ``MSE / mean(reported variance)``.

Usage: python benchmarks/honest_intervals.py [--runs 200] [--sw-runs 30] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.estimation import normal_quantile

Z = normal_quantile(0.95)
SHAPES = ["smooth", "bimodal", "spiky", "heavy-tailed", "point-masses"]


def shape(name: str, n: int, gen: np.random.Generator) -> np.ndarray:
    if name == "smooth":
        return gen.beta(2, 5, n)
    if name == "bimodal":
        return np.where(gen.random(n) < 0.5, gen.normal(0.2, 0.04, n), gen.normal(0.75, 0.05, n)).clip(0, 1)
    if name == "spiky":
        return np.where(gen.random(n) < 0.4, 0.33, gen.random(n))
    if name == "heavy-tailed":
        return np.minimum(gen.pareto(1.2, n) / 20, 1.0)
    return gen.choice([0.05, 0.33, 0.34, 0.9], size=n, p=[0.2, 0.3, 0.3, 0.2])


def range_cell(mech, x, lo, hi, runs, **kw) -> dict:
    truth = float(np.mean((x >= lo) & (x < hi)))
    rows = [mech.estimate(mech.randomize(x, rng=s), **kw).range_fraction(lo, hi) for s in range(runs)]
    err = np.array([r.fraction - truth for r in rows])
    var = float(np.mean([r.std_error ** 2 for r in rows]))
    cover = float(np.mean([r.ci_lower <= truth <= r.ci_upper for r in rows]))
    return {"coverage": cover, "mse_over_var": float(np.mean(err ** 2) / var) if var > 0 else None, "kind": rows[0].interval_kind}


def pckv_cell(eps: float, ell: int, runs: int, d: int = 4, n: int = 3000) -> dict:
    gen = np.random.default_rng(int(eps * 10 + ell))
    m = ldp.PCKV(epsilon=eps, d=d, ell=ell)
    sizes = gen.integers(0, ell + 1, n)
    users = [[(int(k), float(gen.uniform(-1, 1))) for k in gen.choice(d, size=int(sz), replace=False)] for sz in sizes]
    truth = np.array([sum(any(k == j for k, _ in u) for u in users) for j in range(d)]) / n
    batch = m.encode(users)
    est = [m.estimate(m.randomize(batch, rng=s)) for s in range(runs)]
    f = np.array([e.frequency for e in est])
    se = np.array([e.frequency_se for e in est])
    pop = np.array([m.estimate(m.randomize(batch, rng=s), target="population").frequency_se for s in range(min(runs, 50))])
    return {"coverage": float(np.mean((f - Z * se <= truth) & (truth <= f + Z * se))),
            "mse_over_var": float(np.mean((f - truth) ** 2) / np.mean(se ** 2)),
            "old_population_var_over_mse": float(np.mean(pop ** 2) / np.mean((f - truth) ** 2))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--sw-runs", type=int, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    t0 = time.time()
    out: dict = {"machine": platform.processor() or platform.machine(), "runs": a.runs, "bucketed": [], "pckv": [], "square_wave": []}
    print(f"{'cell':<46} {'coverage':>9} {'MSE/var':>8}  kind")
    for i, name in enumerate(SHAPES):
        gen = np.random.default_rng(i)
        x = shape(name, 20_000, gen)
        for eps in (0.5, 2.0):
            b = ldp.BucketedOracle(epsilon=eps, buckets=8)
            for lo, hi, what in ((0.3, 0.7, "inside buckets"), (0.25, 0.75, "bucket edges")):
                c = range_cell(b, x, lo, hi, a.runs)
                out["bucketed"].append({"shape": name, "epsilon": eps, "range": [lo, hi], **c})
                mv = "-" if c["mse_over_var"] is None else f"{c['mse_over_var']:.2f}"
                print(f"{'bucketed ' + name + f' eps={eps} [{lo},{hi}) ' + what:<46} {c['coverage']:>9.3f} {mv:>8}  {c['kind']}")
        sw = ldp.SquareWave(epsilon=2.0, grid=64)
        c = range_cell(sw, x, 0.25, 0.75, a.sw_runs, replicates=50)
        out["square_wave"].append({"shape": name, "epsilon": 2.0, "range": [0.25, 0.75], **c})
        print(f"{'square-wave ' + name + ' eps=2 [0.25,0.75)':<46} {c['coverage']:>9.3f} {c['mse_over_var']:>8.2f}  {c['kind']}")
    for eps, ell in ((6.0, 1), (2.0, 2), (1.0, 3)):
        c = pckv_cell(eps, ell, a.runs)
        out["pckv"].append({"epsilon": eps, "ell": ell, **c})
        print(f"{f'pckv eps={eps} ell={ell} frequencies (sample)':<46} {c['coverage']:>9.3f} {c['mse_over_var']:>8.2f}  "
              f"interval (old population variance / MSE: {c['old_population_var_over_mse']:.2f})")
    out["seconds"] = round(time.time() - t0, 1)
    print(f"{out['seconds']} s")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
