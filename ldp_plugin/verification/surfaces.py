"""The surfaces layer: the other doors a user's value goes through — the Polars ``ldp`` namespace,
the OpenDP measurements, ``randomize_one`` — held to the verified batch path, and every refusal a
client and a server owe (out-of-domain inputs and arguments refused with the library's error, no
user data in the message, malformed reports rejected and counted).

The inputs come from the entry-point drivers (:func:`~ldp_plugin.verification.entry_points.entry_cases`,
one per input kind), so a new kind reaches this layer as soon as it has a driver. For a mechanism:

* **namespace** (``frame.ldp``, reached as users reach it, through the frame): ``privatize`` (values,
  numbers, sets), ``privatize_attributes`` (several attributes) or ``privatize_key_values`` (key–value
  sets) on a DataFrame with an integer ``seed`` gives, row for row, the reports of the batch path on
  chunk 0's stream (``chunk_source(seed, 0)``: the path the other layers verify); a LazyFrame of the
  same rows gives the same reports; the reports frame goes back to the mechanism unchanged and its
  ``estimate`` frame is the mechanism's own estimate of those reports. A keyed mechanism is refused
  by ``privatize`` (its reports need the user's key: a per-user measurement).
* **measurement**: the per-user and population OpenDP measurements (``make_ldp`` over ``space_of``;
  ``make_longitudinal`` for a keyed one) randomize with the batch path on the same source, and their
  maps charge ``0`` at ``d_in = 0``, ε rounded up at ``1`` and ``≥ k·ε`` at ``k`` (the population map);
  a registered name's ``make_<name>(**params)`` builds the same mechanism. The OpenDP features must
  be enabled by the caller (``ldp verify`` is such a caller); otherwise the case is reported as not run.
* **refusals**: an unknown keyword, a bad ``rng``, ``cohorts=`` / ``user_keys=`` / ``offsets=`` where
  they do not apply, and inputs outside the declared domain (a code ``d`` and ``−1``, an unknown label,
  a 2-d batch, a number past ``upper`` or NaN, a set longer than ``m`` under the default policy, an
  attribute code past its domain, a key–value pair with a value past ``[−1, 1]``) must raise the
  library's ``ValueError`` (never another exception), and the message must not repeat the value; a
  report batch with a row out of range is refused by the accumulator and, on the wire, rejected and
  counted — never estimated; the namespace refuses its own misuses (no mechanism, an unknown policy,
  a missing or mistyped column, an empty frame, a null value, a repeated user id, cohorts or a query id
  where they do not apply, an empty or incomplete reports frame) before any report exists.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from .. import measurements as meas_mod
from ..exact import float_up
from ..mechanisms import reports as reports_mod
from ..mechanisms.protocol import InputKind, Keyed, has
from ..sampling import SeededRandomSource, chunk_source
from .entry_points import _keys, entry_cases

__all__ = ["surfaces_layer", "refusal_cases", "namespace_refusals", "SENTINEL_CODE", "SENTINEL_LABEL"]

#: values no message may repeat (they stand for a user's data)
SENTINEL_CODE = 7_654_321
SENTINEL_LABEL = "secret-label-7f3a"


def _kind(mech: Any) -> str:
    return str(mech.input_kind.value if isinstance(mech.input_kind, InputKind) else mech.input_kind)


def _values(mech: Any) -> list:
    """One value per case of the mechanism's own driver (the mechanism itself: not a relabelled copy);
    a mechanism whose channel is too large to enumerate (OLH at a large ε: 4·g outputs) still has its
    surfaces driven, on the ends and the middle of its input domain."""
    try:
        cases = entry_cases(mech)
    except LDPParameterError:
        kind = _kind(mech)
        if kind == "value":
            items = list(mech.categories) if mech.categories is not None else list(range(int(mech.domain_size)))
            return [items[0], items[len(items) // 2], items[-1]]
        if kind == "number":
            lo, hi = float(mech.lower), float(mech.upper)
            return [lo, (lo + hi) / 2, hi]
        if kind == "set":
            items = list(mech.items)
            return [[items[0]], items[: mech.m], [items[-1]]]
        raise
    out = []
    for _label, m, make, _keyed, _row, _x in cases:
        if m is mech:
            v = make(1)[0]
            out.append(v.tolist() if isinstance(v, np.ndarray) else v)
    return out


def _same_frame(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    return a.columns == b.columns and a.height == b.height and all(a[c].to_list() == b[c].to_list() for c in a.columns)


def _batch_of(mech: Any, values: list) -> Any:
    kind = _kind(mech)
    if kind == "tuple":
        return np.asarray(values, dtype=np.int64).reshape(len(values), -1)
    if kind in ("set", "key-value"):
        return [list(v) for v in values]
    if kind == "number":
        return np.asarray(values, dtype=np.float64)
    if mech.categories is not None:
        return np.array(values, dtype=object)
    return np.asarray(values, dtype=np.int64)


def _column(mech: Any, values: list) -> pl.Series:
    kind = _kind(mech)
    if kind == "number":
        return pl.Series("v", [float(v) for v in values], dtype=pl.Float64)
    if kind == "set":
        return pl.Series("v", [[str(x) if not isinstance(x, (int, np.integer)) else int(x) for x in v] for v in values])
    if mech.categories is not None:
        return pl.Series("v", [v if isinstance(v, (bool, np.bool_)) else str(v) for v in values])
    return pl.Series("v", [int(v) for v in values], dtype=pl.Int64)


def _namespace(mech: Any, seed: int) -> list:
    """Failures of the Polars namespace against the batch path (module docstring)."""
    values = _values(mech) * 3
    n = len(values)
    kind = _kind(mech)
    fails: list = []
    ids = pl.Series("user", np.arange(n, dtype=np.int64))
    if has(mech, Keyed):
        df = pl.DataFrame([ids, pl.Series("v", np.zeros(n, dtype=np.int64))])
        if _raises(lambda: df.ldp.privatize("v", mech, seed=seed)) is not LDPParameterError:
            fails.append("privatize accepted a keyed mechanism (its reports need the user's key)")
        return fails
    if kind == "tuple":
        codes = _batch_of(mech, values)
        cols = [f"a{j}" for j in range(codes.shape[1])]
        df = pl.DataFrame([ids] + [pl.Series(c, codes[:, j]) for j, c in enumerate(cols)])
        got = df.ldp.privatize_attributes(cols, mech, seed=seed, user_id="user")
        lazy = df.lazy().ldp.privatize_attributes(cols, mech, seed=seed, user_id="user")
        ref = mech.randomize(codes, rng=chunk_source(seed, 0))
        if _raises(lambda: df.ldp.privatize("a0", mech, seed=seed)) is not LDPParameterError:
            fails.append("privatize accepted a several-attribute mechanism")
        est = got.ldp.attribute_frequencies(mech)
        want = mech.estimate(ref).to_polars()
    elif kind == "key-value":
        keys = pl.Series("k", [[int(k) for k, _v in pairs] for pairs in values], dtype=pl.List(pl.Int64))
        vals = pl.Series("w", [[float(v) for _k, v in pairs] for pairs in values], dtype=pl.List(pl.Float64))
        df = pl.DataFrame([ids, keys, vals])
        got = df.ldp.privatize_key_values("k", mech, values="w", seed=seed)
        lazy = df.lazy().ldp.privatize_key_values("k", mech, values="w", seed=seed)
        ref = mech.randomize(_batch_of(mech, values), rng=chunk_source(seed, 0))
        est = got.ldp.key_values(mech).drop("interval_kind", "mean_interval_kind")  # the labels the adapter adds
        want = mech.estimate(ref).to_polars()
    else:
        df = pl.DataFrame([ids, _column(mech, values)])
        got = df.ldp.privatize("v", mech, seed=seed, user_id="user")
        lazy = df.lazy().ldp.privatize("v", mech, seed=seed, user_id="user")
        kept = df.ldp.privatize("v", mech, seed=seed, user_id="user", keep_user_id=True)
        ref = mech.randomize(_batch_of(mech, values), rng=chunk_source(seed, 0))
        if kept.columns[0] != "user" or not _same_frame(kept.drop("user"), got):
            fails.append("keep_user_id=True changed the reports or did not put the user id first")
        est = got.ldp.estimate(mech)
        want = mech.estimate(ref).to_polars()
        if "interval_kind" in est.columns:  # the label the adapter adds to intervals that are not plain ones
            if est["interval_kind"].to_list() != [str(mech.estimate(ref).interval_kind)] * est.height:
                fails.append("the namespace's estimate labels its intervals otherwise than the mechanism's estimate")
            est = est.drop("interval_kind")
    ref_frame = reports_mod.reports_to_frame(mech, ref)
    if not _same_frame(got, ref_frame):
        fails.append(f"the namespace's reports differ from the batch path on the same stream ({kind})")
    if not _same_frame(lazy, got):
        fails.append("a LazyFrame gave other reports than the DataFrame of the same rows")
    back = reports_mod.frame_to_reports(mech, got)
    if not _same_columns(mech, back, ref):
        fails.append("the reports frame did not go back to the mechanism's reports unchanged")
    if not _same_frame(est, want):
        fails.append("the namespace's estimate differs from the mechanism's estimate of the same reports")
    return fails


def _same_columns(mech: Any, a: Any, b: Any) -> bool:
    ca, cb = mech.base._to_columns(a), mech.base._to_columns(b)
    return ca.keys() == cb.keys() and all(np.array_equal(np.asarray(ca[k]), np.asarray(cb[k])) for k in ca)


def _flat(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [v for item in x.values() for v in _flat(item)]
    return np.asarray(x).ravel().tolist()


def _measurement(mech: Any, seed: int) -> tuple:
    """``(failures, ran)`` of the OpenDP measurements (module docstring)."""
    try:
        meas_mod.require_ldp_features()
    except LDPParameterError:
        return [], False
    fails: list = []
    value = _values(mech)[-1]
    eps = mech.epsilon
    if has(mech, Keyed):
        key = _keys(1, SeededRandomSource(seed))[0]
        m = meas_mod.make_longitudinal(mech, key=key if mech.epsilon_inst is not None else None, rng=SeededRandomSource(seed))
        if mech.epsilon_inst is not None:
            got = m(int(value))
            ref = mech.randomize(np.array([int(value)]), [key], rng=SeededRandomSource(seed))
            if _flat(got) != _flat(ref):
                fails.append("make_longitudinal's report differs from the batch path on the same key and source")
            charged = float_up(mech.epsilon_inst)
        else:
            charged = float(mech.epsilon)
        if m.map(0) != 0 or m.map(1) != charged:
            fails.append("make_longitudinal's map is not 0 at d_in = 0 and the instantaneous ε at 1")
        if _raises(lambda: meas_mod.make_ldp(*meas_mod.space_of(mech), mech)) is not LDPParameterError:
            fails.append("make_ldp accepted a keyed mechanism")
        return fails, True
    user = meas_mod.make_ldp(*meas_mod.space_of(mech, "user"), mech, rng=SeededRandomSource(seed))
    one = user(value)
    ref = mech.randomize_one(value, rng=SeededRandomSource(seed))
    if _flat(one) != _flat(ref):
        fails.append("the per-user measurement's report differs from randomize_one on the same source")
    if user.map(0) != 0 or user.map(1) < eps or user.map(1) != float_up(eps):
        fails.append(f"the per-user measurement's map is not 0 at d_in = 0 and ε rounded up at 1 (got {user.map(1)!r})")
    pop = meas_mod.make_ldp(*meas_mod.space_of(mech, "population"), mech, rng=SeededRandomSource(seed))
    batch = _batch_of(mech, _values(mech))
    out = pop(batch)
    ref = mech.randomize(batch, rng=SeededRandomSource(seed))
    if not _same_columns(mech, out, ref):
        fails.append("the population measurement's reports differ from the batch path on the same source")
    if pop.map(3) < 3 * eps:
        fails.append("the population map charges less than k·ε for k changed users")
    maker = getattr(meas_mod, "make_" + str(mech.name).replace("-", "_"), None)
    if maker is not None and type(mech).__module__.startswith("ldp_plugin."):
        try:
            built = maker(**mech.params())
        except (LDPParameterError, TypeError):
            built = None
        if built is not None and built.map(1) != user.map(1):
            fails.append(f"make_{mech.name} charges another ε than make_ldp of the same mechanism")
    return fails, True


def _raises(fn: Callable) -> Optional[type]:
    """The class of the exception ``fn`` raises (None: it returned)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any exception is the answer
        return type(e)
    return None


