"""The server side of the numeric-distribution mechanisms (:mod:`.distribution`): exact count
accumulators, the EMS reconstruction of Square Wave, and :class:`DistributionEstimate` — a
histogram on ``[lower, upper]`` with its quantiles and range counts and their intervals.

Everything here is post-processing of the reports: it never touches the privacy budget.

**EMS** (Li et al., SIGMOD 2020, §5.2, Alg. 1): with output counts ``c_j`` and the channel
``A[j, k] = q + (p − q)·[k <= j <= k + 2s]``, each iteration is the EM step
``θ_k ← θ_k · Σ_j A[j,k] c_j / (n·(Aθ)_j)`` followed by the binomial smoothing
``θ_k ← (θ_{k−1} + 2θ_k + θ_{k+1})/4`` (at the ends ``(2θ_0 + θ_1)/3``); it stops when the
log-likelihood ``Σ_j c_j ln (Aθ)_j`` gains less than ``tol`` (default ``10⁻⁴·e^ε·n/10⁵``,
:func:`ems`). ``Aθ`` and ``Aᵀr`` are window sums, so an iteration costs ``O(grid)``.

**Intervals.** Every interval is centred on an **unbiased** linear estimate and has an analytic
variance, so it covers the users' true value (not only an estimator's spread). Square Wave: the
EMS estimate is the point histogram (its smoothing makes it biased: on a narrow peak by many
standard errors), while ranges, histogram buckets and the CDF behind quantile intervals are
read from the unbiased inverse of the exact channel, ``θ̂ = L ĉ/n`` with the least-squares
left inverse ``L = (AᵀA)⁻¹Aᵀ`` (``LA = I``, so ``E θ̂ = θ`` given the users); for ``a``'s
functional ``aᵀθ̂ = wᵀĉ/n``, ``w = Lᵀa``, and given the users (``target="sample"``) each report
is one categorical draw, so ``Var = (Σ_j w_j² P_j − Σ_x a_x² θ_x)/n`` with ``P = Aθ``, estimated
without bias by the observed output rates ``ĉ/n`` and ``θ̂`` (``(AᵀA)[k, l] = q²M + 2q(p − q)w
+ (p − q)²·max(0, w − |k − l|)``, built without ``A``). The bucketed oracle: a range or a CDF
value is a linear functional ``aᵀθ̂`` of unbiased bucket estimates; given the users
``Var = Σ_x θ_x V_x(a)/(n(p* − q*)²)`` with ``V_x(a)`` the variance of ``a`` at the report of a
user in bucket ``x`` (k-RR: one categorical draw, ``p*`` at ``x`` and ``q*`` elsewhere; OUE:
independent bits), ``θ`` the clipped unbiased estimate. For an i.i.d. population the users' own
spread ``(Σa²θ − (aθ)²)/n`` is added. A range ending inside a cell (Square Wave) or a bucket
(bucketed) runs from the lower limit of the cells inside it to the upper limit of the cells it
touches (the users' spread within a cell is unknown). Quantile intervals invert the pointwise
CDF intervals: from the cell before the first edge whose upper bound reaches the level to the
cell after the last edge whose lower bound is below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

import warnings

from .._boundary.workload import check_memory, check_seconds
from .._errors import LDPInputError, LDPParameterError
from .. import pictures
from ..estimation import check_estimate_request, normal_quantile, project_simplex
from .mixins import OutputCounts
from .tagged import untagged

__all__ = ["ems", "ems_seconds", "decoder_seconds", "square_wave_gram", "square_wave_decoder", "expected_estimate", "DistributionAccumulator", "DistributionEstimate", "RangeEstimate", "DistributionPictures"]

#: EMS iterations assumed by the work prediction (a run at the default ``tol`` takes a few hundred
#: to a few thousand; ``max_iter`` caps it)
EMS_TYPICAL_ITERATIONS = 3000


def ems_seconds(mech: Any, replicates: int, max_iter: int = 10_000) -> float:
    """The predicted time of an EMS estimate with ``replicates`` bootstrap runs: each iteration
    is a few passes over the ``grid + 2s`` output cells (measured ≈ 0.1 ms at 400 cells, 46 ms
    at 10⁵ cells on one core: ≈ 2.5·10⁻⁷ s a cell, at least 5·10⁻⁵ s)."""
    per_iteration = max(5e-5, 2.5e-7 * mech.cells)
    return (replicates + 1) * min(max_iter, EMS_TYPICAL_ITERATIONS) * per_iteration


def decoder_seconds(mech: Any) -> float:
    """The predicted time of Square Wave's unbiased decoder (:func:`square_wave_decoder`): a
    dense ``grid × grid`` solve against ``grid × cells`` right-hand sides, about
    ``2·grid²·cells`` floating-point operations at a conservative 10⁹ a second."""
    return 2.0 * float(mech.grid) ** 2 * float(mech.cells) / 1e9


def square_wave_gram(mech: Any) -> np.ndarray:
    """``AᵀA`` of Square Wave's channel ``A[j, k] = q + (p − q)·[k <= j <= k + 2s]`` (``M × D``),
    built without ``A``: ``q²M + 2q(p − q)w + (p − q)²·max(0, w − |k − l|)`` (two windows of
    ``w = 2s + 1`` cells starting at ``k`` and ``l`` overlap in ``max(0, w − |k − l|)`` cells)."""
    D, M, w = mech.grid, mech.cells, mech.window
    ph, pl = float(mech.p_hi), float(mech.p_lo)
    k = np.arange(D)
    overlap = np.maximum(0, w - np.abs(k[:, None] - k[None, :])).astype(np.float64)
    return (pl * pl * M + 2 * pl * (ph - pl) * w) + (ph - pl) ** 2 * overlap


def square_wave_decoder(mech: Any) -> np.ndarray:
    """The least-squares left inverse of Square Wave's channel under the constraint that the
    cells sum to one (``grid × cells``): ``L = L₀ + u(1ᵀ − 1ᵀL₀)`` with ``L₀ = (AᵀA)⁻¹Aᵀ`` and
    ``u = (AᵀA)⁻¹1 / 1ᵀ(AᵀA)⁻¹1``. ``LA = I`` (the columns of ``A`` sum to one), so ``L ĉ/n`` is an
    unbiased estimate of the users' cell distribution, and ``1ᵀL = 1ᵀ``, so it sums to exactly one
    (module docstring; the full-convolution window matrix has full column rank)."""
    G = square_wave_gram(mech)
    A = mech.channel_matrix()
    sol = np.linalg.solve(G, np.column_stack([A.T, np.ones(mech.grid)]))
    L0, v = sol[:, :-1], sol[:, -1]
    return L0 + np.outer(v / v.sum(), 1.0 - L0.sum(axis=0))


# -- EMS ----------------------------------------------------------------------------------------------
def _forward(theta: np.ndarray, s: int, p_hi: float, p_lo: float) -> np.ndarray:
    D = theta.size
    c = np.concatenate([[0.0], np.cumsum(theta)])
    j = np.arange(D + 2 * s)
    hi = np.minimum(j, D - 1) + 1
    lo = np.maximum(j - 2 * s, 0)
    return p_lo * c[-1] + (p_hi - p_lo) * (c[hi] - c[lo])


def _backward(r: np.ndarray, s: int, D: int, p_hi: float, p_lo: float) -> np.ndarray:
    c = np.concatenate([[0.0], np.cumsum(r)])
    k = np.arange(D)
    return p_lo * c[-1] + (p_hi - p_lo) * (c[k + 2 * s + 1] - c[k])


def _smooth(theta: np.ndarray) -> np.ndarray:
    if theta.size < 3:
        return theta
    out = np.empty_like(theta)
    out[1:-1] = (theta[:-2] + 2 * theta[1:-1] + theta[2:]) / 4
    out[0] = (2 * theta[0] + theta[1]) / 3
    out[-1] = (theta[-2] + 2 * theta[-1]) / 3
    return out / out.sum()


def ems(mech: Any, counts: Any, *, tol: Optional[float] = None, max_iter: int = 10_000, smooth: bool = True) -> np.ndarray:
    """Expectation–maximization with smoothing over Square Wave's input cells (module docstring).

    ``tol``: the log-likelihood gain below which it stops; default ``10⁻⁴ · e^ε`` (scaled by the
    number of reports over ``10⁵``: a gain's size grows with ``n``). ``smooth=False`` is plain EM."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (mech.cells,):
        raise LDPInputError(f"square-wave counts must have {mech.cells} entries")
    n = float(c.sum())
    if n <= 0:
        raise LDPParameterError("an estimate needs at least one report (n >= 1)")
    if tol is None:
        tol = 1e-4 * math.exp(mech.epsilon) * n / 1e5
    s, D = mech.half_window, mech.grid
    ph, pl = float(mech.p_hi), float(mech.p_lo)
    theta = np.full(D, 1.0 / D)
    P = _forward(theta, s, ph, pl)
    ll = float(c @ np.log(P))
    for _ in range(int(max_iter)):
        theta = theta * _backward(c / P, s, D, ph, pl) / n
        theta /= theta.sum()
        if smooth:
            theta = _smooth(theta)
        P = _forward(theta, s, ph, pl)
        new = float(c @ np.log(P))
        if new - ll < tol:
            break
        ll = new
    return theta


# -- accumulator ------------------------------------------------------------------------------------------
class DistributionAccumulator(OutputCounts):
    """Exact integer counts of each output (Square Wave) or the inner oracle's accumulator
    (bucketed): batches, partitions and devices merge; the estimate is formed only at the end."""

    def __init__(self, mechanism: Any):
        inner = getattr(mechanism, "inner", None)
        super().__init__(mechanism, mechanism.output_alphabet_size() if inner is None else mechanism.buckets)
        self.inner_acc = inner.accumulator() if inner is not None else None

    def add(self, reports: Any) -> "DistributionAccumulator":
        if self.inner_acc is None:
            return super().add(reports)
        self.inner_acc.add(untagged(reports))  # checked against this mechanism's spec by add's wrapper
        self.counts, self.n = self.inner_acc.counts.copy(), int(self.inner_acc.n)
        return self

    def add_histogram(self, columns: dict, weights: Any) -> "DistributionAccumulator":
        if self.inner_acc is None:
            return super().add_histogram(columns, weights)
        self.inner_acc.add_histogram(columns, weights)
        self.counts, self.n = self.inner_acc.counts.copy(), int(self.inner_acc.n)
        return self

    def merge(self, other: Any) -> "DistributionAccumulator":
        out = super().merge(other)
        if self.inner_acc is not None:
            out.inner_acc = self.inner_acc.merge(other.inner_acc)
        return out

    def estimate(self, *, buckets: Optional[int] = None, confidence: float = 0.95, replicates: Optional[int] = None,
                 seed: Optional[int] = None, target: str = "sample", tol: Optional[float] = None) -> "DistributionEstimate":
        """The distribution on ``[lower, upper]`` with analytic intervals centred on unbiased
        estimates (module docstring): Square Wave's histogram by EMS (``tol``), its ranges,
        buckets and quantile intervals from the unbiased inverse of its channel; the bucketed
        oracle's from its unbiased bucket estimates. ``buckets`` only sets the default
        histogram's resolution (:meth:`DistributionEstimate.histogram`); quantiles and ranges use
        the full resolution. ``target``: ``"sample"`` (the users who reported) or
        ``"population"`` (an i.i.d. population they are drawn from). Square Wave:
        ``replicates=0`` skips the intervals (NaN, labelled ``"none"``: EMS alone, for grids too
        large to invert); a positive ``replicates`` or a ``seed`` (the old bootstrap's) is
        accepted with a ``DeprecationWarning`` and not used (by either mechanism)."""
        m = self.mechanism
        check_estimate_request(self.n, confidence, target)
        res = m.grid
        b = res if buckets is None else int(buckets)
        if isinstance(buckets, bool) or b < 1 or res % b:
            raise LDPParameterError(f"buckets must divide the mechanism's resolution {res} (got {buckets!r})")
        if replicates is not None and (isinstance(replicates, bool) or not isinstance(replicates, int) or not 0 <= replicates <= 10_000):
            raise LDPParameterError(f"replicates must be an integer in [0, 10000] (got {replicates!r})")
        if (replicates is not None and replicates > 0) or seed is not None:
            warnings.warn(f"{m.name}'s estimate does not bootstrap (its intervals are analytic: the unbiased decoder's): "
                          "replicates > 0 and seed are not used and will be removed in ldp-plugin 0.2.0; pass replicates=0 "
                          "for no intervals (Square Wave)", DeprecationWarning, stacklevel=3)
        if self.inner_acc is None:
            intervals = replicates != 0
            what = f"square-wave's estimate on {m.cells} output cells" + (" with its unbiased decoder" if intervals else "")
            check_seconds(ems_seconds(m, 0) + (decoder_seconds(m) if intervals else 0.0), what=what, options="grid or replicates=0 (no intervals)")
            if intervals:
                check_memory(4.0 * 8 * m.grid * m.cells, what=what, options="grid or replicates=0 (no intervals)")
            theta = ems(m, self.counts, tol=tol)
            if not intervals:
                return DistributionEstimate(m.lower, m.upper, theta, self.n, confidence, b, "ems (no intervals: replicates=0)", target)
            L = square_wave_decoder(m)
            P = self.counts / self.n
            return DistributionEstimate(m.lower, m.upper, theta, self.n, confidence, b, "ems+unbiased-decoder", target,
                                        raw=L @ P, rates=P, decoder=L)
        return _bucketed_estimate(m, self.counts / self.n, self.n, confidence, b, target)


def _bucketed_estimate(m: Any, rates: np.ndarray, n: int, confidence: float, buckets: int, target: str,
                       method: str = "analytic") -> "DistributionEstimate":
    """The bucketed oracle's estimate from its support ``rates`` (module docstring)."""
    inner = m.inner
    p, q = inner.p_star, inner.q_star
    raw = (rates - q) / (p - q)
    kappa = 1.0 if getattr(inner, "name", "") == "krr" else 0.0
    return DistributionEstimate(m.lower, m.upper, project_simplex(raw), n, confidence, buckets, method, target,
                                raw=raw, rates=rates, scale=1.0 / (n * (p - q) ** 2), kappa=kappa, p_star=p, q_star=q)


def expected_estimate(m: Any, theta: Any, n: int, *, confidence: float = 0.95) -> "DistributionEstimate":
    """The estimate whose reports came out exactly as expected for ``n`` users distributed as
    ``theta`` (on the mechanism's ``grid`` cells): its unbiased cells are ``theta`` itself and its
    rates the channel's expected ones, so its intervals have the analytic width the real ones have
    at ``theta`` (for planning: ``ldp choose --family distribution``)."""
    theta = np.asarray(theta, dtype=np.float64)
    if getattr(m, "inner", None) is not None:
        p, q = m.inner.p_star, m.inner.q_star
        return _bucketed_estimate(m, q + (p - q) * theta, int(n), confidence, m.grid, "sample", "expected")
    return DistributionEstimate(m.lower, m.upper, theta, int(n), confidence, m.grid, "expected", raw=theta,
                                rates=m.channel_matrix() @ theta, decoder=square_wave_decoder(m))


# -- estimate -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RangeEstimate:
    """A fraction of the users (``fraction``) and their count (``count = n·fraction``) with a
    standard error and a two-sided interval at ``confidence`` (for the fraction)."""

    lo: float
    hi: float
    fraction: float
    std_error: float
    ci_lower: float
    ci_upper: float
    count: float
    n: int
    confidence: float
    method: str
    #: "interval" (covers the users' fraction at ``confidence``, ``std_error`` is the estimate's),
    #: "bound" (the range ends inside a cell: the interval spans the cells it touches, so it covers
    #: at least ``confidence``, while ``fraction`` interpolates uniformly within the cell and
    #: ``std_error`` leaves out that interpolation's unknown bias) or "none" (no interval)
    interval_kind: str = "interval"

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def plot(self, ax=None, *, title: Optional[str] = None):
        """The range as a bar of its fraction with its interval; returns the Axes (``plot``
        extra). Several ranges on one Axes: pass the same ``ax``."""
        return pictures.ranges([self.lo], [self.hi], [self.fraction], [self.ci_lower], [self.ci_upper], ax=ax,
                               confidence=self.confidence, title=title or f"fraction in [{self.lo:g}, {self.hi:g}) (n={self.n:,})")


class DistributionPictures:
    """``plot`` of a distribution estimate: the class supplies ``n``, ``confidence``,
    ``_cdf_band(confidence)``, ``histogram(buckets)`` and ``quantiles(qs)``."""

    n: int
    confidence: float

    def plot(self, ax=None, *, kind: str = "cdf", q: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9), buckets: Optional[int] = None,
             confidence: Optional[float] = None, title: Optional[str] = None):
        """A picture of the estimated distribution, with its intervals; returns the Axes (``plot``
        extra). ``kind``: ``"cdf"`` (the CDF at every cell edge with its pointwise band, from
        :meth:`range_fraction` of ``[lower, x)``), ``"histogram"`` (``buckets`` ranges with
        their intervals) or ``"quantiles"`` (the levels ``q`` with their intervals)."""
        c = self.confidence if confidence is None else confidence
        if kind == "cdf":
            x, F, lo, hi = self._cdf_band(confidence)
            return pictures.cdf(x, F, lo, hi, ax=ax, confidence=c, title=title or f"estimated CDF (n={self.n:,})")
        if kind == "histogram":
            h = self.histogram(buckets, confidence=confidence)
            return pictures.ranges(h["lo"], h["hi"], h["estimate"], h["ci_lower"], h["ci_upper"], ax=ax, confidence=c,
                                   title=title or f"estimated histogram (n={self.n:,})")
        if kind == "quantiles":
            rows = self.quantiles(list(q), confidence=confidence)
            return pictures.quantiles([r["q"] for r in rows], [r["estimate"] for r in rows], [r["ci_lower"] for r in rows],
                                      [r["ci_upper"] for r in rows], ax=ax, confidence=c, title=title or f"estimated quantiles (n={self.n:,})")
        raise LDPParameterError(f"kind must be 'cdf', 'histogram' or 'quantiles' (got {kind!r})")


