"""The mechanisms' other paths: the valid but unusual ways a user's value, a mechanism's spec and its
reports go through the library, each held to the path the other layers verify.

The other layers drive each registered mechanism with integer codes (or one label type) in a numpy
array, through ``randomize`` and the accumulator's ``add``, and its default estimate. Users also pass
Polars Series (String, Categorical, Enum, integer), numpy text arrays (``U``, ``S``), bytes, integer
or float labels, categories given as an array, sets as CSR pairs, ``SetBatch``, Polars
``List``/``Array`` columns, Python sets or single items, tuples as frames or list columns; servers
merge accumulators and add grouped histograms; ``ldp choose`` builds the mechanisms each family
declares and ranks them by their analytic errors. :func:`mechanism_paths_layer` runs, for every
registered name (its first canonical instance), the wrappers and an open alphabet (:data:`PATH_CHECKS`):

* **input forms** (values, sets, tuples, key–value sets, open-alphabet items): every form of the same
  users' values gives, under one seeded source, the reports of the reference form **identically**
  (labels relabelled ``item-i`` stand for code ``i``; a label-keyed client, which hashes the label,
  is its own reference); ``randomize_one`` is the batch path's report of that user; ``decode``
  gives the labels back; categories given as a numpy array or a Polars Series build the same
  mechanism; CSR codes through ``randomize_encoded`` (and sample-one's ``encode``) report what the
  sets report;
* **spec round trip**: ``from_spec(spec())`` rebuilds the mechanism (same spec, identical reports);
  numpy-typed parameters build it too, with a plain-JSON spec;
* **server paths**: ``merge`` of two accumulators counts what one accumulator given both batches
  counts; ``add_histogram`` of the grouped reports (what ``ldp collect`` runs on a report file of a
  mechanism declaring ``histogram_columns``) counts what ``add`` counts; cohort reports stored as
  arrays come back whole;
* **support paths** (frequency oracles): ``supports(output, item)`` on a batch's channel outputs,
  ``support_matrix`` and ``support_sizes`` give the support counts, and the channel's rows give
  exactly ``p*`` / ``q*`` through ``supports``;
* **realized ε**: the ``realized_epsilon`` property is ``ln`` of ``realized_ratio`` rounded up, at
  most ε, and the channel's worst ratio does not exceed ``realized_ratio``; RS+FD's
  ``attribute_epsilon`` is its channel's worst one-attribute ratio;
* **analytic errors** (what ``ldp choose`` ranks by): ``analytic_mse`` at a uniform population and
  the trees' ``analytic_range_variance`` against the measured error of the real client and server
  over ``R`` collections (normal / χ² bounds at a 10⁻⁶ rate); k-RR's ``ibu`` (multinomial
  likelihood, bootstrap) and ``em`` options through the estimator layer's cell;
* **parameter choices**: every ``choose_variants`` of a registered class builds and realizes at
  most the ε asked;
* **memoized series**: reports are a function of the memoized unit (two values with one unit report
  identically under one source: what the lifetime charge counts), the units follow
  ``unit_probabilities``; a ``DistinctValueGuard`` changes no report within ``max_values`` and
  refuses the value past it, recording nothing; ``new_user_key`` gives fresh 32-byte keys; the
  memoized permanent reports equal their PRF definition at a domain where the PRF extension runs
  (all six first candidates rejected: about one user in 729 there);
* **OpenDP measurements of other input domains**: ``make_set_ldp`` (user, population; closed and
  open alphabets) reports what ``SampleOne.randomize`` reports on one source and charges the padded
  mechanism's ε; ``then_ldp`` / ``then_<name>`` chained after the input space are ``make_ldp``; the
  shuffled batch's privacy profile is 0 at ``d_in = 0`` and ``central_delta`` at 1 and 2;
* **crafted reports** (robustness attacks): OUE's maximal-gain fakes set every target bit with an
  honest report's number of ones; OLH's keep the best of the seeds they tried (recounted here);
* **the public face**: every name of ``ldp_plugin.__all__`` is its module's object; a moved name
  warns; an unknown name is an ``AttributeError``.

A failure names the name, the path and what differed (never a user's value). Seeded bugs
(:mod:`.seeded_bugs`): a k-RR reading a Polars Categorical through its physical ids, one whose
histogram path ignores the counts, one stating half its error. Cost: ≈ 9 s CPU (full), ≈ 3 s (quick:
fewer label kinds and collections).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import time
import warnings
from fractions import Fraction
from statistics import NormalDist
from typing import Any, Optional

import numpy as np
import polars as pl
from scipy.stats import chi2

from ..._errors import LDPInputError, LDPParameterError
from ...exact import epsilon_of_ratio, float_up, ratio_within_exp
from ...hashing import seeded_hash
from ... import measurements as meas_mod
from ...amplification.analysis import central_delta
from ...amplification.measurement import make_shuffle_amplified
from ...mechanisms import CMS, KRR, OLH, OUE
from ...mechanisms.sample_one import SampleOne
from ...mechanisms.key_value import KeyValueBatch
from ...mechanisms.longitudinal.memoized import _PERSON, DistinctValueGuard, Memoized, new_user_key
from ...mechanisms.protocol import Cohorted, ClosedDomain, InputKind, Keyed, SupportRates, SupportTestable, has
from ...mechanisms.haar import HaarHRR
from ...mechanisms.hierarchy import HierarchicalHistogram, flat_range_variance
from ...mechanisms.multi_attribute import RSFD
from ...mechanisms.cohort import report_batch_arrays, report_batch_from_arrays
from ...mechanisms.sets import PAD, SetBatch
from ...registry import KINDS, from_spec, load_registry
from ...registry._suite import wrapper_instances
from ...sampling import SeededRandomSource
from ..entry_points import _flat, _one_of
from ..estimators import estimator_cell
from ..layers import _pooled_chisquare

__all__ = ["mechanism_paths_layer", "PATH_CHECKS"]


def _kind(mech: Any) -> str:
    return str(mech.input_kind.value if isinstance(mech.input_kind, InputKind) else mech.input_kind)


def _keys(n: int, seed: int) -> list:
    raw = np.asarray(SeededRandomSource(seed).random_bytes(32 * n), dtype=np.uint8).reshape(n, 32)
    return [bytes(r) for r in raw]


def _run(mech: Any, batch: Any, seed: int, keys: Optional[list]) -> dict:
    """The reports of ``batch`` under ``SeededRandomSource(seed)`` as wire columns."""
    kw = {"user_keys": keys} if keys is not None else {}
    return mech.to_columns(mech.randomize(batch, rng=SeededRandomSource(seed), **kw))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def _one_matches(m: Any, value: Any, batch_of_one: Any, seed: int, key: Optional[bytes]) -> bool:
    """``randomize_one(value)`` is the batch path's report of that one user on the same source."""
    one = m.randomize_one(value, rng=SeededRandomSource(seed), user_key=key)
    ref = _one_of(m, m.randomize(batch_of_one, rng=SeededRandomSource(seed), **({"user_keys": [key]} if key is not None else {})))
    if _flat(one) == ref:
        return True
    cats = m.categories if has(m, ClosedDomain) else None  # a report naming items by label (k-RR's item, k-subset's items): their codes
    items = list(one) if isinstance(one, tuple) else [one]
    if cats is None or not all(isinstance(v, (str, bytes, int, float, bool, np.generic)) and v in cats for v in items):
        return False
    return _flat(m.encode(np.array(items, dtype=object))) == ref


