"""Extremal mechanisms (Kairouz, Oh & Viswanath (JMLR 2016)): the binary mechanism, the optimal staircase mechanism from the
linear program of Thm 4, and the truncated geometric baseline — all on an exact finite channel.

Every mechanism here is a :class:`FiniteChannel`: a ``d × ℓ`` matrix of probabilities stored as
integer thresholds over ``2**64`` (each row sums to exactly ``2**64``), sampled by inverse CDF on one
uniform 64-bit word — so the realized channel is exact and its worst-case ratio
``max T(x,y)/T(x',y)`` is checked ``<= e^ε`` at construction, like every other mechanism.

* **Binary mechanism** (Kairouz, Oh & Viswanath (JMLR 2016) eq. 14): two outputs; ``Q(0|x) = e^ε/(1+e^ε)`` if ``x ∈ T`` (i.e.
  ``P₀(x) >= P₁(x)``), else ``1/(1+e^ε)``. Optimal for every f-divergence at small ε (Thm 5) and
  for total variation at every ε (Thm 6).
* **Staircase mechanism** (Thm 2, 4): the columns of ``Q`` are scaled staircase patterns
  ``S_j = (e^ε − 1) b_j + 1`` (``b_j`` the binary digits of ``j``); for a sublinear utility
  ``U(Q) = Σ_y μ(Q_y)`` the optimum solves the LP ``max μᵀθ s.t. Sθ = 1, θ >= 0`` (``2^k``
  variables), solved with HiGHS; at most ``k`` columns are non-zero at a vertex (Thm 2).
  Utilities: mutual information under a prior, KL / χ² / total variation between the induced
  marginals of ``P₀`` and ``P₁``.
* **Geometric mechanism** (Kairouz, Oh & Viswanath (JMLR 2016) §3.4): ``Q(y|x) ∝ α^{|y−x|}`` with ``α = e^{−ε/(k−1)}`` on the
  integers, truncated to ``[0, k)`` (tail mass folded onto the end points).

Realization: ideal probabilities are computed with the pattern ratio ``L·(1 − 2⁻³⁰)`` where ``L``
is a certain lower bound of ``e^ε`` (a 10⁻⁹ relative margin absorbs the rounding to integer
thresholds: a probability of at least ``2⁻²⁴`` moves by at most ``2⁻⁴⁰`` relatively), rows are
rounded to thresholds by largest remainders, and the exact check decides. Probabilities below
``2⁻²⁴`` are refused. The client searches cumulative boundaries accumulated in exact integers
(never through float: numpy's ``cumsum`` over Python ints >= 2**63 rounds them), and
both the constructor's check and :meth:`FiniteChannel.channel` read the channel back from those
very boundaries (``RandomSource.inverse_cdf``), not from a documented copy.
"""

from __future__ import annotations

import abc
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional

import numpy as np

from .._extras import extra_module
from .reports import ReportField
from .mixins import MergeableCounts
from .._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from ..estimation import FrequencyEstimate, finalize_estimate
from ..exact import TWO64, exp_lower_bound, ratio_within_exp
from ..sampling import as_source
from .usable_range import too_large
from .channel import Channel
from ._base import RealizedChannel
from .domain import check_domain, check_epsilon

__all__ = [
    "FiniteChannel",
    "BinaryMechanism",
    "StaircaseMechanism",
    "GeometricMechanism",
    "staircase_patterns",
    "solve_staircase",
    "UTILITIES",
]

UTILITIES = ("mutual_information", "kl", "tv", "chi2")
MAX_STAIRCASE_K = 14
_MARGIN = Fraction((1 << 30) - 1, 1 << 30)
_MIN_PROB = 2.0**-24
#: where a tight channel's smallest probability, about e**-ε, reaches _MIN_PROB (a search hint only)
_EPS_HINT = 24 * math.log(2)


class LPFailure(LDPParameterError):
    """The staircase linear program has no solution (at large ε its coefficients span more than
    double precision): the constructor turns it into the usable-ε message."""


