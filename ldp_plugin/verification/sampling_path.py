"""Verification that reads the code that samples.

The exact layer enumerates a mechanism's *declared* channel. These layers look at the client
that actually runs:

* :func:`sampling_path_layer` drives the real client (``sample_verification_outputs``, i.e.
  ``randomize_encoded``) with a :class:`RecordingSource` that records every request made of the
  random source, and checks, **exactly**, that every Bernoulli threshold the client asks for is
  one the declared channel is built from (``declared_thresholds``; a client that compares against
  another threshold — a drifted or 2%-off rate — fails here whatever its size), and that packed
  bit matrices are as wide as the report (a bit left unrandomized fails here). Inverse-CDF clients
  (the finite channels) are recorded with the boundaries they search, and each input's searched
  rows must rebuild exactly the declared channel row (:func:`rebuilt_search_rows`).
* :func:`rate_layer` tests, for pure frequency oracles, the realized support rates ``p*`` (own
  item) and ``q*`` (another item) with exact two-sided binomial tests, with enough samples to
  catch a 2% relative rate error with power 0.99 at a false-alarm rate of 10⁻⁶ (full mode; quick
  mode uses 20,000 reports per input and only catches errors of roughly 10% or more).
* :func:`joint_layer` (:mod:`.joint`) looks at several users' reports together, on the secure
  source: pairs at several offsets, across requests, batches and a forked child.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..exact import TWO64
from ..mechanisms.protocol import Mechanism, SupportRates, has
from ..sampling import SeededRandomSource
from .channels import declared_channel
from .joint import joint_layer  # noqa: F401  (the joint layer lives in .joint; kept importable here)

__all__ = ["RecordingSource", "declared_thresholds", "rebuilt_search_rows", "sampling_path_layer", "rate_layer", "joint_layer"]


class RecordingSource(SeededRandomSource):
    """A seeded source that records every threshold, range and width the client asks for."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.calls: list = []
        #: inverse-CDF searches: ``(row, boundaries, count)`` per boundary row searched
        self.searches: list = []

    def bernoulli(self, threshold: int, size: int) -> np.ndarray:
        self.calls.append(("bernoulli", int(threshold), int(size), None))
        return super().bernoulli(threshold, size)

    def bernoulli_packed(self, threshold: int, n_rows: int, n_bits: int) -> np.ndarray:
        self.calls.append(("bernoulli_packed", int(threshold), int(n_rows), int(n_bits)))
        return super().bernoulli_packed(threshold, n_rows, n_bits)

    def bernoulli_rows(self, q_threshold: int, n_rows: int, n_bits: int, positions, p_threshold: int) -> np.ndarray:
        self.calls.append(("bernoulli_packed", int(q_threshold), int(n_rows), int(n_bits)))
        return super().bernoulli_rows(q_threshold, n_rows, n_bits, positions, p_threshold)  # records its bernoulli calls

    def bernoulli_each(self, thresholds: np.ndarray) -> np.ndarray:
        t = np.asarray(thresholds, dtype=np.uint64)
        for v in np.unique(t).tolist():
            self.calls.append(("bernoulli_each", int(v), int(t.size), None))
        return super().bernoulli_each(t)

    def inverse_cdf(self, boundaries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        B = np.asarray(boundaries, dtype=np.uint64)
        r = np.asarray(rows, dtype=np.int64)
        for v in np.unique(r).tolist():
            self.searches.append((int(v), tuple(int(b) for b in B[v].tolist()), int(np.count_nonzero(r == v))))
        return super().inverse_cdf(B, r)


def rebuilt_search_rows(searches: list) -> list:
    """The channel rows an inverse-CDF client realized, rebuilt from the boundaries it searched:
    ``(row, [P(j)])`` with ``P(j) = (B[j+1] − B[j]) / 2**64`` (exact Fractions; the last interval
    ends at 2**64; a non-increasing boundary gives a negative width, which no channel has)."""
    out = []
    for row, B, _count in searches:
        ends = [*B[1:], TWO64]
        out.append((row, [Fraction(b - a, TWO64) for a, b in zip(B, ends)]))
    return out


def _search_mismatches(mech: Any, x: int, searches: list) -> list:
    """Inputs whose searched boundaries do not rebuild exactly the declared channel row ``x``."""
    if not searches:
        return []
    rows = rebuilt_search_rows(searches)
    ch = declared_channel(mech)
    declared = list(ch.matrix[x])
    bad = []
    for _row, probs in rows:
        cols = mech.output_index(np.arange(len(probs)))
        rebuilt = [0] * len(declared)
        for j, pr in zip(np.asarray(cols).tolist(), probs):
            if not 0 <= j < len(declared):
                bad.append(x)
                break
            rebuilt[j] += pr
        else:
            if rebuilt != declared:
                bad.append(x)
    if len({B for _r, B, _c in searches}) > 1:  # one input, two different searched channels
        bad.append(x)
    return sorted(set(bad))


def _thresholds_of(obj: Any, seen: set, depth: int = 0) -> set:
    out: set = set()
    if obj is None or id(obj) in seen or depth > 3:
        return out
    seen.add(id(obj))
    names = list(getattr(obj, "__dict__", {}))  # the instance's own (frozen dataclass) attributes
    for name in names:
        v = getattr(obj, name, None)
        if "threshold" in name:
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                out.add(int(v))
            elif isinstance(v, (tuple, list, np.ndarray)):
                flat = np.asarray(v, dtype=object).ravel().tolist()
                out.update(int(t) for t in flat if isinstance(t, (int, np.integer)))
        elif name == "thresholds" or name == "_T":
            flat = np.asarray(v, dtype=object).ravel().tolist() if v is not None else []
            out.update(int(t) for t in flat if isinstance(t, (int, np.integer)))
    for child in getattr(obj, "__dict__", {}).values():  # the mechanisms it wraps or combines
        if isinstance(child, Mechanism):
            out |= _thresholds_of(child, seen, depth + 1)
    return out


def declared_thresholds(mech: Any) -> set:
    """The integer thresholds the mechanism's declared channel is built from (its own and those of
    the mechanisms it wraps), with their complements ``2**64 − T`` (a sampler may draw the
    complementary event)."""
    ts = _thresholds_of(mech, set())
    return ts | {TWO64 - t for t in ts}


def _report_bit_widths(mech: Any) -> set:
    return {int(f.bound) for f in mech.base.report_fields() if f.kind == "bits"}


def sampling_path_layer(mech: Any, *, n: int = 64, seed: int = 0) -> dict:
    """Drive the real client on every input and check what it asked of the random source."""
    declared = declared_thresholds(mech)
    widths = _report_bit_widths(mech)
    undeclared: set = set()
    bad_width: set = set()
    n_calls = 0
    searched_rows = 0
    search_mismatch: list = []
    for x in range(mech.verification_input_count()):
        src = RecordingSource(seed + x)
        mech.sample_verification_outputs(x, n, src)
        n_calls += len(src.searches)
        searched_rows += len(src.searches)
        search_mismatch += _search_mismatches(mech, x, src.searches)
        for kind, value, _size, width in src.calls:
            n_calls += 1
            if value not in declared:
                undeclared.add(value)
            if kind == "bernoulli_packed" and width not in widths:
                bad_width.add(width)
    passed = not undeclared and not bad_width and not search_mismatch
    return {
        "layer": "sampling-path",
        "requests": n_calls,
        "inverse_cdf_rows_rebuilt": searched_rows,
        "inputs_whose_searched_boundaries_differ_from_declared": search_mismatch[:5],
        "declared_thresholds": len(declared),
        "undeclared_thresholds": sorted(undeclared)[:5],
        "undeclared_relative_error": [float(min(abs(t - d) / d for d in declared if d)) for t in sorted(undeclared)[:5]] if declared else [],
        "bit_widths_requested_not_in_report": sorted(bad_width),
        "passed": bool(passed),
    }


def _rate_sample_size(r: float, rel: float = 0.02, alpha: float = 1e-6, power: float = 0.99) -> int:
    from statistics import NormalDist

    nd = NormalDist()
    za, zb = nd.inv_cdf(1 - alpha / 2), nd.inv_cdf(power)
    return int(math.ceil(((za + zb) * math.sqrt(r * (1 - r)) / (rel * r)) ** 2))


def rate_layer(mech: Any, *, quick: bool = False, alpha: float = 1e-6, seed: int = 0, max_n: int = 4_000_000) -> dict:
    """Exact binomial tests of ``p*`` and ``q*`` on the real client (pure oracles with support
    counts; not for hashed oracles, whose ``q*`` holds only on average over seeds)."""
    from scipy.stats import binomtest

    if not has(mech, SupportRates) or mech.q_star_over_hash:
        return {"layer": "rates", "applicable": False, "passed": True}
    p, q = float(mech.p_star_exact), float(mech.q_star_exact)
    d = mech.domain_size
    need = max(_rate_sample_size(p), _rate_sample_size(q))
    n = 20_000 if quick else min(need, max_n)
    src = SeededRandomSource(seed)
    worst = 1.0
    inputs = range(min(d, 3))
    tests = 0
    for x in inputs:
        reports = mech.randomize_encoded(np.full(n, x, dtype=np.int64), rng=src)
        c = mech.support_counts(reports)
        j = (x + 1) % d
        for k, rate in ((int(c[x]), p), (int(c[j]), q)):
            worst = min(worst, binomtest(k, n, rate).pvalue)
            tests += 1
    passed = worst >= alpha / tests
    return {
        "layer": "rates", "applicable": True, "reports_per_input": n, "needed_for_2pct": need,
        "detects_relative_error": round(0.02 * math.sqrt(need / n), 4), "min_pvalue": worst, "passed": bool(passed),
    }