def _check_form(m: Any, label: str, batch: Any, ref: dict, seed: int, keys: Optional[list]) -> Optional[str]:
    """None when ``batch`` gives the reference reports ``ref`` under ``SeededRandomSource(seed)``;
    else what went wrong (never a value)."""
    try:
        return None if _same(_run(m, batch, seed, keys), ref) else f"{label}: reports differ from the reference form under one seed"
    except (LDPInputError, LDPParameterError, TypeError) as e:
        return f"{label}: raised {type(e).__name__}"


def _head(batch: Any) -> Any:
    return batch.head(1) if isinstance(batch, pl.Series) else batch[:1]


# -- input forms ------------------------------------------------------------------------------------
#: the label kinds a closed-domain mechanism is relabelled with (label ``i`` stands for code ``i``)
LABEL_KINDS = {
    "str": lambda d: [f"item-{i}" for i in range(d)],
    "bytes": lambda d: [f"item-{i}".encode() for i in range(d)],
    "int": lambda d: [10 * i + 3 for i in range(d)],
    "float": lambda d: [0.5 + i for i in range(d)],
}


def _value_forms(mech: Any, n: int, seed: int, quick: bool) -> tuple:
    """``(cases, failures)``: every form of one batch of values against the reference reports (codes)."""
    d = int(mech.domain_size)
    keyed = has(mech, Keyed)
    codes = (np.arange(n) * 7 + 3) % d
    keys = _keys(n, seed + 1) if keyed else None
    cases, failures = 0, []

    def compare(label: str, m: Any, batch: Any, ref: dict) -> None:
        nonlocal cases
        cases += 1
        try:
            got = _run(m, batch, seed, keys)
            if not _same(got, ref):
                failures.append(f"{label}: reports differ from the reference form under one seed")
            elif not _one_matches(m, _head(batch)[0], _head(batch), seed + 1, None if keys is None else keys[0]):
                failures.append(f"{label}: randomize_one differs from the batch path")
        except (LDPInputError, LDPParameterError, TypeError) as e:
            failures.append(f"{label}: raised {type(e).__name__}")

    if mech.categories is not None:  # fixed labels (warner's booleans): the labels as a list and an array
        vals = [mech.categories[c] for c in codes]
        ref = _run(mech, np.array(vals, dtype=object), seed, keys)
        compare("own labels as a list", mech, vals, ref)
        compare("own labels as a numpy array", mech, np.array(vals), ref)
        return cases, failures
    ref = _run(mech, codes.astype(np.int64), seed, keys)
    forms = {"int32 array": codes.astype(np.int32), "uint16 array": codes.astype(np.uint16), "list of ints": codes.tolist(),
             "Polars Int64 Series": pl.Series(codes.astype(np.int64)), "Polars UInt32 Series": pl.Series(codes.astype(np.uint32))}
    if not keyed:  # (the keyed clients take integer arrays only)
        forms["object array of ints"] = np.array(codes.tolist(), dtype=object)
    for label, batch in forms.items():
        compare(f"codes as {label}", mech, batch, ref)
    for label, batch in (("an empty list", []), ("an empty int64 array", np.empty(0, dtype=np.int64)), ("an empty Polars Series", pl.Series([], dtype=pl.Int64))):
        cases += 1
        try:
            got = _run(mech, batch, seed, [] if keyed else None)
            if any(np.asarray(v).shape[:1] != (0,) for v in got.values()):
                failures.append(f"{label}: reports for no user")
        except (LDPInputError, LDPParameterError, TypeError) as e:
            failures.append(f"{label}: raised {type(e).__name__}")
    for kind, make in LABEL_KINDS.items():
        if quick and kind not in ("str", "int"):
            continue
        labels = make(d)
        try:
            lab = mech.with_categories(labels)
        except (LDPParameterError, TypeError, ValueError):
            continue
        vals = [labels[c] for c in codes]
        # a label-keyed client (a hashed or cohort oracle hashes the label itself) has its own reference: the list
        own = _run(lab, vals, seed, keys)
        kref = ref if _same(own, ref) else own
        forms = {"list": vals, "tuple": tuple(vals), "object array": np.array(vals, dtype=object)}
        if kind == "str":
            forms.update({"numpy U array": np.array(vals), "numpy S array (UTF-8)": np.array([v.encode() for v in vals]),
                          "list of bytes (UTF-8)": [v.encode() for v in vals], "Polars String Series": pl.Series(vals, dtype=pl.String),
                          "Polars Categorical Series": pl.Series(vals, dtype=pl.Categorical),
                          "Polars Enum Series": pl.Series(vals, dtype=pl.Enum(labels))})
            for how, cats in (("a numpy array", np.array(labels)), ("a Polars Series", pl.Series(labels))):
                cases += 1
                if mech.with_categories(cats) != lab:
                    failures.append(f"str labels: categories given as {how} build another mechanism")
            if has(lab, SupportRates):  # a frequency oracle over values: decode
                cases += 1
                if list(lab.decode(codes)) != vals:
                    failures.append("str labels: decode(codes) is not the labels")
        elif kind == "bytes":
            forms["numpy S array"] = np.array(vals)
        else:
            forms["numpy array"] = np.array(vals)
            forms[f"Polars {kind} Series"] = pl.Series(vals)
        for label, batch in forms.items():
            compare(f"{kind} labels as {label}", lab, batch, kref)
    return cases, failures


PATH_CHECKS: dict = {}