def _thresholds_from_rows(P: np.ndarray) -> list:
    """Integer thresholds (Python ints) per row, summing to exactly 2**64 (largest remainders).

    Exact integer arithmetic: each float ``p`` is the rational ``a/2**e`` (``as_integer_ratio``),
    the row is put over one power-of-two denominator, ``floor(p · 2**64 / Σp)`` is an integer
    division and the remainders rank the outputs that get the ``2**64 − Σ floor`` missing units
    (ties keep the column order)."""
    rows = []
    for row in P:
        ratios = [float(p).as_integer_ratio() for p in row]
        den = max(b for _a, b in ratios)
        nums = [a * (den // b) for a, b in ratios]  # every denominator is a power of two
        total = sum(nums)  # normalize exactly: the float row sums to 1 only up to rounding
        fl, rem = zip(*(divmod(a * TWO64, total) for a in nums))
        fl = list(fl)
        short = TWO64 - sum(fl)  # in [0, len(row)): hand the units to the largest remainders
        order = sorted(range(len(row)), key=lambda j: rem[j], reverse=True)
        for j in order[:short]:
            fl[j] += 1
        rows.append(fl)
    return rows


def _widths(cum: np.ndarray) -> list:
    """The probabilities (over 2**64, Python ints) the inverse-CDF search realizes on the
    boundaries ``cum`` (row ``x``: output ``y`` iff ``cum[x][y] <= W < cum[x][y+1]``, the last
    interval ending at 2**64), read back from the ``uint64`` array the client searches."""
    out = []
    for row in cum.tolist():
        ends = [*row[1:], TWO64]
        out.append([int(b) - int(a) for a, b in zip(row, ends)])
    return out


@dataclass(frozen=True, kw_only=True)
class FiniteChannel(RealizedChannel, abc.ABC):
    """Base of the extremal mechanisms: a realized finite channel with exact integer thresholds.

    Subclasses provide :meth:`_ideal_matrix` (floats, rows summing to 1, ratios at most ``L``).

    Proof: docs/proofs/randomized-response.md
    """

    name: ClassVar[str] = "finite-channel"
    # only the seeded bugs of ldp_plugin.verification.seeded_bugs set this (constructible, so that
    # the verification layers, not the constructor, must catch them)
    _construction_check_disabled: ClassVar[bool] = False
    epsilon: float
    d: Optional[int] = None
    categories: tuple | list | None = None  # a list or tuple of labels; stored as a tuple
    thresholds: tuple = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)
    _cum: np.ndarray = field(init=False, repr=False, compare=False)
    _index: Optional[dict] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        self._validate_extra()
        d, cats = check_domain(self.d, self.categories)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "_index", None if cats is None else {c: i for i, c in enumerate(cats)})
        L = exp_lower_bound(eps) * _MARGIN
        try:
            P = np.asarray(self._ideal_matrix(float(L)), dtype=np.float64)
        except LPFailure:
            raise LDPParameterError(too_large(self, eps, "its linear program has no solution at 64-bit precision", hint=_EPS_HINT)) from None
        if P.ndim != 2 or P.shape[0] != d or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9) or (P < 0).any():
            raise LDPParameterError(f"{self.name}: the channel must be a {d} × ℓ row-stochastic matrix")
        P = P[:, P.max(axis=0) > 0]  # drop outputs that are never produced
        tiny = (P > 0) & (P < _MIN_PROB)
        if tiny.any():
            raise LDPParameterError(too_large(self, eps, "it needs output probabilities below 2**-24", hint=_EPS_HINT))
        T = _thresholds_from_rows(P)
        cum = self._boundaries(T)
        realized = _widths(cum)  # what the client's inverse-CDF search realizes, read back
        ratio = Fraction(1)
        for j in range(len(realized[0])):
            col = [realized[x][j] for x in range(d)]
            if min(col) == 0:
                if max(col) > 0 and not self._construction_check_disabled:
                    raise PrivacyVerificationError(f"{self.name}: an output has zero probability for some inputs only")
                continue
            ratio = max(ratio, Fraction(max(col), min(col)))
        if not ratio_within_exp(ratio, eps) and not self._construction_check_disabled:
            raise PrivacyVerificationError(f"{self.name}: the realized likelihood ratio exceeds e**epsilon")
        object.__setattr__(self, "thresholds", tuple(tuple(r) for r in realized))
        object.__setattr__(self, "realized_ratio", ratio)
        object.__setattr__(self, "_cum", cum)

    def _boundaries(self, T: list) -> np.ndarray:
        """The client's cumulative boundaries ``B[x][y] = Σ_{j<y} T[x][j]`` (``B[x][0] = 0``),
        accumulated in Python integers (exact; numpy's ``cumsum`` over a list of ints >= 2**63 goes
        through float64 and rounds them) and stored as ``uint64`` (every boundary is < 2**64)."""
        return np.array([[0, *itertools.accumulate(row[:-1])] for row in T], dtype=np.uint64)

    def _validate_extra(self) -> None:
        pass

    @abc.abstractmethod
    def _ideal_matrix(self, L: float) -> np.ndarray:
        """The ideal channel (floats, rows summing to 1) whose column ratios are at most ``L``."""

    # -- description -------------------------------------------------------------------------------
    @property
    def outputs(self) -> int:
        return len(self.thresholds[0])

    def matrix(self) -> np.ndarray:
        """The realized channel as floats (``d × ℓ``)."""
        return np.array([[t / 2.0**64 for t in row] for row in self.thresholds])

    def channel(self) -> Channel:
        """The channel the client realizes, read from the boundaries it searches (not from a
        documented copy): ``Q(y|x) = (B[x][y+1] − B[x][y]) / 2**64``."""
        rows = tuple(tuple(Fraction(t, TWO64) for t in row) for row in _widths(self._cum))
        return Channel(outputs=tuple(range(self.outputs)), matrix=rows)

    # -- client ------------------------------------------------------------------------------------------
    def _randomize_codes(self, codes: np.ndarray, source) -> np.ndarray:
        # exact: row x, output y iff B[x][y] <= W < B[x][y+1] for a uniform 64-bit word W
        out = source.inverse_cdf(self._cum, np.asarray(codes, dtype=np.int64))
        return out.astype(np.uint16 if self.outputs <= 1 << 16 else np.uint32)

    def randomize(self, values: Any, *, rng=None, cohorts: Any = None, user_keys: Any = None) -> np.ndarray:
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys)
        return self._randomize_codes(self.encode(values), as_source(rng))

    def randomize_one(self, value: Any, *, rng=None, user_key: Any = None) -> int:
        return int(self.randomize(np.array([value], dtype=object if self._index is not None else None), rng=rng, user_keys=None if user_key is None else [user_key])[0])

    def output_index(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)

    # -- server ------------------------------------------------------------------------------------------
    def report_fields(self) -> tuple:
        return (ReportField("report", "uint32", bound=self.outputs),)

    def validate_reports(self, reports: Any) -> np.ndarray:
        arr = np.asarray(reports)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise LDPInputError(f"{self.name} reports must be a 1-d integer array")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.outputs):
            raise LDPInputError(f"{self.name} reports must be outputs in [0, {self.outputs})")
        return arr

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        """Exact: the raw estimator ``A m̂`` is linear in the output frequencies ``m̂`` (mean
        ``μ = Qᵀθ``), so ``E||θ̂ − θ||² = tr(A Σ Aᵀ)``. ``sampling="fixed"`` (the users' own
        values, ``θ`` their distribution): each user's output is a draw from their own row, so
        ``Σ = (diag(μ) − Qᵀ diag(θ) Q)/n`` — the multinomial ``diag(μ) − μμᵀ`` would add the users'
        own spread, ``Qᵀ(diag θ − θθᵀ)Q``; ``"iid"`` adds that spread back, ``(1 − Σθ²)/n`` through
        ``A`` (full-rank channels; a rank-deficient one adds its bias, not counted here)."""
        th = np.asarray(theta, dtype=np.float64)
        Q = self.matrix()
        mu = Q.T @ th
        A = np.linalg.pinv(Q.T)
        cov = (np.diag(mu) - Q.T @ (th[:, None] * Q)) / n
        extra = 0.0 if sampling == "fixed" else (1 - float(np.sum(th**2))) / n
        return float(np.trace(A @ cov @ A.T)) + extra

    def accumulator(self) -> "ChannelAccumulator":
        return ChannelAccumulator(self)


