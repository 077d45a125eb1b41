"""Issue 35: attack gain of the maximal-gain attack (Cao, Jia, Gong, USENIX Security 2021) with and
without detection / robust aggregation, the certified poison_shift, and the utility price of robust
aggregation. d = 1024, Zipf(1.3) honest data, fixed seeds.

    python benchmarks/robust_poisoning.py [--n 20000] [--mechanisms krr,oue,olh,hcms] [--no-price] [--out FILE.json]

Columns (percentage points of frequency, raw estimates):
* single: one target, gain measured / certified poison_shift (exact for linear estimators);
* multi: r = 10 targets, mean gain per target without defence / with detection (OUE, OLH; k-RR and HCMS:
  no per-report test applies, n/a);
* trimmed: the fakes sent by 1 of 10 nodes, trimmed mean (f = 1) of per-node estimates vs the pooled
  estimate of the honest nodes: the target's shift (single-target MGA);
* price: Var(trimmed)/Var(pooled) measured on honest-only nodes (mean over items and 3 seeds).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from ldp_plugin import HCMS, KRR, OLH, OUE
from ldp_plugin.robust import combine, detect, fake_count, measure_gain, poison_bound, report_sd
from ldp_plugin.mechanisms.protocol import SupportTestable, has

D = 1024
NODES = 10


def _build(name, eps):
    return {"krr": lambda: KRR(epsilon=eps, d=D), "oue": lambda: OUE(epsilon=eps, d=D), "olh": lambda: OLH(epsilon=eps, d=D),
            "hcms": lambda: HCMS(epsilon=eps, k=D, cohorts=4, d=D)}[name]()


def _cat(mech, parts):
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return mech.from_columns({k: np.concatenate([np.asarray(mech.to_columns(p)[k]) for p in parts]) for k in mech.to_columns(parts[0])})


def _slice(mech, reps, a, b):
    cols = mech.to_columns(reps)
    return mech.from_columns({k: np.asarray(v)[a:b] for k, v in cols.items()})


def _node_estimates(mech, parts):
    out = {}
    for k, p in enumerate(parts):
        e = mech.estimate(p, postprocess="none", target="population")
        out[k] = (e.raw, e.std_error, e.n)
    return out


def run(n: int, names=("krr", "oue", "olh", "hcms"), nodes: bool = True) -> list:
    x = np.minimum(np.random.default_rng(1).zipf(1.3, n) - 1, D - 1)
    targets = np.random.default_rng(9).choice(np.arange(100, D), 10, replace=False)
    t1 = int(targets[0])
    rows = []
    for name in names:
        for eps in (1.0, 4.0):
            mech = _build(name, eps)
            honest = mech.randomize(x, rng=2)
            bounds = np.linspace(0, n, NODES + 1).astype(int)
            parts = [_slice(mech, honest, bounds[k], bounds[k + 1]) for k in range(NODES)]
            if nodes:
                hon = _node_estimates(mech, parts)  # the honest nodes' estimates, once per mechanism
                pooled_h = combine(hon, rule="trimmed", f=1).pooled
            for beta in (0.01, 0.05):
                t0 = time.perf_counter()
                m = fake_count(n, beta)
                r = measure_gain(mech, honest, [t1], m=m, rng=3)
                b = poison_bound(mech, r.after, poison_fraction=r.fraction)
                row = {"mechanism": name, "epsilon": eps, "beta": beta, "n": n, "m": m,
                       "single_gain": float(r.gain[0]), "poison_shift": float(b.poison_shift[t1])}
                fakes = mech.max_gain_reports(targets, m, rng=4)
                plain = np.asarray(r.before.raw)
                allr = _cat(mech, [honest, fakes])
                pois = mech.estimate(allr, postprocess="none").raw
                row["multi_gain"] = float(np.mean(pois[targets] - plain[targets]))
                if has(mech, SupportTestable):
                    det = detect(mech, allr)
                    est = det.estimate(postprocess="none").raw
                    row["multi_gain_detected"] = float(np.mean(est[targets] - plain[targets]))
                    row["multi_max_abs_detected"] = float(np.max(np.abs(est[targets] - plain[targets])))
                    row["flagged"] = det.flagged
                    row["fakes_flagged"] = int((~det.mask[n:]).sum())
                    hd = detect(mech, honest)
                    row["honest_flagged"] = hd.flagged
                else:
                    row["multi_gain_detected"] = None
                # robust aggregation: node 0 hostile, sending the single-target fakes
                if not nodes:
                    row["seconds"] = round(time.perf_counter() - t0, 2)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    continue
                single_fakes = mech.max_gain_reports([t1], m, rng=3)
                ests = dict(hon)
                ests[0] = _node_estimates(mech, [_cat(mech, [parts[0], single_fakes])])[0]
                rob = combine(ests, rule="trimmed", f=1, report_sd=report_sd(mech))
                row["trimmed_gain"] = float(rob.estimate[t1] - pooled_h[t1])
                row["trimmed_bound"] = float(rob.bound[t1])
                row["pooled_gain_hostile_node"] = float(rob.pooled[t1] - pooled_h[t1])
                row["seconds"] = round(time.perf_counter() - t0, 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def price(n: int, seeds: int = 3) -> list:
    """Var(robust)/Var(pooled) on honest-only nodes, measured against the truth over items and seeds."""
    out = []
    for name in ("krr", "oue", "olh"):
        for eps in (1.0, 4.0):
            mech = _build(name, eps)
            errs = {"pooled": [], "trimmed": [], "median-of-means": []}
            pred = []
            for s in range(seeds):
                x = np.minimum(np.random.default_rng(100 + s).zipf(1.3, n) - 1, D - 1)
                truth = np.bincount(x, minlength=D) / n
                reps = mech.randomize(x, rng=200 + s)
                bounds = np.linspace(0, n, NODES + 1).astype(int)
                ests = _node_estimates(mech, [_slice(mech, reps, bounds[k], bounds[k + 1]) for k in range(NODES)])
                tr = combine(ests, rule="trimmed", f=1)
                mm = combine(ests, rule="median-of-means", f=1, groups=5)
                errs["pooled"].append(np.mean((tr.pooled - truth) ** 2))
                errs["trimmed"].append(np.mean((tr.estimate - truth) ** 2))
                errs["median-of-means"].append(np.mean((mm.estimate - truth) ** 2))
                pred.append(float(np.mean(tr.variance_price)))
            row = {"mechanism": name, "epsilon": eps, "n": n,
                   "mse_ratio_trimmed": float(np.mean(errs["trimmed"]) / np.mean(errs["pooled"])),
                   "mse_ratio_median_of_means": float(np.mean(errs["median-of-means"]) / np.mean(errs["pooled"])),
                   "predicted_price_trimmed": float(np.mean(pred))}
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--out", default="benchmarks/results/robust_poisoning.json")
    ap.add_argument("--mechanisms", default="krr,oue,olh,hcms", help="comma-separated subset of krr,oue,olh,hcms")
    ap.add_argument("--no-price", action="store_true", help="skip the utility-price runs")
    ap.add_argument("--no-nodes", action="store_true", help="skip the robust-aggregation runs (10 per-node decodes each)")
    a = ap.parse_args()
    t = time.perf_counter()
    rows = run(a.n, tuple(m for m in a.mechanisms.split(",") if m), nodes=not a.no_nodes)
    pr = [] if a.no_price else price(a.n)
    res = {"machine": platform.platform(), "processor": platform.processor(), "n": a.n, "attack": rows, "price": pr,
           "seconds": round(time.perf_counter() - t, 1)}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
