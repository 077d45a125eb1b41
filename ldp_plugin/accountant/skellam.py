"""Central (ε, δ) of a sum released with Skellam noise (the distributed-noise option of a secure
sum), and the per-device noise that reaches a target (ε, δ).

**Guarantee.** Let ``f`` map a dataset to an integer vector with ℓ₁ sensitivity ``Δ₁`` and ℓ₂
sensitivity ``Δ₂`` (one user's one-hot row replaced by another: ``Δ₁ = 2``, ``Δ₂² = 2``), and
release ``f(x) + Z`` with ``Z`` independent Skellam(μ) per coordinate (``P₁ − P₂``, ``Pᵢ`` Poisson(μ),
variance ``2μ``). By Agarwal, Kairouz & Liu, *The Skellam Mechanism for Differentially Private
Federated Learning* (NeurIPS 2021), Theorem 3.5, the release is ``(α, ε(α))``-RDP for every
integer ``α > 1`` with::

    ε(α) = α Δ₂² / (4μ) + min( ((2α − 1) Δ₂² + 6 Δ₁) / (16 μ²),  3 Δ₁ / (4μ) )

(the first term is the Gaussian mechanism's RDP at the same variance ``2μ``). dp_accounting has no
Skellam event, so this closed form is evaluated at the integer orders ``2..256`` and converted to
``(ε, δ)`` by dp_accounting's ``compute_epsilon`` (Canonne–Kamath–Steinke 2020, Prop. 12: ``ε =
ε(α) + log(1 − 1/α) − log(δ α)/(α − 1)``, minimized over the orders).

**The noise actually present.** Skellam is closed under sums: ``n`` devices each adding
Skellam(μ_dev) give Skellam(n · μ_dev) exactly, so the sum over the devices that were *summed*
is a Skellam mechanism with ``μ = n_summed · μ_dev`` — the server charges that; a device charges
``μ = t · μ_dev`` for the smallest number ``t`` of devices a released sum can hold
(the SecAgg+ reconstruction threshold, :mod:`ldp_plugin.federated.secure_config`).

**Clipping failure.** A device whose noisy entry falls outside the clipping range would be
clipped by SecAgg+'s quantizer. The range is chosen so that this happens with probability at most
``β`` over all devices and entries (Bernstein's inequality for Poisson tails,
:func:`skellam_tail_bound`); the clipped release is then within total variation ``β`` of the
analysed one for every input, so it is ``(ε, δ + (1 + e^ε) β)``-DP:
``P[M'(x) ∈ S] <= P[M(x) ∈ S] + β <= e^ε (P[M'(x') ∈ S] + β) + δ + β``.
:func:`skellam_release` splits the query's δ between the two.

ε is rounded **up** (to the next multiple of ``10**-9`` above the float result plus a margin of
``10**-9``, far above the float evaluation's error) before it is charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .._extras import extra_module
from .._errors import LDPParameterError

__all__ = ["skellam_rdp", "skellam_epsilon", "skellam_tail_bound", "calibrate_skellam", "SkellamRelease", "skellam_release",
           "ORDERS", "TAIL_SHARE", "tail_beta"]

#: integer Rényi orders (the theorem is stated for integer α)
ORDERS = tuple(range(2, 257))
#: the share of δ given to the clipping failure (the rest to the RDP conversion)
TAIL_SHARE = Fraction(1, 100)


def _check_pos(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)) or not math.isfinite(float(v)) or float(v) <= 0:
        raise LDPParameterError(f"{name} must be a positive number")
    return float(v)


def skellam_rdp(alpha: int, mu: float, l1: float = 2.0, l2_squared: float = 2.0) -> float:
    """``ε(α)`` of the Skellam mechanism (module docstring; AKL 2021, Thm 3.5)."""
    if isinstance(alpha, bool) or not isinstance(alpha, int) or alpha < 2:
        raise LDPParameterError("alpha must be an integer >= 2")
    mu = _check_pos(mu, "mu")
    return alpha * l2_squared / (4 * mu) + min(((2 * alpha - 1) * l2_squared + 6 * l1) / (16 * mu * mu), 3 * l1 / (4 * mu))


def _round_up(eps: float) -> Fraction:
    return Fraction(math.ceil(eps * 1e9) + 1, 10**9)


def skellam_epsilon(mu: float, delta: float, l1: float = 2.0, l2_squared: float = 2.0) -> Fraction:
    """The ε (rounded up, exact Fraction) at ``delta`` of Skellam(μ) noise on a sum with
    sensitivities ``l1``, ``l2_squared``."""
    mu = _check_pos(mu, "mu")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise LDPParameterError("delta must be in (0, 1)")
    # an optional extra: the secure-sum accounting needs it, importing the package does not
    compute_epsilon = extra_module("dp_accounting.rdp.rdp_privacy_accountant", "shuffle", "Skellam accounting needs dp_accounting").compute_epsilon
    rdp = [skellam_rdp(a, mu, l1, l2_squared) for a in ORDERS]
    eps, _ = compute_epsilon(ORDERS, rdp, float(delta))
    if not math.isfinite(eps):
        raise LDPParameterError("the Skellam noise gives no finite epsilon at this delta")
    return _round_up(float(eps))


def skellam_tail_bound(mu: float, beta: float, entries: int) -> int:
    """An integer ``τ`` with ``P(|X| > τ) <= beta / entries`` for ``X`` ~ Skellam(μ): with
    ``X = P₁ − P₂``, ``|X| > τ`` needs ``P₁ − μ > τ/2`` or ``μ − P₂ > τ/2`` (or the mirror), and
    Bernstein's inequality for Poisson gives ``P(P − μ >= u) <= exp(−u² / (2(μ + u/3)))`` and
    ``P(μ − P >= u) <= exp(−u²/(2μ))``; so ``P(|X| > τ) <= 4 exp(−τ² / (8(μ + τ/6)))``.
    A union bound over ``entries`` entries gives the total failure ``beta``."""
    mu = _check_pos(mu, "mu")
    beta = _check_pos(beta, "beta")
    target = math.log(4 * int(entries) / beta)
    tau = 1
    while tau * tau / (8 * (mu + tau / 6)) < target:
        tau = max(tau + 1, int(tau * 1.05))
    return tau


def calibrate_skellam(epsilon: float, delta: float, l1: float = 2.0, l2_squared: float = 2.0) -> float:
    """The smallest total μ (to 0.1%) whose Skellam noise gives at most ``epsilon`` at ``delta``."""
    epsilon = _check_pos(epsilon, "epsilon")
    lo, hi = 1e-3, 1.0
    while skellam_epsilon(hi, delta, l1, l2_squared) > epsilon:
        hi *= 2
        if hi > 1e15:
            raise LDPParameterError(f"no Skellam noise reaches epsilon={epsilon} at delta={delta}")
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if skellam_epsilon(mid, delta, l1, l2_squared) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class SkellamRelease:
    """The accounting of one Skellam-noised sum: the noise present (``mu``), the ε it gives at
    ``delta_rdp``, the clipping-failure bound ``beta``, and the total ``(epsilon, delta)``."""

    mu: float
    epsilon: Fraction
    delta_rdp: float
    beta: float
    delta: float

    def to_dict(self) -> dict:
        return {"mu": self.mu, "epsilon": float(self.epsilon), "epsilon_exact": str(self.epsilon), "delta_rdp": self.delta_rdp,
                "beta": self.beta, "delta": self.delta, "method": "Skellam RDP (Agarwal-Kairouz-Liu 2021, Thm 3.5) + dp_accounting conversion"}


def skellam_release(mu: float, delta: float, beta: float, l1: float = 2.0, l2_squared: float = 2.0) -> SkellamRelease:
    """The total ``(ε, δ)`` of a sum with Skellam(μ) noise whose clipping failed with probability
    at most ``beta``: ``δ_rdp = δ − (1 + e^ε) β`` must stay positive (module docstring)."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise LDPParameterError("delta must be in (0, 1)")
    delta_rdp = float(delta) * float(1 - TAIL_SHARE)
    eps = skellam_epsilon(mu, delta_rdp, l1, l2_squared)
    used = delta_rdp + (1 + math.exp(float(eps))) * float(beta)
    if used > float(delta) * (1 + 1e-12):
        raise LDPParameterError(f"the clipping failure bound beta={beta:g} does not fit in delta={delta:g} at epsilon={float(eps):g}")
    return SkellamRelease(mu=float(mu), epsilon=eps, delta_rdp=delta_rdp, beta=float(beta), delta=float(delta))


def tail_beta(delta: float, epsilon: float) -> float:
    """The clipping-failure budget ``β = TAIL_SHARE · δ / (1 + e^ε)``."""
    return float(TAIL_SHARE) * float(delta) / (1 + math.exp(float(epsilon)))