class ChannelAccumulator(MergeableCounts):
    """Mergeable server state of a finite channel: int64 counts of each output and ``n``."""

    def __init__(self, mechanism: FiniteChannel):
        self.mechanism = mechanism
        self.counts = np.zeros(mechanism.outputs, dtype=np.int64)
        self.n = 0

    def add(self, reports: Any) -> "ChannelAccumulator":
        r = self.mechanism.validate_reports(reports)
        self.counts += np.bincount(r.astype(np.int64), minlength=self.mechanism.outputs)
        self.n += int(r.size)
        return self

    def estimate(self, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        """Least squares on the channel: ``θ̂ = (Qᵀ)⁺ m̂`` (unbiased when ``Q`` has rank ``d``; the
        minimum-norm solution otherwise, e.g. for the two-output binary mechanism), with plug-in
        standard errors of the randomization given the users (``A (diag(m̂) − Qᵀ diag(θ̃) Q) Aᵀ / n``,
        ``θ̃`` the clipped estimate; not the multinomial ``diag(m̂) − m̂m̂ᵀ``, which adds the users'
        own spread and overstates the variance — a thousandfold at ε = 16).

        An item whose frequency the channel cannot identify (its unit vector outside the row space
        of ``Qᵀ``: ``(Qᵀ)⁺Qᵀ`` has a diagonal entry below 1 — the items outside ``T`` of the binary
        mechanism, which only report their total) gets the minimum-norm share as its value, an
        infinite standard error and the interval ``[0, 1]``: the reports say nothing about it alone,
        so no narrower interval covers it."""
        mech = self.mechanism
        if candidates is not None:
            raise LDPParameterError(f"{mech.name} decodes over its own domain; candidates= applies to open-alphabet mechanisms")
        n = self.n
        if n == 0:
            raise LDPParameterError("an estimate needs at least one report (n >= 1)")
        m_hat = self.counts / n
        Q = mech.matrix()
        A = np.linalg.pinv(Q.T)  # d × ℓ
        raw = A @ m_hat
        # the users' reports are independent, user u's output has covariance diag(Q_x) − Q_x Q_xᵀ (x its
        # value): summed, (diag(m) − Qᵀ diag(θ) Q)/n — the randomization's spread for the users who
        # reported (target "sample"; retarget adds the population's θ(1−θ)/n), with θ plugged in clipped
        theta = np.clip(raw, 0.0, 1.0)
        cov = (np.diag(m_hat) - Q.T @ (theta[:, None] * Q)) / n
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", A, cov, A), 0.0))
        identified = np.diag(A @ Q.T) > 1 - 1e-9
        se = np.where(identified, se, np.inf)
        return finalize_estimate(raw, se, n, postprocess=postprocess, confidence=confidence, items=mech.items)


def _check_d(d: Any) -> None:
    if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer))):
        raise LDPParameterError(f"d (the number of inputs) must be an integer (got type {type(d).__name__})")