def _set_forms(mech: Any, n: int, seed: int, quick: bool, family: str = "") -> tuple:
    """``(cases, failures)``: every form of one batch of sets against the reference (a list of
    lists of codes, each set in increasing order); and batches of single items against sets of one."""
    d, m = int(mech.domain_size), int(mech.m)
    keyed = has(mech, Keyed)
    keys = _keys(n, seed + 1) if keyed else None
    sets = [sorted({(7 * i + 3 * j) % d for j in range(i % (m + 1))}) for i in range(n)]
    full = [sorted({(5 * i + j) % d for j in range(m)}) for i in range(n)]
    cases, failures = 0, []

    def compare(label: str, m_: Any, batch: Any, ref: dict) -> None:
        nonlocal cases
        cases += 1
        failures.extend(f for f in [_check_form(m_, label, batch, ref, seed, keys)] if f)

    def csr(rows: list, dtype: Any = np.int64) -> tuple:
        off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=off[1:])
        return np.array([v for r in rows for v in r], dtype=dtype), off

    ref = _run(mech, sets, seed, keys)
    vals, off = csr(sets)
    forms = {"list of tuples": [tuple(s) for s in sets], "list of frozensets": [frozenset(s) for s in sets],
             "list of numpy arrays": [np.array(s, dtype=np.int64) for s in sets], "(values, offsets) pair": (vals, off),
             "SetBatch": SetBatch(vals, off), "Polars List Series": pl.Series(sets, dtype=pl.List(pl.Int64))}
    for label, batch in forms.items():
        compare(f"sets as {label}", mech, batch, ref)
    cases += 1
    enc = mech.randomize_encoded(vals, offsets=off, rng=SeededRandomSource(seed), **({"user_keys": keys} if keyed else {}))
    if not _same(mech.to_columns(enc), ref):
        failures.append("CSR item codes through randomize_encoded differ from randomize of the sets")
    if family == "wrapper":  # sample-one: encode gives the sets' CSR codes, which randomize_encoded takes
        cases += 1
        codes, offsets = mech.encode(sets)
        if not _same(mech.to_columns(mech.randomize_encoded(codes, offsets=offsets, rng=SeededRandomSource(seed))), ref):
            failures.append("randomize_encoded of encode(sets) differs from randomize of the sets")
    ref_full = _run(mech, full, seed, keys)
    compare("equal-length sets as a Polars Array Series", mech, pl.Series(full, dtype=pl.Array(pl.Int64, m)), ref_full)
    singles = [(3 * i + 1) % d for i in range(n)]
    ref_one = _run(mech, [[c] for c in singles], seed, keys)
    for label, batch in (("numpy array", np.array(singles)), ("list", singles), ("Polars Series", pl.Series(singles))):
        compare(f"single items as a {label}", mech, batch, ref_one)
    if quick:
        return cases, failures
    try:
        lab = mech.with_categories([f"item-{i}" for i in range(d)])
    except (LDPParameterError, TypeError, ValueError):
        return cases, failures
    named = [[f"item-{c}" for c in s] for s in sets]
    lref = _run(lab, named, seed, keys)
    compare("labelled sets as a Polars List Series", lab, pl.Series(named, dtype=pl.List(pl.String)), lref)
    compare("labelled sets as a list of tuples", lab, [tuple(s) for s in named], lref)
    lvals, loff = csr(named, dtype=object)
    compare("labelled sets as a (values, offsets) pair", lab, (lvals, loff), lref)
    return cases, failures


def _open_forms(mech: Any, n: int, seed: int, quick: bool) -> tuple:
    """An open alphabet (the items are hashed): strings as a list (reference), a numpy ``U`` array,
    an object array, a Polars String or Categorical Series; integers as a list, an array, a Polars
    Series; for a set mechanism the same sets as lists, tuples, a Polars List column and a CSR pair;
    ``randomize_one`` of a value (a set) is the batch path's report of that user."""
    words = [f"w{(7 * i) % 11}" for i in range(n)]
    ints = [(7 * i) % 11 for i in range(n)]
    cases, failures = 0, []

    def compare(label: str, batch: Any, ref: dict) -> None:
        nonlocal cases
        cases += 1
        failures.extend(f for f in [_check_form(mech, label, batch, ref, seed, None)] if f)

    if _kind(mech) == "set":
        sets = [[f"w{(i + j) % 11}" for j in range(i % (int(mech.m) + 1))] for i in range(n)]
        ref = _run(mech, sets, seed, None)
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(x) for x in sets], out=off[1:])
        flat = np.empty(int(off[-1]), dtype=object)
        flat[:] = [v for x in sets for v in x]
        for label, batch in (("list of tuples", [tuple(x) for x in sets]), ("Polars List Series", pl.Series(sets, dtype=pl.List(pl.String))),
                             ("(values, offsets) pair", (flat, off))):
            compare(f"open-alphabet sets as a {label}", batch, ref)
        cases += 1
        labels = mech.sample_labels(sets, rng=SeededRandomSource(seed))
        if any(lab not in set(x) | {PAD} for lab, x in zip(labels, sets)):
            failures.append("sample_labels gave an item outside the user's set")
        return cases, failures
    ref = _run(mech, words, seed, None)
    for label, batch in (("numpy U array", np.array(words)), ("object array", np.array(words, dtype=object)),
                         ("Polars String Series", pl.Series(words, dtype=pl.String)), ("Polars Categorical Series", pl.Series(words, dtype=pl.Categorical))):
        compare(f"open-alphabet strings as a {label}", batch, ref)
    iref = _run(mech, ints, seed, None)
    for label, batch in (("numpy array", np.array(ints)), ("Polars Int64 Series", pl.Series(ints))):
        compare(f"open-alphabet integers as a {label}", batch, iref)
    cases += 1
    if not _one_matches(mech, words[0], words[:1], seed + 1, None):
        failures.append("randomize_one differs from the batch path")
    return cases, failures


def _tuple_forms(mech: Any, n: int, seed: int, quick: bool) -> tuple:
    """Several attributes: an ``n × A`` int64 array (reference), a list of tuples, a list of lists, a
    Polars frame of ``A`` integer columns, an object array of tuples, a Polars Series of lists and a
    float array of whole numbers give identical reports; ``randomize_one`` of a tuple is the batch
    path's report of that user."""
    doms = [int(k) for k in mech.domains]
    x = np.stack([(np.arange(n) * (3 + j) + j) % k for j, k in enumerate(doms)], axis=1).astype(np.int64)
    ref = _run(mech, x, seed, None)
    rows = [tuple(int(v) for v in r) for r in x]
    obj = np.empty(n, dtype=object)
    obj[:] = rows
    forms = {"list of tuples": rows, "list of lists": [list(r) for r in rows], "Polars DataFrame": pl.DataFrame({f"a{j}": x[:, j] for j in range(len(doms))}),
             "object array of tuples": obj, "Polars List Series": pl.Series([list(r) for r in rows], dtype=pl.List(pl.Int64)),
             "float array of whole numbers": x.astype(np.float64)}
    failures = [f for f in (_check_form(mech, f"tuples as {k}", b, ref, seed, None) for k, b in forms.items()) if f]
    cases = len(forms) + 1
    if not _one_matches(mech, rows[0], x[:1], seed + 1, None):
        failures.append("randomize_one of a tuple differs from the batch path")
    return cases, failures


def _key_value_forms(mech: Any, n: int, seed: int, quick: bool) -> tuple:
    """Key–value sets: a list of lists of pairs (reference), of tuples of pairs, pairs as lists and
    a :class:`KeyValueBatch` give identical reports; ``encode`` is ``encode_pairs``;
    ``randomize_encoded`` of codes is the inner k-RR's report of them; ``randomize_one``."""
    d = int(mech.d)
    data = [[((i + j) % d, ((i + 3 * j) % 5 - 2) / 2) for j in range(i % (min(d, mech.ell) + 1))] for i in range(n)]
    ref = _run(mech, data, seed, None)
    b = mech.encode_pairs(data)
    forms = {"tuples of pairs": [tuple(p) for p in data], "pairs as lists": [[list(kv) for kv in p] for p in data],
             "KeyValueBatch": KeyValueBatch(np.asarray(b.keys), np.asarray(b.values), np.asarray(b.offsets))}
    failures = [f for f in (_check_form(mech, f"key-value sets as {k}", b, ref, seed, None) for k, b in forms.items()) if f]
    cases = len(forms) + 3
    enc = mech.encode(data)
    if not (np.array_equal(enc.keys, b.keys) and np.array_equal(enc.values, b.values) and np.array_equal(enc.offsets, b.offsets) and enc.n == n):
        failures.append("encode differs from encode_pairs")
    codes = np.arange(n) % mech.codes
    got = np.asarray(mech.randomize_encoded(codes, rng=SeededRandomSource(seed)))
    want = np.asarray(KRR(epsilon=mech.epsilon, d=mech.codes).randomize_encoded(codes, rng=SeededRandomSource(seed)))
    if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
        failures.append("randomize_encoded differs from the inner k-RR on the same codes")
    if mech.randomize_one(data[1], rng=SeededRandomSource(seed + 1)) != int(mech.randomize([data[1]], rng=SeededRandomSource(seed + 1))[0]):
        failures.append("randomize_one differs from the batch path")
    cases += 1
    est = mech.estimate(mech.randomize(data, rng=SeededRandomSource(seed)))
    text = repr(est)
    if f"n={est.n:,}" not in text or f"{float(est.frequency[0]):.4f}" not in text or f"{float(est.mean[0]):+.4f}" not in text:
        failures.append("the estimate's summary does not show its n, frequencies and means")
    return cases, failures


