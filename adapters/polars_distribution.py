"""Numeric distributions from a reports frame: ``reports.ldp.distribution(mech)``,
``reports.ldp.quantiles(mech, [0.5, 0.95])`` and ``reports.ldp.range_count(mech, lo, hi)``.

The mechanism is one that declares the capability ``Distribution`` (Square Wave, the bucketed
oracle, the hierarchical histogram, HaarHRR). Every interval is analytic and centred on an unbiased
estimate: Square Wave's from the unbiased inverse of its channel (its EMS histogram is the point
estimate), the bucketed oracle's from its unbiased buckets — the ``method`` column says which.

>>> import numpy as np, polars as pl, ldp_plugin as ldp
>>> sw = ldp.SquareWave(epsilon=2.0, lower=0, upper=1000, grid=64)
>>> df = pl.DataFrame({"latency": np.random.default_rng(0).beta(2, 5, 4000) * 1000})
>>> reports = df.ldp.privatize("latency", sw, seed=1)
>>> reports.ldp.quantiles(sw, [0.5]).columns
['q', 'estimate', 'ci_lower', 'ci_upper', 'method', 'interval_kind']
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import polars as pl

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.mechanisms.protocol import Distribution, has


from .polars_frames import accumulate_reports, strict

__all__ = ["distribution", "quantiles", "range_count"]


def _estimate(reports: pl.DataFrame | pl.LazyFrame, mechanism: Any, **kwargs: Any):
    if not has(mechanism, Distribution):
        raise LDPParameterError("distribution, quantiles and range_count need a distribution mechanism (SquareWave, BucketedOracle)")
    acc = accumulate_reports(reports, mechanism)
    # options left at None are the mechanism's defaults; one it does not take, if given, is refused
    return mechanism.estimate_from(acc, **{k: v for k, v in kwargs.items() if v is not None})


def _kind(est: Any) -> str:
    """What the estimate's intervals cover (the trees' linear estimates: analytic intervals)."""
    return getattr(est, "interval_kind", "interval")


@strict
def distribution(reports: Any, mechanism: Any, *, buckets: Optional[int] = None, confidence: float = 0.95, replicates: Optional[int] = None,
                 seed: Optional[int] = None, target: str = "sample") -> pl.DataFrame:
    """The histogram ``lo, hi, estimate, std_error, ci_lower, ci_upper`` on ``buckets`` equal
    buckets of ``[lower, upper]`` (default: the mechanism's resolution)."""
    est = _estimate(reports, mechanism, confidence=confidence, replicates=replicates, seed=seed, target=target)
    return est.to_polars(buckets).with_columns(pl.lit(est.method).alias("method"), pl.lit(_kind(est)).alias("interval_kind"))


@strict
def quantiles(reports: Any, mechanism: Any, qs: Sequence[float], *, confidence: float = 0.95, replicates: Optional[int] = None,
              seed: Optional[int] = None, target: str = "sample") -> pl.DataFrame:
    """One row per level: ``q, estimate, ci_lower, ci_upper, method``."""
    est = _estimate(reports, mechanism, confidence=confidence, replicates=replicates, seed=seed, target=target)
    rows = est.quantiles(list(qs))
    return pl.DataFrame({"q": [r["q"] for r in rows], "estimate": [r["estimate"] for r in rows], "ci_lower": [r["ci_lower"] for r in rows],
                         "ci_upper": [r["ci_upper"] for r in rows], "method": [est.method] * len(rows),
                         "interval_kind": [_kind(est)] * len(rows)})


@strict
def range_count(reports: Any, mechanism: Any, lo: float, hi: float, *, confidence: float = 0.95, replicates: Optional[int] = None,
                seed: Optional[int] = None, target: str = "sample") -> pl.DataFrame:
    """One row: the users with a value in ``[lo, hi)`` — ``count`` and ``fraction`` with the
    standard error and interval of each, ``n`` and ``method``."""
    est = _estimate(reports, mechanism, confidence=confidence, replicates=replicates, seed=seed, target=target)
    r = est.range_count(lo, hi)
    return pl.DataFrame({
        "lo": [r.lo], "hi": [r.hi], "count": [r.count], "count_ci_lower": [r.ci_lower * r.n], "count_ci_upper": [r.ci_upper * r.n],
        "fraction": [r.fraction], "std_error": [r.std_error], "ci_lower": [r.ci_lower], "ci_upper": [r.ci_upper], "n": [r.n], "method": [r.method],
        "interval_kind": [getattr(r, "interval_kind", _kind(est))],
    })
