"""Heavy-hitter discovery on realistic corpora (issue 36): recall/precision of PEM and TreeHist
(default oracle, O-RR) at several ε on the seeded corpora of ``benchmarks/corpora.py`` (English-like
words, URL-like strings, Zipf words), SFP beside PEM on the Zipf words, top-20, and the
false-nonzero check over many seeds at a smaller n.

    python3 -P benchmarks/heavy_hitters_corpora.py --n 1000000 --epsilons 1 2 4 8 [--corpora words urls zipf]
    python3 -P benchmarks/heavy_hitters_corpora.py --false-zero --n 100000 --seeds 20
    python3 -P benchmarks/heavy_hitters_corpora.py --write-corpus words --n 1000000 --out /tmp/words.txt
    python3 -P benchmarks/heavy_hitters_corpora.py --score-peer PEER.json --corpora words --n 1000000
      (scores the JSON lines heavy_hitters_peers.py printed for that corpus file: duplicates counted once)

Per run (one JSON line): ``recall`` = share of the strings with frequency >= 0.5% returned;
``slots`` = the same over min(20, their number) (the share of the top-20 slots they could fill);
``precision`` = share of the returned strings with frequency >= 0.1%; ``false_nonzero`` = returned
strings no user holds whose interval excludes zero; ``returned`` (only selected strings are
returned: at most 20); ``mdf`` the announced minimum detectable frequency; client/server wall
and CPU seconds (CPU: this process's, all threads — on a shared machine the wall time is inflated).
The alphabet and max length are read from the data (``infer_domain``), as the CLI does."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import corpus  # noqa: E402

from ldp_plugin.discovery import SFP, PrefixDiscovery, infer_domain  # noqa: E402


def score(res, freq: dict) -> dict:
    items = list(res.items)
    heavy = {w for w, v in freq.items() if v >= 0.005}
    hit = len(heavy & set(items))
    return {
        "recall": round(hit / max(len(heavy), 1), 3), "slots": round(hit / max(min(20, len(heavy)), 1), 3),
        "precision": round(float(np.mean([freq.get(w, 0.0) >= 0.001 for w in items])), 3) if items else None,
        "false_nonzero": int(sum(lo > 0 and freq.get(w, 0.0) == 0 for w, lo in zip(items, res.ci_lower))),
        "returned": len(items), "heavy": len(heavy),
    }


def run(name: str, values, freq: dict, eps: float, method: str, seed: int) -> dict:
    alphabet, max_length = infer_domain(values)
    if method == "sfp":
        q = SFP(epsilon=eps, top_k=20, alphabet=alphabet, max_length=max_length)
    else:
        q = PrefixDiscovery(epsilon=eps, top_k=20, alphabet=alphabet, max_length=max_length, method=method)
    t0, c0 = time.perf_counter(), time.process_time()
    rep = q.privatize(values, rng=seed)
    t1, c1 = time.perf_counter(), time.process_time()
    res = q.discover(rep)
    t2, c2 = time.perf_counter(), time.process_time()
    out = {"corpus": name, "epsilon": eps, "method": method, "n": values.len(), "alphabet_size": len(alphabet), "max_length": max_length,
           **score(res, freq), "mdf": round(q.min_detectable_frequency(values.len()), 5),
           "client_seconds": round(t1 - t0, 1), "server_seconds": round(t2 - t1, 1),
           "client_cpu_seconds": round(c1 - c0, 1), "server_cpu_seconds": round(c2 - c1, 1)}
    if method != "sfp":
        out["prefix_lengths"] = list(q.lengths)
        out["beam"] = q.beam
    out["missed"] = sorted(((round(v * 100, 2), w) for w, v in freq.items() if v >= 0.005 and w not in set(res.items)), reverse=True)
    print(json.dumps(out), flush=True)
    return out


def score_peer(path: str, name: str, n: int) -> None:
    """Score a peer's returned items (``heavy_hitters_peers.py`` JSON lines) on the corpus they ran on."""
    _, freq = corpus(name, n, 0)
    heavy = {w for w, v in freq.items() if v >= 0.005}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if "items" not in r:
            print(json.dumps({"corpus": name, **r}), flush=True)
            continue
        items = list(dict.fromkeys(r["items"]))
        hit = len(heavy & set(items))
        print(json.dumps({"corpus": name, "method": "pure-ldp " + r["method"], "recall": round(hit / max(len(heavy), 1), 3),
                          "slots": round(hit / max(min(20, len(heavy)), 1), 3), "distinct_returned": len(items), "returned": len(r["items"]),
                          "precision": round(float(np.mean([freq.get(w, 0.0) >= 0.001 for w in items])), 3) if items else None,
                          "client_seconds": round(r["client_seconds"], 1), "server_seconds": round(r["server_seconds"], 1)}), flush=True)


def false_zero(n: int, seeds: int, eps: float, methods=("pem", "treehist")) -> None:
    """Over ``seeds`` populations and randomizations of the words corpus: returned strings whose
    interval excludes zero although no user holds them, as a share of the returned strings."""
    bad = returned = 0
    for s in range(seeds):
        values, freq = corpus("words", n, seed=s)
        alphabet, max_length = infer_domain(values)
        for method in methods:
            q = PrefixDiscovery(epsilon=eps, top_k=20, alphabet=alphabet, max_length=max_length, method=method)
            r = score(q.discover(q.privatize(values, rng=s)), freq)
            bad += r["false_nonzero"]
            returned += r["returned"]
        print(json.dumps({"seed": s, "false_nonzero": bad, "returned": returned}), flush=True)
    print(json.dumps({"false_zero_check": True, "n": n, "seeds": seeds, "epsilon": eps, "returned": returned, "false_nonzero": bad,
                      "share": round(bad / max(returned, 1), 4)}), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0, 4.0, 8.0])
    ap.add_argument("--corpora", nargs="+", default=["words", "urls", "zipf"])
    ap.add_argument("--methods", nargs="+", default=["pem", "treehist"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sfp", action="store_true", help="SFP beside PEM on the zipf corpus")
    ap.add_argument("--false-zero", action="store_true")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--write-corpus", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--score-peer", default=None)
    a = ap.parse_args()
    if a.score_peer:
        score_peer(a.score_peer, a.corpora[0], a.n)
    elif a.write_corpus:
        v, _ = corpus(a.write_corpus, a.n, 0)
        Path(a.out).write_text("\n".join(v.to_list()))
    elif a.false_zero:
        for eps in a.epsilons:
            false_zero(a.n, a.seeds, eps, a.methods)
    else:
        for name in a.corpora:
            values, freq = corpus(name, a.n, 0)
            for eps in a.epsilons:
                for method in a.methods:
                    run(name, values, freq, eps, method, a.seed)
                if a.sfp and name == "zipf":
                    run(name, values, freq, eps, "sfp", a.seed)
