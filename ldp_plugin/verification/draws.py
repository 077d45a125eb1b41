"""Random parameter draws beyond the canonical instances (issue 32).

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

__all__ = ["random_instances", "SMALL_BOUNDS", "DRAW_LAYERS", "DRAWS_FULL", "DRAWS_QUICK"]

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
        return len(mech.channel().outputs) <= _MAX_OUTPUTS
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