# -- the spec ---------------------------------------------------------------------------------------
def _spec_paths(mech: Any, seed: int) -> tuple:
    """``from_spec(spec())`` rebuilds ``mech`` (identical reports); numpy parameters build it too."""
    failures = []
    spec = mech.spec()
    text = json.dumps(spec)
    back = from_spec(text)
    if back.spec() != spec or type(back).name != type(mech).name:
        failures.append("from_spec(spec()) builds another mechanism")
    else:
        batch = _sample_batch(mech, 16)
        keys = _keys(16, seed + 1) if has(mech, Keyed) else None
        if not _same(_run(back, batch, seed, keys), _run(mech, batch, seed, keys)):
            failures.append("the mechanism rebuilt from its spec reports differently under one seed")
    cases = 2
    fields = {f.name for f in dataclasses.fields(mech) if f.init}
    params = {k: v for k, v in spec.get("params", {}).items() if k in fields}
    if "params" in spec and "mechanism" not in params and len(params) == len(spec["params"]):
        as_numpy = {k: (np.int64(v) if isinstance(v, int) and not isinstance(v, bool) else np.float64(v) if isinstance(v, float) else v)
                    for k, v in params.items()}
        cases += 1
        try:
            other = type(mech)(**as_numpy)
            if other != mech or json.dumps(other.spec()) != text:
                failures.append("numpy-typed parameters build another mechanism (or a spec that is not plain JSON)")
        except (LDPParameterError, TypeError, ValueError) as e:
            failures.append(f"numpy-typed parameters refused ({type(e).__name__})")
    return cases, failures


def _sample_batch(mech: Any, n: int) -> Any:
    """A small valid batch of the mechanism's input kind (codes, numbers, sets, tuples, key–value sets)."""
    kind = _kind(mech)
    if kind == "number":
        return np.linspace(mech.lower, mech.upper, n)
    if has(mech, ClosedDomain) and not mech.closed:  # an open alphabet: words
        words = [f"w{(7 * i) % 11}" for i in range(n)]
        return [words[i: i + i % (int(mech.m) + 1)] for i in range(n)] if kind == "set" else words
    if kind == "set":
        d, m = int(mech.domain_size), int(mech.m)
        return [sorted({(7 * i + 3 * j) % d for j in range(i % (m + 1))}) for i in range(n)]
    if kind == "tuple":
        return np.stack([np.arange(n) % int(k) for k in mech.domains], axis=1)
    if kind == "key-value":
        return [[(i % mech.d, ((i % 5) - 2) / 2)] if i % 3 else [] for i in range(n)]
    d = int(mech.domain_size)
    codes = (np.arange(n) * 7 + 3) % d
    return codes if mech.categories is None else np.array([mech.categories[c] for c in codes], dtype=object)


# -- the server -------------------------------------------------------------------------------------
def _state(acc: Any) -> dict:
    return {k: (np.asarray(v).copy() if isinstance(v, np.ndarray) else v) for k, v in vars(acc).items()
            if k != "mechanism" and isinstance(v, (np.ndarray, int, float, np.integer, np.floating))}


