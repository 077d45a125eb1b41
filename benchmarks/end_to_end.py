"""End-to-end client speed on the values users have (issue 24): each mechanism x input type as a
fraction of the pre-encoded code rate measured in the same run (OS CSPRNG, best of 3).

With ``--peers`` (the benchmark extra installed) the peers' clients are fed the same strings
(their per-user loops, on the first ``--n-peer`` values; pure-ldp through its ``index_mapper``,
multi-freq-ldpy through a dict lookup a caller would write) and reported the same way.

Usage: python benchmarks/end_to_end.py [--n 2000000] [--peers] [--n-peer 200000] [--json OUT]
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


def peer_rates(name, cats, strings, our_seconds_per_report):
    """The peers' clients on the same strings, as a fraction of our pre-encoded code rate."""
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client
    from pure_ldp.frequency_oracles.direct_encoding import DEClient
    from pure_ldp.frequency_oracles.unary_encoding import UEClient

    index = {c: i for i, c in enumerate(cats)}
    d, eps = len(cats), 2.0
    if name == "krr":
        pl_client = DEClient(epsilon=eps, d=d, index_mapper=index.__getitem__)
        mfl = lambda: [GRR_Client(index[v], d, eps) for v in strings]  # noqa: E731
    else:
        pl_client = UEClient(epsilon=eps, d=d, use_oue=True, index_mapper=index.__getitem__)
        mfl = lambda: [UE_Client(index[v], d, eps, optimal=True) for v in strings]  # noqa: E731
    out = {}
    for label, fn in (("pure-ldp (strings)", lambda: [pl_client.privatise(v) for v in strings]), ("multi-freq-ldpy (strings)", mfl)):
        t = best(fn, repeats=1)
        out[label] = round(our_seconds_per_report / (t / len(strings)), 4)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--n-peer", type=int, default=200_000)
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
        if a.peers:
            res.update(peer_rates(name, cats, as_list[: a.n_peer], code_t / a.n))
        rows.append(res)
        print(f"{name}: code rate {res['code_rate']:,.0f}/s; fraction of it: " + ", ".join(f"{k} {v:.3g}" for k, v in res.items() if k not in ("mechanism", "code_rate")), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "n": a.n}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
