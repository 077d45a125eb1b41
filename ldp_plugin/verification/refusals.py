"""Refusal cases for every mechanism: arguments just **outside** each declared domain and inputs
outside the input domain, through every door (the constructor, ``randomize``, ``randomize_one``,
``randomize_encoded``, the accumulator's ``add`` and ``merge``, ``estimate``, the OpenDP
measurements), and the one check each refusal must pass (:func:`judge`).

The cases are generated, never listed by hand:

* **parameters** (:func:`parameter_cases`), from each declaration's machine-readable ``domain``
  (:mod:`.domains`), one parameter at a time from a canonical instance, edges first: one below the
  minimum and one above the maximum (an open end itself: ``ε = 0``, ``upper = lower``), a list one
  entry too short or too long, an entry past its range, an empty or a full subset, a choice not
  offered; then the wrong types a caller really passes (``bool`` and a float for an int, NaN,
  ±inf, an integer past 64 bits, numeric text, ``None``, a numpy bool, a ``Fraction``, a complex,
  bytes, an array), a missing required parameter and an unknown keyword;
* **inputs** (:func:`input_cases`), from the mechanism's declared input kind: codes past the domain
  and negative, unknown labels, wrong dtypes (bool, float, text), NaN and ±inf numbers and numbers
  past ``[lower, upper]``, empty and over-long sets, sets with unknown or repeated items, malformed
  key–value pairs (a value past ``[−1, 1]``, a key past the domain, a pair of the wrong arity),
  attribute tuples of the wrong width or past a domain, missing, short or malformed user keys,
  batches of the wrong shape, options where they do not apply — through ``randomize``,
  ``randomize_one`` and ``randomize_encoded``; every data value in them is a sentinel
  (:data:`SENTINEL_TEXT`, :data:`SENTINEL_NUMBER`, :data:`SENTINEL_CODE`) no message may repeat;
* **servers** (:func:`server_cases`): report batches of the wrong shape, dtype or range to the
  accumulator's ``add``, a merge with another mechanism's accumulator, ``estimate`` with an
  unknown keyword or a bad ``confidence`` / ``target`` / ``postprocess`` / ``replicates`` /
  ``buckets`` and with another mechanism's reports;
* **measurements** (:func:`measurement_cases`): ``make_<name>(**params)`` with each parameter case
  above, ``make_ldp`` with a foreign metric, a keyed mechanism or a bad ``rng``, a measurement
  called on a value outside the domain, a privacy map asked for a negative, fractional or boolean
  ``d_in``.

:func:`refusal_problems` is the check, the one every layer's refusals go through (these cases by
way of :func:`judge`; the kernels layer's samplers, the executors layer, the users' paths, the
federated state and the device lifecycle directly): the call raises the library's own error
(:class:`LDPParameterError` for an argument, :class:`LDPInputError` or :class:`LDPParameterError`
for data) — never a bare ``TypeError``/``ValueError``/``IndexError``/``KeyError``/``OverflowError``,
never OpenDP's, numpy's or Polars' exception —, its message names the parameter (one of the case's
names, as written) and says the allowed range, contains no sentinel (nor a value the caller names)
and no raw engine text, no unsuppressed exception context carries one (a traceback would print
it), and what the caller watches (the remaining budget, the ledger, the randomness drawn) is
unchanged: a refusal spends nothing. The whole-registry layer that runs these cases, and the
accountant checks (a refused release spends nothing), is :mod:`ldp_plugin.verification.system.refusals`.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Optional

import numpy as np
import opendp.prelude as dp
import polars as pl

from .._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from .. import measurements as meas_mod
from ..estimation import bayes
from ..mechanisms.key_value import KeyValueBatch
from ..mechanisms.protocol import Analytic, ClosedDomain, Cohorted, InputKind, Keyed, has
from ..sampling import SeededRandomSource
from .domains import EPS_ENDS, declaration_domains, resolve

__all__ = ["Case", "judge", "refusal_problems", "parameter_cases", "category_cases", "series_cases", "open_alphabet_cases", "estimator_cases", "hostile_parameter_values", "bad_values", "input_cases", "server_cases", "measurement_cases",
           "valid_batch", "SENTINEL_TEXT", "SENTINEL_NUMBER", "SENTINEL_CODE", "RAW_TEXT", "ALTERNATIVES"]

#: data values no message may repeat (they stand for a user's data)
SENTINEL_TEXT = "SENTINEL-Q7391"
SENTINEL_NUMBER = 98765.4321
SENTINEL_CODE = 7_654_321
#: fragments of Python's, numpy's, Polars' and OpenDP's own messages: a refusal that shows one was not made by the library
RAW_TEXT = ("got multiple values for keyword", "unexpected keyword argument", "object has no attribute", "division by zero", "math range error",
            "could not parse `", "inferred type is", "Errno", "Traceback", "FFI(", "invalid literal for", "could not convert",
            "setting an array element", "only integer scalar arrays", "cannot convert float", "out of bounds for axis", "object is not iterable",
            "object is not subscriptable", "not supported between instances", "unhashable type", "list index out of range", "Python int too large",
            "argument must be a string or", "must be real number, not", "object cannot be interpreted", "truth value of an array")
#: parameters that are alternatives to another given parameter (a bad one is not used when absent)
ALTERNATIVES = ("p0", "p1", "prior", "subset")
#: the error types of a refused argument and of refused data
PARAM_ERRORS = (LDPParameterError, PrivacyVerificationError)
DATA_ERRORS = (LDPInputError, LDPParameterError)


@dataclass(frozen=True)
class Case:
    """One call that must be refused: ``surface`` (which door), ``label``, ``call``, the names one
    of which the message must contain, and the errors it may raise."""

    surface: str
    label: str
    call: Callable[[], Any]
    names: tuple
    errors: tuple = DATA_ERRORS
    value: Any = None  # one user's value (``randomize_one`` cases): the measurements reuse it


def _sentinels() -> tuple:
    return (SENTINEL_TEXT, repr(SENTINEL_NUMBER), str(SENTINEL_NUMBER), str(SENTINEL_CODE), "98765")


def _context_leaks(exc: BaseException, hidden: tuple) -> Optional[str]:
    """The type of an exception in ``exc``'s chain a traceback would print with one of ``hidden``."""
    seen = set()
    cur: Optional[BaseException] = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        nxt = cur.__cause__ if cur.__cause__ is not None else (None if cur.__suppress_context__ else cur.__context__)
        if nxt is not None and any(s in str(nxt) for s in hidden):
            return type(nxt).__name__
        cur = nxt
    return None


