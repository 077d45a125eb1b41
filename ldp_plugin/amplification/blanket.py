"""The privacy-blanket bound for randomized response (k-RR, binary RR) in the shuffle model.

A symmetric point-mass channel ``R(x)(y) = γ/d + (1 − γ)·[y = x]`` (k-RR with ``γ = d·q*``)
reports, with probability ``γ``, a uniform draw that does not depend on the input — the
*blanket* of Balle, Bell, Gascón, Nissim, *The Privacy Blanket of the Shuffle Model* (CRYPTO
2019). Give the adversary every other user's input, which of them drew from the blanket (so
their number ``M ~ Bin(n − 1, γ)`` is known) and every non-blanket report: what remains is the
histogram ``H`` of ``N = M + 1`` items, ``M`` uniform draws plus the victim's report. For victim
inputs 0 and 1 (any two inputs, by symmetry)::

    P_x(h) = Mult_N(h) · [γ + (1 − γ)·d·h_x/N]

The likelihood ratio depends on ``(h_0, h_1)`` only, so the hockey-stick divergence of ``H``
equals that of ``(h_0, h_1)``: with ``s = h_0 + h_1 ~ Bin(N, 2/d)``, ``h_0 | s ~ Bin(s, 1/2)``
and ``c = (1 − γ)·d/N``::

    δ_M(ε) = Σ_s Bin(s; N, 2/d) Σ_a Bin(a; s, 1/2) [γ(1 − e^ε) − e^ε·c·s + c(1 + e^ε)·a]₊

(the same in both directions). The bracket is linear in ``a``, so the inner sum is two binomial
tails; ``δ(ε) = E_M[δ_M(ε)]`` is an upper bound for every pair of neighbouring datasets, because
everything the adversary was given beyond the shuffled reports only adds information.

**Certified numerics** (every approximation errs toward a larger δ, hence a larger ε):

* ``δ_M`` is non-increasing in ``M`` (an extra uniform draw added to ``H`` is a post-processing
  the adversary could do), so ``M`` is grouped in buckets, each charged the ``δ`` of its smallest
  ``M``; the mass of ``M`` below the computed window is charged divergence 1;
* the mass of ``s`` outside its ±K standard-deviation window is charged divergence 1;
* ``γ`` is rounded down (a smaller blanket is less private: the larger one is a post-processing
  of it, each report re-drawn uniformly with the right probability);
* a relative slack of 1e-12 covers floating-point summation; ε is found by bisection and the
  upper end of the final bracket is returned.

For k-RR at d = 1024, ε0 = 4, n = 10^6, δ = 10^-8 the bound is 0.009498, and the exact divergence
of a concrete neighbouring pair (``variation.shuffle_epsilon(..., upper=False)``) is 0.009498:
the bound is tight to six digits there (``benchmarks/amplification.py``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import SupportRates, has

__all__ = ["BlanketParameters", "blanket_parameters", "blanket_delta", "blanket_epsilon"]

_K = 10.0        # window half-width in standard deviations (outside mass is charged in full)
_BUCKETS = 48    # groups of M, each charged at its smallest M


@dataclass(frozen=True)
class BlanketParameters:
    """A symmetric point-mass channel over ``d`` outputs with blanket probability ``gamma``
    (rounded down: see the module docstring)."""

    d: int
    gamma: float
    method: str = "privacy blanket (Balle et al., CRYPTO 2019)"

    @classmethod
    def from_exact(cls, d: int, gamma: Fraction) -> "BlanketParameters":
        g = float(gamma)
        if Fraction(g) > gamma:  # round down (a smaller blanket is less private)
            g = math.nextafter(g, 0.0)
        return cls(int(d), g)

    def __post_init__(self) -> None:
        if not (isinstance(self.d, int) and self.d >= 2 and 0 < self.gamma < 1):
            raise LDPParameterError(f"blanket parameters need an integer d >= 2 and gamma in (0, 1) (got d={self.d!r}, gamma={self.gamma!r})")


def blanket_parameters(mechanism: Any) -> Optional[BlanketParameters]:
    """``(d, γ)`` when the mechanism's channel is ``R(x)(y) = γ/d + (1 − γ)·[y = x]``: a
    :class:`~ldp_plugin.mechanisms.protocol.SupportRates` mechanism of channel shape
    ``"randomized-response"`` (k-RR) has ``γ = d·q*`` (the realized, exact ``q*``): every report is a
    uniform draw with probability ``γ`` (the privacy blanket). None otherwise."""
    if not has(mechanism, SupportRates) or mechanism.channel_shape != "randomized-response":
        return None
    gamma = mechanism.d * mechanism.q_star_exact
    return BlanketParameters.from_exact(mechanism.d, gamma) if 0 < gamma < 1 else None


def _tail(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """P[Bin(n, 1/2) >= k] (1 for k <= 0, 0 for k > n)."""
    from scipy.stats import binom

    out = binom.sf(np.ceil(k) - 1, np.maximum(n, 0), 0.5)
    out = np.where(k <= 0, 1.0, out)
    return np.where(k > n, 0.0, out)


@functools.lru_cache(maxsize=64)
def _grid(d: int, gamma: float, n: int):
    """Bucketed ``M`` (left ends, probabilities), the ``s`` grid per bucket and its weights,
    and the mass charged in full (independent of ε: computed once per parameters)."""
    from scipy.stats import binom

    m = n - 1
    mu, sd = m * gamma, math.sqrt(m * gamma * (1 - gamma))
    lo = max(0, int(math.floor(mu - _K * sd)))
    hi = min(m, int(math.ceil(mu + _K * sd)))
    edges = np.unique(np.linspace(lo, hi + 1, _BUCKETS + 1).astype(np.int64))
    left = edges[:-1]
    # each bucket's probability from the CDF and from the survival function: the larger of the two
    # (each is accurate on its own side of the mean; neither may lose a tail bucket's mass)
    pm = np.maximum(np.diff(binom.cdf(edges - 1, m, gamma)), -np.diff(binom.sf(edges - 1, m, gamma)))
    pm = np.maximum(pm, 0.0)
    pm[-1] += float(binom.sf(hi, m, gamma))  # M above the window: charged at the last bucket (δ_M non-increasing)
    charged = float(binom.cdf(lo - 1, m, gamma)) if lo > 0 else 0.0  # M below the window: divergence 1
    N = (left + 1).astype(np.float64)[:, None]
    if d == 2:
        s, w = N.copy(), np.ones_like(N)  # h_0 + h_1 = N
        s_out = np.zeros(len(left))
    else:
        r = 2.0 / d
        smu, ssd = N * r, np.sqrt(N * r * (1 - r))
        slo = np.maximum(0.0, np.floor(smu - _K * ssd))
        shi = np.minimum(N, np.ceil(smu + _K * ssd))
        width = int((shi - slo).max()) + 1
        s = slo + np.arange(width, dtype=np.float64)[None, :]
        valid = s <= shi
        s = np.where(valid, s, shi)
        w = np.where(valid, binom.pmf(s, N, r), 0.0)
        s_out = (binom.cdf(slo - 1, N, r) + binom.sf(shi, N, r))[:, 0]
    return pm, N, s, w, s_out, charged


def blanket_delta(epsilon: float, params: BlanketParameters, n: int) -> float:
    """Certified upper bound on δ at ``epsilon`` for ``n`` shuffled reports."""
    pm, N, s, w, s_out, charged = _grid(params.d, params.gamma, int(n))
    g, e = params.gamma, math.exp(epsilon)
    c = (1 - g) * params.d / N
    U = g * (1 - e) - e * c * s
    S = c * (1 + e)
    k = np.clip(np.floor(-U / S) + 1, 0, s + 1)  # the bracket is positive for a >= k
    mass = _tail(k, s)
    first = np.where(s >= 1, _tail(k - 1, s - 1), 0.0)  # Σ_{a>=k} a·Bin(a; s, 1/2) = (s/2)·P[Bin(s−1, 1/2) >= k−1]
    per_m = np.maximum(w * (U * mass + S * (s / 2) * first), 0.0).sum(axis=1) + s_out
    total = float(np.sum(pm * np.minimum(per_m, 1.0))) + charged
    return min(1.0, total * (1 + 1e-12) + 1e-300)


@functools.lru_cache(maxsize=512)
def _search(d: int, gamma: float, n: int, delta: float, hi: float, iters: int) -> float:
    params = BlanketParameters(d, gamma)
    lo = 0.0
    for _ in range(iters):
        mid = (lo + hi) / 2
        if blanket_delta(mid, params, n) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def blanket_epsilon(params: BlanketParameters, n: int, delta: float, *, epsilon0: float, iters: int = 36) -> float:
    """The central ε at ``delta`` of ``n`` shuffled reports: the upper end of a bisection on
    ``[0, ε0]`` (never above the local ε0, which the shuffled batch keeps). Cached."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise LDPParameterError(f"n (the shuffled batch size) must be an integer >= 2 (got {n!r})")
    if not 0 < delta < 1:
        raise LDPParameterError(f"delta must be in (0, 1) (got {delta!r})")
    return _search(params.d, params.gamma, int(n), float(delta), float(epsilon0), iters)
