"""The joint layer: several users' reports together, on the secure default source.

Each report's marginal can be exactly right while reports share randomness: two users given the
same noise, a keystream block or an AES key reused between requests, a child process that repeats
its parent's stream. None of these moves a single report's distribution, so only a test on
*pairs* of reports sees them. :func:`joint_layer` draws, for each of up to three inputs ``x``,
batches of ``2·n_pairs`` users (doubled until a request reaches the AES-CTR expansion, so reused
keystreams are looked at on the path production batches take) all holding ``x`` from :class:`~ldp_plugin.sampling.SecureRandomSource`
and tests pairs of reports that must be independent:

* **within a batch**, at several offsets: neighbours ``(2i, 2i + 1)``, the two halves
  ``(i, i + n/2)`` (the segment and worker split points of a batch fall there), and random pairs
  (a seeded permutation of the rows — the pairing, not the randomness, is seeded);
* **across two requests** of one source object and **across two batches** of two source objects
  (row ``i`` of one against row ``i`` of the other);
* **across processes**: a child forked after the parent has drawn (its first batch of the
  inherited source, against the parent's next batch of the same size).

Each set of pairs ``(a_i, b_i)`` gets a χ² test of independence on its contingency table
(:func:`independence_pvalue`; outputs grouped into categories of at least 5% of the reports, so
no cell's expected count is small), whatever the marginals —
a wrong marginal is the other layers' business; reused randomness fills the diagonal. Every test
runs at ``α / (number of tests)``. The forked child draws a small batch (below the secure source's
thread split, so a child never waits on the parent's worker threads) and must answer within
``fork_timeout`` seconds; a child that does not answer fails the layer.
"""

from __future__ import annotations

import os
import select
import signal
from typing import Any

import numpy as np

from ..sampling import SecureRandomSource
from ..sampling.cipher import random_backend
from ..sampling.trace import PathTrace
from .production import production_outputs

__all__ = ["joint_layer", "independence_pvalue", "forked_outputs"]

#: rows drawn by the forked child (and the parent's matching batch)
FORK_ROWS = 4096
#: the largest batch the joint layer grows to while looking for a request on the AES-CTR path
MAX_ROWS = 1 << 17


def _categories(a: np.ndarray, b: np.ndarray, min_share: float = 0.05) -> tuple:
    """Outputs grouped into categories of at least ``min_share`` of the pooled reports (outputs
    taken by decreasing frequency and accumulated until the share is reached; a short last group
    joins the one before), so every cell of the table has an expected count of at least
    ``min_share²`` times the number of pairs."""
    values, counts = np.unique(np.concatenate([a, b]), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    group = np.empty(values.size, dtype=np.int64)
    total, g, acc = counts.sum(), 0, 0
    for i in order.tolist():
        group[i] = g
        acc += counts[i]
        if acc >= min_share * total:
            g, acc = g + 1, 0
    k = g + (acc > 0)
    if acc > 0 and g > 0:  # the last group is short: merge it into the one before
        group[group == g] = g - 1
        k = g
    return group[np.searchsorted(values, a)], group[np.searchsorted(values, b)], max(k, 1)


def independence_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """χ² test of independence of the pairs ``(a[i], b[i])`` on their contingency table (outputs
    grouped into categories of at least 5% of the reports; empty rows and columns dropped)."""
    from scipy.stats import chi2_contingency

    ca, cb, k = _categories(np.asarray(a), np.asarray(b))
    table = np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return 1.0  # a constant report carries no information about dependence
    return float(chi2_contingency(table, correction=False).pvalue)


def forked_outputs(mech: Any, x: int, n: int, source: Any, timeout: float = 60.0) -> tuple:
    """``(child batch, parent batch)``: ``n`` outputs on input ``x`` drawn by a forked child from
    the inherited ``source``, and the parent's next ``n`` from the same source; the child's batch
    is None if it failed or did not answer within ``timeout`` seconds (or fork is unavailable)."""
    codes = np.full(n, x, dtype=np.int64)
    if not hasattr(os, "fork"):
        return None, production_outputs(mech, codes, source)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one batch, written to the pipe, then exit without cleanup
        code = 1
        try:
            os.close(r)
            data = np.ascontiguousarray(production_outputs(mech, codes, source), dtype=np.int64).tobytes()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    parent = production_outputs(mech, codes, source)
    chunks, need = [], 8 * n
    try:
        while need > 0:
            ready, _, _ = select.select([r], [], [], timeout)
            if not ready:
                break
            chunk = os.read(r, min(need, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            need -= len(chunk)
    finally:
        os.close(r)
        if need > 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _, status = os.waitpid(pid, 0)
    if need > 0 or status != 0:
        return None, parent
    return np.frombuffer(b"".join(chunks), dtype=np.int64), parent


def _rows_for_aes(mech: Any, n: int) -> int:
    """The smallest batch of at least ``n`` users (doubling, up to :data:`MAX_ROWS`) whose
    requests reach the AES-CTR expansion when the secure source uses it."""
    if random_backend() != "aes-256-ctr":
        return n
    while n < MAX_ROWS:
        with PathTrace() as trace:
            production_outputs(mech, np.zeros(n, dtype=np.int64), SecureRandomSource())
        if trace.ran("aes-256-ctr"):
            break
        n *= 2
    return n


def joint_layer(mech: Any, *, n_pairs: int = 20_000, alpha: float = 1e-6, seed: int = 0, fork: bool = True, fork_timeout: float = 60.0,
                inputs: int = 3) -> dict:
    """Pairs of reports that must be independent (see the module docstring), on the first
    ``inputs`` inputs."""
    rng = np.random.default_rng(seed)  # the pairing only
    n = _rows_for_aes(mech, 2 * n_pairs)
    n_pairs = n // 2
    results: list = []  # (pairing, x, p-value)
    child_ok = True
    for x in range(min(mech.verification_input_count(), inputs)):
        codes = np.full(n, x, dtype=np.int64)
        src = SecureRandomSource()
        a = production_outputs(mech, codes, src)
        b = production_outputs(mech, codes, src)  # a second request of the same source object
        c = production_outputs(mech, codes, SecureRandomSource())  # a second batch, a new source
        perm = rng.permutation(n)
        sets = {
            "neighbours (2i, 2i+1)": (a[0::2], a[1::2]),
            "halves (i, i+n/2)": (a[:n_pairs], a[n_pairs:]),
            "random pairs": (a[perm[:n_pairs]], a[perm[n_pairs:]]),
            "two requests": (a, b),
            "two batches": (a, c),
        }
        if fork:
            child, parent = forked_outputs(mech, x, min(FORK_ROWS, n), src, timeout=fork_timeout)
            if child is None:
                child_ok = child_ok and not hasattr(os, "fork")
            else:
                sets["forked child"] = (child, parent)
        for name, (u, v) in sets.items():
            results.append((name, x, independence_pvalue(u, v)))
    level = alpha / max(len(results), 1)
    failed = sorted({name for name, _x, p in results if p < level})
    worst = min((p for *_, p in results), default=1.0)
    return {
        "layer": "joint",
        "source": "SecureRandomSource",
        "pairs": n_pairs,
        "tests": len(results),
        "pairings": sorted({name for name, *_ in results}),
        "min_pvalue": worst,
        "dependent": failed,
        "forked_child_answered": child_ok,
        "fresh_between_batches": not any(f.startswith(("two requests", "two batches")) for f in failed),
        "passed": bool(not failed and child_ok),
    }