def refusal_problems(call: Callable[[], Any], *, errors: tuple = DATA_ERRORS, names: tuple = (), values: tuple = (),
                     unchanged: Optional[dict] = None) -> list:
    """What went wrong with a call that must be refused (empty: refused as every refusal must be).

    The one check of a refusal, for every layer that calls something that must refuse: ``call()``
    raises one of ``errors`` — never another exception, never nothing —, its message names one of
    ``names`` (case-sensitive; none given: not asked), repeats neither a sentinel
    (:data:`SENTINEL_TEXT`, :data:`SENTINEL_NUMBER`, :data:`SENTINEL_CODE`) nor any of ``values``
    (a user's data, a file's content), holds no raw engine text (:data:`RAW_TEXT`), and no
    unsuppressed exception chained to it carries one of those values (a traceback would print it);
    and each snapshot of ``unchanged`` (``{what: snapshot}``: the remaining budget, the ledger, the
    randomness drawn) reads the same after the call as before it — a refusal spends nothing."""
    hidden = _sentinels() + tuple(str(v) for v in values)
    before = {what: snap() for what, snap in (unchanged or {}).items()}
    out = []
    try:
        call()
    except errors as e:
        text = str(e)
        if any(s in text for s in hidden):
            out.append("the message repeats the value")
        elif names and not any(n in text for n in names):
            out.append(f"the message names none of {list(names)}")
        else:
            raw = next((r for r in RAW_TEXT if r.lower() in text.lower()), None)
            leak = _context_leaks(e, hidden)
            if raw is not None:
                out.append(f"a raw engine message ({raw!r})")
            elif leak is not None:
                out.append(f"a {leak} carrying the value is chained to the error (a traceback prints it)")
    except Exception as e:  # noqa: BLE001 - anything but the library's error is the finding
        out.append(f"raised {type(e).__name__}, not the library's error ({' or '.join(t.__name__ for t in errors)})")
    else:
        out.append("accepted")
    out += [f"the refused call changed {what}" for what, snap in (unchanged or {}).items() if snap() != before[what]]
    return out


def judge(case: Case) -> Optional[str]:
    """None when ``case`` is refused as it must be (:func:`refusal_problems`: its errors, one of its
    names in the message, no sentinel, no raw engine text, no chained value), else what went wrong."""
    return "; ".join(refusal_problems(case.call, errors=case.errors, names=case.names)) or None


def _lower_bound(rng: str) -> Any:
    """The lower end of a declared ``[a, b]`` / ``(a, b)`` range text, if numeric."""
    rng = rng.strip()
    if not rng or rng[0] not in "[(":
        return None
    try:
        return float(rng[1:].split(",")[0].strip())
    except ValueError:
        return None


