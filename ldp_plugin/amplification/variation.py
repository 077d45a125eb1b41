"""The variation-ratio bound for any ε0-LDP randomizer (see :mod:`ldp_plugin.amplification`).

The bound is the variation-ratio analysis of Wang et al., *Privacy Amplification via
Shuffling: Unified, Simplified, and Tightened* (VLDB 2024). A randomizer ``R`` is described by
``(p, β, q)``: ``p`` bounds every likelihood ratio (``p = e^ε0``), ``β`` is the largest
total-variation distance between ``R(x0)`` and ``R(x1)``, and ``q`` bounds the variation ratio
``p·(R(x0)(y) − R(x1)(y))₊ / ((p−1)·R(x)(y))`` over outputs ``y`` and inputs ``x0, x1, x``. Then
the victim's report is a mixture ``R(x_b) = pα·D_b + α·D_{1−b} + (1−α−pα)·D_2`` with
``α = β/(p−1)`` and every other user's report contains a copy of ``D_0`` with probability
``r0 = αp/q`` and of ``D_1`` with ``r1 = αp/q`` ("clones"). The shuffled batch is therefore
post-processing of two counts, and the hockey-stick divergence of their two distributions is::

    δ(ε) = Σ_T Σ_a [P0(a, T) − e^ε P1(a, T)]₊     (and the same with P0, P1 swapped)

with ``C ~ Bin(n−1, r0+r1)`` clones among the others, ``A ~ Bin(T, ρ)`` of them of type 0
(``ρ = r0/(r0+r1)``), ``T`` the total, and (derived here; ``w1 = P[C = T−1]``, ``w2 = P[C = T]``,
``γ = 1 − α − pα``)::

    P0(a, T) = Bin(a; T, ρ) · [w1 (pα·a/(Tρ) + α·(T−a)/(T(1−ρ))) + γ·w2]
    P1(a, T) = Bin(a; T, ρ) · [w1 (α·a/(Tρ) + pα·(T−a)/(T(1−ρ))) + γ·w2]

For each ``T`` the bracket is linear in ``a``, so the positive part is a binomial tail, and
``Σ a·Bin(a; T, ρ)`` over a tail is ``Tρ`` times a tail of ``Bin(T−1, ρ)``: O(1) per ``T``,
vectorized over the ``T`` that carry probability. **Numerics round up**: the ``T`` outside the
computed window carry at most ``2·P[C outside]`` of divergence, which is added; ε is found by
bisection on ``[0, ε0]`` and the upper end of the final bracket is returned (never the midpoint).

**What is and is not established here.** The victim's common part ``D2`` is *revealed* to the
adversary instead of being mixed into the counts (mixing it — the formula behind the often quoted
k-RR numbers — under-states δ: for k-RR with d = 4, ε0 = 3, n = 25 the exact divergence of a
concrete neighbouring pair at ε = 2 is 0.079 where the mixed formula gives 0.071; see
``tests/test_amplification.py``). The mixed formula is kept as an exact **lower** bound for
randomizers whose distinguishing parts are single outputs (k-RR with d >= 3). The upper bound is
validated against exact neighbouring-pair divergences on small cases (binary RR, k-RR d = 3-5);
a proof that the worst pair is the one of largest β is not given here, and the bound is not
monotone in β at fixed q — parameters are therefore computed exactly, never bounded.

The generic parameters (``β = (p−1)/(p+1)``, the largest total variation of a ``p``-bounded pair,
as in Feldman–McMillan–Talwar's "clones"; ``q = p + 1``, the largest variation ratio any
``p``-LDP randomizer can have: :func:`generic_parameters`) apply to every ε0-LDP randomizer and
are the cross-check. :func:`binary_rr_exact_lower` is the exact
two-dataset divergence for binary randomized response, which no upper bound may undercut.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import SupportRates, Verifiable, has

__all__ = ["VariationParameters", "variation_parameters", "mechanism_variation_parameters", "CLOSED_FORMS", "exact_variation_parameters", "generic_parameters",
           "shuffle_epsilon", "shuffle_delta", "binary_rr_exact_lower"]


@dataclass(frozen=True)
class VariationParameters:
    """``(p, β, q)`` of a randomizer (see the module docstring) and how they were obtained."""

    p: float
    beta: float
    q: float
    method: str
    #: the distinguishing parts of the worst pair are single outputs (k-RR, binary RR): then the
    #: counts of those two outputs, for the others on a third value, give an exact lower bound
    point_masses: bool = False

    def __post_init__(self) -> None:
        if not (self.p > 1 and 0 < self.beta <= 1 and self.q > 0):
            raise LDPParameterError(f"variation parameters need p > 1, beta in (0, 1], q > 0 (got {self.p}, {self.beta}, {self.q})")


def _up(x: float) -> float:
    """The next float up (parameters are rounded up: the bound is monotone in each)."""
    return math.nextafter(float(x), math.inf)


def generic_parameters(epsilon0: float) -> VariationParameters:
    """Parameters valid for every ε0-LDP randomizer: ``β = (p−1)/(p+1)`` (the largest total
    variation of a ``p``-bounded pair) and ``q = p + 1`` (``(R(x0)(y) − R(x1)(y)) <= (p − 1/p)·R(x)(y)``
    for any ``p``-LDP randomizer, so the variation ratio is at most ``p(p − 1/p)/(p−1) = p+1``)."""
    p = _up(math.exp(epsilon0))
    return VariationParameters(p, _up((p - 1) / (p + 1)), _up(p + 1), "generic (any eps0-LDP randomizer)")


def exact_variation_parameters(channel: Any) -> VariationParameters:
    """``(p, β, q)`` computed exactly (Fractions) from a realized channel matrix, then rounded up."""
    M = [[Fraction(v) for v in row] for row in channel.matrix]
    d = len(M)
    cols = range(len(M[0]))
    p = max(max(M[x][y] for x in range(d)) / min(M[x][y] for x in range(d)) for y in cols if M[0][y] > 0)
    if p <= 1:
        raise LDPParameterError("the channel does not depend on its input: nothing to amplify")
    beta = max(sum(max(M[a][y] - M[b][y], 0) for y in cols) for a in range(d) for b in range(d) if a != b)
    best = Fraction(0)
    for y in cols:
        col = [M[x][y] for x in range(d)]
        if col[0] == 0:
            continue
        spread = max(col) - min(col)
        best = max(best, spread / min(col))
    q = p * best / (p - 1)
    # distinguishing parts are single outputs when every pair differs in exactly two outputs
    # (k-RR, binary RR), and the lower-bound dataset needs a third input (or d = 2)
    diffs = {sum(1 for y in cols if M[a][y] != M[b][y]) for a in range(d) for b in range(d) if a != b}
    return VariationParameters(_up(float(p)), _up(float(beta)), _up(float(q)), "exact (realized channel)", point_masses=diffs == {2} and d >= 3)


def _randomized_response_form(m: Any) -> Optional[VariationParameters]:
    """k-RR in closed form: ``p`` the realized ratio, ``β = p* − q*`` (two rows differ in two
    outputs by ``p* − q*``), ``q = p(p* − q*)/((p−1) q*)``; the distinguishing parts are single outputs."""
    r = m.realized_ratio
    beta = m.p_star_exact - m.q_star_exact
    q = r * beta / ((r - 1) * m.q_star_exact)
    return VariationParameters(_up(float(r)), _up(float(beta)), _up(float(q)), "closed form (k-RR)", point_masses=m.d >= 3)


def _unary_form(m: Any) -> Optional[VariationParameters]:
    """Unary encoding in closed form: two inputs' bit vectors differ in two independent bits, so
    ``β = p* − q*``; the largest variation ratio is at the output whose two bits read (1, 0) and
    whose bit of a third input is 0: ``(p* − q*)/(q*(1 − p*))``, so
    ``q = p(p* − q*)/((p−1) q*(1 − p*))`` (``d >= 3``; without a third input the exact channel decides)."""
    if m.d < 3:
        return None
    r, p_, q_ = m.realized_ratio, m.p_star_exact, m.q_star_exact
    q = r * (p_ - q_) / ((r - 1) * q_ * (1 - p_))
    return VariationParameters(_up(float(r)), _up(float(p_ - q_)), _up(float(q)), f"closed form ({m.name})")


#: the closed forms, keyed by the ``channel_shape`` a SupportRates mechanism declares
CLOSED_FORMS = {"randomized-response": _randomized_response_form, "unary": _unary_form}


def mechanism_variation_parameters(mechanism: Any) -> Optional[VariationParameters]:
    """``(p, β, q)`` of a mechanism: the closed form of its declared channel shape (capability
    :class:`~ldp_plugin.mechanisms.protocol.SupportRates`), else exact from its realized channel on
    small domains (capability :class:`~ldp_plugin.mechanisms.protocol.Verifiable`, when
    ``channel()`` is the real client's), else None (the generic parameters then apply)."""
    if has(mechanism, SupportRates):
        form = CLOSED_FORMS.get(mechanism.channel_shape)
        vp = form(mechanism) if form is not None else None
        if vp is not None:
            return vp
    if not has(mechanism, Verifiable) or not mechanism.channel_is_client:
        return None
    if (mechanism.domain_size or 1 << 31) > 64 or mechanism.verification_input_count() > 64:
        return None
    try:
        channel = mechanism.channel()
    except LDPParameterError:  # more outputs than the channel enumeration allows
        return None
    return exact_variation_parameters(channel)


def variation_parameters(mechanism: Any) -> VariationParameters:
    """The mechanism's ``(p, β, q)`` (:func:`mechanism_variation_parameters`: a closed form, or
    exact from the realized channel), else the generic parameters (always valid)."""
    return mechanism_variation_parameters(mechanism) or generic_parameters(mechanism.epsilon)


def _binom_tail_ge(k: np.ndarray, n: np.ndarray, rho: float) -> np.ndarray:
    """P[Bin(n, ρ) >= k] (1 for k <= 0, 0 for k > n)."""
    from scipy.stats import binom

    k = np.asarray(k, dtype=np.float64)
    out = binom.sf(np.ceil(k) - 1, n, rho)
    out = np.where(k <= 0, 1.0, out)
    return np.where(k > n, 0.0, out)


def _divergence(eps: float, p: float, alpha: float, r0: float, r1: float, n: int, *, upper: bool, mix: bool = False) -> float:
    """``max(δ_{0→1}, δ_{1→0})(ε)`` of the clone reduction (see the module docstring)."""
    from scipy.stats import binom

    r = r0 + r1
    rho = r0 / r
    # Upper bound (mix=False): the victim's common part D2 (weight γ = 1 − α − pα) is revealed to
    # the adversary: it has the same probability under both inputs and, given it, the counts have
    # the same distribution, so it carries no divergence. It must not be mixed into the counts:
    # the others' non-clone outputs need not follow D2, and mixing it under-states δ (k-RR,
    # d = 4, ε0 = 3, n = 25: the exact divergence of two neighbouring datasets at ε = 2 is 0.079,
    # the mixed formula says 0.071; see tests/test_amplification.py). Mixed (mix=True), the same
    # formula is the exact divergence of the two distinguishing outputs' counts when they are
    # single outputs and the others hold a third value: a post-processing, hence a lower bound.
    gamma = max(0.0, 1.0 - alpha - p * alpha) if mix else 0.0
    m = n - 1  # the other users
    mean, sd = m * r, math.sqrt(max(m * r * (1 - r), 1e-300))
    lo = max(0, int(math.floor(mean - 40 * sd)) - 1)
    hi = min(m + 1, int(math.ceil(mean + 40 * sd)) + 2)
    T = np.arange(max(lo, 1), hi + 1, dtype=np.float64)
    w1 = binom.pmf(T - 1, m, r)
    w2 = binom.pmf(T, m, r)
    outside = float(binom.cdf(lo - 1, m, r) + binom.sf(hi - 1, m, r)) if lo > 0 or hi <= m else 0.0
    e = math.exp(eps)
    best = 0.0
    for a0, a1 in ((p * alpha, alpha), (alpha, p * alpha)):
        # bracket of P_b: u + v·a, for P0 (b = 0) and P1 (b = 1) of this direction
        u0 = w1 * a1 / (1 - rho) + gamma * w2
        v0 = w1 * (a0 / (T * rho) - a1 / (T * (1 - rho)))
        u1 = w1 * a0 / (1 - rho) + gamma * w2
        v1 = w1 * (a1 / (T * rho) - a0 / (T * (1 - rho)))
        U, S = u0 - e * u1, v0 - e * v1
        # region {U + S·a > 0}: a > -U/S (S > 0), a < -U/S (S < 0), all or none (S = 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            cut = -U / S
        pos = S > 0
        neg = S < 0
        k_lo = np.where(pos, np.floor(cut) + 1, np.where(neg, 0, np.where(U > 0, 0, T + 1)))
        k_hi = np.where(neg, np.ceil(cut) - 1, T)  # inclusive upper end
        k_lo = np.clip(k_lo, 0, T + 1)
        k_hi = np.clip(k_hi, -1, T)
        mass = _binom_tail_ge(k_lo, T, rho) - _binom_tail_ge(k_hi + 1, T, rho)
        first = _binom_tail_ge(k_lo - 1, T - 1, rho) - _binom_tail_ge(k_hi, T - 1, rho)  # Σ a·Bin = Tρ·(this)
        total = U * np.maximum(mass, 0) + S * T * rho * np.maximum(first, 0)
        d = float(np.sum(np.maximum(total, 0.0)))
        best = max(best, d)
    if upper:
        best += 2.0 * outside + 1e-15 * (1 + best)
    return best


def shuffle_delta(epsilon: float, params: VariationParameters, n: int) -> float:
    """Upper bound on δ at ``epsilon`` for a shuffled batch of ``n`` reports (see the module
    docstring for what is established)."""
    alpha = params.beta / (params.p - 1)
    r0 = alpha * params.p / params.q
    return min(1.0, _divergence(epsilon, params.p, alpha, r0, r0, int(n), upper=True))


@functools.lru_cache(maxsize=512)
def _search(p: float, beta: float, q: float, n: int, delta: float, upper: bool, iters: int, mix: bool = False) -> float:
    alpha = beta / (p - 1)
    r0 = alpha * p / q
    if not 0 < 2 * r0 <= 1 + 1e-12 or alpha * (1 + p) > 1 + 1e-12:
        raise LDPParameterError("these variation parameters admit no clone decomposition (2·r0 and α(1+p) must be at most 1)")
    r0 = min(r0, 0.5)
    lo, hi = 0.0, math.log(p)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if _divergence(mid, p, alpha, r0, r0, n, upper=upper, mix=mix) > delta * (1 if upper else 1 + 1e-9):
            lo = mid
        else:
            hi = mid
    return hi if upper else lo


def shuffle_epsilon(params: VariationParameters, n: int, delta: float, *, upper: bool = True, iters: int = 40) -> Optional[float]:
    """The central ε at ``delta`` of ``n`` shuffled reports: a certified upper bound (the
    bisection's upper end; never above ``ln p``), or with ``upper=False`` an exact lower bound
    for randomizers whose distinguishing parts are single outputs (``params.point_masses``;
    None otherwise): the counts of those two outputs with the others on a third value (the
    bisection's lower end). Cached by parameters."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise LDPParameterError(f"n (the shuffled batch size) must be an integer >= 2 (got {n!r})")
    if not 0 < delta < 1:
        raise LDPParameterError(f"delta must be in (0, 1) (got {delta!r})")
    if not upper and not params.point_masses:
        return None
    return _search(params.p, params.beta, params.q, int(n), float(delta), upper, iters, not upper)


def binary_rr_exact_lower(epsilon0: float, n: int, delta: float, *, iters: int = 40) -> float:
    """Exact ε(δ) between two neighbouring datasets for binary randomized response: all other
    users hold 0, the victim 0 or 1; the shuffled output is the number of ones, and the
    hockey-stick divergence of the two count distributions is computed exactly (a valid lower
    bound on any upper bound's ε)."""
    from scipy.stats import binom

    e0 = math.exp(epsilon0)
    keep = e0 / (1 + e0)
    k = np.arange(0, n + 1)
    others = binom.pmf(k[:-1], n - 1, 1 - keep)  # ones among the n − 1 others (all hold 0)
    P = np.zeros(n + 1)
    Q = np.zeros(n + 1)
    P[:-1] += others * keep          # victim 0: reports 0 with prob keep
    P[1:] += others * (1 - keep)
    Q[:-1] += others * (1 - keep)    # victim 1: reports 0 with prob 1 − keep
    Q[1:] += others * keep

    def div(eps: float) -> float:
        e = math.exp(eps)
        return max(float(np.maximum(P - e * Q, 0).sum()), float(np.maximum(Q - e * P, 0).sum()))

    lo, hi = 0.0, epsilon0
    for _ in range(iters):
        mid = (lo + hi) / 2
        if div(mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo
