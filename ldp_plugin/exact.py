"""Exact and conservative arithmetic for privacy constants.

Privacy maps must never under-report the privacy loss. This module provides

* :func:`exp_lower_bound` / :func:`exp_upper_bound`: rational bounds on ``e**x`` that are certain
  (``decimal`` computes ``exp`` correctly rounded at 60 significant digits; stepping one unit in
  the last place outward makes the bound rigorous);
* :func:`ratio_within_exp`: an exact test ``r <= e**epsilon`` for a rational ``r``;
* :func:`epsilon_of_ratio`: the smallest float ``ε`` with ``e**ε >= r`` (ln rounded *up*);
* :func:`float_up`: a rational rounded up to the next float;
* :func:`scale_epsilon_up`: ``d_in * ε`` rounded up (the population privacy map);
* :func:`charge_up`: the ε a ledger charges for what a mechanism realizes, an exact ``Fraction``
  rounded up (the float's exact binary value, never its decimal text).
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, ROUND_CEILING
from fractions import Fraction

__all__ = [
    "exp_lower_bound",
    "exp_upper_bound",
    "ratio_within_exp",
    "epsilon_of_ratio",
    "float_up",
    "scale_epsilon_up",
    "charge_up",
    "TWO64",
]

TWO64 = 1 << 64
_PREC = 60


def _exp_decimal(x: float) -> tuple[Decimal, Context]:
    ctx = Context(prec=_PREC)
    return ctx.exp(Decimal(x)), ctx


def exp_lower_bound(x: float) -> Fraction:
    """A rational number certainly ``<= e**x`` and within ``1e-58`` relative of it."""
    val, ctx = _exp_decimal(x)
    return Fraction(ctx.next_minus(val))


def exp_upper_bound(x: float) -> Fraction:
    """A rational number certainly ``>= e**x`` and within ``1e-58`` relative of it."""
    val, ctx = _exp_decimal(x)
    return Fraction(ctx.next_plus(val))


def ratio_within_exp(ratio: Fraction, epsilon: float) -> bool:
    """Exactly decide ``ratio <= e**epsilon`` (conservatively: undecidable ties count as False).

    The answer is ``True`` only if ``ratio`` is at most a certain lower bound of ``e**epsilon``;
    a ratio within ``1e-58`` (relative) of ``e**epsilon`` is refused.
    """
    return Fraction(ratio) <= exp_lower_bound(epsilon)


def float_up(x: Fraction) -> float:
    """The smallest float ``>= x``."""
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def epsilon_of_ratio(ratio: Fraction) -> float:
    """The realized ε of a worst-case likelihood ratio: a float ``ε`` with ``e**ε >= ratio``.

    Computed with 60-digit ``ln`` rounded toward +∞, then rounded up to a float, so the returned ε
    is never below the true ``ln(ratio)``.
    """
    ratio = Fraction(ratio)
    if ratio < 1:
        raise ValueError("a worst-case likelihood ratio is at least 1")
    if ratio == 1:
        return 0.0
    ctx = Context(prec=_PREC, rounding=ROUND_CEILING)
    num = ctx.divide(Decimal(ratio.numerator), Decimal(ratio.denominator))
    ln = ctx.ln(num)
    # ln is correctly rounded (half-even) at 60 digits: one more step outward makes it an upper bound
    ln_up = ctx.next_plus(ln)
    eps = float_up(Fraction(ln_up))
    # final guard: the float we return must satisfy e**eps >= ratio, exactly
    while ratio > exp_lower_bound(eps):
        eps = math.nextafter(eps, math.inf)
    return eps


def scale_epsilon_up(d_in: int, epsilon: float) -> float:
    """``d_in * epsilon`` rounded up to a float (never below the exact product)."""
    return float_up(Fraction(epsilon) * d_in)


def charge_up(epsilon: float, realized_ratio: Fraction | None = None) -> Fraction:
    """The ε a ledger, a device or a report header charges for a mechanism built with the float
    ``epsilon``: an exact ``Fraction``, rounded **up** from what the mechanism realizes.

    The constructor verifies the realized worst-case ratio against ``e**epsilon`` for the float's
    exact binary value, so that value is charged — never the float's shorter decimal text, which
    can lie below it (``Fraction("0.1") < Fraction(0.1)`` by 5.6e-18, and the realized ln-ratio can
    sit in between). With ``realized_ratio`` given, the charge is at least ``ln(realized_ratio)``
    rounded up to a float (:func:`epsilon_of_ratio`): a mechanism realizing more than it declares
    is still charged what it realizes. Every charge is a float's exact value (``float(c) == c``).
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, Fraction)) or not math.isfinite(float(epsilon)):
        raise ValueError(f"epsilon must be a finite number (got {epsilon!r})")
    e = float(epsilon)
    if Fraction(e) < Fraction(epsilon):  # an exact value between floats: round up to the next float
        e = math.nextafter(e, math.inf)
    out = Fraction(e)
    if realized_ratio is not None:
        out = max(out, Fraction(epsilon_of_ratio(Fraction(realized_ratio))))
    return out