@dataclass(frozen=True, eq=False)
class DistributionEstimate(DistributionPictures):
    """A distribution on ``[lower, upper]`` over ``cells`` equal cells (``theta``, summing to 1:
    the point estimate), with what its intervals need: the ``raw`` unbiased cells and the
    analytic variance model — Square Wave's ``decoder`` (``L``) and output ``rates``, or the
    bucketed oracle's support ``rates``, ``scale`` and ``kappa`` (module docstring).

    ``histogram(buckets)``, ``quantiles(qs)``, ``range_count(lo, hi)`` and ``cdf(x)``; within a
    cell the mass is spread uniformly. ``method`` says how the intervals were made."""

    lower: float
    upper: float
    theta: np.ndarray
    n: int
    confidence: float
    buckets: int
    method: str
    target: str = "sample"
    raw: Optional[np.ndarray] = None
    rates: Optional[np.ndarray] = None
    scale: float = 0.0
    kappa: float = 0.0
    p_star: float = 0.0
    q_star: float = 0.0
    decoder: Optional[np.ndarray] = None

    def _plugin_theta(self) -> np.ndarray:
        """The bucket distribution the variance is evaluated at: the unbiased ``raw`` clipped to
        ``[0, 1]`` and renormalized (the projection would move mass between buckets)."""
        th = np.clip(np.asarray(self.raw, dtype=np.float64), 0.0, None)
        return th / th.sum() if th.sum() > 0 else np.full(th.size, 1.0 / th.size)

    @property
    def interval_kind(self) -> str:
        """What the intervals cover: ``"interval"`` (the truth, at ``confidence``: analytic
        intervals centred on unbiased estimates, widened to whole cells where a range ends inside
        one) or ``"none"`` (Square Wave with ``replicates=0``: no intervals, NaN)."""
        return "interval" if self.rates is not None else "none"

    @property
    def bounds(self) -> str:
        """A sentence on what the intervals do not cover (empty for ``"interval"``)."""
        return "replicates=0: no intervals were computed" if self.interval_kind == "none" else ""

    def __repr__(self) -> str:
        """A notebook-sized summary: range, buckets, method, n and the largest buckets."""
        theta = np.asarray(self.theta, dtype=float)
        width = (self.upper - self.lower) / max(len(theta), 1)
        top = np.argsort(-theta)[:5]
        rows = "\n".join(f"  [{self.lower + i * width:.4g}, {self.lower + (i + 1) * width:.4g})  {theta[i]:.4f}" for i in sorted(top))
        kind = "" if self.interval_kind == "interval" else f" ({self.interval_kind}: see .bounds)"
        return (f"DistributionEstimate(n={self.n:,}, range=[{self.lower:g}, {self.upper:g}], buckets={len(theta)}, method={self.method!r}, "
                f"{self.confidence:.0%} intervals{kind} for the {self.target} distribution; the {len(top)} largest buckets:)\n{rows}")

    @property
    def cells(self) -> int:
        return int(self.theta.size)

    @property
    def estimate(self) -> np.ndarray:
        """The histogram on the default ``buckets``."""
        return self.theta.reshape(self.buckets, -1).sum(axis=1)

    @property
    def edges(self) -> np.ndarray:
        return np.linspace(self.lower, self.upper, self.buckets + 1)

    def _z(self, confidence: Optional[float]) -> float:
        return normal_quantile(self.confidence if confidence is None else confidence)

    # -- linear functionals: weights over the cells -------------------------------------------------
    def _weights(self, lo: float, hi: float) -> np.ndarray:
        """Weight of each cell in ``[lo, hi)`` (fractional at the ends: uniform within a cell)."""
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise LDPParameterError(f"a range needs finite lo <= hi (got lo={lo!r}, hi={hi!r})")
        D = self.cells
        u = (np.clip([lo, hi], self.lower, self.upper) - self.lower) / (self.upper - self.lower) * D
        k = np.arange(D)
        return np.clip(np.minimum(k + 1, u[1]) - np.maximum(k, u[0]), 0.0, 1.0)

    def _functional(self, a: np.ndarray, point: float) -> tuple[float, float]:
        """``(estimate, std_error)`` of ``aᵀθ`` for the chosen target."""
        if self.rates is None:  # replicates=0: no interval
            return point, math.nan
        th = self._plugin_theta()
        if self.decoder is not None:
            # Square Wave: aᵀθ̂ = wᵀĉ/n with w = Lᵀa, one categorical report per user (module docstring)
            w = self.decoder.T @ a
            var = (float((w * w) @ self.rates) - float((a * a) @ self.raw)) / self.n
        else:
            # given the users (target "sample"): a user in bucket x contributes Var_x of a's value at
            # its report, p at x and q elsewhere — one categorical draw (k-RR) or independent bits (OUE)
            p, q = self.p_star, self.q_star
            s1, s2 = float(a.sum()), float(a @ a)
            if self.kappa:
                var_x = q * s2 + (p - q) * a * a - (q * s1 + (p - q) * a) ** 2
            else:
                var_x = q * (1 - q) * s2 + (p * (1 - p) - q * (1 - q)) * a * a
            var = self.scale * float(th @ var_x)
        if self.target == "population":  # + the users' own spread of a: Var_u(a_{x_u}) / n
            var += (float(a * a @ th) - float(a @ th) ** 2) / self.n
        return point, math.sqrt(max(var, 0.0))

    def _interval(self, a: np.ndarray, point: float, confidence: Optional[float]) -> tuple[float, float, float, float]:
        est, se = self._functional(a, point)
        if math.isnan(se):
            return est, se, math.nan, math.nan
        z = self._z(confidence)
        return est, se, est - z * se, est + z * se

    # -- the user-facing queries ----------------------------------------------------------------------
    def histogram(self, buckets: Optional[int] = None, *, confidence: Optional[float] = None) -> dict:
        """``{edges, estimate, std_error, ci_lower, ci_upper}`` on ``buckets`` equal buckets."""
        b = self.buckets if buckets is None else int(buckets)
        if b < 1 or self.cells % b:
            raise LDPParameterError(f"buckets must divide the estimate's resolution {self.cells} (got {buckets!r})")
        edges = np.linspace(self.lower, self.upper, b + 1)
        rows = [self.range_fraction(edges[i], edges[i + 1], confidence=confidence) for i in range(b)]
        return {
            "lo": edges[:-1], "hi": edges[1:],
            "estimate": np.array([r.fraction for r in rows]), "std_error": np.array([r.std_error for r in rows]),
            "ci_lower": np.array([r.ci_lower for r in rows]), "ci_upper": np.array([r.ci_upper for r in rows]),
        }

    def range_fraction(self, lo: float, hi: float, *, confidence: Optional[float] = None) -> RangeEstimate:
        """The fraction of users with a value in ``[lo, hi)`` and its interval: the unbiased sum
        of the raw cell estimates, which the analytic interval is centred on (``replicates=0``:
        the EMS histogram's sum, no interval)."""
        a = self._weights(float(lo), float(hi))
        est, se, cl, cu = self._interval(a, float(a @ (self.theta if self.raw is None else self.raw)), confidence)
        kind = self.interval_kind
        if self.raw is not None and ((a > 1e-12) & (a < 1 - 1e-12)).any():
            # a range ending inside a cell: the users' spread within it is unknown, so the fractional
            # weight is an assumption (uniformity) with an unbounded bias; the interval runs from the lower
            # limit of the buckets inside the range to the upper limit of the buckets it touches
            inner, touched = (a >= 1 - 1e-12).astype(np.float64), (a > 1e-12).astype(np.float64)
            cl = self._interval(inner, float(inner @ self.raw), confidence)[2]
            cu = self._interval(touched, float(touched @ self.raw), confidence)[3]
            kind = "bound"
        c = self.confidence if confidence is None else confidence
        return RangeEstimate(float(lo), float(hi), est, se, cl, cu, est * self.n, self.n, c, self.method, kind)

    def range_count(self, lo: float, hi: float, *, confidence: Optional[float] = None) -> RangeEstimate:
        """The same as :meth:`range_fraction` (``count`` is ``n·fraction``)."""
        return self.range_fraction(lo, hi, confidence=confidence)

    def _cdf_band(self, confidence: Optional[float]) -> tuple:
        """``(x, F, lower, upper)`` at every cell edge: ``F(x)`` is the fraction in ``[lower, x)``."""
        x = np.linspace(self.lower, self.upper, self.cells + 1)
        rows = [self.range_fraction(self.lower, float(v), confidence=confidence) for v in x]
        return x, np.array([r.fraction for r in rows]), np.array([r.ci_lower for r in rows]), np.array([r.ci_upper for r in rows])
    def cdf(self, x: float) -> float:
        return float(self._weights(self.lower, min(max(float(x), self.lower), self.upper)) @ self.theta)

    def _quantile_of(self, theta: np.ndarray, q: float) -> float:
        c = np.concatenate([[0.0], np.cumsum(np.maximum(theta, 0.0))])
        c /= c[-1] if c[-1] > 0 else 1.0
        k = int(np.clip(np.searchsorted(c, q, side="left") - 1, 0, theta.size - 1))
        mass = c[k + 1] - c[k]
        frac = 0.0 if mass <= 0 else (q - c[k]) / mass
        h = (self.upper - self.lower) / theta.size
        return float(self.lower + (k + min(max(frac, 0.0), 1.0)) * h)

    def quantiles(self, qs: Sequence[float], *, confidence: Optional[float] = None) -> list:
        """``[{q, estimate, ci_lower, ci_upper}]``: the point estimate from ``theta``, the interval
        from the inverted pointwise CDF intervals of the unbiased cells (module docstring). Where
        the point falls outside its interval (EMS's smoothing bias: a heavy tail's median, a narrow
        peak) it is moved to the nearer limit — a projection onto an interval that holds the truth
        at ``confidence``, so it never moves away from the truth then."""
        out = []
        for q in qs:
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < float(q) < 1:
                raise LDPParameterError(f"quantile levels must be numbers in (0, 1) (got {q!r})")
            q = float(q)
            est = self._quantile_of(self.theta, q)
            if self.interval_kind == "none":
                lo = hi = math.nan
            else:
                lo, hi = self._cdf_inversion(q, confidence)
                est = min(max(est, lo), hi)
            out.append({"q": q, "estimate": est, "ci_lower": float(lo), "ci_upper": float(hi), "interval_kind": self.interval_kind})
        return out

    def _cdf_bands(self, confidence: Optional[float]) -> tuple[np.ndarray, np.ndarray]:
        """The pointwise lower and upper limits of ``F`` at every cell edge, from the unbiased
        cells (Square Wave: all edges at once, the decoder's rows summed cumulatively)."""
        z = self._z(confidence)
        D = self.cells
        base = np.concatenate([[0.0], np.cumsum(self.raw)])
        if self.decoder is not None:
            W = np.vstack([np.zeros((1, self.decoder.shape[1])), np.cumsum(self.decoder, axis=0)])
            var = ((W * W) @ self.rates - base) / self.n  # a is 0/1, so Σa²θ̂ is the raw CDF itself
            if self.target == "population":
                F = np.concatenate([[0.0], np.cumsum(self._plugin_theta())])
                var = var + (F - F * F) / self.n
            se = np.sqrt(np.maximum(var, 0.0))
        else:
            se = np.array([self._functional((np.arange(D) < i).astype(np.float64), 0.0)[1] for i in range(D + 1)])
        return base - z * se, base + z * se

    def _cdf_inversion(self, q: float, confidence: Optional[float]) -> tuple[float, float]:
        D = self.cells
        edges = np.linspace(self.lower, self.upper, D + 1)
        lower_b, upper_b = self._cdf_bands(confidence)
        # the first edge whose upper band reaches q is at most j + 1, the last whose lower band is
        # below q at least j (the quantile's cell j), each with probability >= 1 − α/2
        lo_i = int(np.argmax(upper_b >= q)) if (upper_b >= q).any() else D
        below = np.flatnonzero(lower_b < q)
        hi_i = int(below[-1]) + 1 if below.size else 1
        return float(edges[max(lo_i - 1, 0)]), float(edges[min(hi_i, D)])

    def to_polars(self, buckets: Optional[int] = None):
        """A tidy frame ``lo, hi, estimate, std_error, ci_lower, ci_upper``."""
        import polars as pl

        return pl.DataFrame(self.histogram(buckets))
