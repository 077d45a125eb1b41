"""Numeric means under ε-LDP: Duchi et al., Piecewise, Hybrid, and 1BitMean with α-point rounding.

Every user holds a number in a declared ``[lower, upper]``; it is mapped to ``t ∈ [−1, 1]``,
**rounded to an exact grid** ``t_k = −1 + 2k/G`` (``k = 0..G``), and the report is drawn from an
exact channel over the grid with integer thresholds over ``2**64``, like every other mechanism
of the library: the realized likelihood ratio is a rational number checked ``<= e^ε`` exactly at
construction. Each report decodes to a value ``v`` with ``E[v | k] = t_k`` exactly, so the mean
of the decoded values is unbiased for the mean of the rounded inputs, and the rounding is
unbiased too.

**Rounding and its effect on the variance.** Randomized rounding (``k`` or ``k + 1`` with the
probabilities that keep ``E[t_k] = t``; the input-dependent probability is not a privacy
decision: the channel is ε-LDP for every ``k``) adds at most ``(1/G)²`` to a user's variance; at
the default ``G = 1024`` that is below ``10⁻⁶`` against a per-user variance of order ``1/ε²``.
:class:`OneBitMean` uses **α-point rounding** instead (Ding, Kulkarni, Yekhanin, *Collecting
Telemetry Data Privately*, NeurIPS 2017): each user draws ``α ∈ [0, 1)`` once and rounds up iff
the fractional part exceeds ``α`` — unbiased over ``α``. The paper's memoized bit per user key
is refused (:class:`OneBitMean`): it repeats a report until the rounded value changes, an
unbounded user-level loss over collections.

Mechanisms (``ε`` per user per report):

* :class:`Duchi` — Duchi, Jordan, Wainwright (JASA 2018), one-dimensional case: a bit with
  ``P(1 | t) = 1/2 + t(e^ε − 1)/(2(e^ε + 1))``, decoded as ``±C``, ``C = (e^ε + 1)/(e^ε − 1)``;
  per-user variance ``C² − t²``.
* :class:`Piecewise` — Wang et al., *Collecting and Analyzing Multidimensional Data with Local
  Differential Privacy* (ICDE 2019), Alg. 2, on ``M = L + G`` output cells: the window
  ``[k, k + L)`` (the continuous ``[l(t), r(t)]``) has probability ``e^{ε/2}/(e^{ε/2} + 1)``,
  cells weigh ``p_hi`` inside and ``p_lo`` outside, ``p_hi/p_lo <= e^ε``; ``L/M = (C − 1)/(2C)``
  with ``C = (e^{ε/2} + 1)/(e^{ε/2} − 1)`` as in the paper; decoded affinely.
* :class:`Hybrid` — the same paper, Alg. 3: Piecewise with probability ``α = 1 − e^{−ε/2}``
  (``ε > 0.61``), else Duchi; the report says which.
* :class:`OneBitMean` — Ding et al. (2017) 1BitMean: Duchi's bit on ``[lower, upper]`` with
  α-point rounding to ``G`` steps.

The estimate is the mean of the decoded values with a normal interval (:class:`MeanEstimate`)
for ``target``: ``"sample"`` (default) the mean of the users who reported — the variance given
the users, ``Σ_u Var(v | x_u)/n²``, estimated with an unbiased decoder of ``t²``
(:meth:`NumericMechanism.square_decoder`; Piecewise and Hybrid), so the interval's width follows
the estimator's real spread even on skewed data; ``"population"`` the mean of a population they
are an i.i.d. sample of — the decoded values' sample variance. Duchi's and 1BitMean's one bit
cannot estimate ``mean(t²)``: their sample interval is the population one (an upper bound).
:meth:`NumericMechanism.analytic_mse` is the exact variance of the estimate for a given
population (rounding included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Sequence

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...exact import TWO64, epsilon_of_ratio, exp_lower_bound, ratio_within_exp
from ...sampling import RNGLike, as_source
from ..domain import check_codes, check_epsilon, real_numbers as _numbers
from .server import MeanAccumulator, MeanEstimate
from ..base import MechanismBase
from ..protocol import InputKind, Numeric, Verifiable
from ..reports import ReportField
from ..channel import Channel
from ..window import WindowChannel

__all__ = ["MeanEstimate", "MeanAccumulator", "NumericMechanism", "Duchi", "Piecewise", "Hybrid", "OneBitMean"]

def _threshold_floor(p: Fraction) -> int:
    return (p.numerator * TWO64) // p.denominator


@dataclass(frozen=True, kw_only=True)
class NumericMechanism(MechanismBase):
    """Shared shape of the mean mechanisms (see the module docstring)."""

    capabilities = frozenset({Numeric, Verifiable})

    epsilon: float
    lower: float = 0.0
    upper: float = 1.0
    grid: int = 1024
    input_kind = InputKind.NUMBER
    histogram_columns = ("report",)  # few distinct reports: aggregated by a grouped scan

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        lo, hi = self.lower, self.upper
        for name, v in (("lower", lo), ("upper", hi)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
                raise LDPParameterError(f"{name} must be a finite number (got {v!r})")
        if not float(lo) < float(hi):
            raise LDPParameterError(f"lower must be below upper (got lower={lo!r}, upper={hi!r})")
        width = float(hi) - float(lo)
        scale = max(abs(float(lo)), abs(float(hi)))
        if not (math.isfinite(width) and math.isfinite(2.0 / width) and width >= 1e-9 * scale):
            raise LDPParameterError(
                f"upper - lower must be a finite width of at least 1e-9 of the values' magnitude (got lower={lo!r}, upper={hi!r}): "
                "rescale the values (e.g. to [0, 1]) before randomizing"
            )
        object.__setattr__(self, "lower", float(lo))
        object.__setattr__(self, "upper", float(hi))
        g = self.grid
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 2 <= int(g) <= 1 << 20 or int(g) & (int(g) - 1):
            raise LDPParameterError(f"grid must be a power of two in [2, 2^20] (got {g!r})")
        object.__setattr__(self, "grid", int(g))
        self._realize()
        if not ratio_within_exp(self.realized_ratio, eps):
            raise LDPParameterError(f"{self.name}: the realized likelihood ratio exceeds e^epsilon (epsilon={eps!r})")

    # -- shared client -----------------------------------------------------------------------------
    def _t(self, values: Any) -> np.ndarray:
        x = _numbers(values.to_numpy() if hasattr(values, "to_numpy") else values)
        bad = ~np.isfinite(x) | (x < self.lower) | (x > self.upper)
        if bad.any():
            raise LDPInputError(
                f"{int(bad.sum())} value(s) are missing or outside [lower, upper] = [{self.lower!r}, {self.upper!r}] "
                f"(first at position {int(np.flatnonzero(bad)[0])}); clip or drop them before randomizing"
            )
        return np.clip((x - self.lower) / (self.upper - self.lower) * 2.0 - 1.0, -1.0, 1.0)

    def encode(self, values: Any) -> np.ndarray:
        """The client's input: each number checked against ``[lower, upper]`` (errors give the
        position, never the value) and mapped to ``t`` in ``[−1, 1]``. Its grid index is drawn at
        randomization (randomized rounding is a random decision, so it is not part of encoding);
        :meth:`randomize_encoded` takes grid indices."""
        return self._t(values)

    def _round(self, t: np.ndarray, source: Any, alpha: Optional[np.ndarray] = None) -> np.ndarray:
        """Grid index ``k`` with ``E[t_k] = t``: randomized rounding, or α-point rounding with
        the user's ``alpha`` (round up iff the fractional part exceeds α)."""
        k, frac = self._split(t)
        if alpha is None:
            up = source.bernoulli_each(np.minimum(np.floor(frac * 2.0**64), 2.0**64 - 2048).astype(np.uint64))
        else:
            up = frac > alpha
        return k + up

    def _split(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The grid cell below ``t`` and the fractional position in it (0 at the top end)."""
        pos = (t + 1.0) * (self.grid / 2.0)
        k = np.minimum(np.floor(pos), self.grid).astype(np.int64)
        return k, np.where(k == self.grid, 0.0, pos - k)

    def grid_values(self) -> np.ndarray:
        return -1.0 + 2.0 * np.arange(self.grid + 1) / self.grid

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> np.ndarray:
        """One report per value (``uint32``), vectorized over the batch."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        source = as_source(rng)
        return self._sample(self._round(self._t(values), source), source)

    def _batch_of_one(self, value: Any) -> np.ndarray:
        return _numbers([value])

    def _report_of_one(self, reports: Any) -> int:
        return int(reports[0])

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> np.ndarray:
        """Reports for grid indices ``k`` in ``[0, grid]``."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        return self._sample(check_codes(codes, self.grid + 1, "grid indices"), as_source(rng))

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.output_alphabet_size()),)

    def spec(self) -> dict:
        return {"name": self.name, "params": {"epsilon": self.epsilon, "lower": self.lower, "upper": self.upper, "grid": self.grid}}

    # -- server ------------------------------------------------------------------------------------
    def _scale(self) -> float:
        return (self.upper - self.lower) / 2.0

    def accumulator(self) -> MeanAccumulator:
        return MeanAccumulator(self)

    def estimate(self, reports: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                 postprocess: Any = None) -> MeanEstimate:
        """The mean on ``[lower, upper]`` with a normal interval for ``target`` (``"sample"``: the
        users who reported; ``"population"``: an i.i.d. population; :class:`MeanAccumulator`)."""
        self._refuse_frequency_options(candidates, postprocess)
        return self.accumulator().add(reports).estimate(confidence=confidence, target=target)

    def estimate_from(self, acc: Any, *, confidence: float = 0.95, target: str = "sample", candidates: Any = None,  # type: ignore[override]
                      postprocess: Any = None) -> MeanEstimate:
        self._refuse_frequency_options(candidates, postprocess)
        return acc.estimate(confidence=confidence, target=target)

    def square_decoder(self) -> Optional[np.ndarray]:
        """``ŵ`` over the reports with ``E[ŵ(y) | k] = t_k²`` for every grid input, or None.

        When the decoded second moment ``E[v² | k]`` is quadratic in ``t_k`` with a nonzero
        ``t²`` term (Piecewise; Hybrid, whose Duchi part adds a constant), ``t² = c₀ + c₁ t +
        c₂ E[v² | k]`` on the grid and ``ŵ = c₀ + c₁ v + c₂ v²`` (``E[v | k] = t_k``); the fit
        must be exact (residual below 10⁻⁹) or None is returned (Duchi: ``E[v²|k] = C²``)."""
        t = self.grid_values()
        m2 = self.second_moments()
        X = np.stack([np.ones_like(t), t, m2], axis=1)
        c, *_ = np.linalg.lstsq(X, t * t, rcond=None)
        if not np.all(np.isfinite(c)) or np.abs(X @ c - t * t).max() > 1e-9:
            return None
        v = self.decode(np.arange(self.output_alphabet_size()))
        return c[0] + c[1] * v + c[2] * v * v

    def analytic_mse(self, n: int, *, values: Any = None, **_: Any) -> float:  # type: ignore[override]
        """Exact variance of the mean estimate for the population ``values`` (its ``n`` users),
        including the rounding: ``(scale²/n²) Σ_u (E[v² | x_u] − t_u²)``."""
        if values is None:
            raise LDPParameterError(f"{self.name}.analytic_mse needs values= (the users' numbers)")
        t = self._t(values)
        per = self._rounded_second_moment(t) - t * t
        return float(self._scale() ** 2 * per.sum() / t.size**2)

    def _rounded_second_moment(self, t: np.ndarray) -> np.ndarray:
        k, frac = self._split(t)
        m2 = self.second_moments()
        return (1 - frac) * m2[k] + frac * m2[np.minimum(k + 1, self.grid)]

    # -- exact channel (verification) -------------------------------------------------------------
    def verification_input_count(self) -> int:
        return self.grid + 1

    def output_index(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Duchi(NumericMechanism):
    """Duchi et al.'s one-dimensional mechanism on an exact grid (see the module docstring).

    Proof: docs/proofs/numeric.md
    """

    name = "duchi"
    t_low: int = field(init=False, repr=False, compare=False)
    step: int = field(init=False, repr=False, compare=False)
    #: ``T(k) = t_low + k·step`` for every grid input (read by the sampling-path layer)
    grid_thresholds: tuple = field(init=False, repr=False, compare=False)

    def _realize(self) -> None:
        L = exp_lower_bound(self.epsilon)
        t_hi = _threshold_floor(L / (L + 1))
        spread = 2 * t_hi - TWO64  # T(k) = t_low + k·step, T(grid) = t_hi: the spread must divide by grid
        t_hi -= (spread % self.grid) // 2 if spread % self.grid else 0
        spread = 2 * t_hi - TWO64
        if spread <= 0:
            raise LDPParameterError(f"epsilon={self.epsilon!r} is too small for the 2^64 threshold grid")
        object.__setattr__(self, "t_low", TWO64 - t_hi)
        object.__setattr__(self, "step", spread // self.grid)
        object.__setattr__(self, "grid_thresholds", tuple(self.t_low + k * self.step for k in range(self.grid + 1)))

    @property
    def realized_ratio(self) -> Fraction:
        hi = self.t_low + self.step * self.grid
        return Fraction(hi, self.t_low)

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    @property
    def C(self) -> float:
        """The decoded magnitude ``2^64/(T_hi − T_lo)`` (→ ``(e^ε + 1)/(e^ε − 1)``)."""
        return TWO64 / (self.step * self.grid)

    def output_alphabet_size(self) -> int:
        return 2

    def thresholds(self, k: np.ndarray) -> np.ndarray:
        return (np.uint64(self.t_low) + np.asarray(k, dtype=np.uint64) * np.uint64(self.step)).astype(np.uint64)

    def _sample(self, k: np.ndarray, source: Any) -> np.ndarray:
        return source.bernoulli_each(self.thresholds(k)).astype(np.uint32)

    def decode(self, reports: np.ndarray) -> np.ndarray:
        return np.where(reports == 1, self.C, -self.C)

    def second_moments(self) -> np.ndarray:
        return np.full(self.grid + 1, self.C**2)

    def channel(self):
        rows = tuple((1 - Fraction(self.t_low + k * self.step, TWO64), Fraction(self.t_low + k * self.step, TWO64)) for k in range(self.grid + 1))
        return Channel((0, 1), rows)


@dataclass(frozen=True, kw_only=True)
class OneBitMean(Duchi):
    """1BitMean (Ding et al. 2017) with α-point rounding: each report draws a fresh ``α`` and a
    fresh bit, so each collection is ε-LDP and collections compose (``T·ε`` after ``T``).

    The paper's memoization (``α`` and the bit fixed per user key and rounded value) is refused:
    two reports of one key are then identical until the rounded value changes, so a second
    collection reveals whether it changed — an unbounded user-level loss that no ledger could
    charge (``user_keys=`` raises; the keyed series of :mod:`ldp_plugin.mechanisms.longitudinal`
    carry an instantaneous layer for this reason).

    Proof: docs/proofs/numeric.md
    """

    name = "one-bit-mean"
    grid: int = 64

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Optional[Sequence[bytes]] = None) -> np.ndarray:
        self._check_no_cohorts(cohorts)
        if user_keys is not None:
            raise LDPParameterError(
                "user_keys= applies only to keyed (memoized) mechanisms, not one-bit-mean: a memoized 1BitMean bit repeats until "
                "the rounded value changes, so its user-level loss is unbounded from the second collection; randomize without "
                "user_keys (fresh alpha and bit: each collection is epsilon-LDP and collections compose)")
        source = as_source(rng)
        t = self._t(values)
        alpha = source.words(t.size).astype(np.float64) / 2.0**64
        return self._sample(self._round(t, source, alpha), source)


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Piecewise(WindowChannel, NumericMechanism):
    """The Piecewise mechanism on ``M = L + grid`` exact output cells (module docstring).

    Proof: docs/proofs/numeric.md
    """

    name = "piecewise"
    window: int = field(init=False, repr=False, compare=False)
    window_threshold: int = field(init=False, repr=False, compare=False)

    def _realize(self) -> None:
        h = math.exp(self.epsilon / 2)
        C = (h + 1) / (h - 1)
        L = max(1, round(self.grid * (C - 1) / (C + 1)))
        object.__setattr__(self, "window", int(L))
        M = L + self.grid
        E = exp_lower_bound(self.epsilon)
        # P(in window) = L·p_hi with p_hi/p_lo = e^ε (floor: never above)
        object.__setattr__(self, "window_threshold", _threshold_floor(L * E / (L * E + (M - L))))

    @property
    def _window_inputs(self) -> int:
        return self.grid + 1

    def _sample(self, k: np.ndarray, source: Any) -> np.ndarray:
        return self._window_sample(k, source)

    def _affine(self) -> tuple[float, float]:
        """``v = A·j + B`` with ``E[v | k] = t_k`` (exact in the rationals, then rounded)."""
        L, M = self.window, self.cells
        ph, pl = self.p_hi, self.p_lo
        slope = (ph - pl) * L  # dE[j|k]/dk
        e0 = pl * Fraction(M * (M - 1), 2) + (ph - pl) * Fraction(L * (L - 1), 2)  # E[j | k = 0]
        A = Fraction(2, self.grid) / slope
        return float(A), float(-1 - A * e0)

    def decode(self, reports: np.ndarray) -> np.ndarray:
        A, B = self._affine()
        return A * reports.astype(np.float64) + B

    def second_moments(self) -> np.ndarray:
        A, B = self._affine()
        L, M = self.window, self.cells
        ph, pl = float(self.p_hi), float(self.p_lo)
        j = np.arange(M, dtype=np.float64)
        v2 = (A * j + B) ** 2
        total = pl * v2.sum()
        cs = np.concatenate([[0.0], np.cumsum(v2)])
        k = np.arange(self.grid + 1)
        window_sum = cs[k + L] - cs[k]
        return total + (ph - pl) * window_sum

    def channel(self):
        ph, pl = self.p_hi, self.p_lo
        rows = tuple(tuple(ph if k <= j < k + self.window else pl for j in range(self.cells)) for k in range(self.grid + 1))
        return Channel(tuple(range(self.cells)), rows)


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Hybrid(NumericMechanism):
    """Hybrid mechanism: Piecewise with probability ``α = 1 − e^{−ε/2}`` (ε > 0.61), else Duchi;
    reports ``0/1`` are Duchi's bit, ``2 + j`` Piecewise's cell ``j``.

    Proof: docs/proofs/numeric.md
    """

    name = "hybrid"
    duchi: Duchi = field(init=False, repr=False, compare=False)
    piecewise: Piecewise = field(init=False, repr=False, compare=False)
    component_threshold: int = field(init=False, repr=False, compare=False)

    def _realize(self) -> None:
        object.__setattr__(self, "duchi", Duchi(epsilon=self.epsilon, lower=self.lower, upper=self.upper, grid=self.grid))
        object.__setattr__(self, "piecewise", Piecewise(epsilon=self.epsilon, lower=self.lower, upper=self.upper, grid=self.grid))
        alpha = 1 - math.exp(-self.epsilon / 2) if self.epsilon > 0.61 else 0.0
        object.__setattr__(self, "component_threshold", int(alpha * 2.0**64) if alpha > 0 else 0)

    @property
    def alpha(self) -> Fraction:
        return Fraction(self.component_threshold, TWO64)

    @property
    def realized_ratio(self) -> Fraction:
        # the component is chosen independently of the input and reported: each output is one
        # component's, so the ratio is the larger of the two components'
        if self.component_threshold == 0:  # ε <= 0.61: Duchi only
            return self.duchi.realized_ratio
        return max(self.duchi.realized_ratio, self.piecewise.realized_ratio)

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    def output_alphabet_size(self) -> int:
        return 2 + self.piecewise.cells

    def _sample(self, k: np.ndarray, source: Any) -> np.ndarray:
        use_pm = source.bernoulli(self.component_threshold, k.size) if self.component_threshold else np.zeros(k.size, dtype=bool)
        out = np.empty(k.size, dtype=np.uint32)
        out[~use_pm] = self.duchi._sample(k[~use_pm], source)  # each user draws from one component only
        if use_pm.any():
            out[use_pm] = 2 + self.piecewise._sample(k[use_pm], source)
        return out

    def decode(self, reports: np.ndarray) -> np.ndarray:
        pm = reports >= 2
        out = self.duchi.decode(np.where(pm, 0, reports))
        out[pm] = self.piecewise.decode(reports[pm] - 2)
        return out

    def second_moments(self) -> np.ndarray:
        a = float(self.alpha)
        return a * self.piecewise.second_moments() + (1 - a) * self.duchi.second_moments()

    def channel(self):
        a = self.alpha
        D, P = self.duchi.channel().matrix, self.piecewise.channel().matrix
        rows = tuple(tuple((1 - a) * p for p in D[k]) + tuple(a * p for p in P[k]) for k in range(self.grid + 1))
        return Channel(tuple(range(self.output_alphabet_size())), rows)
