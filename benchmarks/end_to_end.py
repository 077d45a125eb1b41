"""End-to-end client speed on the values users have (issue 24): each mechanism x input type as a
fraction of the pre-encoded code rate measured in the same run (OS CSPRNG, best of 3).

Usage: python benchmarks/end_to_end.py [--n 2000000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import polars as pl

import ldp_plugin as ldp


def best(fn, repeats=3):
    t = 1e9
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    cats = [f"app-{i:02d}" for i in range(64)]
    codes = np.random.default_rng(0).integers(0, 64, a.n)
    as_list = [cats[c] for c in codes.tolist()]
    as_obj = np.array(as_list, dtype=object)
    as_series = pl.Series("v", as_list, dtype=pl.String)
    as_cat = as_series.cast(pl.Categorical)
    df = pl.DataFrame({"v": as_series})
    rows = []
    for name, mech in (("krr", ldp.KRR(epsilon=2.0, categories=cats)), ("oue", ldp.OUE(epsilon=2.0, categories=cats))):
        code_t = best(lambda: mech.randomize_encoded(codes))
        res = {"mechanism": name, "code_rate": a.n / code_t}
        for label, fn in (("list[str]", lambda: mech.randomize(as_list)), ("object ndarray", lambda: mech.randomize(as_obj)),
                          ("Polars String", lambda: mech.randomize(as_series)), ("Polars Categorical", lambda: mech.randomize(as_cat)),
                          ("df.ldp.privatize", lambda: df.ldp.privatize("v", mech))):
            t = best(fn)
            res[label] = round(code_t / t, 3)
        rows.append(res)
        print(f"{name}: code rate {res['code_rate']:,.0f}/s; fraction of it: " + ", ".join(f"{k} {v:.2f}" for k, v in res.items() if k not in ("mechanism", "code_rate")), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "n": a.n}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