def _check_prior(p: Any, d: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):
        raise LDPParameterError(f"{name} must be a positive distribution over the {d} inputs (a list of numbers summing to 1)") from None
    if arr.shape != (d,) or not np.all(np.isfinite(arr)) or (arr <= 0).any() or abs(arr.sum() - 1) > 1e-9:
        raise LDPParameterError(f"{name} must be a positive distribution over the {d} inputs (summing to 1)")
    for _ in range(8):  # normalize to a fixed point, so that rebuilding from a spec gives the same floats
        s = arr.sum()
        if s == 1.0:
            break
        nxt = arr / s
        if np.array_equal(nxt, arr):
            break
        arr = nxt
    return arr


@dataclass(frozen=True, kw_only=True)
class BinaryMechanism(FiniteChannel):
    """The binary mechanism (Kairouz, Oh & Viswanath (JMLR 2016) eq. 14), ``epsilon``-LDP per user: two outputs; input
    ``x`` reports 0 with probability ``e^ε/(1+e^ε)`` if ``x ∈ T`` else ``1/(1+e^ε)``. Give ``T``
    (``subset``: input codes) or the hypotheses ``p0``, ``p1`` (then ``T = {x: P₀(x) >= P₁(x)}``).

    Proof: docs/proofs/randomized-response.md

    >>> from ldp_plugin import BinaryMechanism
    >>> m = BinaryMechanism(epsilon=1.0, p0=[0.5, 0.3, 0.2], p1=[0.2, 0.3, 0.5])
    >>> m.subset, m.outputs
    ((0, 1), 2)
    """

    name = "binary"
    subset: Optional[tuple] = None
    p0: Optional[tuple] = None
    p1: Optional[tuple] = None

    def _validate_extra(self) -> None:
        _check_d(self.d)
        d = self.d if self.d is not None else (len(self.categories) if self.categories is not None else None)
        if d is None and self.p0 is not None:
            d = len(self.p0)
            object.__setattr__(self, "d", d)
        if self.subset is None:
            if self.p0 is None or self.p1 is None:
                raise LDPParameterError("give subset= (input codes reported as 0 preferably) or both p0= and p1=")
            P0, P1 = _check_prior(self.p0, d, "p0"), _check_prior(self.p1, d, "p1")
            object.__setattr__(self, "p0", tuple(float(v) for v in P0))
            object.__setattr__(self, "p1", tuple(float(v) for v in P1))
            subset = tuple(int(x) for x in np.flatnonzero(P0 >= P1))
        else:
            if isinstance(self.subset, (str, bytes)) or not hasattr(self.subset, "__iter__") or any(
                    isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in self.subset):
                raise LDPParameterError("subset must be a list of integer input codes (the inputs reported as 0 preferably)")
            subset = tuple(sorted({int(x) for x in self.subset}))
            if d is None or any(not 0 <= x < d for x in subset):
                raise LDPParameterError("subset must hold input codes in [0, d)")
        if len(subset) in (0, d):
            raise LDPParameterError("the binary mechanism needs T to be a proper, non-empty subset of the inputs")
        object.__setattr__(self, "subset", subset)

    def _extra_params(self) -> dict:
        return {"subset": list(self.subset)}

    def _ideal_matrix(self, L: float) -> np.ndarray:
        hi, lo = L / (1 + L), 1 / (1 + L)
        in_t = np.isin(np.arange(self.d), self.subset)
        return np.stack([np.where(in_t, hi, lo), np.where(in_t, lo, hi)], axis=1)


