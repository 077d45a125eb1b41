"""The generated API misuse table: every registered mechanism (every kind, and the wrappers) ×
every declared parameter × hostile values of types a caller really passes (numpy scalars, a
numpy bool for an int, ``Fraction``/``Decimal``/``complex``/``bytes``, ``2**63``, ``1e308``, a
canary string), its ``randomize`` × hostile batches, and its ``estimate`` × hostile keywords.

Every case raises the library's own error naming the parameter, within a time limit, and never
repeats the canary (:data:`~.harness.SENTINEL`) — a value the caller holds must not reach a log."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import registry
from registry._loader import KINDS

from .._helpers import KEYS, registry_instances, valid_reports, valid_values
from .cases_api import _base
from ldp_plugin._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from ldp_plugin.verification.refusals import hostile_keywords, hostile_parameter_values  # the refusal layer's generators

from .harness import SENTINEL, assert_clear_api, time_limit

DECLS = registry.load_registry(kinds=KINDS)
INSTANCES = registry_instances()


def _parameter_cases():
    out = []
    for name, decl in sorted(DECLS.items()):
        base = _base(decl)
        for pname, spec in decl.parameters.items():
            if pname in ("p0", "p1", "prior", "subset") and pname not in base:
                continue  # alternatives to another given parameter
            for label, value in hostile_parameter_values(pname, spec):
                if "str" in spec["type"] and isinstance(value, str) and "'" in spec["type"] and value == "None":
                    continue
                out.append(pytest.param(name, pname, value, id=f"{name}-{pname}-{label}"))
        if "d" in decl.parameters and "d" in base:
            out.append(pytest.param(name, "d", 2**40, id=f"{name}-d-2**40"))
    return out


@pytest.mark.parametrize("name,pname,value", _parameter_cases())
def test_constructor_refuses_a_hostile_value(name, pname, value):
    decl = DECLS[name]
    kw = dict(_base(decl))
    kw[pname] = value
    names = [pname] + (["epsilon"] if pname.startswith("epsilon") else []) + (["lower", "upper"] if pname in ("lower", "upper") else [])
    assert_clear_api(lambda: decl.mechanism_class()(**kw), names, seconds=10)


def _hostile_batches(m):
    good = valid_values(m, 6)
    arr = np.asarray(good, dtype=object) if m.input_kind in ("set", "key-value") else np.asarray(good)
    out = [("3-d", np.zeros((2, 2, 2, 2))), ("dict", {"a": 1}), ("none", None), ("bare-string", SENTINEL), ("canary-entry", [SENTINEL] * 3),
           ("object-canary", np.array([SENTINEL, 1, None], dtype=object)), ("float-nan", [math.nan] * 3)]
    if m.input_kind == "number":
        out += [("complex", np.array([1j, 2j])), ("inf", [m.upper, math.inf]), ("1e308", [1e308, m.lower])]
    if m.input_kind in ("value", "set") and getattr(m, "items", None) is None:
        out += [("bool-array", np.array([True, False])), ("huge-code", np.array([2**62], dtype=np.int64))]
    del arr
    return out


@pytest.mark.parametrize("iid,make", INSTANCES, ids=[i for i, _ in INSTANCES])
def test_randomize_refuses_hostile_batches(iid, make):
    m = make()
    bad = []
    for label, batch in _hostile_batches(m):
        keys = KEYS[:3] if m.needs_user_keys else None
        try:
            assert_clear_api(lambda: m.randomize(batch, rng=1, user_keys=keys), ["value", "values", "position", "batch", "dimension", "1-d", "item",
                                                                                   "user", "input", "code", "dtype", "key", "tuple", "number", "set",
                                                                                   "attribute", "row"], seconds=10)
        except AssertionError as e:
            bad.append(f"{label}: {e}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("iid,make", INSTANCES, ids=[i for i, _ in INSTANCES])
def test_estimate_refuses_hostile_keywords(iid, make):
    m = make()
    reports = valid_reports(m, 40)
    bad = []
    for kw, value in hostile_keywords(m):
        try:
            assert_clear_api(lambda: m.estimate(reports, **{kw: value}), [kw], seconds=15)
        except AssertionError as e:
            bad.append(f"{kw}={value!r}: {e}")
    assert not bad, "\n".join(bad)


def test_the_generated_api_table_is_large():
    assert len(_parameter_cases()) >= 800
    assert len(INSTANCES) == len(DECLS) + 2


# -- property-based draws: any value of any type for any declared parameter ---------------------------------
_ANY = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=12), st.binary(max_size=4), st.lists(st.floats(allow_nan=True), max_size=4),
                 st.sampled_from([np.float64("nan"), np.int64(-1), np.bool_(False), Fraction(1, 3), Decimal("1e400"), complex(0, 1)]))
_PARAMS = [(name, p) for name, decl in sorted(DECLS.items()) for p in decl.parameters if p not in ("p0", "p1", "prior", "subset") or p in _base(decl)]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(which=st.sampled_from(_PARAMS), value=_ANY)
def test_any_value_for_any_parameter_is_accepted_or_refused_clearly(which, value):
    """Drawn with a fixed seed: the constructor either accepts the value (and the mechanism it
    builds states a finite ε) or raises the library's own error naming the parameter — never a raw
    Python or numpy exception, never a hang."""
    name, pname = which
    decl = DECLS[name]
    kw = dict(_base(decl))
    kw[pname] = value
    with time_limit(10):
        try:
            m = decl.mechanism_class()(**kw)
        except (LDPParameterError, LDPInputError, PrivacyVerificationError) as exc:
            msg = str(exc).lower()
            names = [pname, pname.replace("_", " ")] + (["epsilon"] if pname.startswith("epsilon") else []) + (
                ["lower", "upper"] if pname in ("lower", "upper") else [])
            assert any(n in msg for n in names), f"{name}({pname}={value!r}): {exc}"
            return
    eps = getattr(m, "epsilon", None) if hasattr(m, "epsilon") else getattr(m, "epsilon_perm", None)
    assert eps is None or math.isfinite(float(eps)), f"{name}({pname}={value!r}) accepted with epsilon {eps!r}"
