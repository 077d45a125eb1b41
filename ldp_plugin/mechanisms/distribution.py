"""Numeric **distributions** under ε-LDP: the Square Wave mechanism on an exact grid, and the
bucketed frequency oracle it is compared with.

**Square Wave** (Li, Wang, Lopuhaä-Zwakenberg, Li, Škorić, Li: *Estimating Numerical Distributions
under Local Differential Privacy*, SIGMOD 2020, §4, eq. (3)–(5)). A user's number in the declared
``[lower, upper]`` is mapped to one of ``grid = D`` equal input cells ``k`` (``k = ⌊(x − lower)/h⌋``,
``h = (upper − lower)/D``; the top end goes to cell ``D − 1``). The report is one of
``M = D + 2s`` output cells ``j``: the **window** ``k <= j <= k + 2s`` (the paper's
``|v − ṽ| <= b`` around the shifted input) has probability ``P_in = w·p`` (``w = 2s + 1`` cells),
every other cell ``q``, ``p/q = e^ε``. The half-width ``s = round(b·D)`` follows the paper's
optimal ``b = (ε e^ε − e^ε + 1) / (2 e^ε (e^ε − 1 − ε))`` (eq. (5), the value that maximizes the
mutual information between input and output). There is **no continuous noise**: the channel is
the finite matrix above, realized with one integer threshold ``T`` over ``2^64``
(``P_in = T/2^64``, ``T = ⌊2^64 · w e^ε_/(w e^ε_ + M − w)⌋`` with ``e^ε_`` a rational lower bound
of ``e^ε``) and two exact uniform integers (the cell inside, or outside, the window); so
``p/q = (T/w) / ((2^64 − T)/(M − w)) <= e^ε`` exactly, checked at construction.

**Guarantee**: ε-LDP per user — ``max_{k,k',j} P(j|k)/P(j|k') <= e^ε`` (``max_divergence``),
neighbouring relation: one user's number replaced by any other number of ``[lower, upper]``
(``discrete_distance``, ``d_in = 1``); a batch of users under the Hamming distance costs ``d_in·ε``.

**Reconstruction (EMS)** — the server's estimate is pure post-processing
(:mod:`.distribution_server`): expectation–maximization over the ``D`` input cells on the output
counts with binomial smoothing ``(1, 2, 1)/4`` after every M-step (the paper's EMS, §5.2,
Alg. 1), stopped when the log-likelihood gains less than ``tol``; the histogram on ``B`` buckets
(``B`` divides ``D``) is the sum of the cells and the quantiles' point estimates are read from it.
EMS's smoothing is biased (on a narrow peak, a bimodal or a heavy-tailed shape by many standard
errors), so **intervals** come from the unbiased least-squares inverse of the exact channel,
``θ̂ = (AᵀA)⁻¹Aᵀ ĉ/n``, with its exact variance given the users: range counts and buckets are
centred on it, quantile intervals invert its pointwise CDF intervals
(:mod:`.distribution_server`).

**Bucketed oracle** (:class:`BucketedOracle`): the number's bucket among ``B`` equal buckets,
reported with a frequency oracle (k-RR when ``B < 3e^ε + 2``, else OUE — the smaller variance,
Wang et al., USENIX Security 2017, §4.3); its histogram, ranges and quantiles are linear in
unbiased bucket estimates, so their intervals are **analytic** (normal, from the oracle's exact
variance). The bucket rule (:func:`ldp_plugin.choose.distribution.bucket_rule`) picks the
``B`` with the smallest *predicted* W1 error for the user's ``n`` and ε on a reference shape
(smooth by default), predicted by simulating the exact channel's report counts; the same
prediction ranks Square Wave against the bucketed oracle in ``ldp choose --family distribution``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._errors import LDPParameterError
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from ..sampling import RNGLike
from .channel import Channel
from .distribution_server import DistributionAccumulator, DistributionEstimate, ems
from .base import MechanismBase
from .leaf_client import AccumulatedEstimate, LeafClient, NumberCells
from .domain import real_numbers
from .window import WindowChannel
from .reports import ReportField
from .randomized_response import KRR
from .unary import OUE
from .protocol import Distribution, InputKind, Numeric, Verifiable

__all__ = ["SquareWave", "BucketedOracle", "square_wave_b", "DistributionEstimate", "DistributionAccumulator"]


def square_wave_b(epsilon: float) -> float:
    """The paper's half-width ``b`` on the unit interval (SIGMOD 2020, eq. (5))."""
    e = math.exp(epsilon)
    return (epsilon * e - e + 1) / (2 * e * (e - 1 - epsilon))


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SquareWave(WindowChannel, LeafClient, AccumulatedEstimate, MechanismBase):
    """Square Wave on ``grid`` exact input cells (see the module docstring for the guarantee,
    the paper and the equations).

    Runtime: ``O(n)`` client (one Bernoulli and one uniform integer per user); the server's EMS
    is ``O(grid)`` per iteration (window sums by cumulative sums).
    Utility: W1 on Beta(2,5), ``n = 10^5``: about 0.001 at ε = 4, 0.005 at ε = 1 (BENCHMARKS.md).

    Proof: docs/proofs/numeric.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> sw = ldp.SquareWave(epsilon=2.0, lower=0, upper=100, grid=256)
    >>> r = sw.randomize(np.random.default_rng(0).uniform(0, 100, 5000), rng=1)
    >>> est = sw.estimate(r, buckets=8)
    >>> len(est.estimate), round(float(est.estimate.sum()), 6)
    (8, 1.0)
    """

    capabilities = frozenset({Numeric, Verifiable, Distribution})

    name: ClassVar[str] = "square-wave"
    input_kind: ClassVar[InputKind] = InputKind.NUMBER
    histogram_columns: ClassVar[tuple] = ("report",)

    epsilon: float
    lower: float = 0.0
    upper: float = 1.0
    grid: int = 256
    half_window: int = field(init=False, repr=False, compare=False)
    window_threshold: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = self._check_cells("grid", 2, 1 << 16)
        s = max(0, int(round(square_wave_b(eps) * self.grid))) if eps < 30 else 0
        object.__setattr__(self, "half_window", s)
        w, M = 2 * s + 1, self.grid + 2 * s
        E = exp_lower_bound(eps)
        P = Fraction(w) * E / (w * E + (M - w))
        T = (P.numerator * TWO64) // P.denominator
        if not 0 < T < TWO64:
            raise LDPParameterError(f"square-wave: epsilon={eps!r} gives a window probability that rounds to 0 or 1 at 64 bits")
        object.__setattr__(self, "window_threshold", int(T))
        if not ratio_within_exp(self.realized_ratio, eps):  # pragma: no cover - floor thresholds make this impossible
            raise LDPParameterError(f"square-wave: the realized likelihood ratio exceeds e^epsilon (epsilon={eps!r})")

    # -- exact channel ---------------------------------------------------------------------------
    @property
    def window(self) -> int:
        return 2 * self.half_window + 1

    @property
    def _window_inputs(self) -> int:
        return self.grid

    def channel(self) -> Channel:
        if self.grid * self.cells > 1 << 16:
            raise LDPParameterError(f"channel enumeration is limited to grid·cells <= 65536 (this instance has {self.grid * self.cells})")
        ph, pl = self.p_hi, self.p_lo
        rows = tuple(tuple(ph if k <= j <= k + 2 * self.half_window else pl for j in range(self.cells)) for k in range(self.grid))
        return Channel(tuple(range(self.cells)), rows)

    def channel_matrix(self) -> np.ndarray:
        """``A[j, k] = P(output j | input cell k)`` as floats (``cells × grid``), for the server."""
        j = np.arange(self.cells)[:, None]
        k = np.arange(self.grid)[None, :]
        inside = (j >= k) & (j <= k + 2 * self.half_window)
        return np.where(inside, float(self.p_hi), float(self.p_lo))

    def output_index(self, reports: Any) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    # -- client (one report per number: an output cell, ``uint32``; :class:`.LeafClient`) -----------
    def _randomize_codes(self, k: np.ndarray, source: Any) -> np.ndarray:
        return self._window_sample(k, source)

    def _report_of_one(self, reports: Any) -> int:
        return int(reports[0])

    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", kind="int", bound=self.cells),)

    # -- server -----------------------------------------------------------------------------------
    def accumulator(self) -> DistributionAccumulator:
        """EMS histogram (:meth:`DistributionAccumulator.estimate`, via ``estimate``)."""
        return DistributionAccumulator(self)

    def reconstruct(self, counts: np.ndarray, *, tol: float | None = None, max_iter: int = 10_000) -> np.ndarray:
        """EMS on the output counts → the distribution over the ``grid`` input cells."""
        return ems(self, counts, tol=tol, max_iter=max_iter)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        raise LDPParameterError("square-wave's EMS estimate has no closed-form error; use the estimate's intervals or simulate")


