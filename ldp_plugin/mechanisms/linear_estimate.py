"""The queries shared by the tree estimates (:mod:`.hierarchy`, :mod:`.haar`): every range or CDF
value is a linear functional ``aᵀ·leaves`` of estimates whose variance the subclass computes
exactly (``_variance(a)`` for a leaves × queries matrix); ranges, the CDF bands, quantiles (by
inverting the pointwise bands) and histograms follow, with their standard errors."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from ..estimation import normal_quantile
from .distribution_server import DistributionPictures, RangeEstimate

__all__ = ["LinearLeafEstimate"]


class LinearLeafEstimate(DistributionPictures):
    """Base of the tree estimates: subclasses set ``mechanism`` (``lower``, ``upper``,
    ``buckets``), ``leaves``, ``n``, ``confidence`` and implement ``_variance(a)``."""

    mechanism: object
    leaves: np.ndarray
    n: int
    #: the trees' intervals are exact (linear estimators with exact variances): an interval, no bound
    interval_kind: str = "interval"
    bounds: str = ""
    confidence: float

    def _variance(self, a: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _query_spread(self, a: np.ndarray) -> np.ndarray:
        """``Var(a[leaf(u)])/n`` over the users (plug-in: the clipped, normalized leaves) — what
        the users' own values add to a query's error against an i.i.d. population."""
        th = np.maximum(self.leaves, 0.0)
        th = th / th.sum() if th.sum() > 0 else np.full(th.size, 1.0 / th.size)
        return np.maximum((a * a * th[:, None]).sum(axis=0) - ((a * th[:, None]).sum(axis=0)) ** 2, 0.0) / self.n

    def _weights(self, lo: float, hi: float) -> np.ndarray:
        m = self.mechanism
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise LDPParameterError(f"a range needs finite lo <= hi (got lo={lo!r}, hi={hi!r})")
        u = (np.clip([lo, hi], m.lower, m.upper) - m.lower) / (m.upper - m.lower) * m.buckets
        k = np.arange(m.buckets)
        return np.clip(np.minimum(k + 1, u[1]) - np.maximum(k, u[0]), 0.0, 1.0)

    def _z(self, confidence: Optional[float]) -> float:
        return normal_quantile(self.confidence if confidence is None else confidence)

    # -- queries ------------------------------------------------------------------------------------
    def range_fraction(self, lo: float, hi: float, *, confidence: Optional[float] = None):
        """The fraction in ``[lo, hi)`` (consistent tree) with its exact standard error. A range
        ending inside a leaf interpolates uniformly within it (a bias no standard error holds), so
        its interval spans the leaves it touches — from the lower limit of the leaves inside it to
        the upper limit of the leaves it touches — and is labelled ``"bound"``."""
        a = self._weights(float(lo), float(hi))
        est = float(a @ self.leaves)
        se = math.sqrt(max(float(self._variance(a[:, None])[0]), 0.0))
        z = self._z(confidence)
        cl, cu, kind = est - z * se, est + z * se, "interval"
        if ((a > 1e-12) & (a < 1 - 1e-12)).any():
            inner, touched = (a >= 1 - 1e-12).astype(np.float64), (a > 1e-12).astype(np.float64)
            var = self._variance(np.column_stack([inner, touched]))
            cl = float(inner @ self.leaves) - z * math.sqrt(max(float(var[0]), 0.0))
            cu = float(touched @ self.leaves) + z * math.sqrt(max(float(var[1]), 0.0))
            kind = "bound"
        return RangeEstimate(float(lo), float(hi), est, se, cl, cu, est * self.n, self.n,
                             self.confidence if confidence is None else confidence, "analytic", kind)

    range_count = range_fraction

    def cdf_bands(self, confidence: Optional[float] = None, *, block: int = 256) -> tuple:
        """``(edges, F̂, se)`` at every leaf boundary."""
        m = self.mechanism
        B = m.buckets
        F = np.concatenate([[0.0], np.cumsum(self.leaves)])
        se = np.zeros(B + 1)
        for s in range(1, B + 1, block):
            t = np.arange(s, min(s + block, B + 1))
            a = (np.arange(B)[:, None] < t[None, :]).astype(np.float64)
            se[t] = np.sqrt(np.maximum(self._variance(a), 0.0))
        return np.linspace(m.lower, m.upper, B + 1), F, se

    def _cdf_band(self, confidence: Optional[float]) -> tuple:
        """``(x, F, lower, upper)`` at every leaf boundary: the pointwise normal band of :meth:`cdf_bands`."""
        x, F, se = self.cdf_bands(confidence)
        z = self._z(confidence)
        return x, F, F - z * se, F + z * se

    def quantiles(self, qs: Sequence[float], *, confidence: Optional[float] = None) -> list:
        """``[{q, estimate, ci_lower, ci_upper}]``: the estimate from the consistent leaves
        (negative leaves clipped for monotonicity), the interval by inverting the pointwise CDF
        bands: from the leaf before the first edge whose upper band reaches ``q`` to the leaf
        after the last edge whose lower band is below ``q`` (coverage ``>= 1 − α``)."""
        z = self._z(confidence)
        edges, F, se = self.cdf_bands(confidence)
        pos = np.concatenate([[0.0], np.cumsum(np.maximum(self.leaves, 0.0))])
        pos /= pos[-1] if pos[-1] > 0 else 1.0
        out = []
        for q in qs:
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < float(q) < 1:
                raise LDPParameterError(f"quantile levels must be numbers in (0, 1) (got {q!r})")
            q = float(q)
            i = int(np.clip(np.searchsorted(pos, q, side="left"), 1, len(pos) - 1))
            frac = (q - pos[i - 1]) / (pos[i] - pos[i - 1]) if pos[i] > pos[i - 1] else 0.0
            est = float(edges[i - 1] + frac * (edges[i] - edges[i - 1]))
            up, low = F + z * se, F - z * se
            # the true quantile lies in leaf j with F(edge_j) < q <= F(edge_{j+1}): the first edge
            # whose upper band reaches q is at most j + 1 and the last whose lower band is below q
            # at least j, each with probability >= 1 − α/2
            lo_i = int(np.argmax(up >= q)) if (up >= q).any() else len(F) - 1
            below = np.flatnonzero(low < q)
            hi_i = int(below[-1]) + 1 if below.size else 1
            lo_e, hi_e = float(edges[max(lo_i - 1, 0)]), float(edges[min(hi_i, len(F) - 1)])
            # the point estimate reads the clipped leaves: the interval is widened to hold it
            out.append({"q": q, "estimate": est, "ci_lower": min(lo_e, est), "ci_upper": max(hi_e, est)})
        return out

    def histogram(self, buckets: Optional[int] = None, *, confidence: Optional[float] = None) -> dict:
        m = self.mechanism
        bk = m.buckets if buckets is None else int(buckets)
        if bk < 1 or m.buckets % bk:
            raise LDPParameterError(f"buckets must divide {m.buckets} (got {buckets!r})")
        edges = np.linspace(m.lower, m.upper, bk + 1)
        rows = [self.range_fraction(edges[i], edges[i + 1], confidence=confidence) for i in range(bk)]
        return {"lo": edges[:-1], "hi": edges[1:], "estimate": np.array([r.fraction for r in rows]),
                "std_error": np.array([r.std_error for r in rows]), "ci_lower": np.array([r.ci_lower for r in rows]),
                "ci_upper": np.array([r.ci_upper for r in rows])}

    def to_polars(self, buckets: Optional[int] = None):
        import polars as pl

        return pl.DataFrame(self.histogram(buckets if buckets is not None else min(self.mechanism.buckets, 64)))

    @property
    def method(self) -> str:
        return "analytic"