def bad_values(pname: str, spec: dict) -> list:
    """``(label, value)`` pairs that must be refused for a parameter of this declared type (every
    class a caller hits: NaN, ±inf, text, bool, a list; a fraction, NaN, an int past 64 bits,
    ``None`` for an int; below the lower end of its range text)."""
    typ, rng = str(spec.get("type", "")), str(spec.get("range", ""))
    out: list = []
    nullable = "none" in typ
    lo = _lower_bound(rng)
    if typ.startswith("float"):
        out += [("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("str", "abc"), ("bool", True), ("list", [1.0])]
        if lo is not None and pname not in ("lower", "upper"):
            out += [("below-range", lo - 1.0)]
    elif typ.startswith("int"):
        out += [("fraction", 2.5), ("str", "abc" if "'" not in typ else "bogus-choice"), ("bool", True), ("nan", math.nan), ("huge", 10**30)]
        if lo is not None:
            out += [("below-range", int(lo) - 1)]
        if not nullable and pname != "d" and "'" not in typ:  # a quoted alternative ('auto') may be spelled None
            out += [("none", None)]
    elif typ.startswith("str"):
        out += [("unknown-choice", "bogus"), ("int", 3)]
    elif typ.startswith("list"):
        out += [("str", "abc"), ("nan-entry", [math.nan, 0.5, 0.5]), ("nested", [[0.5], [0.5]])]
    return out


def hostile_parameter_values(pname: str, spec: dict) -> list:
    """``(label, value)`` of types a caller really passes, none valid for this declared type (numpy
    scalars, a numpy bool for an int, ``Fraction``/``Decimal``/``complex``/``bytes``, ``2**63``,
    ``1e308``, numeric text, an array)."""
    typ = str(spec.get("type", ""))
    common = [("complex", complex(1, 1)), ("bytes", b"1"), ("text", "bogus-text"), ("dict", {"v": 1}), ("set", {1})]
    if typ.startswith("float"):
        out = [("np-nan", np.float64("nan")), ("np-inf", np.float32("inf")), ("decimal-nan", Decimal("NaN")), ("np-bool", np.bool_(True)),
               ("ndarray", np.array([0.5, 0.5])), ("1e308-string", "1e308")]
        if pname not in ("lower", "upper"):
            out += [("1e308", 1e308), ("-1e308", -1e308)]
        return out + common
    if typ.startswith("int"):
        huge = [("2**64", 2**64)] if "2^64" in str(spec.get("range", "")) else [("2**63", 2**63)]
        return [("np-bool", np.bool_(True)), ("fraction", Fraction(5, 2)), ("np-float", np.float64(2.5))] + huge + [
                ("-2**63", -(2**63)), ("decimal-nan", Decimal("NaN")), ("numeric-string", "4"), ("ndarray", np.array([4]))] + common
    if typ.startswith("str"):
        return [("text", "bogus-text"), ("bytes", b"krr"), ("none-string", "None")]
    if typ.startswith("list"):
        return [("text-entry", ["bogus-text", 0.5]), ("np-2d", np.ones((2, 2))), ("inf-entry", [math.inf, 0.5])]
    return []


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _env(cls: Any, base: dict, params: Any) -> dict:
    """The instance's numeric parameter values (bounds such as ``d-1`` resolve against them)."""
    env: dict = {}
    try:
        canon = cls(**base)
    except Exception:  # noqa: BLE001 - a canonical instance that does not build is the registry's finding, not this one
        canon = None
    for k in params:
        v = getattr(canon, k, None) if canon is not None else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            env[k] = v
    env.update({k: v for k, v in base.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return env


def _past_domain(pname: str, dom: Any, env: dict, base: dict) -> list:
    """``(label, value)`` just outside ``dom`` at ``env``: the edges first."""
    out: list = []
    if dom is None or dom.kind == "tied":
        return out
    if dom.kind == "int":
        lo, hi = resolve(dom.lo, env), resolve(dom.hi, env)
        if lo is not None and math.isfinite(lo):
            below = int(math.ceil(lo)) - 1
            out.append(("one-below-min", below))
        if hi is not None and math.isfinite(hi):
            out.append(("one-above-max", int(math.floor(hi)) + 1))
        if dom.power_of_two and lo is not None and int(math.ceil(lo)) + 1 < (hi if hi is not None else math.inf):
            first = 1 << max(0, (int(math.ceil(lo)) - 1).bit_length())
            if first >= 2 and first + 1 != first * 2:
                out.append(("not-a-power-of-two", first + 1))
    elif dom.kind == "float":
        # an open end itself, and past it (:func:`.domains.float_ends`: ε = 0, upper = lower); a closed
        # finite end is the end of the range the draws visit (lower's ±1e12), not a refusal boundary
        lo, hi = resolve(dom.lo, env), resolve(dom.hi, env)
        lo_open, hi_open = dom.extra.get("open", (True, True))
        if lo is not None and lo_open and math.isfinite(lo):
            out += [("at-open-min", float(lo)), ("below-min", float(lo) - max(1.0, abs(float(lo))))]
        if hi is not None and math.isfinite(hi):
            if hi_open:
                out.append(("at-open-max", float(hi)))
            if hi_open or isinstance(dom.hi, str):  # a bound set by another parameter (epsilon_1 <= epsilon_perm) is a hard one
                out.append(("above-max", float(hi) + max(1.0, abs(float(hi)))))
    elif dom.kind == "choice":
        out.append(("not-a-choice", "not-a-" + pname))
    elif dom.kind == "list":
        e_lo = int(dom.each[0]) if dom.each and dom.each[0] is not None else 1
        e_hi = int(dom.each[1]) if dom.each and dom.each[1] is not None else None
        n_lo, n_hi = int(dom.lo), int(dom.hi)
        out.append(("one-entry-too-few", (e_lo,) * (n_lo - 1)))
        out.append(("one-entry-too-many", (e_lo,) * (n_hi + 1)))
        out.append(("entry-below-min", (e_lo - 1,) + (e_lo,) * (n_lo - 1)))
        if e_hi is not None:
            out.append(("entry-above-max", (e_hi + 1,) + (e_lo,) * (n_lo - 1)))
        out.append(("bool-entry", (True,) + (e_lo,) * (n_lo - 1)))
        out.append(("float-entry", (float(e_lo) + 0.5,) + (e_lo,) * (n_lo - 1)))
    elif dom.kind == "subset":
        d = env.get(dom.ref)
        if isinstance(d, int):
            out += [("empty-subset", ()), ("full-subset", tuple(range(d))), ("item-past-domain", (d,)), ("negative-item", (-1,)),
                    ("bool-item", (True,))]
    if dom.choices and dom.kind != "choice":
        out.append(("not-a-choice", "not-a-" + pname))
    if dom.kind == "float" and pname.startswith("epsilon"):  # the library's usable range of an ε (mechanisms.domain)
        out += [("below-usable-range", EPS_ENDS[0] / 2), ("above-usable-range", EPS_ENDS[1] * 1.01)]
    return out


def _names(pname: str) -> tuple:
    return (pname, pname.replace("_", " ")) + (("epsilon",) if pname.startswith("epsilon") else ()) + (
        ("lower", "upper") if pname in ("lower", "upper") else ())


def required_parameters(decl: Any) -> list:
    """The declared parameters without a default in the constructor's signature."""
    try:
        sig = inspect.signature(decl.mechanism_class())
    except (TypeError, ValueError):
        return []
    return [p for p in decl.parameters if p in sig.parameters and sig.parameters[p].default is inspect.Parameter.empty]


def parameter_cases(decl: Any, *, make: Optional[Callable] = None, hostile: bool = True, surface: str = "constructor") -> list:
    """:class:`Case` per declared parameter of ``decl`` just outside its domain (edges first), of a
    wrong type, missing, and an unknown keyword, from its first canonical instance; ``make``
    builds (default: the declared class; a ``make_<name>`` for the measurements)."""
    cls = decl.mechanism_class()
    build = make if make is not None else cls
    base = {k: _tuples(v) for k, v in dict(decl.canonical[0]).items()}
    env = _env(cls, base, decl.parameters)
    doms = declaration_domains(decl)
    cases: list = []

    def add(label: str, kw: dict, names: tuple) -> None:
        cases.append(Case(surface, f"{decl.name}: {label}", lambda kw=kw: build(**kw), names, PARAM_ERRORS))

    for pname, spec in decl.parameters.items():
        if pname in ALTERNATIVES and pname not in base:
            continue
        values = _past_domain(pname, doms.get(pname), env, base) + bad_values(pname, dict(spec))
        if hostile:
            values += hostile_parameter_values(pname, dict(spec))
        seen: set = set()
        for label, v in values:
            key = (type(v).__name__, repr(v))
            if key in seen:
                continue
            seen.add(key)
            add(f"{pname} {label}", {**base, pname: v}, _names(pname))
    try:
        sig = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        sig = {}
    for pname, p in sig.items():  # a keyword the constructor takes that the declaration does not state: its type is its default's
        if pname in decl.parameters or pname in ("d", "categories") or p.default is inspect.Parameter.empty:
            continue
        if isinstance(p.default, bool):
            values = [("not-a-bool", 2), ("text", "yes")]
        elif isinstance(p.default, str):
            values = [("not-a-choice", "not-a-" + pname), ("int", 3)]
        elif isinstance(p.default, int):
            values = [("text", "bogus"), ("bool", True), ("fraction", 2.5), ("one-below-zero", -1)]
        else:
            values = []
        for label, v in values:
            add(f"{pname} {label} (undeclared)", {**base, pname: v}, _names(pname))
    for pname in required_parameters(decl) + [e for e in ("epsilon",) if e in decl.parameters]:
        if pname in base:
            add(f"{pname} missing", {k: v for k, v in base.items() if k != pname}, _names(pname))
    for pname in [p for p in ALTERNATIVES if p in base]:  # an alternative given, then taken away with nothing in its place
        add(f"{pname} missing (no alternative given)", {k: v for k, v in base.items() if k != pname}, _names(pname) + ALTERNATIVES + ("d",))
    add("an unknown keyword", {**base, "no_such_parameter": 1}, ("no_such_parameter",))
    return cases


def category_cases(decl: Any) -> list:
    """:class:`Case` per ``categories=`` the constructor must refuse (a closed alphabet of labels):
    an unordered set or a dict (their order differs between processes), one string, a label that is
    None or NaN, labels of mixed types, duplicates, none, a 2-d array, unhashable labels, a ``d``
    that disagrees with them or is a bool, and neither ``d`` nor categories."""
    cls = decl.mechanism_class()
    try:
        takes = "categories" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        takes = False
    if not takes:
        return []
    base = {k: _tuples(v) for k, v in dict(decl.canonical[0]).items()}
    d = base.pop("d", None)
    if not isinstance(d, int) or isinstance(d, bool) or any(k in base for k in ALTERNATIVES):
        return []
    labels = [f"c{i}" for i in range(d)]
    bad = [("a set of labels", set(labels)), ("a dict of labels", dict.fromkeys(labels)), ("one string", "abc"), ("a number", 5),
           ("a None label", labels[:-1] + [None]), ("a NaN label", [float(i) for i in range(d - 1)] + [math.nan]),
           ("labels of mixed types", [1] + labels[1:]), ("a repeated label", labels[:-1] + [labels[0]]), ("no labels", []),
           ("a 2-d array of labels", np.array([labels, labels])), ("unhashable labels", [[x] for x in labels])]
    cases = [Case("constructor", f"{decl.name}: categories {label}", lambda v=v: cls(**base, categories=v), ("categories",), PARAM_ERRORS)
             for label, v in bad]
    cases += [Case("constructor", f"{decl.name}: d that disagrees with the categories", lambda: cls(**base, d=d + 1, categories=labels), ("d",), PARAM_ERRORS),
              Case("constructor", f"{decl.name}: a bool d beside the categories", lambda: cls(**base, d=True, categories=labels), ("d",), PARAM_ERRORS),
              Case("constructor", f"{decl.name}: neither d nor categories", lambda: cls(**base), ("d", "categories"), PARAM_ERRORS)]
    try:
        open_alphabet = not cls(**base).closed  # without d or categories: an open alphabet (the cohort oracles), not a refusal
    except (LDPParameterError, PrivacyVerificationError, TypeError):
        open_alphabet = False
    return cases[:-1] if open_alphabet else cases


def series_cases(mech: Any) -> list:
    """:class:`Case` per Polars Series a closed-alphabet client must refuse (codes: floats, text, a
    null; labels: a null, an unknown label as text, Categorical and Enum, another dtype) and per numpy
    text array with an unknown label (fixed-width ``U``/``S``, bytes in a list)."""
    names = ("value", "values", "position", "dtype", "categor", "code", "set", "item", "list")
    src = lambda: SeededRandomSource(1)  # noqa: E731
    if _kind(mech) == "set" and not has(mech, Keyed):
        first = mech.items[0]
        cols = [("a null set", pl.Series("v", [[first], None])),
                ("a null item", pl.Series("v", [[first], [None]], dtype=pl.List(pl.Int64 if isinstance(first, int) else pl.String))),
                ("a set with an unknown item", pl.Series("v", [[first], [SENTINEL_TEXT]]) if isinstance(first, str) else pl.Series("v", [[first], [SENTINEL_CODE]]))]
        return [Case("randomize", f"{mech.name}: {label}", lambda v=v: mech.randomize(v, rng=src()), names) for label, v in cols]
    if _kind(mech) != "value" or not has(mech, ClosedDomain) or mech.domain_size is None or has(mech, Keyed):
        return []
    if mech.categories is None:
        d = int(mech.domain_size)
        series = [("a Float Series", pl.Series("v", [0.0, 1.5])), ("a String Series", pl.Series("v", ["0", SENTINEL_TEXT])),
                  ("an Int Series with a null", pl.Series("v", [0, None], dtype=pl.Int64)),
                  ("an Int Series past the domain", pl.Series("v", [0, d], dtype=pl.Int64))]
        arrays: list = []
    else:
        labels = [str(c) for c in mech.categories]
        series = [("a String Series with a null", pl.Series("v", [labels[0], None])),
                  ("a String Series with an unknown label", pl.Series("v", [labels[0], SENTINEL_TEXT])),
                  ("a Categorical Series with an unknown label", pl.Series("v", [labels[0], SENTINEL_TEXT], dtype=pl.Categorical)),
                  ("an Enum Series with an unknown label", pl.Series("v", [labels[0], SENTINEL_TEXT], dtype=pl.Enum([labels[0], SENTINEL_TEXT]))),
                  ("an Int Series for text labels", pl.Series("v", [0, 1], dtype=pl.Int64))]
        if all(isinstance(c, str) for c in mech.categories):
            series.append(("a Boolean Series for text labels", pl.Series("v", [True, False])))
        arrays = [("a fixed-width text array with an unknown label", np.array([labels[0], SENTINEL_TEXT])),
                  ("a bytes array with an unknown label", np.array([labels[0].encode(), SENTINEL_TEXT.encode()])),
                  ("a list of bytes with an unknown label", [labels[0].encode(), SENTINEL_TEXT.encode()]),
                  ("a 2-d text array", np.array([labels[:1], labels[:1]])),
                  ("labels of mixed types", np.array([labels[0], 3, 2.5], dtype=object))]
    return [Case("randomize", f"{mech.name}: {label}", lambda v=v: mech.randomize(v, rng=src()), names) for label, v in series + arrays]


# -- inputs -----------------------------------------------------------------------------------------------
def _kind(mech: Any) -> str:
    return str(mech.input_kind.value if isinstance(mech.input_kind, InputKind) else mech.input_kind)


def _keys(n: int) -> list:
    return [bytes([i % 251, 7]) * 16 for i in range(n)]


def valid_batch(mech: Any, n: int = 4) -> Any:
    """``n`` valid users' values as ``randomize`` takes them (the ends and the middle of the domain)."""
    kind = _kind(mech)
    if kind == "number":
        return np.linspace(float(mech.lower), float(mech.upper), n)
    if kind == "key-value":
        out = np.empty(n, dtype=object)
        out[:] = [[(i % int(mech.d), 0.5 - (i % 3) / 2)] for i in range(n)]
        return out
    if kind == "tuple":
        return np.stack([np.arange(n) % int(k) for k in mech.domains], axis=1).astype(np.int64)
    items = list(mech.items) if (has(mech, ClosedDomain) and mech.categories is not None) or kind == "set" else None
    d = int(mech.domain_size) if mech.domain_size is not None else None
    if kind == "set":
        return [[items[i % len(items)]] for i in range(n)]
    if items is not None:
        out = np.empty(n, dtype=object)
        out[:] = [items[i % len(items)] for i in range(n)]
        return out
    return (np.arange(n) % (d or 2)).astype(np.int64)


def _poison(batch: Any, value: Any) -> Any:
    """``batch`` with its last user's value replaced (in the batch's own layout)."""
    if isinstance(batch, np.ndarray) and batch.dtype != object and batch.ndim == 1:
        out = np.empty(batch.size, dtype=object)
        out[:] = batch.tolist()
    elif isinstance(batch, np.ndarray) and batch.dtype == object:
        out = batch.copy()
    else:
        out = list(batch)
    out[-1] = value
    return out


def input_cases(mech: Any, *, quick: bool = False) -> list:
    """:class:`Case` per input outside ``mech``'s input domain (module docstring), through
    ``randomize``, ``randomize_one`` and ``randomize_encoded``."""
    kind = _kind(mech)
    keyed = has(mech, Keyed)
    n = 4
    good = valid_batch(mech, n)
    kw = {"user_keys": _keys(n)} if keyed else {}
    key1 = _keys(1)[0] if keyed else None
    src = lambda: SeededRandomSource(1)  # noqa: E731
    data_names = ("value", "values", "position", "batch", "item", "code", "key", "number", "set", "attribute", "row", "input", "user", "tuple", "pair")
    cases: list = []

    def batch(label: str, b: Any, names: tuple = data_names) -> None:
        cases.append(Case("randomize", f"{mech.name}: {label}", lambda: mech.randomize(b, rng=src(), **kw), names))

    def one(label: str, v: Any, names: tuple = data_names) -> None:
        cases.append(Case("randomize_one", f"{mech.name}: one {label}", lambda: mech.randomize_one(v, rng=src(), user_key=key1), names, value=(v,)))

    def both(label: str, v: Any, names: tuple = data_names) -> None:
        batch(label, _poison(good, v), names)
        one(label, v, names)

    # arguments every client refuses
    batch_args = [("an unknown keyword", lambda: mech.randomize(good, rng=src(), bogus=1, **kw), ("bogus", "keyword", "argument")),
                  ("an rng that is no source", lambda: mech.randomize(good, rng="not-a-source", **kw), ("rng",)),
                  ("an rng of a bool", lambda: mech.randomize(good, rng=True, **kw), ("rng",)),
                  ("numpy's Generator as rng", lambda: mech.randomize(good, rng=np.random.default_rng(0), **kw), ("rng",)),
                  ("a negative seed", lambda: mech.randomize(good, rng=-1, **kw), ("rng", "seed")),
                  ("a fractional seed", lambda: mech.randomize(good, rng=1.5, **kw), ("rng", "seed")),
                  ("a batch of None", lambda: mech.randomize(None, rng=src(), **kw), data_names),
                  ("a bare text", lambda: mech.randomize(SENTINEL_TEXT, rng=src(), **kw), data_names),
                  ("a 3-d batch", lambda: mech.randomize(np.zeros((2, 2, 2)), rng=src(), **kw), data_names),
                  ("a dict", lambda: mech.randomize({"a": 1}, rng=src(), **kw), data_names)]
    for label, call, names in batch_args:
        cases.append(Case("randomize", f"{mech.name}: {label}", call, names))
    cases.append(Case("randomize_one", f"{mech.name}: randomize_one with an unknown keyword",
                      lambda: mech.randomize_one(good[0], rng=src(), user_key=key1, bogus=1), ("bogus", "keyword", "argument")))
    if not (has(mech, Cohorted) and mech.takes_cohorts):
        cases.append(Case("randomize", f"{mech.name}: cohorts= where none apply", lambda: mech.randomize(good, rng=src(), cohorts=np.zeros(n, np.int64), **kw),
                          ("cohort",)))
    else:
        c = int(mech.cohorts)
        for label, co in (("a cohort past the count", np.array([0] * (n - 1) + [c])), ("a negative cohort", np.array([0] * (n - 1) + [-1])),
                          ("cohorts of another length", np.zeros(n + 1, np.int64)), ("float cohorts", np.zeros(n) + 0.5)):
            cases.append(Case("randomize", f"{mech.name}: {label}", lambda co=co: mech.randomize(good, rng=src(), cohorts=co, **kw), ("cohort",)))
    if keyed:
        for label, keys in (("no user keys", None), ("one key too few", _keys(n - 1)), ("a key too short", _keys(n - 1) + [b"short"]),
                            ("a key of text", _keys(n - 1) + [SENTINEL_TEXT]), ("a key too long", _keys(n - 1) + [bytes(65)])):
            cases.append(Case("randomize", f"{mech.name}: {label}", lambda keys=keys: mech.randomize(good, rng=src(), user_keys=keys), ("key",)))
        cases.append(Case("randomize_one", f"{mech.name}: randomize_one without a key", lambda: mech.randomize_one(good[0], rng=src()), ("key",)))
        cases.append(Case("randomize_one", f"{mech.name}: randomize_one with a short key",
                          lambda: mech.randomize_one(good[0], rng=src(), user_key=b"short"), ("key",)))
    else:
        cases.append(Case("randomize", f"{mech.name}: user_keys= without keys", lambda: mech.randomize(good, rng=src(), user_keys=_keys(n)), ("key",)))
        cases.append(Case("randomize_one", f"{mech.name}: user_key= without keys", lambda: mech.randomize_one(good[0], rng=src(), user_key=_keys(1)[0]),
                          ("key",)))
    if kind != "set":
        encoded = mech.encode(good)
        cases.append(Case("randomize_encoded", f"{mech.name}: offsets= on a mechanism without sets",
                          lambda: mech.randomize_encoded(encoded, rng=src(), offsets=np.arange(n + 1), **kw), ("offsets",)))

    # values outside the input domain
    if kind == "value":
        if mech.categories is None and mech.domain_size is not None:
            d = int(mech.domain_size)
            both("code past the domain", SENTINEL_CODE)
            both("code at d", d)
            both("negative code", -1)
            both("bool code", True)
            both("float code", 1.5)
            both("NaN code", math.nan)
            both("text code", SENTINEL_TEXT)
            batch("a 2-d batch of codes", np.zeros((n, 2), dtype=np.int64))
            batch("a batch of floats", np.zeros(n) + 0.5)
            batch("a batch of bools", np.zeros(n, dtype=bool))
            batch("a huge code", np.array([0] * (n - 1) + [2**62], dtype=np.int64))
            batch("a uint64 past int64", np.array([0] * (n - 1) + [2**64 - 1], dtype=np.uint64))
            one("batch where one value belongs", [0, 1])
            for label, codes in (("a code past the domain", np.array([0] * (n - 1) + [SENTINEL_CODE], np.int64)),
                                 ("a negative code", np.array([0] * (n - 1) + [-1], np.int64)), ("float codes", np.zeros(n) + 0.5),
                                 ("a 2-d array", np.zeros((n, 2), np.int64))):
                cases.append(Case("randomize_encoded", f"{mech.name}: {label}", lambda codes=codes: mech.randomize_encoded(codes, rng=src(), **kw), data_names))
        elif mech.categories is not None:
            both("unknown label", SENTINEL_TEXT)
            both("None label", None)
            both("NaN label", math.nan)
            one("list where one label belongs", [SENTINEL_TEXT])
    elif kind == "number":
        lo, hi = float(mech.lower), float(mech.upper)
        both("number past upper", SENTINEL_NUMBER if SENTINEL_NUMBER > hi else hi + abs(hi) + SENTINEL_NUMBER)
        both("number below lower", -SENTINEL_NUMBER if -SENTINEL_NUMBER < lo else lo - abs(lo) - SENTINEL_NUMBER)
        both("NaN", math.nan)
        both("inf", math.inf)
        both("-inf", -math.inf)
        both("text", SENTINEL_TEXT)
        both("numeric text", str(SENTINEL_NUMBER))
        both("bool", True)
        both("complex", complex(SENTINEL_NUMBER, 1))
        both("None", None)
        batch("a 2-d batch of numbers", np.zeros((n, 2)))
        batch("a complex batch", np.zeros(n, dtype=complex))
        batch("a batch of text", np.array([SENTINEL_TEXT] * n))
        batch("a nested list", [[lo], [hi, lo]])
        one("list where one number belongs", [lo])
        cases.append(Case("randomize_encoded", f"{mech.name}: encoded NaN", lambda: mech.randomize_encoded(np.array([math.nan] * n), rng=src(), **kw),
                          data_names))
    elif kind == "set":
        items = list(mech.items)
        m = int(mech.m)
        both("set with an unknown item", [SENTINEL_TEXT])
        batch("a batch of bare items in a list of sets", [[items[0]]] * (n - 1) + [items[0]])
        both("set with None", [None])
        if len(items) > m:
            both("set longer than m", items[: m + 1])
        both("set with a repeated item", [items[0], items[0]])
        batch("a batch of bare text", [SENTINEL_TEXT] * n)
        batch("(items, offsets) whose offsets overrun the items", (np.array([0, 0]), np.array([0, 3])), data_names + ("offsets",))
        batch("a user's set that is None", [[items[0]]] * (n - 1) + [None])
        cases.append(Case("randomize_encoded", f"{mech.name}: offsets of another length",
                          lambda: mech.randomize_encoded(np.zeros(n, np.int64), rng=src(), offsets=np.arange(n + 3) * 0, **kw), ("offsets", "codes", "set")))
        cases.append(Case("randomize_encoded", f"{mech.name}: decreasing offsets",
                          lambda: mech.randomize_encoded(np.zeros(n, np.int64), rng=src(), offsets=np.array([0, 3, 1, 2, n]), **kw), ("offsets", "codes", "set")))
        cases.append(Case("randomize_encoded", f"{mech.name}: an encoded code past the domain",
                          lambda: mech.randomize_encoded(np.array([0] * (n - 1) + [SENTINEL_CODE], np.int64), rng=src(), **kw), data_names))
    elif kind == "tuple":
        doms = tuple(int(k) for k in mech.domains)
        a = len(doms)
        both("attribute code past its domain", (0,) * (a - 1) + (SENTINEL_CODE,))
        both("negative attribute code", (0,) * (a - 1) + (-1,))
        both("tuple one attribute short", (0,) * (a - 1))
        both("tuple one attribute long", (0,) * (a + 1))
        both("float attribute", (0,) * (a - 1) + (0.5,))
        both("bool attribute", (0,) * (a - 1) + (True,))
        both("text attribute", (0,) * (a - 1) + (SENTINEL_TEXT,))
        batch("a batch of the wrong width", np.zeros((n, a + 1), dtype=np.int64))
        batch("a 1-d batch", np.zeros(n, dtype=np.int64))
        batch("a float batch", np.zeros((n, a)) + 0.5)
        one("bare code", 0)
        cases.append(Case("randomize_encoded", f"{mech.name}: encoded codes past a domain",
                          lambda: mech.randomize_encoded(np.full((n, a), SENTINEL_CODE, np.int64), rng=src(), **kw), data_names))
    elif kind == "key-value":
        d = int(mech.d)
        both("value past [-1, 1]", [(0, SENTINEL_NUMBER)])
        both("NaN value", [(0, math.nan)])
        both("inf value", [(0, math.inf)])
        both("key past the domain", [(SENTINEL_CODE, 0.0)])
        both("key at d", [(d, 0.0)])
        both("negative key", [(-1, 0.0)])
        both("text key", [(SENTINEL_TEXT, 0.0)])
        both("float key", [(0.5, 0.0)])
        both("bool key", [(True, 0.0)])
        both("text value", [(0, SENTINEL_TEXT)])
        both("bool value", [(0, True)])
        both("pair of one", [(0,)])
        both("pair of three", [(0, 0.5, 0.5)])
        both("bare pair", (0, 0.5))
        both("repeated key", [(0, 0.1), (0, 0.2)])
        params = mech.spec()["params"]
        ell = int(params.get("ell", 1))
        if ell < d and params.get("on_long", "error") == "error":
            both("more than ell keys", [(k, 0.0) for k in range(ell + 1)])
        both("None", None)
        for label, b in (("a batch whose offsets overrun its keys", KeyValueBatch(np.array([0]), np.array([0.5]), np.array([0, 2]))),
                         ("a batch whose offsets decrease", KeyValueBatch(np.array([0, 1]), np.array([0.5, 0.5]), np.array([0, 2, 1, 2])))):
            batch(label, b, data_names + ("offsets",))
        cases.append(Case("randomize_encoded", f"{mech.name}: encoded codes that are fractions",
                          lambda: mech.randomize_encoded(np.array([0.5, 1.5]), rng=src()), ("codes",)))
    if quick:
        cases = cases[::3]
    return cases


# -- servers ----------------------------------------------------------------------------------------------
def _int_field(mech: Any, cols: dict) -> Optional[Any]:
    for f in mech.base.report_fields():
        a = np.asarray(cols.get(f.name))
        if f.bound is not None and a.dtype.kind in "iu" and f.kind in ("int", "sorted"):
            return f
    return None


def server_cases(mech: Any, other: Any, *, seed: int = 0) -> list:
    """:class:`Case` per report batch the accumulator must refuse and per ``estimate`` misuse
    (module docstring); ``other`` is another mechanism whose reports and accumulator must be refused."""
    keyed = has(mech, Keyed)
    n = 4
    good = valid_batch(mech, n)
    reports = mech.randomize(good, rng=SeededRandomSource(seed), **({"user_keys": _keys(n)} if keyed else {}))
    cols = {k: np.array(v, copy=True) for k, v in mech.base._to_columns(reports).items()}
    names = ("report", "reports", "row", "field", "range", "batch", "column", "mechanism", "spec", "cohort", "output")
    cases: list = []

    def add(label: str, batch: Any) -> None:
        cases.append(Case("add", f"{mech.name}: add {label}", lambda: mech.accumulator().add(batch), names, (LDPInputError,)))

    f = _int_field(mech, cols)
    if f is not None:
        a = cols[f.name]
        for label, v in (("a field at its bound", int(min(int(f.bound), int(np.iinfo(a.dtype).max)))), ("a field past its bound", SENTINEL_CODE)):
            if v > np.iinfo(a.dtype).max:
                continue
            b = {k: np.array(x, copy=True) for k, x in cols.items()}
            if b[f.name].ndim == 1:
                b[f.name][-1] = v
            else:
                b[f.name][-1, 0] = v
            add(label, mech.base._from_columns(b))
        neg = {k: (np.asarray(x).astype(np.int64) if k == f.name else np.array(x, copy=True)) for k, x in cols.items()}
        if neg[f.name].ndim == 1:
            neg[f.name][-1] = -1
        else:
            neg[f.name][-1, 0] = -1
        add("a negative field", _from_columns_or_raw(mech, neg))
    # floats in the batch's own layout (a native array or tuple of arrays; never cast back to integers)
    if isinstance(reports, np.ndarray):
        add("float reports", np.asarray(reports, dtype=np.float64) + 0.5)
    elif isinstance(reports, tuple) and all(isinstance(x, np.ndarray) for x in reports):
        add("float reports", tuple(np.asarray(x, dtype=np.float64) + 0.5 for x in reports))
    add("a 3-d report batch", np.zeros((2, 2, 2), dtype=np.int64))
    add("reports of text", np.array([SENTINEL_TEXT] * n))
    add("None", None)
    if other is not None:
        try:
            foreign = other.randomize(valid_batch(other, n), rng=SeededRandomSource(seed), **({"user_keys": _keys(n)} if has(other, Keyed) else {}))
        except (LDPInputError, LDPParameterError):
            foreign = None
        if foreign is not None:
            add("another mechanism's reports", foreign)
            cases.append(Case("estimate", f"{mech.name}: estimate of another mechanism's reports", lambda: mech.estimate(foreign), names,
                              (LDPInputError,)))
        cases.append(Case("merge", f"{mech.name}: merge with another mechanism's accumulator", lambda: mech.accumulator().merge(other.accumulator()),
                          ("merge", "accumulator", "mechanism"), DATA_ERRORS))
    cases.append(Case("merge", f"{mech.name}: merge with a non-accumulator", lambda: mech.accumulator().merge(SENTINEL_TEXT),
                      ("merge", "accumulator", "mechanism"), DATA_ERRORS))
    cases += [Case("estimate", f"{mech.name}: estimate {k}={v!r}", lambda k=k, v=v: mech.estimate(reports, **{k: v}), (k,), PARAM_ERRORS)
              for k, v in hostile_keywords(mech)]
    est = mech.estimate(reports)
    plot = getattr(est, "plot", None)
    params = inspect.signature(plot).parameters if callable(plot) else {}
    for label in ("names", "keys"):  # labels for the panels: one per attribute / key, never silently cut or padded
        if label in params:
            cases.append(Case("estimate", f"{mech.name}: an estimate's plot with {label} of another length", lambda label=label: plot(**{label: ["x"] * 1000}),
                              (label,), PARAM_ERRORS))
    cases.append(Case("estimate", f"{mech.name}: estimate of no reports", lambda: mech.estimate_from(mech.accumulator()), ("report", "n >= 1"), PARAM_ERRORS))
    if isinstance(reports, np.ndarray) and reports.ndim == 2:
        add("a batch one column wider", np.zeros((n, reports.shape[1] + 1), dtype=reports.dtype))
        if reports.shape[1] > 1 and any(f.kind == "sorted" for f in mech.base.report_fields()):
            unsorted = np.array(reports, copy=True)
            unsorted[-1] = unsorted[-1][::-1]
            add("a row out of order", unsorted)
    if hasattr(mech.accumulator(), "add_histogram") and f is not None and [(g.name, g.width) for g in mech.base.report_fields()] == [("report", None)]:
        top = int(min(int(f.bound), np.iinfo(np.int64).max))
        cases.append(Case("add", f"{mech.name}: add_histogram of a report past its bound",
                          lambda: mech.accumulator().add_histogram({f.name: np.array([0, top])}, np.array([1, 1])), names, (LDPInputError,)))
    if has(mech, Analytic):
        for label, kw in (("n = 0", {"n": 0}), ("a negative n", {"n": -1}), ("an unknown sampling", {"n": 10, "sampling": "bogus"}),
                          ("sampling='iid' without theta", {"n": 10, "sampling": "iid"})):
            cases.append(Case("theory", f"{mech.name}: analytic_mse with {label}", lambda kw=kw: mech.analytic_mse(**kw), ("n", "sampling", "theta"), PARAM_ERRORS))
    return cases


def open_alphabet_cases(mech: Any, *, seed: int = 0) -> list:
    """:class:`Case` per misuse of an open-alphabet mechanism (no ``d``, no categories: items are
    hashed): items that are no integer, string or bytes, a nested batch; ``estimate`` without
    candidates, with a single string, none, or one twice."""
    src = lambda: SeededRandomSource(1)  # noqa: E731
    names = ("item", "items", "values", "batch")
    cases = [Case("randomize", f"{mech.name} (open): {label}", lambda v=v: mech.randomize(v, rng=src()), names)
             for label, v in (("a None item", [None, SENTINEL_TEXT]), ("a NaN item", ["a", math.nan]), ("a nested batch", ["a", [SENTINEL_TEXT]]),
                              ("a dict item", ["a", {"x": SENTINEL_TEXT}]), ("a 2-d array", np.zeros((2, 2))))]
    reports = mech.randomize(["a", "b", "c", "d"], rng=SeededRandomSource(seed))
    cases += [Case("estimate", f"{mech.name} (open): estimate with {label}", lambda kw=kw: mech.estimate(reports, **kw), ("candidates",), PARAM_ERRORS)
              for label, kw in (("no candidates", {}), ("a single string", {"candidates": "abc"}), ("empty candidates", {"candidates": []}),
                                ("a repeated candidate", {"candidates": ["a", "a"]}))]
    return cases


def estimator_cases() -> list:
    """:class:`Case` per argument the free estimators refuse (iterative Bayesian estimation and its
    bootstrap, :mod:`ldp_plugin.estimation.bayes`): an unknown likelihood, support rates outside
    ``0 <= q* < p* <= 1``, no reports, a bootstrap size, confidence or seed out of range."""
    c, n, p, q = np.array([30.0, 20.0, 10.0]), 40, 0.6, 0.2
    calls = [("an unknown likelihood", lambda: bayes.ibu(c, n, p, q, likelihood="bogus"), ("likelihood",)),
             ("q* above p*", lambda: bayes.ibu(c, n, q, p), ("q*", "p*")), ("p* above 1", lambda: bayes.ibu(c, n, 1.5, q), ("q*", "p*")),
             ("no reports", lambda: bayes.ibu(c, 0, p, q), ("n >= 1",)), ("a stack with an empty row", lambda: bayes.ibu(np.stack([c, c]), np.array([n, 0]), p, q), ("n >= 1",))]
    for label, kw in (("replicates below 20", {"replicates": 5}), ("boolean replicates", {"replicates": True}), ("fractional replicates", {"replicates": 25.5}),
                      ("confidence 1", {"confidence": 1.0}), ("confidence as text", {"confidence": "0.9"}), ("a text seed", {"rng": "seed"}),
                      ("a boolean seed", {"rng": True})):
        calls.append((f"a bootstrap with {label}", lambda kw=kw: bayes.ibu_bootstrap(c, n, p, q, **kw), tuple(kw)))
    return [Case("estimator", f"ibu: {label}", call, names, PARAM_ERRORS) for label, call, names in calls]


def _from_columns_or_raw(mech: Any, cols: dict) -> Any:
    try:
        return mech.base._from_columns(cols)
    except (LDPInputError, LDPParameterError, ValueError, TypeError):
        return cols


def hostile_keywords(mech: Any) -> list:
    """``(keyword, value)`` pairs ``estimate`` must refuse: an unknown keyword, and each optional
    keyword it takes at a value outside its range or of the wrong type."""
    sig = inspect.signature(mech.estimate)
    out: list = [("no_such_keyword", 1)]
    for p in sig.parameters.values():
        if p.default is inspect.Parameter.empty:
            continue
        if p.name == "confidence":
            out += [(p.name, v) for v in (math.nan, 0.0, 1.0, 1.5, -0.1, "0.9", True, np.float64("inf"))]
        elif p.name in ("target", "postprocess", "decoder"):
            out += [(p.name, "bogus"), (p.name, 3)]
        elif p.name == "replicates":
            out += [(p.name, v) for v in (-1, 2.5, True, "100", 2**63)]
        elif p.name == "buckets":
            out += [(p.name, v) for v in (0, 3, -1, 2.5, True, 2**40)]
        elif p.name == "candidates" and ((not has(mech, ClosedDomain) and mech.domain_size is not None) or (has(mech, ClosedDomain) and mech.closed)):
            out += [(p.name, ["a", "b"])]  # a closed domain: candidates would be ignored
        elif isinstance(p.default, bool):
            out += [(p.name, "yes"), (p.name, 2)]
    return out


# -- measurements -----------------------------------------------------------------------------------------
def measurement_cases(decl: Any, mech: Any, *, quick: bool = False) -> list:
    """:class:`Case` per misuse of the OpenDP measurements of ``mech`` (registered as ``decl``):
    ``make_<name>`` with the parameter cases, ``make_ldp`` with a foreign metric or a bad ``rng``,
    a measurement called on a value outside the domain, a map asked for a bad ``d_in``."""
    maker = getattr(meas_mod, "make_" + str(decl.name).replace("-", "_"), None)
    cases: list = []
    if maker is not None:
        for c in parameter_cases(decl, make=maker, hostile=False, surface="measurement"):
            cases.append(c)
        if quick:
            cases = cases[::4]
    if has(mech, Keyed):
        cases.append(Case("measurement", f"{decl.name}: make_ldp of a keyed mechanism",
                          lambda: meas_mod.make_ldp(*meas_mod.space_of(mech), mech), ("key", "longitudinal", "make_longitudinal"), PARAM_ERRORS))
        cases.append(Case("measurement", f"{decl.name}: make_longitudinal with a short key",
                          lambda: meas_mod.make_longitudinal(mech, key=b"short"), ("key",), DATA_ERRORS))
        longi = meas_mod.make_longitudinal(mech, rng=SeededRandomSource(1))
        for label, v in (("a code past the domain", SENTINEL_CODE), ("a negative code", -1), ("a bool", True), ("text", SENTINEL_TEXT), ("a float", 0.5)):
            cases.append(Case("measurement", f"{decl.name}: the longitudinal measurement on {label}", lambda v=v: longi(v), ("code", "argument"), DATA_ERRORS))
        if mech.epsilon_inst is None:  # no instantaneous layer: one report per key
            once = meas_mod.make_longitudinal(mech, rng=SeededRandomSource(1))
            cases.append(Case("measurement", f"{decl.name}: a second report of a once-only key", lambda: (once(0), once(0)), ("instantaneous", "second", "key"),
                              PARAM_ERRORS))
        return cases
    cases.append(Case("measurement", f"{decl.name}: make_longitudinal of an unkeyed mechanism", lambda: meas_mod.make_longitudinal(mech),
                      ("longitudinal",), PARAM_ERRORS))
    cases.append(Case("measurement", f"{decl.name}: make_ldp of a name, not a mechanism", lambda: meas_mod.make_ldp(*meas_mod.space_of(mech), decl.name),
                      ("mechanism",), PARAM_ERRORS))
    dom, _metric = meas_mod.space_of(mech, "user")
    cases.append(Case("measurement", f"{decl.name}: make_ldp with a foreign metric",
                      lambda: meas_mod.make_ldp(dom, dp.symmetric_distance(), mech), ("input_metric", "metric"), PARAM_ERRORS))
    cases.append(Case("measurement", f"{decl.name}: make_ldp with an rng of text",
                      lambda: meas_mod.make_ldp(*meas_mod.space_of(mech, "user"), mech, rng="not-a-source"), ("rng",), PARAM_ERRORS))
    cases.append(Case("measurement", f"{decl.name}: space_of an unknown unit", lambda: meas_mod.space_of(mech, "bogus"), ("unit",), PARAM_ERRORS))
    user = meas_mod.make_ldp(*meas_mod.space_of(mech, "user"), mech, rng=SeededRandomSource(1))
    pop = meas_mod.make_ldp(*meas_mod.space_of(mech, "population"), mech, rng=SeededRandomSource(1))
    for c in input_cases(mech, quick=quick):
        if c.value is not None:
            cases.append(Case("measurement", f"{decl.name}: the per-user measurement on {c.label.split(': ', 1)[1]}",
                              lambda value=c.value[0]: user(value), c.names + ("argument",), DATA_ERRORS))
    cases.append(Case("measurement", f"{decl.name}: the population measurement on one value", lambda: pop(0),
                      ("batch", "argument"), DATA_ERRORS))
    for label, d_in in (("negative", -1), ("fractional", 0.5), ("boolean", True), ("text", "1")):
        cases.append(Case("measurement", f"{decl.name}: the user map at a {label} d_in", lambda d_in=d_in: user.map(d_in), ("d_in",), PARAM_ERRORS))
        cases.append(Case("measurement", f"{decl.name}: the population map at a {label} d_in", lambda d_in=d_in: pop.map(d_in), ("d_in",), PARAM_ERRORS))
    return cases

