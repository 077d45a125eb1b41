"""The usable ε range of one mechanism at its other parameters (``d``, ``k``, the utility, ...).

Every mechanism accepts ε in ``[MIN_EPSILON, MAX_EPSILON]`` (:func:`.domain.check_epsilon`), but
some realize their channel only on a narrower range: the finite channels (binary, geometric,
staircase) need every output probability at least ``2**-24``, unary and cohort encodings need
``0 < q* < p* < 1`` in 64-bit thresholds. When a constructor refuses ε for such a reason, its
message names the largest (or smallest) usable ε *for that mechanism and its parameters*, found
by a geometric bisection over the constructor itself (the same exact checks, so the reported
bound is one the constructor accepts, rounded towards the inside of the range).
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
from typing import Any, Optional

from .domain import MAX_EPSILON, MIN_EPSILON

__all__ = ["largest_usable_epsilon", "smallest_usable_epsilon", "too_large", "too_small"]

#: set while a bound is searched: a constructor refusing inside the search does not search again
_PROBING: contextvars.ContextVar[bool] = contextvars.ContextVar("ldp_plugin_usable_probe", default=False)
_STEPS = 10
_MAX_STEPS = 24
#: the bound found per mechanism class and other parameters (a scan over ε meets it once)
_LARGEST: dict = {}


def _builds(mech: Any, key: str, eps: float) -> bool:
    params = {f.name: getattr(mech, f.name) for f in dataclasses.fields(mech) if f.init and f.name != key and hasattr(mech, f.name)}
    token = _PROBING.set(True)
    try:
        type(mech)(**params, **{key: eps})
        return True
    except (ValueError, TypeError, ArithmeticError):
        return False
    finally:
        _PROBING.reset(token)


def largest_usable_epsilon(mech: Any, eps: float, key: str = "epsilon", hint: Optional[float] = None) -> Optional[float]:
    """The largest ε (two decimals, rounded down) the constructor accepts below the refused
    ``eps``, the other parameters of ``mech`` (partly built: its fields are set) kept; ``None``
    inside a search, when ``mech`` is not a dataclass, or when ε = 1 is refused too. ``hint``: a
    likely bound, tried first (either answer narrows the search; it is never assumed). The
    bound is within 0.05 of the constructor's true limit, and the constructor accepts it."""
    if _PROBING.get() or not dataclasses.is_dataclass(mech):
        return None
    memo = _memo_key(mech, key)
    if memo in _LARGEST and (_LARGEST[memo] is None or _LARGEST[memo] < eps):
        return _LARGEST[memo]
    top = _search_largest(mech, eps, key, hint)
    if len(_LARGEST) >= 256:
        _LARGEST.clear()
    _LARGEST[memo] = top
    return top


def _memo_key(mech: Any, key: str) -> str:
    params = sorted((f.name, repr(getattr(mech, f.name, None))) for f in dataclasses.fields(mech) if f.init and f.name != key)
    return f"{type(mech).__module__}.{type(mech).__qualname__}|{key}|{params}"


def _search_largest(mech: Any, eps: float, key: str, hint: Optional[float]) -> Optional[float]:
    lo, hi = 1.0, float(eps)
    if not hi > lo:
        return None
    if hint is not None and lo < hint < hi:  # bracket the hint first: [0.98·hint, hint] when it is close
        if _builds(mech, key, hint):
            lo = hint
        else:
            hi = hint
            if _builds(mech, key, 0.98 * hint):
                lo = 0.98 * hint
    if lo == 1.0 and not _builds(mech, key, lo):
        return None
    for _ in range(_MAX_STEPS):  # geometric while the bracket is wide, then halving to 0.05
        if hi - lo <= 0.05:
            break
        mid = math.sqrt(lo * hi) if hi > 1.5 * lo else (lo + hi) / 2
        if _builds(mech, key, mid):
            lo = mid
        else:
            hi = mid
    return math.floor(lo * 100) / 100


def smallest_usable_epsilon(mech: Any, eps: float, key: str = "epsilon") -> Optional[float]:
    """The smallest ε (3 significant digits, rounded up) the constructor accepts above the refused
    ``eps``; ``None`` as for :func:`largest_usable_epsilon`."""
    if _PROBING.get() or not dataclasses.is_dataclass(mech):
        return None
    lo, hi = max(float(eps), MIN_EPSILON), 1.0
    if not hi > lo or not _builds(mech, key, hi):
        return None
    for _ in range(_STEPS):
        mid = math.sqrt(lo * hi)
        if _builds(mech, key, mid):
            hi = mid
        else:
            lo = mid
    scale = 10 ** (math.floor(math.log10(hi)) - 2)
    return math.ceil(hi / scale) * scale


def _params_text(mech: Any, key: str) -> str:
    shown = [f"{n}={getattr(mech, n)!r}" for n in ("d", "k", "m", "utility", "cohorts") if n != key and getattr(mech, n, None) is not None]
    return ", ".join(shown)


def too_large(mech: Any, eps: float, why: str, key: str = "epsilon", hint: Optional[float] = None) -> str:
    """The message of a constructor refusing ``eps`` as too large for its other parameters."""
    top = largest_usable_epsilon(mech, eps, key, hint)
    at = _params_text(mech, key)
    if top is None:
        return f"{mech.name}: {key}={eps:g} is too large ({why}); use a smaller {key}"
    return (f"{mech.name}: {key}={eps:g} is too large{' for ' + at if at else ''} ({why}); the usable range of {key} for this "
            f"mechanism and these parameters is [{MIN_EPSILON:g}, {top:g}] (the general limit is {MAX_EPSILON:g})")


def too_small(mech: Any, eps: float, why: str, key: str = "epsilon") -> str:
    """The message of a constructor refusing ``eps`` as too small for its other parameters."""
    low = smallest_usable_epsilon(mech, eps, key)
    at = _params_text(mech, key)
    if low is None:
        return f"{mech.name}: {key}={eps:g} is too small ({why}); use a larger {key}"
    return (f"{mech.name}: {key}={eps:g} is too small{' for ' + at if at else ''} ({why}); the usable range of {key} for this "
            f"mechanism and these parameters is [{low:g}, {MAX_EPSILON:g}]")