@dataclass(frozen=True, kw_only=True)
class GeometricMechanism(FiniteChannel):
    """Truncated geometric mechanism on the integers ``0..d−1`` (Kairouz, Oh & Viswanath (JMLR 2016) §3.4), ``epsilon``-LDP:
    ``Q(y|x) ∝ α^{|y−x|}``, ``α = e^{−ε/(d−1)}``, the two tails folded onto 0 and d−1.

    Proof: docs/proofs/randomized-response.md

    >>> from ldp_plugin import GeometricMechanism
    >>> GeometricMechanism(epsilon=2.0, d=5).outputs
    5
    """

    name = "geometric"

    def _ideal_matrix(self, L: float) -> np.ndarray:
        k = self.d
        a = L ** (-1.0 / (k - 1))
        ys = np.arange(k)
        P = np.empty((k, k))
        for x in range(k):
            row = a ** np.abs(ys - x)
            row[0] = a**x / (1 - a)  # Σ_{y <= 0} α^{x−y}
            row[-1] = a ** (k - 1 - x) / (1 - a)
            P[x] = row / row.sum()
        # the folded end columns have ratio exactly α^{-(k-1)} = L between x = 0 and x = k − 1
        return P


def staircase_patterns(k: int, L: float) -> np.ndarray:
    """The ``k × 2^k`` staircase pattern matrix (Definition 3): column ``j`` is ``(L − 1) b_j + 1``."""
    j = np.arange(1 << k)
    bits = (j[None, :] >> np.arange(k)[:, None]) & 1
    return 1.0 + (L - 1.0) * bits


def _xlogy(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, a * np.log(a / b), 0.0)


def pattern_utilities(S: np.ndarray, utility: str, prior=None, p0=None, p1=None) -> np.ndarray:
    """``μ(S_j)`` of every pattern for a sublinear utility (homogeneous of degree 1)."""
    if utility == "mutual_information":
        P = np.asarray(prior)[:, None]
        col = (P * S).sum(axis=0)  # the output's marginal M(y) = Σ_x P(x) Q(y|x)
        return (P * _xlogy(S, np.broadcast_to(col[None, :], S.shape))).sum(axis=0)  # Σ_x P(x) Q log(Q/M)
    m0 = np.asarray(p0) @ S
    m1 = np.asarray(p1) @ S
    if utility == "kl":
        return _xlogy(m0, m1)
    if utility == "tv":
        return 0.5 * np.abs(m0 - m1)
    if utility == "chi2":
        return (m0 - m1) ** 2 / m1
    raise LDPParameterError(f"utility must be one of {UTILITIES} (got {utility!r})")