def refusal_cases(mech: Any) -> list:
    """``(label, call, sentinel or None)``: calls that must raise the library's ``ValueError``;
    the message must not contain ``sentinel`` (a value standing for user data)."""
    kind = _kind(mech)
    values = _values(mech)
    good = _batch_of(mech, values)
    n = len(values)
    keyed = has(mech, Keyed)
    src = lambda: SeededRandomSource(1)  # noqa: E731
    kw = {"user_keys": _keys(n, SeededRandomSource(2))} if keyed else {}
    cases = [
        ("an unknown keyword", lambda: mech.randomize(good, rng=src(), bogus=1, **kw), None),
        ("an rng that is no source", lambda: mech.randomize(good, rng="not-a-source", **kw), None),
    ]
    if not mech.takes_cohorts:
        cases.append(("cohorts= on a mechanism without cohorts", lambda: mech.randomize(good, rng=src(), cohorts=np.zeros(n, np.int64), **kw), None))
    if not keyed:
        cases.append(("user_keys= on a mechanism without keys", lambda: mech.randomize(good, rng=src(), user_keys=_keys(n, src())), None))
    if kind != "set":
        cases.append(("offsets= on a mechanism without sets", lambda: mech.randomize_encoded(np.zeros(n, np.int64), rng=src(), offsets=np.arange(n + 1), **kw), None))

    def bad(label: str, batch: Any, sentinel: Any = None) -> None:
        cases.append((label, lambda: mech.randomize(batch, rng=src(), **kw), sentinel))

    if kind == "value":
        d = mech.domain_size
        if mech.categories is None and d is not None:
            bad("an item code past the domain", np.array([0] * (n - 1) + [SENTINEL_CODE], dtype=np.int64), SENTINEL_CODE)
            bad("a negative item code", np.array([0] * (n - 1) + [-1], dtype=np.int64))
            bad("a 2-d batch of codes", np.zeros((n, 2), dtype=np.int64))
            cases.append(("randomize_one of a code past the domain", lambda: mech.randomize_one(SENTINEL_CODE, rng=src(), user_key=kw.get("user_keys", [None])[0]), SENTINEL_CODE))
        elif mech.categories is not None:
            bad("an unknown label", np.array(list(values[:-1]) + [SENTINEL_LABEL], dtype=object), SENTINEL_LABEL)
    elif kind == "number":
        past = float(mech.upper) + (float(mech.upper) - float(mech.lower)) + 0.123456789
        bad("a number past upper", np.array([past] * n), f"{past}")
        bad("a NaN", np.array([math.nan] * n))
        bad("a 2-d batch of numbers", np.zeros((n, 2)))
    elif kind == "set":
        items = list(mech.items)
        bad("a set with an unknown item", [list(values[0][:0]) + [SENTINEL_LABEL] for _ in range(n)], SENTINEL_LABEL)
        if len(items) > mech.m:
            bad("a set longer than m (on_long='error')", [items[: mech.m + 1] for _ in range(n)])
    elif kind == "tuple":
        past = np.array(good, copy=True)
        past[-1, 0] = SENTINEL_CODE
        bad("an attribute code past its domain", past, SENTINEL_CODE)
        bad("a batch of the wrong width", np.zeros((n, good.shape[1] + 1), dtype=np.int64))
    elif kind == "key-value":
        bad("a value past [-1, 1]", [[(0, 3.5)] for _ in range(n)], "3.5")
        bad("a key past the domain", [[(SENTINEL_CODE, 0.0)] for _ in range(n)], SENTINEL_CODE)
    return cases


