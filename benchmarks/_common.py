"""Helpers shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import time


def best_of(f, repeats: int = 3):
    """Best wall time of ``repeats`` calls of ``f`` (seconds) and the last call's result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def time_pure_ldp(client, server, values, n_server=None) -> dict:
    """Reports/s of a pure-ldp client (one ``privatise`` call per user, items 1..d) and of its
    server (``aggregate`` per report on the first ``n_server`` reports, then ``estimate``)."""
    items = (values + 1).tolist()  # pure-ldp items are 1..d
    t0 = time.perf_counter()
    reports = [client.privatise(v) for v in items]
    t1 = time.perf_counter()
    n_server = len(items) if n_server is None else min(n_server, len(items))
    for r in reports[:n_server]:
        server.aggregate(r)
    server.estimate(1, suppress_warnings=True)
    t2 = time.perf_counter()
    return {"client": len(items) / (t1 - t0), "server": n_server / (t2 - t1)}