def solve_staircase(k: int, epsilon: float, utility: str, *, prior=None, p0=None, p1=None, L: Optional[float] = None):
    """Solve the LP of Kairouz, Oh & Viswanath (JMLR 2016) Thm 4 with HiGHS: returns ``(value, Q)`` with ``Q = S·diag(θ)``
    restricted to its non-zero columns (at most ``k`` at a vertex)."""
    if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_STAIRCASE_K:
        raise LDPParameterError(f"the staircase LP has 2**k variables: k must be in [2, {MAX_STAIRCASE_K}] (got {k!r})")
    linprog = extra_module("scipy.optimize", "verify", "the staircase LP needs SciPy (HiGHS)").linprog
    L = math.exp(epsilon) if L is None else L
    S = staircase_patterns(k, L)
    mu = pattern_utilities(S, utility, prior=prior, p0=p0, p1=p1)
    res = linprog(-mu, A_eq=S, b_eq=np.ones(k), bounds=(0, None), method="highs")
    if res.status != 0:
        raise LPFailure(f"the staircase linear program has no solution for k={k}, epsilon={epsilon:g} (HiGHS status {res.status})")
    cols = np.flatnonzero(res.x > 1e-9)
    # re-solve S_cols θ = 1 on the optimal support to machine precision (HiGHS is feasible to
    # ~1e-7 only): then every column is exactly a scaled pattern and every row sums to 1
    theta, *_ = np.linalg.lstsq(S[:, cols], np.ones(k), rcond=None)
    if (theta < 0).any() or not np.allclose(S[:, cols] @ theta, 1.0, atol=1e-12):
        raise LDPParameterError("the staircase LP returned a non-vertex solution; try another epsilon")
    keep = theta > 0
    Q = S[:, cols[keep]] * theta[keep][None, :]
    return float(mu[cols] @ theta), Q


@dataclass(frozen=True, kw_only=True)
class StaircaseMechanism(FiniteChannel):
    """The optimal staircase mechanism for a sublinear utility (Kairouz, Oh & Viswanath (JMLR 2016) Thm 2 and 4), solved by
    the LP with HiGHS and realized on exact thresholds; ``epsilon``-LDP per user.

    ``utility="mutual_information"`` needs ``prior``; ``"kl"``, ``"tv"``, ``"chi2"`` need ``p0`` and
    ``p1`` (the induced marginals' divergence). ``d`` is the input alphabet size ``k`` (≤ 14).

    Proof: docs/proofs/randomized-response.md

    >>> from ldp_plugin import StaircaseMechanism
    >>> m = StaircaseMechanism(epsilon=1.0, utility="kl", p0=[0.6, 0.3, 0.1], p1=[0.1, 0.3, 0.6])
    >>> m.outputs <= 3 and m.realized_epsilon <= 1.0
    True
    """

    name = "staircase"
    utility: str = "mutual_information"
    prior: Optional[tuple] = None
    p0: Optional[tuple] = None
    p1: Optional[tuple] = None
    value: float = field(init=False, compare=False, default=0.0)

    def _validate_extra(self) -> None:
        if self.utility not in UTILITIES:
            raise LDPParameterError(f"utility must be one of {UTILITIES} (got {self.utility!r})")
        _check_d(self.d)
        given = self.prior if self.utility == "mutual_information" else self.p0
        which = "prior" if self.utility == "mutual_information" else "p0"
        if given is not None and (isinstance(given, (str, bytes, dict)) or not hasattr(given, "__len__")):
            raise LDPParameterError(f"{which} must be a sequence of probabilities, one per category (got type {type(given).__name__})")
        d = self.d if self.d is not None else (len(given) if given is not None else None)
        if d is None:
            raise LDPParameterError("give d or both distributions p0 and p1 (a missing one is not inferred)")
        if d > MAX_STAIRCASE_K:
            raise LDPParameterError(f"the staircase LP has 2**d variables: d must be at most {MAX_STAIRCASE_K} (got {d})")
        object.__setattr__(self, "d", d)
        if self.utility == "mutual_information":
            prior = _check_prior(self.prior if self.prior is not None else np.full(d, 1 / d), d, "prior")
            object.__setattr__(self, "prior", tuple(float(v) for v in prior))
        else:
            if self.p0 is None or self.p1 is None:
                raise LDPParameterError(f"utility={self.utility!r} needs p0 and p1")
            object.__setattr__(self, "p0", tuple(float(v) for v in _check_prior(self.p0, d, "p0")))
            object.__setattr__(self, "p1", tuple(float(v) for v in _check_prior(self.p1, d, "p1")))

    def _extra_params(self) -> dict:
        return {"utility": self.utility, "outputs": self.outputs}

    def _ideal_matrix(self, L: float) -> np.ndarray:
        value, Q = solve_staircase(self.d, self.epsilon, self.utility, prior=self.prior, p0=self.p0, p1=self.p1, L=L)
        object.__setattr__(self, "value", value)
        return Q
