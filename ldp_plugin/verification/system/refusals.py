"""The refusal layer: every registered name (and the two wrappers) refuses every argument just
outside its declared domain and every input outside its input domain, cleanly, through every door,
and a refused release spends nothing.

The cases are those of :mod:`ldp_plugin.verification.refusals` (generated from each declaration's
``domain`` and the mechanism's input kind: constructors, ``randomize``, ``randomize_one``,
``randomize_encoded``, the accumulator's ``add`` and ``merge``, ``estimate``, the OpenDP
measurements); each is held to :func:`~ldp_plugin.verification.refusals.judge` — the library's own
error, a message naming the parameter, no user value, no raw engine message. Then the **spend**: a
ledger (:class:`~ldp_plugin.accountant.Accountant`) asked to release a value outside the domain —
through ``Accountant.run`` and a per-user measurement, and through the Polars adapters with
``accountant=`` (a row past the domain in a values, numbers, sets, attributes or key–value column)
— refuses it and its remaining budget is unchanged.

``quick``: a third of the input cases, a quarter of the measurement-parameter cases, no hostile
parameter types, the spend checks on one name per input kind. Power: the seeded bugs
``lax-domain-krr`` (a constructor that accepts ``d = 1``), ``echoing-krr`` (an input error that
repeats the value) and ``spend-before-check`` (a ledger whose ``run`` spends before the measurement
checks its argument) fail it (:mod:`.seeded_bugs`)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

import numpy as np
import polars as pl

from ..._errors import LDPParameterError
from ...accountant import Accountant, Population
from ... import adapters  # noqa: F401  (registers the ldp namespace)
from ... import measurements as meas_mod
from ...mechanisms import CMS, KRR, LGRR, OUE, Duchi, RapporSet, SampleOne
from ...mechanisms.sets import PAD
from ...mechanisms.longitudinal import Memoized
from ...mechanisms.protocol import ClosedDomain, Keyed, has
from ...registry import KINDS, load_registry
from ..refusals import (PARAM_ERRORS, SENTINEL_CODE, SENTINEL_NUMBER, SENTINEL_TEXT, Case, category_cases, input_cases, judge,
                        refusal_problems, estimator_cases, measurement_cases, open_alphabet_cases, parameter_cases, series_cases, server_cases)

__all__ = ["refusals_layer", "WRAPPERS"]

#: the wrappers that are not registry entries (their input and server doors)
WRAPPERS = (("sample-one", lambda: SampleOne(mechanism=KRR(epsilon=1.0, d=4), m=2)),
            ("sample-one-oue", lambda: SampleOne(mechanism=OUE(epsilon=2.0, d=3), m=2)),
            ("memoized-krr", lambda: Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)),
            ("memoized-krr-labels", lambda: Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, categories=["a", "b", "c"])))


@dataclass(frozen=True)
class WrapperDeclaration:
    """A wrapper's parameters and their domains, in a registry declaration's shape (its parameter
    cases are generated like a registered name's)."""

    name: str
    cls: type
    parameters: dict
    canonical: tuple

    def mechanism_class(self) -> type:
        return self.cls


_SIZE = {"type": "int", "range": "[1, 2^20]", "domain": {"int": [1, "2^20"]}}
_RELATION = {"type": "str", "range": "'user' or 'value'", "domain": {"choice": ["user", "value"]}}
WRAPPER_DECLARATIONS = (
    WrapperDeclaration("sample-one", SampleOne, {"m": _SIZE, "on_long": {"type": "str", "range": "'error' or 'sample'", "domain": {"choice": ["error", "sample"]}},
                                                 "mechanism": {"type": "mechanism", "range": "a mechanism of one item per user"}},
                       ({"mechanism": KRR(epsilon=1.0, d=4), "m": 2},)),
    WrapperDeclaration("memoized-krr", Memoized, {
        "epsilon_permanent": {"type": "float", "range": "(0, inf)", "domain": {"float": [0, "inf"]}},
        "epsilon_instantaneous": {"type": "float", "range": "(0, epsilon_permanent]", "domain": {"float": [0, "epsilon_permanent"], "open": [True, False]}},
        "max_values": _SIZE, "d": {"type": "int", "range": "[2, 2^31]", "domain": {"int": [2, "2^31"]}}, "relation": _RELATION},
        ({"epsilon_permanent": 2.0, "epsilon_instantaneous": 1.0, "d": 4, "max_values": 2},)),
)


def _wrapper_cases(features: bool) -> list:
    """The wrappers' parameter cases, and the mechanisms ``SampleOne`` must refuse to wrap."""
    cases = [c for w in WRAPPER_DECLARATIONS for c in parameter_cases(w)]
    for label, inner in (("a name", "krr"), ("a number mechanism", Duchi(epsilon=1.0)), ("a set mechanism", RapporSet(epsilon=1.0, d=4, m=2)),
                         ("a keyed mechanism", LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)),
                         ("categories holding the PAD item", KRR(epsilon=1.0, categories=["a", PAD]))):
        cases.append(Case("constructor", f"sample-one: mechanism {label}", lambda inner=inner: SampleOne(mechanism=inner, m=2),
                          ("mechanism", "PAD", "wraps"), PARAM_ERRORS))
    closed = SampleOne(mechanism=KRR(epsilon=1.0, d=4), m=2)
    opened = SampleOne(mechanism=CMS(epsilon=1.0, k=4, cohorts=2), m=2)
    reports = closed.randomize([[0], [1, 2]], rng=1)
    open_reports = opened.randomize([["a"], ["b", "c"]], rng=1)
    names = ("PAD", "candidates", "postprocess", "open-alphabet", "randomize")
    for label, call in (("a set holding the PAD item", lambda: closed.randomize([[0], [PAD]], rng=1)),
                        ("postprocess='em' for sets", lambda: closed.estimate(reports, postprocess="em")),
                        ("randomize_encoded over an open alphabet", lambda: opened.randomize_encoded(np.zeros(2, np.int64), rng=1)),
                        ("an open-alphabet estimate without candidates", lambda: opened.estimate(open_reports))):
        cases.append(Case("randomize" if "randomize" in label or "PAD" in label else "estimate", f"sample-one: {label}", call, names))
    if features:
        cases.append(Case("measurement", "sample-one: make_sample_one with an unknown unit", lambda: meas_mod.make_sample_one(closed, unit="bogus"),
                          ("unit",), PARAM_ERRORS))
    return cases


