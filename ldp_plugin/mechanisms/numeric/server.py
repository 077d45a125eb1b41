"""The server side of the numeric means (:mod:`.numeric`): the estimate and its accumulator."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ... import pictures
from ...estimation import check_estimate_request
from ..mixins import OutputCounts

__all__ = ["MeanEstimate", "MeanAccumulator"]


@dataclass(frozen=True)
class MeanEstimate:
    """The estimated mean on ``[lower, upper]`` with its standard error and a two-sided normal
    interval at ``confidence``; ``target`` says what the interval covers (see
    :meth:`MeanAccumulator.estimate`)."""

    mean: float
    std_error: float
    ci_lower: float
    ci_upper: float
    n: int
    confidence: float
    target: str = "sample"
    #: "interval" (the standard error is the estimator's) or "bound" (a conservative one: ``bounds``)
    interval_kind: str = "interval"
    bounds: str = ""

    def __repr__(self) -> str:
        """A notebook-sized summary: the mean, its interval, n and the interval's target."""
        note = f"; NOTE: {self.bounds}" if self.bounds else ""
        return (f"MeanEstimate(mean={self.mean:.6g}, std_error={self.std_error:.3g}, {self.confidence:.0%} CI "
                f"[{self.ci_lower:.6g}, {self.ci_upper:.6g}] for the {self.target} mean, n={self.n:,}{note})")

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def plot(self, ax=None, *, truth: Optional[float] = None, lower: Optional[float] = None, upper: Optional[float] = None,
             title: Optional[str] = None):
        """The mean with its interval (on ``[lower, upper]`` if given; ``truth`` as a marker);
        returns the Axes. Needs the ``plot`` extra (matplotlib)."""
        return pictures.mean(self.mean, self.ci_lower, self.ci_upper, ax=ax, truth=truth, lower=lower, upper=upper,
                             confidence=self.confidence, title=title or f"estimated mean (n={self.n:,}, interval for the {self.target})")

    def to_polars(self, truth: Optional[float] = None):
        """One row: ``mean, std_error, ci_lower, ci_upper, n`` (and ``truth``)."""
        import polars as pl

        row = {"mean": [self.mean], "std_error": [self.std_error], "ci_lower": [self.ci_lower], "ci_upper": [self.ci_upper], "n": [self.n]}
        if truth is not None:
            row["truth"] = [float(truth)]
        return pl.DataFrame(row)


class MeanAccumulator(OutputCounts):
    """Exact integer counts of each report value and their number: batches, partitions, devices
    and saved states merge (``ldp aggregate --state``); the decoded sums are formed only when
    estimating, so the estimate is the same however the reports were split."""

    def __init__(self, mechanism: Any):
        super().__init__(mechanism, mechanism.output_alphabet_size())

    def estimate(self, *, confidence: float = 0.95, target: str = "sample") -> MeanEstimate:
        """The mean with a normal interval for ``target``:

        * ``"population"``: the mean of a population the users are an i.i.d. sample of — the
          decoded values' sample variance ``s²/n`` (consistent: it holds the users' own spread);
        * ``"sample"`` (default): the mean of the users who reported — the variance of the
          estimate given the users, ``(1/n²) Σ_u Var(v | x_u)``, estimated consistently by
          ``mean(v²) − mean(ŵ(y))`` where ``ŵ`` is the mechanism's unbiased decoder of ``t²``
          (:meth:`~ldp_plugin.mechanisms.numeric.NumericMechanism.square_decoder`), plus the
          rounding's at most ``(1/G)²``. Without such a decoder (Duchi's and 1BitMean's single
          bit cannot tell ``mean(t²)`` apart) the population variance is used: an upper bound."""
        m = self.mechanism
        z = check_estimate_request(self.n, confidence, target)
        v = m.decode(np.arange(self.counts.size))
        n, s = self.n, m._scale()
        mv = float(self.counts @ v) / n
        m2 = float(self.counts @ (v * v)) / n
        var = max(m2 - mv * mv, 0.0) * n / (n - 1) if n > 1 else float("inf")
        w = m.square_decoder() if target == "sample" else None
        kind, note = "interval", ""
        if w is not None and n > 1:
            var = max(m2 - float(self.counts @ w) / n, 0.0) + 1.0 / m.grid**2
        elif target == "sample":
            kind = "bound"
            note = ("the standard error is an upper bound for the sample mean: one bit per user cannot estimate the users' own spread, "
                    "so the interval covers at least its confidence and can be up to ~2.5x wider than needed (values at the bounds, large ε)")
        mean = m.lower + s * (mv + 1.0)
        se = s * math.sqrt(var / n)
        return MeanEstimate(mean, se, mean - z * se, mean + z * se, n, confidence, target, kind, note)
