"""Issue 23's "fraction of the limit": how much of what the OS CSPRNG delivers (``os.urandom`` on 2
threads, measured in the same run) a mechanism turns into report entropy on the secure default
path. A report's entropy is its conditional entropy given the input, H(R | x) — the randomness an
ideal sampler must consume (k-RR: H(p*) + (1 − p*)·log2(d − 1); unary encodings:
H(p*) + (d − 1)·H(q*); k-subset: H(p*) + p*·log2 C(d−1, k−1) + (1 − p*)·log2 C(d−1, k)). Fraction =
H × reports/s ÷ (8 × urandom bytes/s). With ``--peers`` (benchmark extra), the peers' clients on the
same inputs are reported the same way.

The secure default path is measured twice: with ``LDP_PLUGIN_RANDOM=os`` (every byte from
``os.urandom``) and ``auto`` (large requests expanded with AES-256-CTR under a fresh OS key when
`cryptography` is installed); the denominator is always ``os.urandom`` itself.

Usage: python -P benchmarks/entropy_limit.py [--n 1000000] [--peers] [--backends os auto] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.sampling.kernels import preload
from ldp_plugin.sampling import SecureRandomSource


def hb(p: float) -> float:
    return 0.0 if p <= 0 or p >= 1 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def entropy_bits(m) -> float:
    p, q = float(m.p_star_exact), float(m.q_star_exact)
    if m.name == "krr":
        return hb(p) + (1 - p) * math.log2(m.d - 1)
    if m.name == "k-subset":
        return hb(p) + p * math.log2(math.comb(m.d - 1, m.k - 1)) + (1 - p) * math.log2(math.comb(m.d - 1, m.k))
    if m.name == "olh":  # a uniform 64-bit hash seed, then k-RR over g given the seed
        return 64 + hb(p) + (1 - p) * math.log2(m.g - 1)
    if m.name == "hadamard":  # uniform inside the item's half of [0, K) with probability p*, else the other half
        return hb(p) + math.log2(m.K // 2)
    return hb(p) + (m.d - 1) * hb(q)  # unary encodings (OUE, RAPPOR, RUE, THE): independent bits


def best(fn, repeats=3):
    t = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def urandom_2threads(nbytes: int) -> float:
    """``os.urandom`` bytes/s on 2 threads (each thread one call of half the bytes)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return nbytes / best(lambda: list(pool.map(os.urandom, [nbytes // 2] * 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--n-peer", type=int, default=20_000)
    ap.add_argument("--backends", nargs="+", default=["os", "auto"], help="LDP_PLUGIN_RANDOM values to measure")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    preload(10**9)
    nbytes = 1 << 27
    urandom_bps = urandom_2threads(nbytes)
    print(f"os.urandom on 2 threads: {urandom_bps / 1e6:,.0f} MB/s (the limit's denominator)")
    rows = []
    for backend in a.backends:
        os.environ["LDP_PLUGIN_RANDOM"] = backend
        src = SecureRandomSource()
        src_bps = nbytes / best(lambda: src.random_bytes(nbytes))
        print(f"secure default path, LDP_PLUGIN_RANDOM={backend} ({src.backend}): {src_bps / 1e6:,.0f} MB/s")
        for d in (64, 1024):
            codes = np.random.default_rng(0).integers(0, d, a.n)
            for m in (ldp.KRR(epsilon=4.0, d=d), ldp.OUE(epsilon=4.0, d=d), ldp.RAPPOR(epsilon=4.0, d=d), ldp.RUE(epsilon=4.0, d=d),
                      ldp.THE(epsilon=4.0, d=d), ldp.KSubset(epsilon=4.0, d=d), ldp.OLH(epsilon=4.0, d=d), ldp.HadamardResponse(epsilon=4.0, d=d)):
                rate = a.n / best(lambda: m.randomize_encoded(codes))
                h = entropy_bits(m)
                row = {"backend": src.backend, "mechanism": m.name, "d": d, "epsilon": 4.0, "entropy_bits": h, "reports_per_s": rate,
                       "fraction_of_limit": h * rate / (8 * urandom_bps)}
                if a.peers and backend == a.backends[0]:
                    row.update(peer_fractions(m, codes[: a.n_peer], h, urandom_bps))
                rows.append(row)
                extra = "".join(f", {k} {v:.4f}" for k, v in row.items() if k.startswith("peer"))
                print(f"  {m.name:<9} d={d:<5} H={h:7.1f} bits  {rate:14,.0f} reports/s  fraction of the limit {row['fraction_of_limit']:.3f}{extra}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": {"machine": platform.platform(), "n": a.n, "urandom_bytes_per_s": urandom_bps}, "rows": rows}, f, indent=1)


def peer_fractions(m, codes, h, urandom_bps) -> dict:
    vals = codes.tolist()
    out = {}
    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Client
        from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Client
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client
        from pure_ldp.frequency_oracles.direct_encoding import DEClient
        from pure_ldp.frequency_oracles.local_hashing import LHClient
        from pure_ldp.frequency_oracles.unary_encoding import UEClient
    except ImportError:
        return out
    if m.name == "krr":
        c = DEClient(epsilon=4.0, d=m.d)
        fns = {"peer pure-ldp": lambda: [c.privatise(v) for v in vals], "peer multi-freq-ldpy": lambda: [GRR_Client(v, m.d, 4.0) for v in vals]}
    elif m.name in ("oue", "rappor"):
        c = UEClient(epsilon=4.0, d=m.d, use_oue=m.name == "oue")
        fns = {"peer pure-ldp": lambda: [c.privatise(v) for v in vals],
               "peer multi-freq-ldpy": lambda: [UE_Client(v, m.d, 4.0, optimal=m.name == "oue") for v in vals]}
    elif m.name == "olh":
        c = LHClient(epsilon=4.0, d=m.d, use_olh=True)
        fns = {"peer pure-ldp": lambda: [c.privatise(v) for v in vals], "peer multi-freq-ldpy": lambda: [LH_Client(v, m.d, 4.0, optimal=True) for v in vals]}
    else:
        return out
    for k, fn in fns.items():
        out[k] = h * (len(vals) / best(fn, repeats=1)) / (8 * urandom_bps)
    return out


if __name__ == "__main__":
    main()