def _canonical(decl: Any) -> Any:
    return decl.mechanism_class()(**{k: tuple(v) if isinstance(v, list) else v for k, v in dict(decl.canonical[0]).items()})


def _open_alphabet(decl: Any) -> Optional[Any]:
    """The mechanism of ``decl`` over an open alphabet (built without ``d``), if it has one."""
    base = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(decl.canonical[0]).items() if k != "d"}
    try:
        mech = decl.mechanism_class()(**base)
    except (LDPParameterError, TypeError):
        return None
    return None if not has(mech, ClosedDomain) or mech.closed else mech


def _features() -> bool:
    try:
        meas_mod.require_ldp_features()
    except LDPParameterError:
        return False
    return True


def _bad_column(mech: Any, n: int) -> Optional[pl.DataFrame]:
    """A frame of ``n`` users whose last value is outside ``mech``'s domain (its adapter's layout)."""
    kind = str(getattr(mech.input_kind, "value", mech.input_kind))
    ids = pl.Series("user", np.arange(n, dtype=np.int64))
    if kind == "number":
        return pl.DataFrame([ids, pl.Series("v", [float(mech.lower)] * (n - 1) + [SENTINEL_NUMBER + abs(float(mech.upper))])])
    if kind == "value" and mech.categories is None and mech.domain_size is not None:
        return pl.DataFrame([ids, pl.Series("v", [0] * (n - 1) + [SENTINEL_CODE], dtype=pl.Int64)])
    if kind == "set":
        first = mech.items[0]
        col = [[first]] * (n - 1) + [[SENTINEL_TEXT]] if isinstance(first, str) else [[int(first)]] * (n - 1) + [[SENTINEL_CODE]]
        return pl.DataFrame([ids, pl.Series("v", col)])
    if kind == "tuple":
        cols = [pl.Series(f"a{j}", [0] * (n - 1) + [SENTINEL_CODE if j == 0 else 0], dtype=pl.Int64) for j in range(len(mech.domains))]
        return pl.DataFrame([ids] + cols)
    if kind == "key-value":
        return pl.DataFrame([ids, pl.Series("k", [[0]] * n, dtype=pl.List(pl.Int64)),
                             pl.Series("w", [[0.5]] * (n - 1) + [[SENTINEL_NUMBER]], dtype=pl.List(pl.Float64))])
    return None