def _same_state(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def _server_paths(mech: Any, seed: int) -> tuple:
    """``merge`` of two accumulators = one accumulator given both batches; ``add_histogram`` of the
    grouped reports = ``add`` of the reports (where ``histogram_columns`` is declared)."""
    keyed = has(mech, Keyed)
    batches = []
    for j, n in enumerate((40, 24)):
        batch = _sample_batch(mech, n)
        batches.append(mech.randomize(batch, rng=SeededRandomSource(seed + j), **({"user_keys": _keys(n, seed + 9 + j)} if keyed else {})))
    failures, cases = [], 0
    one = mech.accumulator()
    for r in batches:
        one.add(r)
    cases += 1  # every accumulator merges (MergeableCounts)
    merged = mech.accumulator().add(batches[0]).merge(mech.accumulator().add(batches[1]))
    if not _same_state(_state(merged), _state(one)):
        failures.append("merge of two accumulators differs from one accumulator given both batches")
    if not _same_state(_state(mech.accumulator().merge(mech.accumulator().add(batches[1]))), _state(mech.accumulator().add(batches[1]))):
        failures.append("merge into an empty accumulator changes the counts")
    if has(mech.base, Cohorted):  # kept reports stored as data (the accountant's interop) come back whole
        cases += 1
        r = batches[0]
        kind = report_batch_arrays(r)
        back = report_batch_from_arrays(kind["__kind__"], {k: v for k, v in kind.items() if k != "__kind__"}) if kind else r
        if len(back) != len(r) or not _same(mech.base.to_columns(back), mech.base.to_columns(r)):
            failures.append("cohort reports stored as arrays do not come back whole")
    cols_spec = mech.base.histogram_columns
    if cols_spec:
        cases += 1
        cols = [mech.base.to_columns(r) for r in batches]
        table = np.concatenate([np.stack([np.asarray(c[f]).astype(np.int64) for f in cols_spec], axis=1) for c in cols])
        rows, counts = np.unique(table, axis=0, return_counts=True)
        hist = mech.accumulator().add_histogram({f: rows[:, i] for i, f in enumerate(cols_spec)}, counts)
        if not _same_state(_state(hist), _state(one)):
            failures.append("add_histogram of the grouped reports differs from add of the reports")
    return cases, failures


# -- supports ---------------------------------------------------------------------------------------
def _support_paths(mech: Any, seed: int) -> tuple:
    """The support counts of a batch against ``supports`` on its channel outputs, ``support_matrix``
    and ``support_sizes``; the channel's rows against ``p*``/``q*`` through ``supports``."""
    d = int(mech.d)
    failures, cases = [], 0
    codes = (np.arange(48) * 5 + 1) % d
    reports = mech.randomize(codes if mech.categories is None else np.array([mech.categories[c] for c in codes], dtype=object),
                             rng=SeededRandomSource(seed))
    counts = np.asarray(mech.support_counts(mech.validate_reports(reports)))
    if has(mech, SupportTestable):
        cases += 1
        mat = np.asarray(mech.support_matrix(reports, np.arange(d)))
        if not np.array_equal(mat.sum(axis=0), counts) or not np.array_equal(np.asarray(mech.support_sizes(reports)), mat.sum(axis=1)):
            failures.append("support_matrix / support_sizes disagree with support_counts")
    if mech.q_star_over_hash:  # public reports carry fresh hash seeds: no channel output
        return cases, failures
    ch = mech.channel()
    cases += 2
    idx = np.asarray(mech.output_index(reports))
    rebuilt = np.array([sum(bool(mech.supports(ch.outputs[int(y)], i)) for y in idx) for i in range(d)])
    if not np.array_equal(rebuilt, counts):
        failures.append("supports(output, item) over a batch's outputs disagrees with support_counts")
    p, q = mech.p_star_exact, mech.q_star_exact
    for x in range(min(d, 4)):
        for i in range(d):
            got = sum(pr for pr, y in zip(ch.matrix[x], ch.outputs) if pr and mech.supports(y, i))
            if got != (p if i == x else q):
                failures.append(f"the channel row of input {x} supports item {i} with a probability other than {'p*' if i == x else 'q*'}")
                return cases, failures
    return cases, failures


# -- the analytic error ----------------------------------------------------------------------------
#: the analytic-error check: users per collection, the collections (at least, at most) and the CPU
#: seconds one mechanism may take (full, quick); a mechanism whose estimate is slow runs fewer
#: collections (never below the least); the quick run leaves the keyed series to the full run
ANALYTIC_RUNS = {"full": (200, 300, 1000, 0.3), "quick": (200, 300, 600, 0.06)}
#: the two-sided normal quantile of the analytic-error test (a 1e-6 false-alarm rate over ~40 tests)
ANALYTIC_Z = NormalDist().inv_cdf(1 - 1e-6 / 80)


def _squared_errors(mech: Any, R: int, n: int, d: int, seed: int) -> np.ndarray:
    """The raw estimate's squared l2 error on ``R`` collections of ``n`` users uniform over ``d`` items."""
    theta = np.full(d, 1.0 / d)
    vals = np.tile(np.arange(d), n * R // d)
    kw = {"user_keys": _keys(n * R, seed + 5)} if has(mech, Keyed) else {}
    batch = vals if mech.categories is None else np.array([mech.categories[c] for c in vals], dtype=object)
    cols = mech.base.to_columns(mech.randomize(batch, rng=SeededRandomSource(seed), **kw))
    se = np.empty(R)
    for r in range(R):
        part = mech.base.from_columns({k: np.asarray(v)[r * n:(r + 1) * n] for k, v in cols.items()})
        se[r] = float(((np.asarray(mech.estimate(part).raw) - theta) ** 2).sum())
    return se


def _analytic_error(mech: Any, seed: int, quick: bool) -> tuple:
    """``analytic_mse(n, theta, sampling="fixed")`` (what ``ldp choose`` and the theory tables rank
    by) against the measured squared error of the raw estimate: ``R`` collections of the same ``n``
    users, exactly uniform over the ``d`` items, through the real client and server;
    ``|mean SE − A| <= z · sd(SE)/√R`` at a 10⁻⁶ family-wise rate; ``R`` grows with the CPU
    budget of :data:`ANALYTIC_RUNS` (a cheap estimator runs the most collections). Power: the
    seeded bug ``halved-analytic-mse`` (k-RR at d = 2, the least favourable case: its squared error
    is one scaled χ²₁) is caught in the full and the quick run; the check found the finite
    channels' ``sampling="fixed"`` formula 32% high (the multinomial covariance)."""
    n, r_min, r_max, budget = ANALYTIC_RUNS["quick" if quick else "full"]
    if quick and has(mech, Keyed):  # a fresh key per user and collection: the full run checks the series
        return 0, []
    d = int(mech.domain_size)
    n -= n % d
    try:
        A = float(mech.analytic_mse(n, theta=np.full(d, 1.0 / d), sampling="fixed"))
    except LDPParameterError:  # no analytic error formula (the base's answer)
        return 0, []
    t0 = time.process_time()
    se = _squared_errors(mech, r_min, n, d, seed)
    per = max(time.process_time() - t0, 1e-6) / r_min
    extra = int(min(r_max, max(r_min, budget // per))) - r_min
    if extra > 0:
        se = np.concatenate([se, _squared_errors(mech, extra, n, d, seed + 1)])
    R = se.size
    tol = ANALYTIC_Z * float(se.std(ddof=1)) / math.sqrt(R)
    if not abs(float(se.mean()) - A) <= tol:
        return 1, [f"analytic_mse {A:.4g} vs the measured {float(se.mean()):.4g} ± {tol:.2g} (R={R}, n={n})"]
    return 1, []


def _estimator_options(seed: int, quick: bool) -> tuple:
    """The post-processing options the estimator layer does not ask of k-RR (the one oracle whose
    report names one item): ``postprocess="ibu"`` (the exact multinomial likelihood and its
    parametric bootstrap) and ``"em"``, each on a zipf population through the estimator layer's
    own cell (bias, stated variance, interval coverage; :func:`~ldp_plugin.verification.estimators.judge`)."""
    failures = []
    krr = KRR(epsilon=1.0, d=4)
    for i, option in enumerate(("ibu", "em")):
        cell = estimator_cell(krr, "zipf", R=40 if quick else 80, n=500, seed=seed + 17 * i, alpha=1e-7, postprocess=option)
        if not cell["passed"]:
            failures.append(f"k-RR postprocess={option!r}: " + ", ".join(st["label"] for st in cell["statistics"] if not st["passed"]))
    return 2, failures


def _attribute_level(mech: Any) -> tuple:
    """RS+FD's attribute-level guarantee (the ε when one attribute changes), from the exact
    channel: the worst ratio over pairs of tuples differing in one attribute equals
    ``attribute_epsilon`` (rounded up); :meth:`RSFD.from_attribute_epsilon` over equal domain sizes
    gives a mechanism whose attribute-level ε is at most the one asked (with unequal sizes it is
    not, as the module says) and whose ``epsilon`` covers the whole tuple."""
    ch, T = mech.channel(), mech._tuples()
    worst = Fraction(1)
    for a in range(len(T)):
        for b in range(len(T)):
            if int((T[a] != T[b]).sum()) == 1:
                worst = max([worst] + [pa / pb for pa, pb in zip(ch.matrix[a], ch.matrix[b]) if pb])
    failures = []
    if epsilon_of_ratio(worst) != mech.attribute_epsilon:
        failures.append("attribute_epsilon is not the channel's worst one-attribute ratio")
    equal = (int(mech.domains[0]),) * len(mech.domains)  # the paper's claim holds for equal domain sizes (module docstring)
    built = type(mech).from_attribute_epsilon(0.5, domains=equal)
    if built.attribute_epsilon > 0.5 + 1e-12 or epsilon_of_ratio(built.realized_ratio) > built.epsilon:
        failures.append("from_attribute_epsilon exceeds the attribute-level ε asked or its whole-tuple ε")
    return 2, failures


def _range_variance(mech: Any, seed: int, quick: bool) -> tuple:
    """The trees' ``analytic_range_variance(values, lo, hi)`` (the interval the range query states)
    against ``R`` collections of the same users through the real client and server: the range
    fraction is unbiased (``|mean − truth| <= z·√(A/R)``) and its variance is ``A`` within the χ²
    bounds of ``R − 1`` degrees of freedom (α = 10⁻⁶: a variance off by a factor 2 fails); and
    ``flat_range_variance`` (the flat-histogram baseline ``ldp choose`` compares with) is the sum of
    OUE's per-item variances over the range."""
    R, n = (150 if quick else 300), 400
    lo_, hi_ = mech.lower + 0.25 * (mech.upper - mech.lower), mech.lower + 0.75 * (mech.upper - mech.lower)
    vals = np.linspace(mech.lower, mech.upper, n + 2)[1:-1]
    truth = float(((vals >= lo_) & (vals < hi_)).mean())
    A = float(mech.analytic_range_variance(vals, lo_, hi_))
    src = SeededRandomSource(seed)
    f = np.array([mech.estimate(mech.randomize(vals, rng=src)).range_fraction(lo_, hi_).fraction for _ in range(R)])
    failures = []
    if abs(float(f.mean()) - truth) > ANALYTIC_Z * math.sqrt(A / R):
        failures.append(f"the range fraction is biased ({float(f.mean()):.4g} for {truth:.4g})")
    ratio = float(f.var(ddof=1)) / A
    a = 1e-6 / 80
    if not chi2.ppf(a / 2, R - 1) / (R - 1) <= ratio <= chi2.ppf(1 - a / 2, R - 1) / (R - 1):
        failures.append(f"the range variance is {ratio:.3g} × analytic_range_variance (R={R})")
    theta = np.array([0.5, 0.1, 0.0])
    if not math.isclose(flat_range_variance(1.0, 500, 3, theta), float(OUE(epsilon=1.0, d=3).variance(theta, 500).sum()), rel_tol=1e-12):
        failures.append("flat_range_variance is not the sum of OUE's per-item variances")
    return 3, failures


# -- realized ε -------------------------------------------------------------------------------------
def _realized(mech: Any) -> tuple:
    ch = mech.channel()
    ratio = ch.max_ratio()
    eps = float(mech.epsilon)
    failures = []
    if ratio > mech.realized_ratio:
        failures.append("the channel's worst ratio exceeds the realized_ratio property")
    realized = epsilon_of_ratio(mech.realized_ratio) if has(mech, Keyed) else mech.realized_epsilon  # (a series: its one-report ratio)
    if realized != epsilon_of_ratio(mech.realized_ratio) or realized > eps:
        failures.append("the realized_epsilon property is not ln(realized_ratio) rounded up, at most epsilon")
    return 1, failures


# -- parameter choices ------------------------------------------------------------------------------
def _choices(reg: dict, *, epsilon: float = 1.0, d: int = 6, n: int = 10_000, m: int = 2) -> tuple:
    """Every ``choose_variants`` of every registered class (and the ``default_parameters`` the builders
    derive for a frequency oracle) builds (with ε, or ε1 under ε∞ = 2ε for a series) and realizes at
    most the ε asked."""
    failures, cases = [], 0
    for name, decl in sorted(reg.items()):
        cls = decl.mechanism_class()
        defaults = cls.default_parameters({}, epsilon=epsilon, d=d, n=n) if decl.kind == "frequency" else {}
        variants = list(cls.choose_variants(epsilon=epsilon, d=d, n=n, m=m)) + ([defaults] if defaults else [])  # (what registry.build derives)
        for kw in variants:
            cases += 1
            built = None
            for base in ({"epsilon": epsilon, "d": d}, {"epsilon": epsilon, "d": d, "m": m}, {"epsilon_perm": 2 * epsilon, "epsilon_1": epsilon, "d": d},
                         {"epsilon": epsilon}):
                try:
                    built = cls(**base, **kw)
                    break
                except (LDPParameterError, TypeError, ValueError):
                    continue
            if built is None:
                failures.append(f"{name}: the declared choice {kw} does not build")
            elif epsilon_of_ratio(built.realized_ratio) > epsilon:
                failures.append(f"{name}: the declared choice {kw} realizes more than the epsilon asked")
    return cases, failures


# -- memoized series --------------------------------------------------------------------------------
def _series_paths(mech: Any, seed: int, family: str) -> tuple:
    """Keyed mechanisms: reports are a function of (memoized unit, key, fresh randomness) — two
    values of one user with the same ``memo_units`` report identically under one source (what the
    lifetime charge counts); a ``DistinctValueGuard`` changes no report within ``max_values`` and
    refuses the value past it before reporting; ``new_user_key`` gives fresh 32-byte keys."""
    failures, cases = [], 0
    d = int(mech.domain_size)
    keys = _keys(12, seed + 3)
    if family == "longitudinal":  # the law of the memoized units (what ``ldp choose``'s expected lifetime reads)
        cases += 1
        N = 3000 - 3000 % d
        weights = np.arange(1, d + 1)
        vals = np.repeat(np.arange(d), N * weights // int(weights.sum()))
        theta = np.bincount(vals, minlength=d) / vals.size
        units = np.asarray(mech.memo_units(vals, _keys(vals.size, seed + 7)))
        law = np.asarray(mech.unit_probabilities(theta), dtype=np.float64)
        if units.ndim != 1 or units.size and int(units.max()) >= law.size or _pooled_chisquare(np.bincount(units, minlength=law.size), law) < 1e-8:
            failures.append("the memoized units do not follow unit_probabilities")
    if family == "longitudinal":  # a registered series protocol: its memoized units
        for k in keys:
            units = np.asarray(mech.memo_units(np.arange(d), [k] * d))
            for a in range(d):
                for b in range(a + 1, d):
                    if np.array_equal(units[a], units[b]):
                        cases += 1
                        ra = _run(mech, np.array([a] * 8), seed, [k] * 8)
                        rb = _run(mech, np.array([b] * 8), seed, [k] * 8)
                        if not _same(ra, rb):
                            failures.append("two values with one memoized unit report differently under one source")
                            return cases, failures
    if family == "memoized":  # the memoized wrapper: its distinct-value guard
        cases += 3
        mv = int(mech.max_values)
        guard = DistinctValueGuard()
        vals = np.arange(len(keys)) % d
        if not _same(mech.to_columns(mech.randomize(vals, keys, rng=SeededRandomSource(seed), guard=guard)), _run(mech, vals, seed, keys)):
            failures.append("a DistinctValueGuard changed reports within max_values")
        for step in range(1, mv):
            mech.randomize((vals + step) % d, keys, rng=SeededRandomSource(seed + step), guard=guard)
        try:
            mech.randomize((vals + mv) % d, keys, rng=SeededRandomSource(seed), guard=guard)
            failures.append("a DistinctValueGuard let a user report more than max_values distinct values")
        except LDPInputError:
            pass
        try:
            mech.randomize(vals, keys, rng=SeededRandomSource(seed), guard=guard)  # the refused batch recorded nothing
        except LDPInputError:
            failures.append("a refused batch was recorded by the DistinctValueGuard")
        bounds = [mech.lifetime_bound(t) for t in (1, 2, 3)]
        cases += 1
        if bounds != [mech.series_bound(t) for t in (1, 2, 3)] or sorted(bounds) != bounds or not ratio_within_exp(mech.channel().max_ratio(), float_up(bounds[0])):
            failures.append("the series' lifetime bound is not nondecreasing, or below one report's exact loss (its channel)")
        if not np.array_equal(mech.encode(vals), vals):
            failures.append("encode of item codes is not the codes")
        a, b = new_user_key(), new_user_key()
        if len(a) != 32 or len(b) != 32 or a == b:
            failures.append("new_user_key does not give fresh 32-byte keys")
        cases += 1
        failures += _prf_definition(seed, 8_000)  # ≈ 11 users through the extension (none: probability e^-11)
    return cases, failures


#: a domain whose Lemire rejection is likely: r = d − 1 just over 2**32 / 3 rejects a 32-bit candidate
#: with probability ≈ 1/3, so all six of the first digest's candidates with ≈ 1/729 (the PRF extension)
_PRF_D = (1 << 32) // 3 + 2


def _prf_reference(fp: bytes, code: int, key: bytes, threshold: int, d: int) -> int:
    """One user's memoized permanent report from its definition (one value at a time, Python
    integers): keep the value iff the first 64-bit PRF word is below ``threshold``; else the other
    item by Lemire's method on the 32-bit words of the PRF stream (the digest's six, then further
    blocks ``1, 2, …`` of eight), rejecting a word whose low product is below ``2**32 mod r``."""
    digest = hashlib.blake2b(fp + code.to_bytes(8, "little"), key=key, person=_PERSON, digest_size=32).digest()
    if int.from_bytes(digest[:8], "little") < threshold:
        return code
    r = d - 1
    reject = (1 << 32) % r
    stream, block = digest[8:], 1
    while True:
        for j in range(0, len(stream), 4):
            m = int.from_bytes(stream[j:j + 4], "little") * r
            if (m & 0xFFFFFFFF) >= reject:
                other = m >> 32
                return other + (other >= code)
        stream = hashlib.blake2b(fp + code.to_bytes(8, "little") + block.to_bytes(4, "little"), key=key, person=_PERSON, digest_size=32).digest()
        block += 1


def _prf_definition(seed: int, n: int) -> list:
    """The memoized permanent reports against :func:`_prf_reference` at a domain where the PRF
    extension runs (a user whose first six candidates are all rejected): equal for every user, and
    the extension reached (else the check would not have tested it)."""
    m = Memoized(epsilon_permanent=1.0, epsilon_instantaneous=0.5, d=_PRF_D)
    keys = _keys(n, seed)
    g = np.random.default_rng(seed)
    values = g.integers(0, _PRF_D, n)
    got = m.permanent(values, keys)
    fp, T = m.fingerprint(), int(m.permanent_mechanism.keep_threshold)
    want = [_prf_reference(fp, int(v), bytes(k), T, _PRF_D) for v, k in zip(values.tolist(), keys)]
    out = [] if np.array_equal(got, np.asarray(want)) else ["memoized permanent reports differ from the PRF definition (keep word, Lemire, extension)"]
    extended = 0
    for v, k in zip(values.tolist(), keys):
        digest = hashlib.blake2b(fp + int(v).to_bytes(8, "little"), key=bytes(k), person=_PERSON, digest_size=32).digest()
        if int.from_bytes(digest[:8], "little") >= T and all(
                (int.from_bytes(digest[j:j + 4], "little") * (_PRF_D - 1) & 0xFFFFFFFF) < (1 << 32) % (_PRF_D - 1) for j in range(8, 32, 4)):
            extended += 1
    if not extended:
        out.append("the PRF definition check drew no user whose first six candidates were all rejected (raise n)")
    return out


# -- crafted reports --------------------------------------------------------------------------------
def _attack_paths(seed: int) -> tuple:
    """OUE's maximal-gain fakes: every target bit set and an honest report's number of ones; OLH's
    fakes with several tries: each keeps one of its tried seeds, and one under which the most targets
    share a hashed value (recounted here), reporting that value."""
    failures = []
    oue = OUE(epsilon=0.5, d=16)
    targets = np.array([2, 9])
    fakes = np.unpackbits(oue.max_gain_reports(targets, 40, rng=SeededRandomSource(seed)), axis=1, count=16, bitorder="little")
    ones = max(int(np.floor(oue.p_star + 15 * oue.q_star)), targets.size)
    if not fakes[:, targets].all() or not (fakes.sum(axis=1) == ones).all():
        failures.append("OUE's maximal-gain fakes miss a target bit or an honest report's number of ones")
    olh = OLH(epsilon=0.5, d=16)
    targets, m, tries = np.array([1, 4, 7, 11]), 24, 6
    fakes = olh.max_gain_reports(targets, m, rng=SeededRandomSource(seed), tries=tries)
    seeds = SeededRandomSource(seed).words(m * tries).reshape(m, tries)
    keys = olh.item_keys()[targets]
    for i in range(m):
        best = 0
        for s in seeds[i]:
            _, counts = np.unique(seeded_hash(keys, np.uint64(s), olh.g), return_counts=True)
            best = max(best, int(counts.max()))
        got = int((seeded_hash(keys, np.uint64(fakes[i, 0]), olh.g) == int(fakes[i, 1])).sum())
        if int(fakes[i, 0]) not in set(seeds[i].tolist()) or got != best:
            failures.append("an OLH maximal-gain fake supports fewer targets than the best seed it tried")
            break
    return 2, failures


# -- measurements of other input domains ----------------------------------------------------------
def _measurement_paths(seed: int) -> tuple:
    """The OpenDP measurements beyond ``make_ldp`` on a value: ``make_set_ldp`` (per user, and
    a population of sets) reports what ``SampleOne.randomize`` reports on the same source and
    charges the padded mechanism's ε; ``then_ldp`` and ``then_<name>`` (no unit, a unit) chained
    after the input space give ``make_ldp``'s reports; the shuffled batch's privacy profile is 0 at
    ``d_in = 0`` and :func:`central_delta` at 1 and 2. Not run (no failure) when the caller has not
    opted in to OpenDP's features."""
    try:
        meas_mod.require_ldp_features()
    except LDPParameterError:
        return 0, []
    failures, cases = [], 0
    krr = KRR(epsilon=1.0, d=5)
    for so in (SampleOne(mechanism=krr, m=2), SampleOne(mechanism=CMS(epsilon=1.0, k=8, cohorts=2), m=2)):
        sets = [[0, 3], [1], []] if so.closed else [["a", "b"], ["c"], []]
        for unit, batch in (("user", sets[0]), ("population", sets)):
            cases += 1
            got = meas_mod.make_set_ldp(so, unit=unit, rng=SeededRandomSource(seed))(batch)
            ref = so.randomize([batch] if unit == "user" else batch, rng=SeededRandomSource(seed))
            same = _flat(got) == _one_of(so, ref) if unit == "user" else _same(so.to_columns(got), so.to_columns(ref))
            if not same:
                failures.append(f"make_set_ldp ({unit}, {'closed' if so.closed else 'open'} alphabet) differs from SampleOne.randomize on one source")
        cases += 1
        if meas_mod.make_set_ldp(so).map(1) != meas_mod.make_ldp(*meas_mod.space_of(so.padded), so.padded).map(1):
            failures.append("make_set_ldp charges another ε than the padded mechanism")
    space = meas_mod.space_of(krr, "user")
    ref = meas_mod.make_ldp(*space, krr, rng=SeededRandomSource(seed))
    want = [ref(v) for v in (0, 4, 2)]
    for label, partial in (("then_ldp", meas_mod.then_ldp(krr, rng=SeededRandomSource(seed))),
                           ("then_krr()", meas_mod.then_krr(epsilon=1.0, d=5, rng=SeededRandomSource(seed))),
                           ("then_krr(unit='user')", meas_mod.then_krr(epsilon=1.0, d=5, unit="user", rng=SeededRandomSource(seed)))):
        cases += 1
        meas = partial(*space)
        if [meas(v) for v in (0, 4, 2)] != want or meas.map(1) != ref.map(1):
            failures.append(f"{label} chained after the input space differs from make_ldp")
    shuffled = make_shuffle_amplified(krr, 50)
    cases += 1
    if shuffled.map(0).delta(1.0) != 0.0 or any(shuffled.map(k).delta(1.0) != central_delta(krr, 50, 1.0) for k in (1, 2)):
        failures.append("the shuffled batch's privacy profile is not 0 at d_in = 0 and central_delta at 1 and 2")
    return cases, failures


def _sum_checks(*results: tuple) -> tuple:
    return sum(c for c, _ in results), [f for _, fs in results for f in fs]


# -- the public face --------------------------------------------------------------------------------
def _face() -> tuple:
    """Every name of ``ldp_plugin.__all__`` is its defining module's object (the face re-exports, it
    never wraps); a moved name warns and gives the new object; an unknown name is an AttributeError."""
    face = importlib.import_module("ldp_plugin")
    failures, cases = [], 0
    for name in face.__all__:
        cases += 1
        obj = getattr(face, name)
        home = importlib.import_module(getattr(obj, "__module__", None) or "ldp_plugin")
        if getattr(obj, "__name__", name) == name and getattr(home, name, None) is not obj:
            failures.append(f"ldp_plugin.{name} is not its module's object")
    cases += 4
    if any(str(k) != k.value or f"{k:>12}" != format(k.value, ">12") for k in InputKind):
        failures.append("an InputKind does not print as its value")
    if not set(face.__all__) <= set(dir(face)):
        failures.append("dir(ldp_plugin) misses public names")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        moved = getattr(face, "make_randomized_response_warner")
    if moved is not getattr(face, "make_warner") or not any(issubclass(w.category, DeprecationWarning) for w in caught):
        failures.append("a moved name does not warn or does not give the new object")
    try:
        getattr(face, "no_such_public_name")
        failures.append("an unknown name did not raise AttributeError")
    except AttributeError:
        pass
    return cases, failures


# -- the layer --------------------------------------------------------------------------------------
def _instances(reg: dict, names: Optional[tuple]) -> list:
    """``(name, mechanism, family)``: every registered name's first canonical instance (its
    declared kind), the wrappers (``memoized`` for the memoized one), and (whole run) an open alphabet."""
    out = [(n, reg[n].mechanism_class()(**reg[n].canonical[0]), reg[n].kind) for n in sorted(reg) if names is None or n in names]
    out += [(n, m, "memoized" if has(m, Keyed) else "wrapper") for n, m in wrapper_instances() if names is None or n in names]
    if names is None:  # an open alphabet (hashed items): a cohort oracle and sample-one around it
        cms = CMS(epsilon=1.0, k=8, cohorts=2)
        out += [("cms (open alphabet)", cms, "frequency"), ("sample-one (open alphabet)", SampleOne(mechanism=cms, m=2), "wrapper")]
    return out


#: per-instance checks: ``name -> (applies(mech), check(mech, seed, quick, family) -> (cases, failures))``
PATH_CHECKS = {
    "value forms": (lambda m: _kind(m) == "value" and m.domain_size is not None, lambda m, s, q, f: _value_forms(m, 24, s, q)),
    "set forms": (lambda m: _kind(m) == "set" and m.domain_size is not None, lambda m, s, q, f: _set_forms(m, 24, s, q, f)),
    "open-alphabet forms": (lambda m: has(m, ClosedDomain) and not m.closed, lambda m, s, q, f: _open_forms(m, 24, s, q)),
    "tuple forms": (lambda m: _kind(m) == "tuple", lambda m, s, q, f: _tuple_forms(m, 24, s, q)),
    "key-value forms": (lambda m: _kind(m) == "key-value", lambda m, s, q, f: _key_value_forms(m, 24, s, q)),
    "spec round trip": (lambda m: True, lambda m, s, q, f: _spec_paths(m, s)),
    "server paths": (lambda m: True, lambda m, s, q, f: _server_paths(m, s)),
    "support paths": (lambda m: _kind(m) == "value" and has(m, SupportRates), lambda m, s, q, f: _support_paths(m, s)),
    "realized epsilon": (lambda m: not (has(m, ClosedDomain) and not m.closed), lambda m, s, q, f: _realized(m)),
    "analytic error": (lambda m: _kind(m) == "value" and m.domain_size is not None, lambda m, s, q, f: _analytic_error(m, s, q)),
    "memoized series": (lambda m: has(m, Keyed), lambda m, s, q, f: _series_paths(m, s, f)),
}


def mechanism_paths_layer(*, seed: int = 0, quick: bool = False, directory: Any = None, names: Optional[tuple] = None,
                          replace: Optional[dict] = None) -> dict:
    """The module's checks on every registered name (first canonical instance) and the wrappers
    (``names``: only those); ``replace`` maps a name to a function of its instance giving the
    mechanism to check instead (the seeded bugs). ``directory`` is unused (no files)."""
    t0, c0 = time.perf_counter(), time.process_time()
    reg = load_registry(kinds=KINDS)
    replace = replace or {}
    failures, counts = [], {}
    for i, (name, mech, family) in enumerate(_instances(reg, names)):
        mech = replace[name](mech) if name in replace else mech
        for check, (applies, run) in PATH_CHECKS.items():
            if not applies(mech):
                continue
            try:
                cases, fails = run(mech, seed + 101 * i, quick, family)
            except Exception as e:  # noqa: BLE001 - a path that raises on valid input fails; the row names the type
                cases, fails = 1, [f"raised {type(e).__name__}"]
            counts[check] = counts.get(check, 0) + cases
            failures += [f"{name}: {check}: {f}" for f in fails]
    if names is None:
        for check, run in (("parameter choices", lambda: _choices(reg)), ("crafted reports", lambda: _attack_paths(seed)),
                           ("measurements", lambda: _measurement_paths(seed)), ("estimator options", lambda: _estimator_options(seed, quick)),
                           ("attribute-level epsilon", lambda: _attribute_level(RSFD(epsilon=1.0, domains=(2, 3)))),
                           ("range variance", lambda: _sum_checks(_range_variance(HaarHRR(epsilon=1.0, buckets=4), seed, quick),
                                                                  _range_variance(HierarchicalHistogram(epsilon=1.0, buckets=4, fanout=2), seed + 1, quick))),
                           ("public face", _face)):
            try:
                cases, fails = run()
            except Exception as e:  # noqa: BLE001
                cases, fails = 1, [f"raised {type(e).__name__}"]
            counts[check] = cases
            failures += [f"{check}: {f}" for f in fails]
    return {"layer": "mechanism paths", "cases": sum(counts.values()), "checks": counts, "failures": failures[:10], "n_failures": len(failures),
            "seconds": round(time.perf_counter() - t0, 2), "cpu_seconds": round(time.process_time() - c0, 2), "passed": not failures}
