"""Least-squares candidate decoding of the cohort oracles: time per call, optionally against another
version of ``ldp_plugin/estimation/least_squares.py`` (formerly ``estimation_lsq.py``) on the same inputs (estimates and errors compared).

    python3 -P benchmarks/lsq_decode.py
    git show c337cf3:ldp_plugin/estimation_lsq.py > /tmp/old_lsq.py
    python3 -P benchmarks/lsq_decode.py --compare /tmp/old_lsq.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time

import numpy as np

import ldp_plugin.estimation.least_squares as current
from ldp_plugin import ORAPPOR, ORR, CountSketch, HCMS


def cases():
    yield ORR(epsilon=4.0, k=56, cohorts=256, hash_seed=1), 676  # PEM's first level at ε = 4
    yield ORAPPOR(epsilon=2.0, k=32, h=2, cohorts=64, hash_seed=1), 300
    yield HCMS(epsilon=4.0, k=1024, cohorts=256, hash_seed=1), 1000
    yield CountSketch(epsilon=4.0, k=1024, cohorts=256, hash_seed=1), 1000
    yield ORR(epsilon=4.0, k=3, cohorts=50, d=40), None


def decode(module, m, S, counts, n_c):
    cands = None if m.closed else [f"w{i}" for i in range(S)]
    keys, items = m.candidate_keys(cands)
    pos, sg = m.covers_of(keys, np.arange(len(items)))
    _, _, cov, noise = m.decoder_model()
    kw = dict(covariance=cov, noise=noise)
    if sg is not None:
        kw.update(signs=sg, other_sum=not m.closed, total=1.0 if m.closed else None)
    elif not m.closed:
        kw.update(uniform_weight=m.hashes_per_item / m.k)
    t0 = time.perf_counter()
    theta, se, _ = module.least_squares_decode(counts, n_c, m.p, m.q, pos, **kw)
    return time.perf_counter() - t0, theta, se


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", default=None, help="path of another least_squares.py / estimation_lsq.py to time on the same inputs")
    a = ap.parse_args()
    other = None
    if a.compare:
        spec = importlib.util.spec_from_file_location("other_lsq", a.compare)
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
    for m, S in cases():
        rng = np.random.default_rng(0)
        counts = rng.integers(0, 100, (m.cohorts, m.k))
        n_c = counts.sum(axis=1) + 1
        dt, theta, se = decode(current, m, S, counts, n_c)
        row = {"mechanism": m.name, "candidates": S or m.d, "seconds": round(dt, 3)}
        if other is not None:
            try:
                dt0, theta0, se0 = decode(other, m, S, counts, n_c)
                row.update(other_seconds=round(dt0, 3), speedup=round(dt0 / dt, 2),
                           max_diff_estimate=float(np.abs(theta - theta0).max()), max_diff_se=float(np.abs(se - se0).max()))
            except TypeError as e:  # the other version predates an argument (e.g. signed covers)
                row.update(other_seconds=None, note=str(e)[:80])
        print(json.dumps(row), flush=True)