def _spend_cases(name: str, mech: Any, acc: Accountant, features: bool) -> list:
    """:class:`Case` per release of a value outside the domain with a ledger: each must be
    refused and leave the remaining budget unchanged (the caller holds each to
    :func:`~ldp_plugin.verification.refusals.refusal_problems` with the budget watched)."""
    if has(mech, Keyed):
        return []
    kind = str(getattr(mech.input_kind, "value", mech.input_kind))
    cases = []
    if features:
        user = meas_mod.make_ldp(*meas_mod.space_of(mech, "user"), mech)
        pop = meas_mod.make_ldp(*meas_mod.space_of(mech, "population"), mech)
        bad = next((c.value[0] for c in input_cases(mech) if c.value is not None and "past" in c.label), None)
        if bad is not None:
            cases.append(Case("spend", f"{name}: Accountant.run of a per-user measurement on a value past the domain",
                              lambda: acc.run(f"{name}-user", user, bad), ("value", "argument", "number", "code", "item", "attribute", "key", "set")))
            batch = [bad] if kind != "tuple" else np.array([bad])
            cases.append(Case("spend", f"{name}: Accountant.run of a population measurement on a batch past the domain",
                              lambda: acc.run(f"{name}-population", pop, batch), ("value", "argument", "number", "code", "item", "attribute", "key", "set")))
    if features and name.startswith("sample-one"):  # the padding-and-sampling chain (make_set_ldp), per user and per batch
        item = mech.items[0]
        for unit, bad in (("user", [item, SENTINEL_TEXT]), ("user", list(mech.items)[: mech.m + 1]), ("population", [[item], [SENTINEL_TEXT]])):
            meas = meas_mod.make_set_ldp(mech, unit=unit)
            cases.append(Case("spend", f"{name}: Accountant.run of make_set_ldp ({unit}) on a set outside the domain",
                              lambda meas=meas, bad=bad, unit=unit: acc.run(f"{name}-set-{unit}-{len(bad)}", meas, bad), ("item", "categor", "set", "m=")))
    frame = _bad_column(mech, 3)
    if frame is not None:
        names = ("value", "values", "position", "number", "code", "item", "attribute", "key", "set", "row")
        if kind == "tuple":
            call = lambda: frame.ldp.privatize_attributes([c for c in frame.columns if c != "user"], mech, accountant=acc, query_id=f"{name}-frame")  # noqa: E731
        elif kind == "key-value":
            call = lambda: frame.ldp.privatize_key_values("k", mech, values="w", accountant=acc, query_id=f"{name}-frame")  # noqa: E731
        else:
            call = lambda: frame.ldp.privatize("v", mech, accountant=acc, query_id=f"{name}-frame")  # noqa: E731
        cases.append(Case("spend", f"{name}: the Polars adapter with a ledger on a row past the domain", call, names))
    return cases


