"""Parameter draws beyond the canonical instances: the **edges** of every declared domain first
(:func:`edge_instances`, from each parameter's registry ``domain``: :mod:`.domains`), then random
draws.

Edges: each parameter at the low and the high end of its declared domain that the exact layers
enumerate (a size's high end: the largest value up to :data:`.domains.ENUM_CAP`; an ε's: the most
extreme value in ``[1e-6, 700]`` the constructor accepts, by bisection; a seed's: both declared
ends), every choice, the shortest / longest / widest list and the smallest / largest subset — and
the values just outside each end, which the constructor must refuse (a ``ValueError``). A
parameter tied to another (a distribution over the ``d`` inputs) keeps its canonical value and its
declaration says why. :func:`draw_coverage` lists, per parameter, what was drawn.

The canonical instances of ``registry/*.toml`` are a handful of round parameters; a mistake that
shows only at another ε (a rounding that fits ``ε = 1.0`` but not ``ε = 1.37``), another domain
size or another number of cohorts passes them. :func:`random_instances` draws extra instances of
a declaration from its **declared parameter ranges**, with a seeded generator (``ldp verify
--seed``), small enough that the exact channel can be enumerated:

* every ε-like parameter (``epsilon``, ``epsilon_perm``) log-uniform on ``[0.1, 8]`` with four
  decimals (non-round values); ``epsilon_1`` uniform on ``(0.15, 0.95)·epsilon_perm`` — inside the
  declared ``(0, epsilon_perm)``;
* every integer size parameter (``d``, ``k``, ``g``, ``cohorts``, ``m``, ``d_bits``, ``grid``)
  uniform on its declared range intersected with a small enumerable range (a power of two where
  the declaration says so); a bound may name another parameter (``[1, d-1]``), resolved with the
  drawn values;
* parameters tied to the domain (lists such as ``subset``, ``prior``, ``p0``) keep the canonical
  value, and so does ``d`` when they are present; anything else keeps the canonical value.

A draw the constructor refuses (an invalid combination) or whose channel is too large to
enumerate is redrawn. The exact and sampling-path layers (:data:`DRAW_LAYERS`) run on every draw
(``ldp_plugin.registry.verify(..., draws=N)``).
"""

from __future__ import annotations

import math
import re
import zlib
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from .channels import declared_channel
from .domains import declaration_domains, float_ends, int_edges, resolve

__all__ = ["random_instances", "edge_instances", "draw_coverage", "SMALL_BOUNDS", "DRAW_LAYERS", "DRAWS_FULL", "DRAWS_QUICK"]

#: the layers ``ldp verify`` runs on every draw (:func:`ldp_plugin.registry.verify`)
DRAW_LAYERS = ("exact", "sampling-path")
#: draws per mechanism in the full and the quick run of ``ldp verify``
DRAWS_FULL, DRAWS_QUICK = 4, 2

#: the enumerable upper bound of each integer size parameter
SMALL_BOUNDS = {"d": 8, "k": 8, "g": 6, "cohorts": 3, "m": 3, "d_bits": 4, "grid": 64}
_EPS_RANGE = (0.1, 8.0)
_MAX_INPUTS = 64
_MAX_OUTPUTS = 2048
_INTERVAL = re.compile(r"([\[(])\s*([^\[\]()',;]+?)\s*,\s*([^\[\]()',;]+?)\s*([\])])")


def _value(expr: str, env: dict) -> Optional[float]:
    """A bound such as ``2^31 - 1``, ``inf``, ``d-1`` or ``epsilon_perm`` (None if unknown)."""
    text = expr.strip().replace("^", "**")
    if not re.fullmatch(r"[A-Za-z_0-9+\-*/. ]+", text):
        return None
    try:
        v = eval(text, {"__builtins__": {}}, {"inf": math.inf, **env})  # noqa: S307 - a checked arithmetic expression
    except Exception:
        return None
    return float(v) if isinstance(v, (int, float)) else None


def _interval(spec: dict, env: dict) -> Optional[tuple]:
    m = _INTERVAL.search(str(spec.get("range", "")))
    if m is None:
        return None
    lo, hi = _value(m.group(2), env), _value(m.group(3), env)
    if lo is None or hi is None:
        return None
    return lo, m.group(1) == "(", hi, m.group(4) == ")"


def _draw_int(name: str, spec: dict, env: dict, rng: np.random.Generator) -> Optional[int]:
    iv = _interval(spec, env)
    if iv is None:
        return None
    lo, lo_open, hi, hi_open = iv
    a = int(math.floor(lo)) + (1 if lo_open and float(lo).is_integer() else 0)
    b = int(min(hi, 1 << 40)) - (1 if hi_open and float(hi).is_integer() else 0)
    b = min(b, SMALL_BOUNDS[name] if name != "d_bits" else min(SMALL_BOUNDS[name], b))
    if b < a:
        return None
    if "power of 2" in str(spec.get("range", "")) or "power of two" in str(spec.get("range", "")):
        pows = [1 << e for e in range(0, 31) if a <= (1 << e) <= b]
        return int(rng.choice(pows)) if pows else None
    return int(rng.integers(a, b + 1))