def namespace_refusals(mech: Any) -> list:
    """``(label, call, sentinel)``: misuses of ``frame.ldp.privatize`` / ``estimate`` the namespace
    must refuse before any report exists (values, numbers and sets; other kinds have their own door)."""
    kind = _kind(mech)
    if kind not in ("value", "number", "set") or has(mech, Keyed):
        return []
    values = _values(mech)
    n = len(values)
    col = _column(mech, values)
    ids = pl.Series("user", np.arange(n, dtype=np.int64))
    df = pl.DataFrame([ids, col])
    dup = pl.DataFrame([pl.Series("user", np.zeros(n, dtype=np.int64)), col])
    nulls = pl.DataFrame([ids, pl.Series("v", [None] * n, dtype=col.dtype)])
    wrong = pl.DataFrame([ids, pl.Series("v", [[1]] * n) if kind != "set" else pl.Series("v", [1.5] * n)])
    reports = df.ldp.privatize("v", mech, seed=1)
    return [
        ("privatize with no mechanism", lambda: df.ldp.privatize("v", "krr"), None),
        ("an unknown unknown= policy", lambda: df.ldp.privatize("v", mech, unknown="drop"), None),
        ("keep_user_id without user_id", lambda: df.ldp.privatize("v", mech, keep_user_id=True), None),
        ("unknown='other' without an other category", lambda: df.ldp.privatize("v", mech, unknown="other", other=SENTINEL_LABEL), None),
        ("a missing column", lambda: df.ldp.privatize("w", mech), None),
        ("a missing user id column", lambda: df.ldp.privatize("v", mech, user_id="uid"), None),
        ("a column of the wrong type", lambda: wrong.ldp.privatize("v", mech), None),
        ("an empty frame", lambda: df.head(0).ldp.privatize("v", mech), None),
        ("a null value", lambda: nulls.ldp.privatize("v", mech, seed=1), None),
        ("a repeated user id", lambda: dup.ldp.privatize("v", mech, user_id="user", seed=1), None),
        ("query_id without an accountant", lambda: df.ldp.privatize("v", mech, query_id="q"), None),
        ("cohorts= misused", lambda: df.ldp.privatize("v", mech, cohorts=-1 if mech.takes_cohorts else 7), None),
        ("an empty reports frame", lambda: reports.head(0).ldp.estimate(mech), None),
        ("a reports frame without its columns", lambda: reports.lazy().rename({reports.columns[-1]: "x"}).ldp.estimate(mech), None),
    ]


