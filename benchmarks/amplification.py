"""Central epsilon of shuffled batches (issue 16): k-RR (d = 2, 64, 1024), RAPPOR, OLH and k-subset
(d = 64) at eps0 in {1, 2, 4, 8}, n in {1e5, 1e6, 1e7}, delta = 1/n^2; the mechanism-specific and
generic variation-ratio upper bounds, the privacy-blanket bound (randomized response), the exact
lower bound where it applies, and the time per call of each.

Usage: python benchmarks/amplification.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from ldp_plugin.amplification import blanket_epsilon, blanket_parameters, generic_parameters, shuffle_epsilon, variation_parameters
from ldp_plugin.registry import build

CASES = [("krr", 2), ("krr", 64), ("krr", 1024), ("rappor", 64), ("olh", 64), ("k-subset", 64)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    print(f"{'mechanism':<10} {'d':>5} {'eps0':>4} {'n':>9} {'upper':>9} {'specific':>9} {'generic':>9} {'blanket':>9} {'lower':>9} {'s/call':>7} {'s blanket':>9}")
    for name, d in CASES:
        for eps0 in (1.0, 2.0, 4.0, 8.0):
            mech = build(name, epsilon=eps0, d=d)
            vp = variation_parameters(mech)
            for n in (10**5, 10**6, 10**7):
                delta = 1.0 / n**2
                t0 = time.perf_counter()
                spec = shuffle_epsilon(vp, n, delta)
                gen = shuffle_epsilon(generic_parameters(eps0), n, delta)
                low = shuffle_epsilon(vp, n, delta, upper=False)
                secs = (time.perf_counter() - t0) / (3 if low is not None else 2)
                bp = blanket_parameters(mech)
                t0 = time.perf_counter()
                bl = None if bp is None else blanket_epsilon(bp, n, delta, epsilon0=eps0)
                bsecs = time.perf_counter() - t0
                up = min(x for x in (spec, gen, bl, eps0) if x is not None)
                rows.append({"mechanism": name, "d": d, "eps0": eps0, "n": n, "delta": delta, "upper": up, "specific": spec, "generic": gen,
                             "blanket": bl, "lower": low, "method": vp.method, "seconds_per_call": round(secs, 2),
                             "seconds_blanket": None if bl is None else round(bsecs, 2)})
                lo = "-" if low is None else f"{low:.5f}"
                blt = "-" if bl is None else f"{bl:.5f}"
                bst = "-" if bl is None else f"{bsecs:.2f}"
                print(f"{name:<10} {d:>5} {eps0:>4} {n:>9} {up:>9.5f} {spec:>9.5f} {gen:>9.5f} {blt:>9} {lo:>9} {secs:>7.2f} {bst:>9}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "python": platform.python_version()}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
