"""The mechanisms' other paths: the valid but unusual ways a user's value, a mechanism's spec and its
reports go through the library, each held to the path the other layers verify.

The other layers drive each registered mechanism with integer codes (or one label type) in a numpy
array, through ``randomize`` and the accumulator's ``add``. Users also pass Polars Series (String,
Categorical, Enum, integer), numpy text arrays (``U``, ``S``), bytes, integer or float labels,
categories given as an array, sets as CSR pairs, ``SetBatch``, Polars ``List``/``Array`` columns,
Python sets or single items; servers merge accumulators and add grouped histograms; ``ldp choose``
builds the mechanisms each family declares. :func:`mechanism_paths_layer` runs, for every registered
name (its first canonical instance) and the wrappers:

* **input forms**: every form of the same users' values gives, under one seeded source, the reports
  of the reference form (codes in an ``int64`` array; labels relabelled ``item-i`` stand for code
  ``i``) **identically**; ``randomize_one`` of each form's first value is the batch path's report of
  that user; ``decode(encode(labels))`` gives the labels back; categories given as a numpy array or a
  Polars Series build the same mechanism as a list;
* **spec round trip**: ``from_spec(spec())`` rebuilds an equal mechanism giving identical reports;
  numpy parameters (``np.int64`` sizes, ``np.float64`` ε) build the same mechanism and a JSON spec;
* **server paths**: two batches merged (``merge``) count what one accumulator counts after adding
  both, and a mechanism declaring ``histogram_columns`` counts its reports' grouped histogram
  (``add_histogram``: distinct values and their counts) exactly as the reports themselves; the
  estimates are then equal;
* **support paths** (oracles answering ``supports``): the support counts of a batch equal the counts
  rebuilt from ``supports(output, item)`` on its channel outputs, ``support_matrix`` and
  ``support_sizes``; and the channel's rows give exactly ``p*`` / ``q*`` through ``supports``
  (averaged over the verification seeds for a hashed oracle);
* **realized ε**: the ``realized_epsilon`` property equals ``ln`` of the channel's worst ratio
  rounded up, at most ε;
* **parameter choices**: every ``choose_variants`` of a registered class (what ``ldp choose``
  ranks) builds, and realizes at most the ε asked;
* **memoized series**: a ``DistinctValueGuard`` leaves reports unchanged while a user stays within
  ``max_values`` and refuses the value past it, before any report; ``new_user_key`` gives fresh
  32-byte keys; ``memo_units`` equals the permanent layer's units;
* **crafted reports** (the robustness attacks): OUE's maximal-gain fakes set every target bit and
  have an honest report's number of ones; OLH's fakes with several tries support at least as many
  targets as any seed they tried;
* **the public face**: every name of ``ldp_plugin.__all__`` is the object of its home module.

A failure names the name, the path and what differed (never a user's value). Seeded bugs
(:mod:`.seeded_bugs`) plant a mechanism whose Polars path, histogram path or spec differs.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import time
import warnings
from typing import Any, Callable, Optional

import numpy as np
import polars as pl

from ..._errors import LDPInputError, LDPParameterError
from ...exact import epsilon_of_ratio
from ...mechanisms import reports as reports_mod
from ...mechanisms.longitudinal.memoized import DistinctValueGuard, new_user_key
from ...mechanisms.protocol import InputKind, Keyed, has
from ...mechanisms.sets import SetBatch
from ...registry import KINDS, from_spec, load_registry
from ...registry._suite import wrapper_instances
from ...sampling import SeededRandomSource
from ..entry_points import _flat, _one_of

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
    cats = getattr(m, "categories", None)  # a report naming items by label (k-RR's item, k-subset's items): their codes
    items = list(one) if isinstance(one, tuple) else [one]
    if cats is None or not all(isinstance(v, (str, bytes, int, float, bool, np.generic)) and v in cats for v in items):
        return False
    return _flat(m.encode(np.array(items, dtype=object))) == ref


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
            if hasattr(lab, "decode"):
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