def _refusals(mech: Any, seed: int) -> tuple:
    fails: list = []
    cases = refusal_cases(mech) + namespace_refusals(mech)
    for label, call, sentinel in cases:
        try:
            call()
        except (LDPInputError, LDPParameterError) as e:
            if sentinel is not None and str(sentinel) in str(e):
                fails.append(f"{label}: the message repeats the value")
            continue
        except Exception as e:  # noqa: BLE001 - anything but the library's error is a failure
            fails.append(f"{label}: raised {type(e).__name__}, not the library's error")
            continue
        fails.append(f"{label}: accepted")
    # the server: a row out of range is refused by the accumulator and rejected on the wire
    keyed = has(mech, Keyed)
    values = _values(mech)
    batch = _batch_of(mech, values)
    reports = mech.randomize(batch, rng=SeededRandomSource(seed), **({"user_keys": _keys(len(values), SeededRandomSource(seed))} if keyed else {}))
    cols = {k: np.array(v, copy=True) for k, v in mech.base._to_columns(reports).items()}
    # an int (or sorted) field's value at its bound, else the dtype's largest (a packed-bit field: only with padding bits)
    def outside(f: Any) -> bool:
        return f.bound is not None and np.asarray(cols[f.name]).dtype.kind in "iu" and (f.kind in ("int", "sorted") or (f.kind == "bits" and f.bound % 8 != 0))

    field = next((f for f in mech.base.report_fields() if outside(f)), None)
    if field is not None:
        a = cols[field.name]
        top = np.iinfo(a.dtype).max if field.kind == "bits" else min(int(field.bound), int(np.iinfo(a.dtype).max))
        if a.ndim == 1:
            a[-1] = top
        else:
            a[-1, 0] = top
        broken = mech.base._from_columns(cols)
        if _raises(lambda: mech.accumulator().add(broken)) is not LDPInputError:
            fails.append(f"the accumulator accepted a report with {field.name!r} out of range")
        tag = bytes(16)
        _ok, rejected = reports_mod.from_wire_many(mech, reports_mod.to_wire_each(mech, broken, tag=tag), tag=tag)
        if sum(rejected.values()) != 1:
            fails.append(f"the wire did not reject exactly the one report out of range ({rejected})")
        cases.append(("a report out of range", None, None))
    return fails, len(cases)


def surfaces_layer(mech: Any, *, quick: bool = False, seed: int = 0) -> dict:
    """The namespace, the measurements and the refusals of one mechanism (module docstring)."""
    failures: list = []
    for part, run in (("namespace", lambda: _namespace(mech, seed)), ("measurement", lambda: _measurement(mech, seed + 1)[0])):
        try:
            failures += [f"{part}: {f}" for f in run()]
        except Exception as e:  # noqa: BLE001 - a crash on a valid input is a failure, reported, not raised
            failures.append(f"{part}: {type(e).__name__} on valid input: {str(e)[:160]}")
    try:
        ref_fails, n_refusals = _refusals(mech, seed + 2)
    except Exception as e:  # noqa: BLE001
        ref_fails, n_refusals = [f"{type(e).__name__}: {str(e)[:160]}"], 0
    failures += [f"refusal: {f}" for f in ref_fails]
    return {"layer": "surfaces", "refusal_cases": n_refusals, "failures": failures[:8], "passed": not failures}
