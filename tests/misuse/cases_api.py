"""Generated API misuse cases: every registered mechanism × every declared parameter × the bad
value classes (missing, wrong type, NaN/inf, out of range, bool for an int, huge, tiny)."""

from __future__ import annotations

import math
from typing import Any

import registry
from registry._loader import KINDS, _tuples

MISSING = object()


def _declarations() -> dict:
    return registry.load_registry(kinds=KINDS)


def _base(decl: Any) -> dict:
    return {k: _tuples(v) for k, v in dict(decl.canonical[0]).items()}


def _lower_bound(rng: str) -> Any:
    """The lower end of a declared ``[a, b]`` / ``(a, b)`` range, if numeric."""
    rng = rng.strip()
    if not rng or rng[0] not in "[(":
        return None
    head = rng[1:].split(",")[0].strip()
    try:
        return float(head)
    except ValueError:
        return None


def bad_values(pname: str, spec: dict) -> list:
    """``(label, value)`` pairs that must be refused for a parameter of this declared type."""
    typ, rng = spec["type"], spec["range"]
    out: list = []
    nullable = "none" in typ
    if typ.startswith("float"):
        out += [("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("str", "abc"), ("bool", True), ("list", [1.0])]
        lo = _lower_bound(rng)
        if lo is not None and pname not in ("lower", "upper"):
            out += [("below-range", lo - 1.0)]
    elif typ.startswith("int"):
        out += [("fraction", 2.5), ("str", "abc" if "'" not in typ else "bogus-choice"), ("bool", True), ("nan", math.nan), ("huge", 10**30)]
        lo = _lower_bound(rng)
        if lo is not None:
            out += [("below-range", int(lo) - 1)]
        if not nullable and pname != "d" and "'" not in typ:  # a quoted alternative ('auto') may be spelled None
            out += [("none", None)]
    elif typ.startswith("str"):
        out += [("unknown-choice", "bogus"), ("int", 3)]
    elif typ.startswith("list"):
        out += [("str", "abc"), ("nan-entry", [math.nan, 0.5, 0.5]), ("nested", [[0.5], [0.5]])]
    return out


def api_parameter_cases() -> list:
    """``(id, name, kwargs, parameter)``: construct ``name`` with one bad parameter."""
    cases = []
    for name, decl in sorted(_declarations().items()):
        base = _base(decl)
        for pname, spec in decl.parameters.items():
            if pname in ("p0", "p1", "prior", "subset") and pname not in base:
                continue  # alternatives to another given parameter: a bad one is not used
            for label, value in bad_values(pname, spec):
                kw = dict(base)
                kw[pname] = value
                cases.append((f"{name}-{pname}-{label}", name, kw, pname))
        for pname in registry.required_parameters(decl) + [e for e in ("epsilon",) if e in decl.parameters]:
            if pname in base:
                kw = {k: v for k, v in base.items() if k != pname}
                cases.append((f"{name}-{pname}-missing", name, kw, pname))
        kw = dict(base)
        kw["no_such_parameter"] = 1
        cases.append((f"{name}-unknown-keyword", name, kw, "no_such_parameter"))
    return cases
