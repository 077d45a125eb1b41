"""Heavy-hitter discovery (issue 17): recall/precision and time of PEM, TreeHist and SFP on
Zipf(1.2) over 20,000 random words of 3-10 letters, and candidate decoding at 10^3..10^5.

    python3 benchmarks/heavy_hitters.py [--n 1000000] [--epsilons 2 4 8] [--words-out FILE]
    python3 benchmarks/heavy_hitters.py --decode-only

Recall: share of the words with frequency >= 0.5% among the top-20 returned; precision: share of
the returned words with frequency >= 0.1%. The peers (pure-ldp) run from
benchmarks/heavy_hitters_peers.py on the file written by --words-out (they need numpy < 2)."""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np
import polars as pl

from ldp_plugin import CMS, HCMS, ORR, CountSketch
from ldp_plugin.discovery import SFP, PrefixDiscovery

ALPHA = "abcdefghijklmnopqrstuvwxyz"


def population(n: int, seed: int = 0, V: int = 20_000):
    rng = np.random.default_rng(seed)
    letters = np.array(list(ALPHA))
    words = list(dict.fromkeys("".join(rng.choice(letters, size=int(k))) for k in rng.integers(3, 11, size=3 * V)))[:V]
    f = np.arange(1, V + 1, dtype=np.float64) ** -1.2
    f /= f.sum()
    x = rng.choice(V, size=n, p=f)
    freq = dict(zip(words, np.bincount(x, minlength=V) / n))
    return pl.Series("w", np.array(words, dtype=object)[x].tolist(), dtype=pl.String), freq


def score(items, freq):
    heavy = {w for w, v in freq.items() if v >= 0.005}
    return len(heavy & set(items)) / len(heavy), float(np.mean([freq.get(w, 0.0) >= 0.001 for w in items])) if items else 0.0


def run_ours(values, freq, eps: float, seed: int, methods=("pem", "treehist", "sfp"), oracle: str = "orr"):
    out = []
    for method in methods:
        q = (SFP(epsilon=eps, top_k=20, alphabet=ALPHA, max_length=10) if method == "sfp"
             else PrefixDiscovery(epsilon=eps, top_k=20, alphabet=ALPHA, max_length=10, method=method, oracle=oracle))
        t0 = time.perf_counter()
        rep = q.privatize(values, rng=seed)
        t1 = time.perf_counter()
        try:
            items = list(q.discover(rep).items)
        except Exception as e:  # noqa: BLE001 - SFP finds nothing at small epsilon: a measurement
            items = []
            print(f"  {method}: {type(e).__name__}: {e}")
        t2 = time.perf_counter()
        r, p = score(items, freq)
        out.append({"method": method, "oracle": oracle if method != "sfp" else "orr", "epsilon": eps, "recall": r, "precision": p, "client_seconds": t1 - t0, "server_seconds": t2 - t1})
        print(json.dumps(out[-1]), flush=True)
    return out


def decode_scale(n: int = 200_000, oracles=("orr",)):
    values, freq = population(n, seed=1)
    for oracle in oracles:
        m = {"orr": lambda: ORR(epsilon=4.0, k=56, cohorts=256, hash_seed=1), "cms": lambda: CMS(epsilon=4.0, k=1024, cohorts=256, hash_seed=1),
             "hcms": lambda: HCMS(epsilon=4.0, k=1024, cohorts=256, hash_seed=1),
             "count-sketch": lambda: CountSketch(epsilon=4.0, k=1024, cohorts=256, hash_seed=1)}[oracle]()
        _decode_scale(m, values, freq)


def _decode_scale(m, values, freq):
    acc = m.accumulator().add(m.randomize(values, rng=1))
    words = sorted(freq, key=freq.get, reverse=True)
    for S in (1_000, 10_000, 100_000):
        cands = (words + [f"absent{i}" for i in range(S)])[:S]
        for decoder in (("least-squares", "sketch") if S <= 1000 else ("sketch",)):
            tracemalloc.start()
            t0 = time.perf_counter()
            acc.estimate(candidates=cands, decoder=decoder, postprocess="none")
            dt = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(json.dumps({"oracle": m.name, "candidates": S, "decoder": decoder, "seconds": round(dt, 2), "peak_mb": round(peak / 2**20, 1)}), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--words-out", default=None)
    ap.add_argument("--decode-only", action="store_true")
    ap.add_argument("--oracles", nargs="+", default=["orr"], choices=["orr", "cms", "hcms", "count-sketch"], help="per-level oracles (PEM/TreeHist) and decoders measured")
    a = ap.parse_args()
    if not a.decode_only:
        values, freq = population(a.n, a.seed)
        if a.words_out:
            open(a.words_out, "w").write("\n".join(values.to_list()))
        for eps in a.epsilons:
            for i, oracle in enumerate(a.oracles):
                run_ours(values, freq, eps, a.seed, ("pem", "treehist", "sfp") if i == 0 else ("pem",), oracle)
    decode_scale(oracles=a.oracles)
