"""Choosing how to estimate a numeric distribution (``ldp choose --family distribution``) and the
bucket rule of the bucketed oracle.

There is no closed form for the Wasserstein error of Square Wave + EMS (the smoothing trades bias
for variance in a data-dependent way), so both candidates are ranked by a **predicted** W1 error:
the mean, over seeded repetitions (40 for the bucketed oracle, whose runs are cheap; 10 for
Square Wave's EMS), of the W1 distance (on ``[0, 1]``, at a resolution of
1024 cells) between a reference distribution and the estimate made from report counts drawn from
the **exact channel** — ``Mult(n, Aθ)`` for Square Wave and k-RR, ``Bin(n_i, p*) + Bin(n − n_i, q*)``
per bucket for OUE (``n_i ~ Mult(n, θ)``) — i.e. the i.i.d. sampling of ``n`` users from the
reference, at any ``n`` in ``O(cells)`` time. The reference is the user's own prior histogram
(``prior=``) or a named shape: ``"smooth"`` (Beta(2, 5), the default), ``"bimodal"`` (two normal
bumps at 0.25 and 0.75, sd 0.05) or ``"uniform"``.

**Ranges** (``goal="ranges"``): W1 hides what a range count pays. The bucketed oracle's range
ending inside a bucket cannot assume the users are uniform in it (a point mass makes that bias
unbounded), so its interval spans the buckets it touches; Square Wave's ranges come from the
unbiased inverse of its channel (EMS's smoothing bias is not in any interval). Each candidate's
:func:`predicted_range_width` is the mean width of the 95% intervals of the ten decile ranges
``[k/10, (k + 1)/10)`` — exact, from the intervals' analytic variance at the reference — and with
``goal="ranges"`` the ranking (and the bucket count) minimizes it.

**Bucket rule** (:func:`bucket_rule`): the number of buckets ``B`` (a power of two in ``[2, 256]``)
with the smallest predicted W1 of the bucketed oracle. At ``n = 10⁵`` on the smooth shape it
gives 16 buckets at ε = 1, 16 at ε = 2 and 32 at ε = 4 (BENCHMARKS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..estimation import project_simplex
from ..mechanisms.distribution import BucketedOracle, SquareWave
from ..mechanisms.distribution_server import ems, expected_estimate
from ..mechanisms.protocol import Distribution, has

__all__ = ["SHAPES", "GOALS", "reference_histogram", "predicted_w1", "predicted_range_width", "bucket_rule", "rank_distribution_mechanisms",
           "w1_distance"]

SHAPES = ("smooth", "bimodal", "uniform")
GOALS = ("histogram", "ranges")
FINE = 1024


def _normal_cdf(x: np.ndarray, mu: float, sd: float) -> np.ndarray:
    from math import erf

    return np.array([0.5 * (1 + erf((v - mu) / (sd * math.sqrt(2)))) for v in np.ravel(x)])


def reference_histogram(shape: Any = "smooth", cells: int = FINE) -> np.ndarray:
    """A reference distribution on ``cells`` equal cells of ``[0, 1]``: a named shape (module
    docstring) or a prior histogram (any number of nonnegative weights, spread uniformly)."""
    e = np.linspace(0.0, 1.0, cells + 1)
    if isinstance(shape, str):
        if shape == "smooth":  # Beta(2, 5): F(x) = 1 − (1 − x)^5 (1 + 5x)
            F = 1 - (1 - e) ** 5 * (1 + 5 * e)
        elif shape == "bimodal":
            F = 0.5 * _normal_cdf(e, 0.25, 0.05) + 0.5 * _normal_cdf(e, 0.75, 0.05)
            F = (F - F[0]) / (F[-1] - F[0])
        elif shape == "uniform":
            F = e
        else:
            raise LDPParameterError(f"shape must be one of {SHAPES} or a prior histogram (got {shape!r})")
        return np.diff(F)
    w = np.asarray(shape, dtype=np.float64).ravel()
    if w.size < 1 or w.size > 1 << 16 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise LDPParameterError("a prior histogram needs 1 to 65536 finite, nonnegative weights with a positive sum")
    bucket = np.minimum(((np.arange(cells) + 0.5) / cells * w.size).astype(np.int64), w.size - 1)
    share = np.bincount(bucket, minlength=w.size)  # fine cells per prior bucket
    if (share == 0).any():
        raise LDPParameterError(f"a prior histogram has at most {cells} buckets")
    return (w / w.sum())[bucket] / share[bucket]


def w1_distance(a: np.ndarray, b: np.ndarray) -> float:
    """W1 on ``[0, 1]`` between two histograms on equal cells (the coarser spread uniformly)."""
    F = max(a.size, b.size)
    if F % a.size or F % b.size:
        raise LDPParameterError("the two histograms' resolutions must divide each other")
    a = np.repeat(a / (F // a.size), F // a.size)
    b = np.repeat(b / (F // b.size), F // b.size)
    return float(np.abs(np.cumsum(a) - np.cumsum(b)).sum() / F)


def _coarsen(theta: np.ndarray, cells: int) -> np.ndarray:
    if theta.size == cells:
        return theta
    if theta.size % cells == 0:
        return theta.reshape(cells, -1).sum(axis=1)
    raise LDPParameterError("resolutions must divide each other")


def _simulate_square_wave(mech: Any, n: int, ref: np.ndarray, gen: np.random.Generator, buckets: Optional[int]) -> np.ndarray:
    theta = _coarsen(ref, mech.grid)
    probs = mech.channel_matrix() @ theta
    est = ems(mech, gen.multinomial(n, probs / probs.sum()))
    return _coarsen(est, buckets) if buckets else est


def _simulate_bucketed(mech: Any, n: int, ref: np.ndarray, gen: np.random.Generator, buckets: Optional[int]) -> np.ndarray:
    inner = mech.inner
    theta = _coarsen(ref, mech.buckets)
    p, q = inner.p_star, inner.q_star
    if inner.channel_shape == "randomized-response":  # one report names one bucket
        c = gen.multinomial(n, q + (p - q) * theta)
    else:
        ni = gen.multinomial(n, theta)
        c = gen.binomial(ni, p) + gen.binomial(n - ni, q)
    return project_simplex((c / n - q) / (p - q))


#: the candidates' simulators, by registered name (a lookup, not a test on the class)
_SIMULATORS = {SquareWave.name: _simulate_square_wave, BucketedOracle.name: _simulate_bucketed}


def _simulate(mech: Any, n: int, ref: np.ndarray, gen: np.random.Generator, buckets: Optional[int]) -> np.ndarray:
    return _SIMULATORS[mech.name](mech, n, ref, gen, buckets)


def predicted_w1(mech: Any, n: int, *, reference: Any = "smooth", reps: int = 20, seed: int = 0, buckets: Optional[int] = None) -> float:
    """The predicted W1 error of ``mech`` (a :class:`SquareWave` or :class:`BucketedOracle`) for
    ``n`` users drawn from ``reference`` (module docstring)."""
    if not has(mech, Distribution) or mech.name not in _SIMULATORS:
        raise LDPParameterError(f"predicted_w1 takes a square-wave or bucketed mechanism (got {type(mech).__name__})")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 10**12:
        raise LDPParameterError(f"n must be an integer in [1, 10^12] (got {n!r})")
    ref = reference_histogram(reference, max(FINE, mech.grid))
    gen = np.random.default_rng(seed)
    return float(np.mean([w1_distance(_simulate(mech, int(n), ref, gen, buckets), ref) for _ in range(reps)]))


def predicted_range_width(mech: Any, n: int, *, reference: Any = "smooth") -> float:
    """The mean width of the 95% intervals of the ten decile ranges ``[k/10, (k + 1)/10)`` of
    ``mech`` (a :class:`SquareWave` or :class:`BucketedOracle`) for ``n`` users distributed as
    ``reference`` (module docstring): a range ending inside a cell spans the cells it touches."""
    if not has(mech, Distribution) or mech.name not in _SIMULATORS:
        raise LDPParameterError(f"predicted_range_width takes a square-wave or bucketed mechanism (got {type(mech).__name__})")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 10**12:
        raise LDPParameterError(f"n must be an integer in [1, 10^12] (got {n!r})")
    est = expected_estimate(mech, _coarsen(reference_histogram(reference, max(FINE, mech.grid)), mech.grid), int(n))
    span = mech.upper - mech.lower
    rows = [est.range_fraction(mech.lower + span * k / 10, mech.lower + span * (k + 1) / 10) for k in range(10)]
    return float(np.mean([r.ci_upper - r.ci_lower for r in rows]))


def bucket_rule(epsilon: float, n: int, *, reference: Any = "smooth", max_buckets: int = 256, seed: int = 0) -> int:
    """The bucketed oracle's number of buckets: the power of two in ``[2, max_buckets]`` with the
    smallest :func:`predicted_w1` (module docstring)."""
    if isinstance(max_buckets, bool) or not isinstance(max_buckets, int) or not 2 <= max_buckets <= 1 << 12:
        raise LDPParameterError(f"max_buckets must be an integer in [2, 4096] (got {max_buckets!r})")
    cands = [1 << i for i in range(1, max_buckets.bit_length()) if 1 << i <= max_buckets]
    return min(cands, key=lambda b: predicted_w1(BucketedOracle(epsilon=epsilon, buckets=b), n, reference=reference, reps=40, seed=seed))


@dataclass(frozen=True)
class DistributionCandidate:
    mechanism: str
    params: dict
    predicted_w1: float
    #: what the mechanism's intervals cover (a ranking by W1 says nothing of it)
    intervals: str = ""
    #: the mean width of the 95% intervals of the ten decile ranges (:func:`predicted_range_width`)
    predicted_range_width: float = float("nan")

    def to_dict(self) -> dict:
        return dict(self.__dict__)


SQUARE_WAVE_INTERVALS = ("analytic and covering: ranges, buckets and quantiles from the unbiased inverse of the channel (wider "
                         "than EMS's spread); the EMS histogram's W1 includes its smoothing bias (peaked, multimodal, heavy tails)")
BUCKETED_INTERVALS = ("analytic and covering: unbiased buckets; a range ending inside a bucket spans the buckets it touches "
                      "(the uniformity assumption's bias is unbounded, so its interval is wider: see predicted_range_width)")


def rank_distribution_mechanisms(epsilon: float, *, n: int, buckets: Optional[int] = None, reference: Any = "smooth", seed: int = 0,
                                 goal: str = "histogram") -> list:
    """Square Wave + EMS and the bucketed oracle, best first: lowest predicted W1
    (``goal="histogram"``) or narrowest decile-range intervals (``goal="ranges"``; module
    docstring). ``buckets``: the histogram resolution the user wants (both candidates report on
    it); without it the bucketed oracle uses :func:`bucket_rule` (for ranges: the power of two in
    ``[2, 256]`` with the narrowest range intervals) and Square Wave its full grid."""
    if buckets is not None and (isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 2 or buckets > 1 << 12 or buckets & (buckets - 1)):
        raise LDPParameterError(f"buckets must be a power of two in [2, 4096] (got {buckets!r})")
    if goal not in GOALS:
        raise LDPParameterError(f"goal must be one of {GOALS} (got {goal!r})")
    sw = SquareWave(epsilon=epsilon, grid=max(256, buckets or 0))
    if buckets is not None:
        b = buckets
    elif goal == "ranges":
        b = min((1 << i for i in range(1, 9)), key=lambda k: predicted_range_width(BucketedOracle(epsilon=epsilon, buckets=k), n, reference=reference))
    else:
        b = bucket_rule(epsilon, n, reference=reference, seed=seed)
    bo = BucketedOracle(epsilon=epsilon, buckets=b)
    out = [
        DistributionCandidate("square-wave", {"grid": sw.grid}, predicted_w1(sw, n, reference=reference, reps=10, seed=seed, buckets=buckets),
                              SQUARE_WAVE_INTERVALS, predicted_range_width(sw, n, reference=reference)),
        DistributionCandidate("bucketed", {"buckets": b, "oracle": bo.inner.name}, predicted_w1(bo, n, reference=reference, reps=40, seed=seed),
                              BUCKETED_INTERVALS, predicted_range_width(bo, n, reference=reference)),
    ]
    return sorted(out, key=lambda c: c.predicted_w1 if goal == "histogram" else c.predicted_range_width)
