"""Generated API misuse cases: every registered mechanism × every declared parameter × the bad
value classes (missing, wrong type, NaN/inf, out of range, bool for an int, huge, tiny)."""

from __future__ import annotations

from typing import Any

import registry
from registry._loader import KINDS, _tuples

from ldp_plugin.verification.refusals import bad_values  # the one generator of bad parameter values (the refusal layer's)

MISSING = object()


def _declarations() -> dict:
    return registry.load_registry(kinds=KINDS)


def _base(decl: Any) -> dict:
    return {k: _tuples(v) for k, v in dict(decl.canonical[0]).items()}


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
