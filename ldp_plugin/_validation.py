"""One way to check a parameter, with one message format.

Every message names the parameter, the allowed range (or choices) and the offending parameter
value — never user data (parameters are the caller's configuration, not the users' values)::

    d must be an integer in [2, 2^20] (got 1)
    delta must be a real number in (0, 1) (got 1.5)
    postprocess must be one of 'none', 'projection' (got 'x')

Used by the constructors and entry points instead of inline range checks; it raises
:class:`LDPParameterError` (a ``ValueError``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Sequence

from ._errors import LDPParameterError

__all__ = ["check_int", "check_real", "check_choice", "describe_bound"]


def describe_bound(v: Any) -> str:
    """A bound as people read it: powers of two from 2^10 up as ``2^k``, infinities as ``inf``."""
    if v is None:
        return "inf"
    if isinstance(v, numbers.Integral) and int(v) >= 1024 and int(v) & (int(v) - 1) == 0:
        return f"2^{int(v).bit_length() - 1}"
    return repr(v) if isinstance(v, float) else str(v)


def _range(lo: Any, hi: Any, lo_open: bool, hi_open: bool) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_s = "-inf" if lo is None else describe_bound(lo)
    return f"{left}{lo_s}, {describe_bound(hi)}{right}"


def check_int(name: str, value: Any, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """``value`` as a Python ``int`` if it is an integer (not a bool) in ``[lo, hi]`` (a missing
    bound is unbounded), else :class:`LDPParameterError` naming ``name`` and the range."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok:
        v = int(value)
        ok = (lo is None or v >= lo) and (hi is None or v <= hi)
    if not ok:
        raise LDPParameterError(f"{name} must be an integer in {_range(lo, hi, False, False)} (got {value!r})")
    return v


def check_real(name: str, value: Any, lo: Optional[float] = None, hi: Optional[float] = None, *,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` as a finite ``float`` in the interval from ``lo`` to ``hi`` (open ends with
    ``lo_open`` / ``hi_open``), else :class:`LDPParameterError` naming ``name`` and the range."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = math.isfinite(v)
        ok = ok and (lo is None or (v > lo if lo_open else v >= lo)) and (hi is None or (v < hi if hi_open else v <= hi))
    if not ok:
        raise LDPParameterError(f"{name} must be a real number in {_range(lo, hi, lo_open, hi_open)} (got {value!r})")
    return v


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices``, else :class:`LDPParameterError` listing them."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value for a set of choices
        ok = False
    if not ok:
        raise LDPParameterError(f"{name} must be one of {', '.join(repr(c) for c in choices)} (got {value!r})")
    return value
