"""``ldp demo`` for the families that are not frequency oracles: a simulated collection on
generated users with the estimate, its interval (and what the interval covers) next to the truth.

* numbers (distributions, trees, means): 8 histogram buckets (or the mean) of Beta(2, 5) values
  on ``[0, 1]``;
* key–value sets (PCKV): each user holds 0 to ``ell`` of 4 keys with values in ``[−1, 1]``;
* several attributes (SPL, SMP, RS+FD, SMP pairs): 3 attributes of 4, 3 and 2 values.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..sampling import as_source

__all__ = ["demo_family"]

BUCKETS = 8


def _numbers(mech: Any, n: int, gen: np.random.Generator, seed: Any) -> tuple:
    x = gen.beta(2, 5, n)
    est = mech.estimate(mech.randomize(x, rng=as_source(seed)))
    if hasattr(est, "mean") and not hasattr(est, "histogram"):
        truth = float(x.mean())
        rows = [{"item": "mean", "truth": truth, "estimate": est.mean, "ci_lower": est.ci_lower, "ci_upper": est.ci_upper}]
        return rows, est.interval_kind, est.bounds
    h = est.histogram(BUCKETS)
    rows = []
    for i in range(BUCKETS):
        lo, hi = float(h["lo"][i]), float(h["hi"][i])
        rows.append({"item": f"[{lo:.3g}, {hi:.3g})", "truth": float(np.mean((x >= lo) & (x < hi) if i < BUCKETS - 1 else (x >= lo))),
                     "estimate": float(h["estimate"][i]), "ci_lower": float(h["ci_lower"][i]), "ci_upper": float(h["ci_upper"][i])})
    return rows, est.interval_kind, est.bounds


def _key_values(mech: Any, n: int, gen: np.random.Generator, seed: Any) -> tuple:
    sizes = gen.integers(0, mech.ell + 1, n)
    users = [[(int(k), float(np.round(gen.uniform(-1, 1), 3))) for k in gen.choice(mech.d, size=min(int(s), mech.d), replace=False)]
             for s in sizes]
    est = mech.estimate(mech.randomize(users, rng=as_source(seed)))
    truth = [sum(any(k == j for k, _ in u) for u in users) / n for j in range(mech.d)]
    rows = [{"item": f"key {j} frequency", "truth": truth[j], "estimate": float(est.frequency[j]),
             "ci_lower": float(est.frequency_ci_lower[j]), "ci_upper": float(est.frequency_ci_upper[j])} for j in range(mech.d)]
    return rows, est.interval_kind, est.bounds


def _attributes(mech: Any, n: int, gen: np.random.Generator, seed: Any) -> tuple:
    x = np.stack([gen.integers(0, k, n) for k in mech.domains], axis=1)
    est = mech.estimate(mech.randomize(x, rng=as_source(seed)))
    rows = []
    for g, a in enumerate(est.attributes):
        codes = mech.group_codes(x, g)
        truth = np.bincount(codes, minlength=len(a.items)) / n
        rows += [{"item": f"group {g} item {it}", "truth": float(truth[k]), "estimate": float(a.estimate[k]),
                  "ci_lower": float(a.ci_lower[k]), "ci_upper": float(a.ci_upper[k])} for k, it in enumerate(a.items)]
    return rows, "interval", ""


def demo_family(mech: Any, args: Any) -> int:
    """Print (or ``--json``) the demo of a non-frequency mechanism ``mech``."""
    gen = np.random.default_rng(args.seed)
    kind = mech.input_kind
    run = _numbers if kind == "number" else _key_values if kind == "key-value" else _attributes
    rows, interval_kind, bounds = run(mech, int(args.n), gen, args.seed)
    for r in rows:
        r["covered"] = bool(r["ci_lower"] <= r["truth"] <= r["ci_upper"])
    covered = sum(r["covered"] for r in rows)
    if args.json:
        print(json.dumps({"mechanism": mech.spec(), "n": args.n, "confidence": 0.95, "truth": "the simulated users' own values",
                          "interval_kind": interval_kind, "bounds": bounds, "rows": rows, "covered": covered}, indent=2))
        return 0
    print(f"ldp demo: {args.n:,} simulated users, {mech.name} with epsilon={mech.epsilon} per user (max-divergence).")
    print(f"randomness: {'OS CSPRNG' if args.seed is None else 'seeded (not secure; reproducible demo)'}; truth: the simulated users' own values.")
    print(f"{'':<24} {'truth':>8} {'estimate':>9}   95% interval")
    for r in rows:
        print(f"{r['item']:<24} {r['truth']:>8.4f} {r['estimate']:>9.4f}   [{r['ci_lower']:.4f}, {r['ci_upper']:.4f}]{'' if r['covered'] else '  (missed)'}")
    print(f"{covered}/{len(rows)} true values inside their intervals ({interval_kind}).")
    if bounds:
        print(f"NOTE: {bounds}")
    return 0