def refusals_layer(*, seed: int = 0, quick: bool = False, directory: str | Path, declarations: Optional[dict] = None,
                   wrappers: bool = True, accountant: type = Accountant) -> dict:
    """Every refusal case of every registered name (or of ``declarations``: the seeded bugs) and the
    wrappers, then the spend checks on a ledger of class ``accountant``, in ``directory`` (a fresh
    temporary directory)."""
    t0 = time.perf_counter()
    reg = load_registry(kinds=KINDS) if declarations is None else dict(declarations)
    names = sorted(reg)
    features = _features()
    mechs: dict = {}
    failures: list = []
    for n in names:
        try:
            mechs[n] = _canonical(reg[n])
        except Exception as e:  # noqa: BLE001 - a canonical instance that does not build fails the layer
            failures.append(f"{n}: the canonical instance raised {type(e).__name__}")
    if wrappers and declarations is None:
        mechs.update({w: make() for w, make in WRAPPERS})
        cases_wrappers = _wrapper_cases(features) + estimator_cases()
    else:
        cases_wrappers = []
    order = sorted(mechs)
    cases: list = list(cases_wrappers)
    for i, n in enumerate(order):
        mech, other = mechs[n], mechs[order[(i + 1) % len(order)]] if len(order) > 1 else KRR(epsilon=1.0, d=3)
        if n in reg:
            cases += parameter_cases(reg[n], hostile=not quick) + category_cases(reg[n])
            opened = _open_alphabet(reg[n])
            cases += [] if opened is None else open_alphabet_cases(opened, seed=seed)
            if features:
                cases += measurement_cases(reg[n], mech, quick=quick)
            if str(getattr(mech.input_kind, "value", mech.input_kind)) == "set":
                cases += series_cases(mech)
            if has(mech, ClosedDomain) and str(getattr(mech.input_kind, "value", mech.input_kind)) == "value" and not has(mech, Keyed):
                cases += series_cases(mech)
                try:  # the same mechanism over labels (a cohort design over labels may not separate them: then codes only)
                    labelled = mech.with_categories([f"c{j}" for j in range(int(mech.domain_size))])
                except LDPParameterError:
                    labelled = None
                if labelled is not None:
                    cases += series_cases(labelled) + ([] if quick else input_cases(labelled, quick=True))
        cases += input_cases(mech, quick=quick)
        cases += server_cases(mech, other, seed=seed)
    spent_ok = 0
    acc = accountant.create(Path(directory) / "ledger.sqlite", Population(name="refusals", lifetime_cap="1000000"))
    try:
        seen_kinds: set = set()
        spend: list = []
        for n in order:
            kind = str(getattr(mechs[n].input_kind, "value", mechs[n].input_kind))
            if quick and kind in seen_kinds:
                continue
            seen_kinds.add(kind)
            spend += _spend_cases(n, mechs[n], acc, features)
        for c in spend:
            problems = refusal_problems(c.call, errors=c.errors, names=c.names, unchanged={"the remaining budget": lambda: Fraction(acc.remaining())})
            if problems:
                failures.append(f"{c.surface} {c.label}: {'; '.join(problems)}")
            else:
                spent_ok += 1
        cases_run = len(spend)
    finally:
        acc.close()
    by_surface: Counter = Counter()
    for c in cases:
        by_surface[c.surface] += 1
        why = judge(c)
        if why:
            failures.append(f"{c.surface} {c.label}: {why}")
    by_surface["spend"] += cases_run
    out = {"layer": "refusals", "names": len(order), "cases": len(cases) + cases_run, "by_surface": dict(sorted(by_surface.items())),
           "measurements": "run" if features else "not run (OpenDP features not enabled: ldp.enable_ldp_features())",
           "n_failures": len(failures), "failures": failures[:12], "seconds": round(time.perf_counter() - t0, 2), "passed": not failures}
    return out
