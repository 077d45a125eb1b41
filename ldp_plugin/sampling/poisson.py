"""Exact Poisson and Skellam samplers on uniform words (the distributed noise of a secure sum).

**Poisson(λ) for a dyadic λ = T / 2**64 <= 1/2, exactly.** Rejection from a geometric proposal:
draw ``K`` = the number of successes before the first failure of Bernoulli(λ) trials (each trial a
64-bit word compared with the integer ``T``: probability exactly ``T/2**64``), so
``g(k) = (1 − λ) λ^k``; accept with probability ``1/K!`` — the product of independent events
``U_j = 0`` for ``U_j`` uniform on ``[0, j)``, ``j = 2..K`` (Lemire's exact uniform integers) —
else start again. An accepted draw equals ``k`` with probability proportional to
``(1 − λ) λ^k / k!``, i.e. ``e^{−λ} λ^k / k!``: Poisson(λ) exactly. The acceptance rate is
``(1 − λ) e^λ >= e^{1/2}/2 ≈ 0.82`` for ``λ <= 1/2``.

**Poisson(m·λ)** is the sum of ``m`` independent Poisson(λ) (the family is closed under sums), and
**Skellam(μ) = P₁ − P₂** with ``P₁, P₂`` independent Poisson(μ) (mean 0, variance ``2μ``; the
sum of independent Skellam(μᵢ) is Skellam(Σμᵢ): Agarwal–Kairouz–Liu 2021, §3). So every rate is
``m · T / 2**64``, an exact rational, and the noise the devices add sums to a Skellam variable
whose parameter is known exactly for whichever devices were summed.

No floating point touches a probability: every decision is a comparison of random words with
integers. Cost: about ``2m`` Bernoulli words and a few small uniforms per sample.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .._errors import LDPParameterError
from ..exact import TWO64

__all__ = ["poisson_dyadic", "skellam_dyadic", "dyadic_rate", "MAX_RATE_THRESHOLD"]

#: λ <= 1/2 per elementary draw
MAX_RATE_THRESHOLD = 1 << 63
#: sub-draws per batch of work (memory: 8 bytes each)
_CHUNK = 1 << 22


def dyadic_rate(mu: Fraction | float | int) -> tuple[int, int]:
    """``(m, T)`` with ``m · T / 2**64 <= mu`` as large as possible for ``m = ceil(2 mu)``
    elementary draws of rate ``T / 2**64 <= 1/2`` (the realized rate never exceeds the asked one:
    the accounting then uses the realized ``m · T / 2**64``)."""
    f = Fraction(mu)
    if f <= 0:
        raise LDPParameterError(f"mu must be > 0 (got {float(f)!r})")
    m = max(1, -(-f.numerator * 2 // f.denominator))
    T = (f * TWO64 / m).numerator // (f * TWO64 / m).denominator
    if not 0 < T <= MAX_RATE_THRESHOLD:
        raise LDPParameterError("mu is too small to be realized with 64-bit thresholds")
    return m, T


def _poisson_small(source, threshold: int, count: int) -> np.ndarray:
    """``count`` independent Poisson(``threshold / 2**64``) draws (``threshold <= 2**63``)."""
    out = np.zeros(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        k = np.zeros(pending.size, dtype=np.int64)
        alive = np.arange(pending.size)
        while alive.size:  # geometric: successes before the first failure
            hit = source.bernoulli(threshold, alive.size)
            alive = alive[hit]
            k[alive] += 1
        accept = np.ones(pending.size, dtype=bool)
        top = int(k.max()) if k.size else 0
        for j in range(2, top + 1):  # accept with probability 1/K! = prod_{j=2..K} P(U_j = 0)
            sel = np.flatnonzero((k >= j) & accept)
            if sel.size:
                accept[sel[source.uniform_int(j, sel.size) != 0]] = False
        out[pending[accept]] = k[accept]
        pending = pending[~accept]
    return out


def poisson_dyadic(source, m: int, threshold: int, size: int) -> np.ndarray:
    """``size`` independent Poisson(``m · threshold / 2**64``) draws, exactly (module docstring)."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise LDPParameterError("m must be a positive integer")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 < threshold <= MAX_RATE_THRESHOLD:
        raise LDPParameterError("threshold must be an integer in (0, 2**63]")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise LDPParameterError("size must be a non-negative integer")
    out = np.zeros(size, dtype=np.int64)
    rows = max(1, _CHUNK // m)
    for a in range(0, size, rows):
        b = min(size, a + rows)
        out[a:b] = _poisson_small(source, threshold, (b - a) * m).reshape(b - a, m).sum(axis=1)
    return out


def skellam_dyadic(source, m: int, threshold: int, size: int) -> np.ndarray:
    """``size`` independent Skellam(μ) draws, ``μ = m · threshold / 2**64``: the difference of two
    independent Poisson(μ) (mean 0, variance ``2μ``)."""
    both = poisson_dyadic(source, m, threshold, 2 * size)
    return both[:size] - both[size:]
