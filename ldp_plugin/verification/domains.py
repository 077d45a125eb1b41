"""Each declared parameter's domain, and the **edges** the draws visit first.

A registry declaration states, beside each parameter's human ``range``, its machine-readable
``domain`` (an inline TOML table):

* ``{ int = [lo, hi] }`` (``power_of_two = true`` when only powers of two are allowed; a bound may
  name another parameter or an expression of one: ``"d-1"``, ``"buckets/2"``; ``size = false`` for
  a seed, whose ends are drawn as declared);
* ``{ float = [lo, hi] }`` (bounds as numbers, ``"inf"`` or another parameter's name; ``open =
  [true, true]`` by default, ``open = [false, true]`` for ``[lo, hi)``);
* ``{ choice = [...] }``, alone or beside ``int`` / ``float`` (``k = 'l2' | 'mi' | [1, d-1]``);
* ``{ list = [min_len, max_len], each = [lo, hi] }`` (a list of sizes, e.g. ``domains``);
* ``{ subset_of = "d" }`` (a proper non-empty subset of ``[0, d)``);
* ``{ tied = "d", reason = "..." }`` (a value fixed by another parameter, e.g. a distribution over
  the ``d`` inputs: kept canonical, and the reason is reported).

A declaration without one (a user's) falls back on its ``range`` text: an interval, quoted choices.
:func:`edges` turns a domain into the values the draws visit: the smallest and the largest value
**inside** it that the exact channel can still enumerate (sizes) or that the constructor accepts
(ε and other reals: a bisection towards the declared end, ``[1e-6, 700]`` for ε), the single and
the longest list, the smallest and largest subset, every choice — and the values just **outside**
it, which the constructor must refuse (``d = 1``, ``k = d``, ``ε = 0``, an empty subset, a list
one too short).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["Domain", "parameter_domain", "declaration_domains", "resolve"]

_INTERVAL = re.compile(r"([\[(])\s*([^\[\]()',;]+?)\s*,\s*([^\[\]()',;]+?)\s*([\])])")
_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z_0-9]*)'")


@dataclass(frozen=True)
class Domain:
    """One parameter's declared domain (see the module docstring); ``kind`` is ``int``,
    ``float``, ``choice``, ``list``, ``subset`` or ``tied``."""

    kind: str
    lo: Any = None
    hi: Any = None
    power_of_two: bool = False
    choices: tuple = ()
    each: Optional[tuple] = None
    ref: Optional[str] = None
    reason: str = ""
    extra: dict = field(default_factory=dict)


def resolve(bound: Any, env: dict) -> Any:
    """A bound — a number, ``"inf"``, ``"-inf"``, ``"2^31 - 1"`` or an expression of other
    parameters (``"d-1"``) — evaluated with the instance's values (None: unknown)."""
    if isinstance(bound, bool):
        return None
    if isinstance(bound, (int, float)):
        return bound
    text = str(bound).strip().replace("^", "**")
    if not re.fullmatch(r"[A-Za-z_0-9+\-*/. ]+", text):
        return None
    names = {k: v for k, v in env.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    try:
        v = eval(text, {"__builtins__": {}}, {"inf": math.inf, **names})  # noqa: S307 - a checked arithmetic expression
    except Exception:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v  # exact: 2^64 - 1 stays an integer
    return float(v) if isinstance(v, float) else None


def parameter_domain(spec: dict) -> Optional[Domain]:
    """The domain a parameter declares (``domain`` table), else one read from its ``range`` text
    (an interval and quoted choices); None when neither says."""
    dom = spec.get("domain")
    if isinstance(dom, dict):
        choices = tuple(dom.get("choice", ()))
        if "tied" in dom:
            return Domain("tied", ref=str(dom["tied"]), reason=str(dom.get("reason", "")))
        if "subset_of" in dom:
            return Domain("subset", ref=str(dom["subset_of"]))
        if "list" in dom:
            lo, hi = dom["list"]
            return Domain("list", lo=lo, hi=hi, each=tuple(dom.get("each", (None, None))))
        for kind in ("int", "float"):
            if kind in dom:
                lo, hi = dom[kind]
                return Domain(kind, lo=lo, hi=hi, power_of_two=bool(dom.get("power_of_two", False)), choices=choices,
                              extra={"open": tuple(dom.get("open", (True, True))), "size": bool(dom.get("size", True))})
        if choices:
            return Domain("choice", choices=choices)
        return None
    text = str(spec.get("range", ""))
    typ = str(spec.get("type", ""))
    m = _INTERVAL.search(text)
    choices = tuple(_QUOTED.findall(text))
    if m is not None and typ.startswith(("int", "float")):
        kind = "int" if typ.startswith("int") else "float"
        return Domain(kind, lo=m.group(2), hi=m.group(3), power_of_two=("power of 2" in text or "power of two" in text), choices=choices,
                      extra={"open": (m.group(1) == "(", m.group(4) == ")")})
    if choices:
        return Domain("choice", choices=choices)
    return None


def declaration_domains(decl: Any) -> dict:
    """``{parameter: Domain or None}`` for every declared parameter of ``decl``."""
    return {name: parameter_domain(dict(spec)) for name, spec in decl.parameters.items()}


#: the largest value of each size the exact layers enumerate (the random draws' bounds): a size's
#: high edge is the largest value up to its cap (and its declared end) that builds and enumerates
ENUM_CAP = {"d": 8, "k": 8, "g": 6, "cohorts": 3, "m": 3, "d_bits": 4, "grid": 64, "buckets": 16, "ell": 4, "h": 4,
            "fanout": 8, "grid_bits": 8}
EDGE_START = 8
#: the library's ε range (``mechanisms.domain``): the ends an ε's edge search walks towards
EPS_ENDS = (1e-6, 700.0)


def int_edges(dom: Domain, env: dict, name: str = "") -> tuple:
    """``(low end, high candidates descending, outside values)`` of an integer domain at ``env``:
    the caller keeps the first value from the low end up (another parameter can exclude the end
    itself: ``d = 2`` with ``m = 2``) and the first high candidate its layers enumerate; outside: ``lo − 1`` (and a
    non-power of two; ``hi + 1`` when the declared end is small enough to build)."""
    lo, hi = resolve(dom.lo, env), resolve(dom.hi, env)
    if lo is None or hi is None:
        return None, (), ()
    lo, hi = int(math.ceil(lo)), int(hi) if math.isfinite(hi) else 1 << 62
    if not dom.extra.get("size", True):  # a seed, not a size: both ends as declared
        return lo, (hi,), (lo - 1, hi + 1)
    cap = min(hi, ENUM_CAP.get(name, EDGE_START))
    if dom.power_of_two:
        lo = 1 << max(0, (lo - 1).bit_length())
        high = [1 << e for e in range(62, 0, -1) if lo < (1 << e) <= cap][:8]
        outside = [lo - 1, lo + 1] if lo + 1 < hi and lo > 1 else [lo - 1]
    else:
        high = [v for v in range(cap, lo, -1)][:8]
        outside = [lo - 1]
    if hi <= 4096:
        outside.append(hi + 1)
    return (lo if lo <= hi else None), tuple(high), tuple(outside)


def float_ends(dom: Domain, env: dict, name: str) -> tuple:
    """The ends an edge search walks towards (inside the declared interval, clipped to the
    library's ε range for an ε) and the values just outside that must be refused."""
    lo, hi = resolve(dom.lo, env), resolve(dom.hi, env)
    if lo is None or hi is None:
        return None, None, ()
    lo_open, hi_open = dom.extra.get("open", (True, True))
    # an open end itself must be refused (ε = 0, epsilon_1 = epsilon_perm, upper = lower)
    outside = [v for v, is_open in ((lo, lo_open), (hi, hi_open)) if is_open and math.isfinite(v)]
    if name.startswith("epsilon"):
        lo, hi = max(lo, EPS_ENDS[0]), min(hi, EPS_ENDS[1])
    return lo, hi, tuple(outside)