def _draw(decl: Any, base: dict, rng: np.random.Generator) -> dict:
    params = decl.parameters
    inst = dict(base)
    env = {k: v for k, v in base.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    tied = any(str(params.get(k, {}).get("type", "")).startswith("list") for k in base)
    order = sorted(base, key=lambda k: (0 if k == "epsilon_perm" else 1 if k.startswith("epsilon") else 2 if k == "d" else 3))
    for name in order:
        spec = params.get(name, {})
        if name in ("epsilon", "epsilon_perm"):
            lo, hi = _EPS_RANGE
            v = round(float(math.exp(rng.uniform(math.log(lo), math.log(hi)))), 4)
        elif name == "epsilon_1":
            v = round(float(env["epsilon_perm"] * rng.uniform(0.15, 0.95)), 4)
        elif name in SMALL_BOUNDS and isinstance(base[name], int) and not isinstance(base[name], bool):
            if name == "d" and tied:
                continue
            v = _draw_int(name, spec, env, rng)
            if v is None:
                continue
        else:
            continue
        inst[name] = v
        env[name] = v
    return inst


def _enumerable(mech: Any) -> bool:
    try:
        if mech.verification_input_count() > _MAX_INPUTS:
            return False
        return len(declared_channel(mech).outputs) <= _MAX_OUTPUTS
    except LDPParameterError:
        return False


def random_instances(decl: Any, *, seed: int, count: int, tries: int = 40) -> list:
    """``count`` random ``(instance, mechanism)`` draws of ``decl`` (module docstring): distinct
    from the canonical instances and from each other, seeded by ``seed``."""
    rng = np.random.default_rng([int(seed), zlib.crc32(decl.name.encode()), 0x6472617773])  # "draws"
    cls = decl.mechanism_class()
    seen = [dict(c) for c in decl.canonical]
    out = []
    for t in range(count * tries):
        if len(out) >= count:
            break
        base = decl.canonical[t % len(decl.canonical)]
        inst = _draw(decl, dict(base), rng)
        if inst in seen:
            continue
        try:
            mech = cls(**inst)
        except (LDPParameterError, TypeError, ValueError):
            continue  # an invalid combination of the drawn parameters: draw again
        if not _enumerable(mech):
            continue
        seen.append(inst)
        out.append((inst, mech))
    return out


# -- the edges of each declared domain, visited first ---------------------------------------------
def _build(cls: Any, inst: dict) -> Optional[Any]:
    try:
        return cls(**inst)
    except (LDPParameterError, TypeError, ValueError, OverflowError):
        return None


def _refusal(cls: Any, inst: dict, name: str) -> dict:
    """Build an instance just outside ``name``'s domain: it must be refused (a ValueError,
    :class:`LDPParameterError` included); ``names_parameter``: the message names the parameter."""
    try:
        cls(**inst)
    except (LDPParameterError, ValueError) as e:
        return {"refused": True, "names_parameter": name in str(e)}
    except Exception as e:  # a crash is not a refusal
        return {"refused": False, "error": type(e).__name__}
    return {"refused": False}


def _float_edge(cls: Any, base: dict, name: str, v0: float, end: float, is_open: bool) -> Optional[tuple]:
    """The value nearest ``end`` the constructor accepts (bisection from the canonical ``v0``)."""
    cand = math.nextafter(end, v0) if is_open else end
    m = _build(cls, {**base, name: cand})
    if m is not None:
        return cand, m
    good, bad = v0, cand
    log = v0 > 0 and cand > 0
    for _ in range(24):
        mid = math.sqrt(good * bad) if log else (good + bad) / 2
        if mid in (good, bad):
            break
        if _build(cls, {**base, name: mid}) is not None:
            good = mid
        else:
            bad = mid
    if good == v0:
        return None
    good = float(f"{good:.6g}") if _build(cls, {**base, name: float(f"{good:.6g}")}) is not None else good
    return good, _build(cls, {**base, name: good})


def _inside(cls: Any, base: dict, name: str, values: list) -> Optional[tuple]:
    """The first value of ``values`` that builds and whose channel can be enumerated."""
    for v in values:
        m = _build(cls, {**base, name: v})
        if m is not None and _enumerable(m):
            return v, m
    return None


def edge_instances(decl: Any, *, every_base: bool = False) -> tuple:
    """``(inside, outside)`` for every parameter with a declared domain (:mod:`.domains`), from every
    canonical instance: ``inside`` = ``(instance, mechanism, edge)`` at the low and high end of the
    domain that builds and can be enumerated (every choice; the shortest and longest list; the
    smallest and largest subset); ``outside`` = ``(instance, edge, refusal)`` just past each end,
    which the constructor must refuse. ``edge`` = ``{parameter, at, value}``. Each edge is taken
    from the first canonical instance that reaches it (``every_base``: from each)."""
    cls = decl.mechanism_class()
    inside, outside, seen = [], [], set()
    for pname, dom in declaration_domains(decl).items():
        if dom is None or dom.kind == "tied":
            continue
        for base in decl.canonical:
            base = dict(base)
            if pname not in base and dom.kind in ("subset", "list"):
                continue
            canon = _build(cls, base)
            env = {k: getattr(canon, k) for k in decl.parameters if isinstance(getattr(canon, k, None), (int, float))}
            env.update({k: v for k, v in base.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
            found: list = []  # (at, value, mechanism)
            out_vals: list = []
            if dom.kind == "int":
                low_end, highs, out_vals = int_edges(dom, env, pname)
                low = None if low_end is None else _inside(cls, base, pname, [v for v in (low_end, low_end + 1, low_end + 2) if not highs or v <= highs[0]])
                found += [("low", *low)] if low else []
                high = _inside(cls, base, pname, list(highs))  # descending from the enumerable cap
                high = high if high or highs else low  # a one-value domain: its low end is its high end
                found += [("high", *high)] if high else []
            elif dom.kind == "float":
                lo, hi, out_vals = float_ends(dom, env, pname)
                v0 = base.get(pname, getattr(canon, pname, None))
                if isinstance(v0, (int, float)) and not isinstance(v0, bool) and lo is not None:
                    lo_open, hi_open = dom.extra.get("open", (True, True))
                    for at, end, is_open in (("low", lo, lo_open and lo == resolve(dom.lo, env)), ("high", hi, hi_open and hi == resolve(dom.hi, env))):
                        if math.isfinite(end):
                            e = _float_edge(cls, base, pname, float(v0), end, is_open)
                            if e is not None and _enumerable(e[1]):
                                found.append((at, *e))
            elif dom.kind == "subset":
                d = int(env.get(dom.ref, 0))
                found += [(at, v, m) for at, v in (("single", [0]), ("largest", list(range(d - 1)))) if (m := _build(cls, {**base, pname: v})) is not None]
                out_vals = [[], list(range(d))]
            elif dom.kind == "list":
                e_lo = int(dom.each[0]) if dom.each and dom.each[0] is not None else 1
                e_hi = int(dom.each[1]) if dom.each and dom.each[1] is not None else e_lo
                n_lo, n_hi = int(dom.lo), int(dom.hi)
                shortest = _inside(cls, base, pname, [[e_lo] * n_lo])
                longest = _inside(cls, base, pname, [[e_lo] * n for n in range(min(n_hi, 12), n_lo, -1)])
                widest = _inside(cls, base, pname, [[v] + [e_lo] * (n_lo - 1) for v in (64, 32, 16, 8, 4, 3) if e_lo < v <= e_hi])
                found += [(at, *x) for at, x in (("shortest", shortest), ("longest", longest), ("widest", widest)) if x]
                out_vals = [[e_lo] * (n_lo - 1), [e_lo - 1] + [e_lo] * (n_lo - 1)]
            for c in dom.choices:
                m = _build(cls, {**base, pname: c})
                if m is not None and _enumerable(m):
                    found.append(("choice", c, m))
            if dom.choices:
                out_vals = list(out_vals) + ["not-a-" + pname]
            for at, v, m in found:
                inst = {**base, pname: v}
                key = repr(sorted(inst.items())) if every_base else repr((pname, at, v if at == "choice" else None))
                if key not in seen:
                    seen.add(key)
                    inside.append((inst, m, {"parameter": pname, "at": at, "value": v}))
            for v in out_vals:
                inst = {**base, pname: v}
                key = "out" + (repr(sorted(inst.items())) if every_base else repr((pname, v)))
                if key not in seen:
                    seen.add(key)
                    outside.append((inst, {"parameter": pname, "at": "outside", "value": v}, _refusal(cls, inst, pname)))
    return inside, outside


def draw_coverage(decl: Any) -> dict:
    """Per declared parameter: its domain and the values the edge draws took inside it
    (``{parameter: {"domain": ..., "drawn": {at: [values]}, "refused_outside": [values], "not_refused": [values]}}``)."""
    inside, outside = edge_instances(decl)
    out: dict = {}
    for pname, dom in declaration_domains(decl).items():
        out[pname] = {"domain": None if dom is None else dom.kind, "reason": "" if dom is None else dom.reason, "drawn": {}, "refused_outside": [], "not_refused": []}
    for _inst, _m, e in inside:
        out[e["parameter"]]["drawn"].setdefault(e["at"], []).append(e["value"])
    for _inst, e, r in outside:
        out[e["parameter"]]["refused_outside" if r["refused"] else "not_refused"].append(e["value"])
    return out
