"""Coverage of the 95% intervals, both targets, every registered frequency oracle (+ SampleOne,
the wheel, O-RR), several n and ε, on a Zipf(1.1) distribution over d = 16 items (its tail items
sit near 0). "sample": truth = the reporting users' own frequencies; "population": users i.i.d.
from θ, truth = θ, intervals with ``target="population"``. Prints mean and worst-item coverage.

Usage: python benchmarks/coverage.py [--repeats 100] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from ldp_plugin.registry import build
from ldp_plugin.simulate import draw_sets

MECHS = [("krr", {}), ("rappor", {}), ("oue", {}), ("k-subset", {}), ("olh", {}), ("hadamard", {}), ("the", {}),
         ("orr", {}), ("sample-krr", {"m": 4}), ("wheel", {"m": 2})]


def run(name, kw, eps, n, target, R, d=16):
    mech = build(name, epsilon=eps, d=d, n=n, **kw)
    gen = np.random.default_rng(hash((name, eps, n, target)) % 2**32)
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    theta = w / w.sum()
    m = kw.get("m", 1)
    hits = []
    for r in range(R):
        if m > 1:
            sets, f = draw_sets(theta, n, m, gen)
            rep = mech.randomize(sets, rng=r)
            truth = f if target == "sample" else None
        else:
            users = gen.choice(d, size=n, p=theta)
            rep = mech.randomize(users, rng=r) if mech.input_kind == "set" else mech.randomize_encoded(users, rng=r)
            truth = np.bincount(users, minlength=d) / n if target == "sample" else theta
        if truth is None:  # sets, population target: f_i = P(item i in a user's set), by simulation of the same generator
            truth = f_pop(theta, m, gen)
        est = mech.estimate(rep, postprocess="none", target=target)
        hits.append((est.ci_lower <= truth) & (truth <= est.ci_upper))
    per = np.mean(hits, axis=0)
    return float(per.mean()), float(per.min())


_FPOP = {}


def f_pop(theta, m, gen):
    key = (tuple(theta), m)
    if key not in _FPOP:
        _, f = draw_sets(theta, 400_000, m, np.random.default_rng(0))
        _FPOP[key] = f
    return _FPOP[key]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    t0 = time.time()
    for name, kw in MECHS:
        for eps in (1.0, 4.0):
            for n in (10_000, 100_000):
                for target in ("sample", "population"):
                    mean, worst = run(name, kw, eps, n, target, a.repeats)
                    rows.append({"mechanism": name, **kw, "epsilon": eps, "n": n, "target": target, "mean": round(mean, 3), "worst": round(worst, 3)})
                    print(f"{name:<11} eps={eps:<4} n={n:<7} {target:<10} mean={mean:.3f} worst={worst:.3f}", flush=True)
    meta = {"machine": platform.platform(), "python": platform.python_version(), "repeats": a.repeats, "seconds": round(time.time() - t0, 1)}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