# ---------------------------------------------------------------------------------------------------
def _oracle_for(epsilon: float, buckets: int, oracle: str):
    if oracle == "auto":
        oracle = "krr" if buckets < 3 * math.exp(epsilon) + 2 else "oue"
    if oracle == "krr":
        return KRR(epsilon=epsilon, d=buckets)
    if oracle == "oue":
        return OUE(epsilon=epsilon, d=buckets)
    raise LDPParameterError(f"oracle must be 'auto', 'krr' or 'oue' (got {oracle!r})")


@dataclass(frozen=True, kw_only=True)
class BucketedOracle(NumberCells, AccumulatedEstimate, MechanismBase):
    """A number's bucket among ``buckets`` equal buckets of ``[lower, upper]``, reported with a
    frequency oracle (``oracle``: ``"krr"``, ``"oue"`` or ``"auto"``; module docstring).

    Guarantee: the inner oracle's, ε-LDP per user (``max_divergence``; one user's number replaced
    by any other in ``[lower, upper]``: its bucket changes at most, and the oracle is ε-LDP over
    buckets). Papers: k-RR and OUE as in Wang et al. (USENIX Security 2017), eq. (2) and §4.3;
    the bucketization as the baseline of Li et al. (SIGMOD 2020), §3.2.

    Proof: docs/proofs/numeric.md

    >>> import ldp_plugin as ldp, numpy as np
    >>> b = ldp.BucketedOracle(epsilon=1.0, lower=0, upper=1, buckets=16)
    >>> est = b.estimate(b.randomize(np.full(2000, 0.3), rng=0))
    >>> int(np.argmax(est.estimate))
    4
    """

    capabilities = frozenset({Numeric, Verifiable, Distribution})

    name: ClassVar[str] = "bucketed"
    input_kind: ClassVar[InputKind] = InputKind.NUMBER

    epsilon: float
    lower: float = 0.0
    upper: float = 1.0
    buckets: int = 16
    oracle: str = "auto"
    inner: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = self._check_cells("buckets", 2, 1 << 16)
        if self.oracle not in ("auto", "krr", "oue"):
            raise LDPParameterError(f"oracle must be 'auto', 'krr' or 'oue' (got {self.oracle!r})")
        object.__setattr__(self, "inner", _oracle_for(eps, self.buckets, self.oracle))

    @property
    def grid(self) -> int:
        return self.buckets

    @property
    def realized_ratio(self) -> Fraction:
        return self.inner.realized_ratio

    @property
    def histogram_columns(self):  # type: ignore[override]
        return self.inner.histogram_columns

    def output_alphabet_size(self) -> int:
        return self.inner.output_alphabet_size()

    # the inner oracle's exact support rates (read by the rate layer of `ldp verify`)
    @property
    def p_star_exact(self) -> Fraction:
        return self.inner.p_star_exact

    @property
    def q_star_exact(self) -> Fraction:
        return self.inner.q_star_exact

    def support_counts(self, reports: Any) -> np.ndarray:
        return self.inner.support_counts(reports)

    def channel(self) -> Channel:
        return self.inner.channel()

    def output_index(self, reports: Any) -> np.ndarray:
        return self.inner.output_index(reports)

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None):
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        self._check_no_cohorts(cohorts)
        return self.inner.randomize_encoded(self.encode(values), rng=rng)

    def randomize_encoded(self, codes: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None):
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        self._check_no_cohorts(cohorts)
        return self.inner.randomize_encoded(codes, rng=rng)

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None):
        self._check_client_arguments(user_keys=None if user_key is None else [user_key])
        return self.inner._report_of_one(self.randomize(real_numbers([value]), rng=rng))

    def report_fields(self) -> tuple:
        return self.inner.report_fields()

    def _to_columns(self, reports: Any) -> dict:
        return self.inner._to_columns(reports)

    def _from_columns(self, cols: dict) -> Any:
        return self.inner._from_columns(cols)

    def accumulator(self) -> DistributionAccumulator:
        return DistributionAccumulator(self)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:  # type: ignore[override]
        """The inner oracle's squared l2 error of the raw bucket estimates."""
        return self.inner.analytic_mse(n, theta=theta, f=f, sampling=sampling)

