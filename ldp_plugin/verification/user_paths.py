"""The user-paths layer: the doors the surfaces and workflows layers leave shut — the Polars
discovery, key–value and several-attribute namespaces with and without a ledger, the collect
job's other formats and ledger options, simulate's families and options, the discovery protocol's
levels and the ledger's audit, period and backup paths — each held to the library path it claims
to run.

It sits with the command line (it runs ``ldp`` in-process, as :mod:`.workflows` does), so
``ldp verify`` runs it over the whole registry (:func:`user_path_rows`, one row per case). What
every case checks:

* **the release equals the library path** under a seeded source: ``frame.ldp.heavy_hitters`` (a
  string column, an inferred domain, a LazyFrame; a set column through SampleOne, whose rows are
  the library's discovery of the padded sample scaled by ``set_size``), ``privatize_key_values``
  (two list columns and one list-of-struct column: the same reports as the mechanism's
  ``randomize`` on chunk 0's stream), ``privatize_attributes`` (every multi-attribute name: the
  same reports as ``randomize_encoded``; ``keep_user_id`` puts the id first and changes nothing
  else), a Categorical or Enum column (the reports of its String column), ``unknown="other"``
  (those of the mapped column), ``sink=`` (the parts hold the in-memory reports), the estimate's
  poisoning bound (that of :func:`~ldp_plugin.robust.bounds.poison_bound`), a CSV job with a list
  separator (the namespace's reports of the split column, written as CSV), ``ldp simulate`` with
  each distribution and ``--param`` (the library's :func:`~ldp_plugin.simulate.simulate` of the
  mechanism the parameters build), ``ldp demo``'s text (the JSON's numbers), the discovery
  accumulator fed a list, a LazyFrame, Parquet paths or two merged halves (the one-frame result);
* **charges equal the realized ε rounded up**: every ledger row a path writes holds exactly
  :func:`~ldp_plugin.mechanisms.charge.report_charge` of the mechanism it ran (a discovery: its
  :meth:`report_cost`), charged once: a retried query id returns the kept reports or is refused,
  and never charges again;
* **a refused call leaves the ledger unchanged** (its totals, rows and remaining budget read back
  after each refusal): a value past the domain in the last row, a set longer than ``m``, a null item,
  an inferred domain, a bad seed, a missing query id, a job whose output cannot be written, a
  partitioned job with a missing column or a bad item in its last partition, a partitioned retry,
  a spend past a cap or on no cohort;
* **refusals are clean and echo nothing**: the library's own error (or exit status 2 without a
  traceback), and a message that does not repeat the value standing for the user's data;
* **the ledger's audit holds**: a release that fails after its spend is charged once, marked
  ``partial`` and its retry refused; a ledger copied mid-transaction (with its hot journal) opens
  at its last commit; a backup opens with the same totals and rows; a copy whose totals
  were edited, whose population was rewritten or that is no ledger at all is refused; period caps
  reset at the period boundary and ``spends_since`` counts the rows; cohorts past SQLite's
  bound-variable limit are charged exactly.

Seeded bugs (:data:`USER_PATH_BUGS`, run by ``ldp verify --self-test``): one defective door swapped in
for its one case (module attribute, restored after it) — a heavy-hitters retry that is free and
released again, a key–value retry that re-randomizes, attributes randomized on the next seed's
streams, a job that checks its outputs only after the spend; each must make its case fail.

``quick``: one discovery method, one multi-attribute name, and no plot, partitioned or demo-text
cases (a smaller subset that still checks each module it reaches).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import sqlite3
import tempfile
import time
import warnings
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..accountant import Accountant, BudgetExceededError, LedgerError, Population
from .. import collect as _collect
from ..adapters import polars_key_value as _pkv, polars_multi as _pm, polars_namespace as _pns
from ..adapters.polars_discovery import sample_one_string
from ..adapters.polars_frames import ROWS_PER_CHUNK
from ..discovery.prefix import INFERRED, infer_domain
from ..discovery.query import build_query
from ..mechanisms import KRR, OUE, SampleOne
from ..mechanisms.charge import collection_charge, report_charge
from ..mechanisms.reports import reports_to_frame
from ..persist import INCOMPLETE_MARKER, mechanism_from_spec, read_report_spec
from ..registry import KINDS, build, load_registry
from ..robust.bounds import poison_bound
from ..sampling import SeededRandomSource, as_source, chunk_source
from ..simulate import (build_longitudinal, build_mean, check_simulation_memory, draw_sets, parse_params, simulate, simulate_longitudinal,
                        true_distribution)
from .refusals import refusal_problems
from .workflows import _run, _untimed, _write_job

__all__ = ["user_path_rows", "user_path_self_test", "CASES", "SENTINEL", "USER_PATH_BUGS"]

#: a value standing for a user's data: no refusal may repeat it
SENTINEL = 7_654_321
#: the library's refusals (each a ``ValueError``)
_REFUSALS = (LDPInputError, LDPParameterError, LedgerError, BudgetExceededError)


# -- small helpers -------------------------------------------------------------------------------
def _refusal_fails(label: str, call: Callable, sentinel: Any = None, kinds: tuple = _REFUSALS, unchanged: Optional[dict] = None) -> list:
    """``[]`` when ``call`` is refused as every refusal must be
    (:func:`~ldp_plugin.verification.refusals.refusal_problems`: one of the library's refusals, not
    repeating ``sentinel``, no raw engine text, each of ``unchanged`` unchanged), else what went
    wrong, each prefixed by ``label``."""
    values = () if sentinel is None else (sentinel,)
    return [f"{label}: {why}" for why in refusal_problems(call, errors=kinds, values=values, unchanged=unchanged)]


def _state(acc: Accountant) -> tuple:
    """What a refusal must leave unchanged: the totals, the audit rows and the remaining budget."""
    return (acc.remaining_by_cohort(), [(r.query_id, r.epsilon, r.cohorts) for r in acc.history()], acc.spent())


def _refusals_spend_nothing(acc: Accountant, cases: list) -> list:
    """``cases``: ``(label, call, sentinel)``; each must be refused cleanly, the ledger unchanged."""
    return [f for label, call, sentinel in cases for f in _refusal_fails(label, call, sentinel, unchanged={"the ledger": lambda: _state(acc)})]


def _same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    return a.columns == b.columns and a.height == b.height and all(a[c].to_list() == b[c].to_list() for c in a.columns)


def _ledger(tmp: Path, name: str, **pop: Any) -> Accountant:
    return Accountant.create(tmp / f"{name}.ledger", Population(name=name, **{"lifetime_cap": "20", **pop}))


def _clean_exit(argv: list, label: str, sentinel: Any = None) -> list:
    """The command refused with exit status 2 and the library's own message (no traceback, no
    Python exception name), not repeating ``sentinel``."""
    rc, _out, err = _run(argv)
    if rc != 2 or "Traceback" in err or re.search(r"error: \w*(Error|Exception)\b", err):  # the library's message, not Python's
        return [f"{label}: not refused cleanly (exit {rc})"]
    if sentinel is not None and str(sentinel) in err:
        return [f"{label}: the message repeats the value"]
    return []


# -- the Polars discovery namespace ----------------------------------------------------------------
_WORDS = ["abba"] * 36 + ["ab"] * 24 + ["ba"] * 18 + ["b"] * 12


def _library_discovery(series: pl.Series, method: str, seed: int, **kw: Any) -> pl.DataFrame:
    q = build_query(method, **kw)
    return q.discover(q.privatize(series, rng=as_source(seed))).to_polars()


def _discovery_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    df = pl.DataFrame({"user": np.arange(len(_WORDS)), "w": _WORDS})
    series = df["w"]
    kw = dict(epsilon=4.0, top_k=3, alphabet="ab", max_length=4)
    for method in ("pem",) if quick else ("pem", "treehist"):
        got = df.ldp.heavy_hitters("w", method=method, seed=seed, **kw)
        if not _same(got, _library_discovery(series, method, seed, **kw)):
            fails.append(f"{method}: heavy_hitters differs from the library's discovery on the same seed")
        if not _same(df.lazy().ldp.heavy_hitters("w", method=method, seed=seed, **kw), got):
            fails.append(f"{method}: a LazyFrame gave another discovery than the DataFrame")
    alphabet, length = infer_domain(series)
    inferred = df.ldp.heavy_hitters("w", epsilon=4.0, top_k=3, seed=seed)
    want = _library_discovery(series, "pem", seed, epsilon=4.0, top_k=3, alphabet=alphabet, max_length=length, domain_source=INFERRED)
    if not _same(inferred, want):
        fails.append("an inferred domain gave another discovery than the library with the inferred domain")
    # a column of sets through SampleOne: the library's discovery of the padded sample, scaled by set_size
    sets = pl.DataFrame({"s": [["abba", "ab"], ["abba"], ["ba", "abba"], ["ab"]] * 20})
    got = sets.ldp.heavy_hitters("s", set_size=2, seed=seed, **kw)
    src = as_source(seed)
    q = build_query("pem", **{**kw, "top_k": 4})
    ref = q.discover(q.privatize(sample_one_string(sets["s"], 2, src), rng=src)).to_polars().filter(pl.col("item") != "").head(3)
    if got["item"].to_list() != ref["item"].to_list() or not np.array_equal(got["estimate"].to_numpy(), 2.0 * ref["estimate"].to_numpy()):
        fails.append("a set column's discovery is not the library's discovery of the padded sample scaled by set_size")
    if not ((got["ci_lower"] >= 0) & (got["ci_upper"] <= 1)).all():
        fails.append("a set column's intervals leave [0, 1]")
    # the ledger: charged the oracles' realized ε once; a retry refused; refusals spend nothing
    acc = _ledger(tmp, "discovery")
    try:
        q = build_query("pem", **kw)
        cost = q.report_cost()
        df.ldp.heavy_hitters("w", seed=seed, accountant=acc, query_id="hh1", **kw)
        rows = acc.history()
        if len(rows) != 1 or rows[0].epsilon != cost or cost != max(report_charge(m) for m in q.mechanisms):
            fails.append("heavy_hitters did not charge the level oracles' realized ε once")
        bad = pl.DataFrame({"w": _WORDS[:-1] + ["abc"]})  # a character outside the alphabet, in the last row
        fails += _refusals_spend_nothing(acc, [
            ("a retried query id", lambda: df.ldp.heavy_hitters("w", seed=seed, accountant=acc, query_id="hh1", **kw), None),
            ("an inferred domain with a ledger", lambda: df.ldp.heavy_hitters("w", epsilon=4.0, accountant=acc, query_id="hh2"), None),
            ("no query id", lambda: df.ldp.heavy_hitters("w", accountant=acc, **kw), None),
            ("a query id without a ledger", lambda: df.ldp.heavy_hitters("w", query_id="hh2", **kw), None),
            ("a bad seed", lambda: df.ldp.heavy_hitters("w", seed="no-seed", accountant=acc, query_id="hh2", **kw), None),
            ("a string outside the alphabet", lambda: bad.ldp.heavy_hitters("w", accountant=acc, query_id="hh2", **kw), "abc"),
            ("a missing column", lambda: df.ldp.heavy_hitters("x", accountant=acc, query_id="hh2", **kw), None),
            ("set_size on strings", lambda: df.ldp.heavy_hitters("w", set_size=2, accountant=acc, query_id="hh2", **kw), None),
            ("sets without set_size", lambda: sets.ldp.heavy_hitters("s", accountant=acc, query_id="hh2", **kw), None),
            ("a set repeating a string", lambda: pl.concat([sets, pl.DataFrame({"s": [["ab", "ab"]]})]).ldp.heavy_hitters(
                "s", set_size=2, accountant=acc, query_id="hh2", **kw), None),
            ("a set past set_size", lambda: pl.concat([sets, pl.DataFrame({"s": [["ab", "ba", "b"]]})]).ldp.heavy_hitters(
                "s", set_size=2, accountant=acc, query_id="hh2", **kw), None),
            ("a misspelt keyword", lambda: df.ldp.heavy_hitters("w", sede=1, accountant=acc, query_id="hh2", **kw), None),
        ])
    finally:
        acc.close()
    for label, col, size, sentinel in (
        ("set_size 0", sets["s"], 0, None), ("a null set", pl.Series("s", [["ab"], None]), 2, None),
        ("a set past set_size", pl.Series("s", [["ab", "ba", "b"]]), 2, None), ("a repeated string", pl.Series("s", [["ab", "ab"]]), 2, None),
        ("the empty string", pl.Series("s", [["", "zq7"]]), 2, "zq7"), ("a null string", pl.Series("s", [["zq7", None]]), 2, "zq7"),
    ):
        fails += _refusal_fails(f"sample_one_string, {label}", lambda c=col, s=size: sample_one_string(c, s, SeededRandomSource(seed)), sentinel)
    return fails


# -- the key–value and several-attribute namespaces ------------------------------------------------
def _key_value_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    reg = load_registry(kinds=KINDS)
    names = sorted(n for n in reg if reg[n].kind == "key-value")
    for name in names:
        mech = reg[name].mechanism_class()(**{**reg[name].canonical[0], "d": 3, "ell": 2})
        users = [[(0, 0.5), (2, -1.0)], [], [(1, 0.25)], [(2, 1.0)], [(0, -0.75), (1, 0.0)], [(1, -0.5)]] * 4
        keys = pl.Series("k", [[k for k, _ in u] for u in users], dtype=pl.List(pl.Int64))
        vals = pl.Series("v", [[v for _, v in u] for u in users], dtype=pl.List(pl.Float64))
        structs = pl.Series("kv", [[{"key": k, "value": v} for k, v in u] for u in users],
                            dtype=pl.List(pl.Struct({"key": pl.Int64, "value": pl.Float64})))
        df = pl.DataFrame([keys, vals, structs])
        ref = reports_to_frame(mech, mech.randomize(users, rng=chunk_source(seed, 0)))
        two = df.ldp.privatize_key_values("k", mech, values="v", seed=seed)
        one = df.lazy().ldp.privatize_key_values("kv", mech, seed=seed)
        if not _same(two, ref) or not _same(one, ref):
            fails.append(f"{name}: the namespace's reports differ from the batch path (two list columns or one struct column)")
        est = two.lazy().ldp.key_values(mech).drop("interval_kind", "mean_interval_kind")
        if not _same(est, mech.estimate(mech.randomize(users, rng=chunk_source(seed, 0))).to_polars()):
            fails.append(f"{name}: key_values differs from the mechanism's estimate of the same reports")
        acc = _ledger(tmp, f"kv-{name}")
        try:
            first = df.ldp.privatize_key_values("k", mech, values="v", seed=seed, accountant=acc, query_id="kv1", keep_reports=True)
            again = df.ldp.privatize_key_values("k", mech, values="v", seed=seed + 1, accountant=acc, query_id="kv1", keep_reports=True)
            rows = acc.history()
            if not _same(first, ref) or not _same(again, first) or len(rows) != 1 or rows[0].epsilon != report_charge(mech):
                fails.append(f"{name}: a ledgered release is not the batch path charged report_charge once (its retry the kept reports)")
            past = pl.DataFrame({"k": [[0]] * 3 + [[1]], "v": [[0.5]] * 3 + [[float(SENTINEL)]]})
            fails += [f"{name}: {f}" for f in _refusals_spend_nothing(acc, [
                ("a value past [-1, 1] in the last row", lambda: past.ldp.privatize_key_values("k", mech, values="v", accountant=acc, query_id="kv2"), SENTINEL),
                ("a key past the domain", lambda: pl.DataFrame({"k": [[SENTINEL]], "v": [[0.0]]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), SENTINEL),
                ("lists of different lengths", lambda: pl.DataFrame({"k": [[0, 1]], "v": [[0.5]]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), None),
                ("a null list", lambda: pl.DataFrame({"k": [[0], None], "v": [[0.5], [0.1]]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), None),
                ("a null key inside a set", lambda: pl.DataFrame({"k": [[0, None]], "v": [[0.5, 0.1]]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), None),
                ("string keys", lambda: pl.DataFrame({"k": [["zq7"]], "v": [[0.5]]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), "zq7"),
                ("a scalar column", lambda: pl.DataFrame({"k": [0], "v": [0.5]}).ldp.privatize_key_values(
                    "k", mech, values="v", accountant=acc, query_id="kv2"), None),
                ("a list column without values=", lambda: df.ldp.privatize_key_values("k", mech, accountant=acc, query_id="kv2"), None),
                ("structs without a value field", lambda: pl.DataFrame({"kv": [[{"key": 0, "val": 0.5}]]}).ldp.privatize_key_values(
                    "kv", mech, accountant=acc, query_id="kv2"), None),
                ("a null struct set", lambda: df.select(pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col("kv")).alias("kv"))
                 .ldp.privatize_key_values("kv", mech, accountant=acc, query_id="kv2"), None),
                ("a missing column", lambda: df.ldp.privatize_key_values("x", mech, accountant=acc, query_id="kv2"), None),
                ("an empty frame", lambda: df.head(0).ldp.privatize_key_values("k", mech, values="v", accountant=acc, query_id="kv2"), None),
                ("no query id", lambda: df.ldp.privatize_key_values("k", mech, values="v", accountant=acc), None),
                ("keep_reports without a ledger", lambda: df.ldp.privatize_key_values("k", mech, values="v", keep_reports=True), None),
                ("a bad seed", lambda: df.ldp.privatize_key_values("k", mech, values="v", seed=-1, accountant=acc, query_id="kv2"), None),
                ("another kind of mechanism", lambda: df.ldp.privatize_key_values("k", KRR(epsilon=1.0, d=3), values="v", accountant=acc, query_id="kv2"), None),
                ("not a frame", lambda: _pkv.privatize_key_values("k", "k", mech), None),
                ("a reports frame without its columns", lambda: two.rename({two.columns[-1]: "x"}).ldp.key_values(mech), None),
                ("an empty reports frame", lambda: two.head(0).ldp.key_values(mech), None),
                ("reports that are no frame", lambda: _pkv.key_values({"report": [SENTINEL]}, mech), SENTINEL),
            ])]
        finally:
            acc.close()
    return fails


def _multi_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    reg = load_registry(kinds=KINDS)
    names = sorted(n for n in reg if reg[n].kind == "multi-attribute")
    for name in names[:1] if quick else names:
        mech = reg[name].mechanism_class()(**{**reg[name].canonical[0], "domains": [3, 2, 4]})
        n = 24
        codes = np.stack([np.arange(n) % 3, (np.arange(n) // 3) % 2, (np.arange(n) * 7) % 4], axis=1).astype(np.int64)
        cols = ["a", "b", "c"]
        df = pl.DataFrame({"user": np.arange(n) + 100, **{c: codes[:, j] for j, c in enumerate(cols)}})
        ref = reports_to_frame(mech, mech.randomize_encoded(codes, rng=chunk_source(seed, 0)))
        got = df.ldp.privatize_attributes(cols, mech, seed=seed, user_id="user")
        kept = df.lazy().ldp.privatize_attributes(cols, mech, seed=seed, user_id="user", keep_user_id=True)
        if not _same(got, ref):
            fails.append(f"{name}: privatize_attributes differs from the batch path on the same stream")
        if kept.columns[0] != "user" or kept["user"].to_list() != df["user"].to_list() or not _same(kept.drop("user"), got):
            fails.append(f"{name}: keep_user_id changed the reports or did not put the user id first")
        labels = mech.group_labels(cols)
        named = got.lazy().ldp.attribute_frequencies(mech, names=cols)
        want = mech.estimate(mech.randomize_encoded(codes, rng=chunk_source(seed, 0))).to_polars()
        want = want.with_columns(pl.col("attribute").map_elements(lambda j: labels[j], return_dtype=pl.String))
        if not _same(named, want):
            fails.append(f"{name}: attribute_frequencies with names differs from the mechanism's estimate, labelled")
        acc = _ledger(tmp, f"multi-{name}")
        try:
            first = df.ldp.privatize_attributes(cols, mech, seed=seed, accountant=acc, query_id="m1", keep_reports=True)
            again = df.ldp.privatize_attributes(cols, mech, seed=seed + 1, accountant=acc, query_id="m1", keep_reports=True)
            rows = acc.history()
            if not _same(first, got) or not _same(again, first) or len(rows) != 1 or rows[0].epsilon != report_charge(mech):
                fails.append(f"{name}: a ledgered release is not the batch path charged report_charge once (its retry the kept reports)")
            past = df.with_columns(pl.when(pl.int_range(pl.len()) == n - 1).then(SENTINEL).otherwise(pl.col("c")).alias("c"))
            fails += [f"{name}: {f}" for f in _refusals_spend_nothing(acc, [
                ("a code past its domain in the last row", lambda: past.ldp.privatize_attributes(cols, mech, accountant=acc, query_id="m2"), SENTINEL),
                ("a negative code", lambda: df.with_columns(pl.lit(-1).alias("a")).ldp.privatize_attributes(cols, mech, accountant=acc, query_id="m2"), None),
                ("a null code", lambda: df.with_columns(pl.when(pl.col("a") == 1).then(None).otherwise(pl.col("a")).alias("a"))
                 .ldp.privatize_attributes(cols, mech, accountant=acc, query_id="m2"), None),
                ("a float column", lambda: df.with_columns(pl.col("a").cast(pl.Float64)).ldp.privatize_attributes(cols, mech, accountant=acc, query_id="m2"), None),
                ("columns as one string", lambda: df.ldp.privatize_attributes("abc", mech, accountant=acc, query_id="m2"), None),
                ("too few columns", lambda: df.ldp.privatize_attributes(cols[:2], mech, accountant=acc, query_id="m2"), None),
                ("a repeated column", lambda: df.ldp.privatize_attributes(["a", "a", "b"], mech, accountant=acc, query_id="m2"), None),
                ("a missing column", lambda: df.ldp.privatize_attributes(["a", "b", "x"], mech, accountant=acc, query_id="m2"), None),
                ("keep_user_id without user_id", lambda: df.ldp.privatize_attributes(cols, mech, keep_user_id=True, accountant=acc, query_id="m2"), None),
                ("a repeated user id", lambda: df.with_columns(pl.lit(SENTINEL).alias("user")).ldp.privatize_attributes(
                    cols, mech, user_id="user", accountant=acc, query_id="m2"), SENTINEL),
                ("an empty frame", lambda: df.head(0).ldp.privatize_attributes(cols, mech, accountant=acc, query_id="m2"), None),
                ("no query id", lambda: df.ldp.privatize_attributes(cols, mech, accountant=acc), None),
                ("another kind of mechanism", lambda: df.ldp.privatize_attributes(cols, KRR(epsilon=1.0, d=3), accountant=acc, query_id="m2"), None),
                ("not a frame", lambda: _pm.privatize_attributes({"a": [0]}, cols, mech), None),
                ("names of the wrong length", lambda: got.ldp.attribute_frequencies(mech, names=["a"]), None),
                ("a misspelt keyword", lambda: got.ldp.attribute_frequencies(mech, confidense=0.9), None),
                ("a missing argument", lambda: _pm.attribute_frequencies(got), None),
            ])]
        finally:
            acc.close()
    return fails


# -- the one-column namespace's other paths (ledger scans, dictionary columns, 'other', sinks) --------
def _namespace_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    cats = ["a", "b", "c", "other"]
    krr = KRR(epsilon=1.5, categories=cats)
    n = 16
    df = pl.DataFrame({"user": np.arange(n), "v": [cats[j % 3] for j in range(n)]})
    ref = df.ldp.privatize("v", krr, seed=seed, user_id="user")
    for dtype in (pl.Categorical, pl.Enum(cats)):
        if not _same(df.with_columns(pl.col("v").cast(dtype)).ldp.privatize("v", krr, seed=seed, user_id="user"), ref):
            fails.append(f"a {dtype} column gave other reports than its String column")
    odd = df.with_columns(pl.when(pl.col("user") % 5 == 0).then(pl.lit("zq7")).otherwise(pl.col("v")).alias("v"))
    mapped = odd.with_columns(pl.when(pl.col("v").is_in(cats)).then(pl.col("v")).otherwise(pl.lit("other")).alias("v"))
    if not _same(odd.ldp.privatize("v", krr, seed=seed, unknown="other"), mapped.ldp.privatize("v", krr, seed=seed)):
        fails.append("unknown='other' gave other reports than the column with its unknown items mapped to 'other'")
    oue = SampleOne(mechanism=OUE(epsilon=1.5, categories=cats), m=2)
    sets = pl.DataFrame({"s": [["a", "zq7"], ["b"], ["c", "a"], ["zq7"]] * 4})
    sets_mapped = pl.DataFrame({"s": [["a", "other"], ["b"], ["c", "a"], ["other"]] * 4})
    if not _same(sets.ldp.privatize("s", oue, seed=seed, unknown="other"), sets_mapped.ldp.privatize("s", oue, seed=seed)):
        fails.append("unknown='other' on sets gave other reports than the mapped sets")
    # sink: the parts hold the in-memory reports
    sink = tmp / "sink"
    scanned = df.ldp.privatize("v", krr, seed=seed, user_id="user", sink=sink)
    if not _same(scanned.collect(), ref) or (sink / INCOMPLETE_MARKER).exists():
        fails.append("the parts written under sink= are not the in-memory reports")
    # the estimate's poisoning bound is poison_bound's
    est = ref.ldp.estimate(krr, poison_fraction=0.1)
    bound = poison_bound(krr, krr.estimate(ref["report"].to_numpy()), poison_fraction=0.1)
    if not np.array_equal(est["poison_shift"].to_numpy(), np.asarray(bound.poison_shift)):
        fails.append("the namespace's poison_shift differs from poison_bound's")
    fails += _namespace_more(tmp, seed, quick)
    reg = load_registry(kinds=KINDS)
    mean = reg["duchi"].mechanism_class()(**reg["duchi"].canonical[0])
    lo, hi = float(mean.lower), float(mean.upper)
    nums = pl.DataFrame({"x": [lo + (hi - lo) * j / 9 for j in range(10)]})
    acc = _ledger(tmp, "namespace", cohorts=2)
    try:
        got = nums.ldp.privatize("x", mean, seed=seed, accountant=acc, query_id="n1", budget_cohorts=[1])
        if acc.history()[0].epsilon != report_charge(mean) or acc.spent([0]) != 0 or not _same(got, nums.ldp.privatize("x", mean, seed=seed)):
            fails.append("a ledgered number release is not the batch path charged report_charge on its cohort only")
        df.ldp.privatize("v", krr, seed=seed, accountant=acc, query_id="n2", unknown="other")
        dictionary = df.with_columns(pl.col("v").cast(pl.Categorical)).ldp.privatize("v", krr, seed=seed, accountant=acc, query_id="n4", user_id="user")
        if not _same(dictionary, ref):
            fails.append("a ledgered Categorical column gave other reports than its String column")
        codes = pl.DataFrame({"c": [j % 4 for j in range(7)] + [SENTINEL]})
        if not _same(codes.head(7).ldp.privatize("c", KRR(epsilon=1.0, d=4), seed=seed, accountant=acc, query_id="n5"),
                     codes.head(7).ldp.privatize("c", KRR(epsilon=1.0, d=4), seed=seed)):
            fails.append("a ledgered integer-code release differs from the batch path")
        past = nums.with_columns(pl.when(pl.int_range(pl.len()) == 9).then(hi + SENTINEL).otherwise(pl.col("x")).alias("x"))
        long = pl.DataFrame({"s": [["a"]] * 5 + [["a", "b", "c"]]})
        strict_m = SampleOne(mechanism=OUE(epsilon=1.5, categories=cats), m=2, on_long="error")
        fails += _refusals_spend_nothing(acc, [
            ("a number past upper in the last row", lambda: past.ldp.privatize("x", mean, accountant=acc, query_id="n3"), hi + SENTINEL),
            ("a set longer than m in the last row", lambda: long.ldp.privatize("s", strict_m, accountant=acc, query_id="n3"), None),
            ("a null item in a set", lambda: pl.DataFrame({"s": [["a"], ["b", None]]}).ldp.privatize("s", strict_m, accountant=acc, query_id="n3"), None),
            ("an unknown label in a set", lambda: pl.DataFrame({"s": [["a"], ["zq7"]]}).ldp.privatize("s", strict_m, accountant=acc, query_id="n3"), "zq7"),
            ("an unknown label in a dictionary column", lambda: odd.with_columns(pl.col("v").cast(pl.Categorical)).ldp.privatize(
                "v", krr, accountant=acc, query_id="n3"), "zq7"),
            ("strings for a number mechanism", lambda: df.ldp.privatize("v", mean, accountant=acc, query_id="n3"), None),
            ("a null in an open alphabet", lambda: pl.DataFrame({"v": ["maps", None]}).ldp.privatize("v", build("orr", epsilon=1.0, k=4, cohorts=2),
                                                                                                    accountant=acc, query_id="n3"), None),
            ("a null with unknown='other'", lambda: odd.with_columns(pl.when(pl.col("user") == n - 1).then(None).otherwise(pl.col("v")).alias("v"))
             .ldp.privatize("v", krr, unknown="other", accountant=acc, query_id="n3"), None),
            ("a null set", lambda: pl.DataFrame({"s": [["a"], None]}).ldp.privatize("s", strict_m, accountant=acc, query_id="n3"), None),
            ("a cohort salt past 2**64", lambda: df.ldp.privatize("v", build("orr", epsilon=1.0, d=4, k=4, cohorts=4), user_id="user", cohorts=1 << 64,
                                                                  accountant=acc, query_id="n3"), None),
            ("an integer code past d", lambda: codes.ldp.privatize("c", KRR(epsilon=1.0, d=4), accountant=acc, query_id="n3"), SENTINEL),
            ("keep_reports with a sink", lambda: df.ldp.privatize("v", krr, sink=tmp / "s2", keep_reports=True, accountant=acc, query_id="n3"), None),
            ("a sink that is a file", lambda: df.ldp.privatize("v", krr, sink=tmp / "namespace.ledger", accountant=acc, query_id="n3"), None),
            ("a sink holding parts", lambda: df.ldp.privatize("v", krr, sink=sink, accountant=acc, query_id="n3"), None),
            ("a sink under a file", lambda: df.ldp.privatize("v", krr, sink=tmp / "namespace.ledger" / "x", accountant=acc, query_id="n3"), None),
            ("no query id", lambda: df.ldp.privatize("v", krr, accountant=acc), None),
            ("no cohort", lambda: df.ldp.privatize("v", krr, accountant=acc, query_id="n3", budget_cohorts=[]), None),
            ("a cohort past the population", lambda: df.ldp.privatize("v", krr, accountant=acc, query_id="n3", budget_cohorts=[2]), None),
            ("a cohort that is no integer", lambda: df.ldp.privatize("v", krr, accountant=acc, query_id="n3", budget_cohorts=[True]), None),
            ("cohorts that are no list", lambda: df.ldp.privatize("v", krr, accountant=acc, query_id="n3", budget_cohorts=3), None),
            ("past the lifetime cap", lambda: df.ldp.privatize("v", KRR(epsilon=19.0, categories=cats), accountant=acc, query_id="n3"), None),
        ])
    finally:
        acc.close()
    return fails


def _namespace_more(tmp: Path, seed: int, quick: bool) -> list:
    """The one-column namespace's streamed chunks, its errors found while randomizing, and the
    distribution methods (no ledger: nothing spent)."""
    fails: list = []
    cats = ["a", "b", "c"]
    one = SampleOne(mechanism=OUE(epsilon=1.5, categories=cats), m=2)
    scalar = pl.DataFrame({"v": [cats[j % 3] for j in range(12)]})
    if not _same(scalar.with_columns(pl.col("v").cast(pl.Categorical)).ldp.privatize("v", one, seed=seed), scalar.ldp.privatize("v", one, seed=seed)):
        fails.append("a Categorical column of single items gave other sets' reports than its String column")
    users = pl.DataFrame({"user": [1, 2, 2, 4], "v": ["a", "b", None, "c"]})
    for label, call, sentinel, want in (
        ("an unknown item in a set", lambda: pl.DataFrame({"s": [["a"], ["zq7", "b"]]}).ldp.privatize("s", one), "zq7", "row"),
        ("an unknown label", lambda: pl.DataFrame({"v": ["a", "zq7"]}).ldp.privatize("v", KRR(epsilon=1.0, categories=cats)), "zq7", "row"),
        ("a null value beside a user-id check", lambda: users.with_columns(pl.Series("user", [1, 2, 3, 4])).ldp.privatize("v", KRR(epsilon=1.0, categories=cats), user_id="user"),
         None, "null"),
        ("a repeated id and a null value", lambda: users.ldp.privatize("v", KRR(epsilon=1.0, categories=cats), user_id="user"), None, "user"),
    ):
        try:
            call()
            fails.append(f"{label}: accepted")
        except LDPInputError as e:  # the user-id error first: as when the ids are checked before the values
            if (sentinel is not None and str(sentinel) in str(e)) or want not in str(e):
                fails.append(f"{label}: the message repeats the value or does not say what is wrong")
    if not quick:  # more rows than one chunk: chunk j on its own stream, a LazyFrame the same as the DataFrame
        krr = KRR(epsilon=1.0, d=4)
        rows = ROWS_PER_CHUNK + 1000
        codes = (np.arange(rows, dtype=np.int64) * 7) % 4
        big = pl.DataFrame({"c": codes})
        lazy = pl.concat([big.slice(0, 100_000).lazy(), big.slice(100_000).lazy()]).ldp.privatize("c", krr, seed=seed)
        want = pl.concat([reports_to_frame(krr, krr.randomize_encoded(codes[:ROWS_PER_CHUNK], rng=chunk_source(seed, 0))),
                          reports_to_frame(krr, krr.randomize_encoded(codes[ROWS_PER_CHUNK:], rng=chunk_source(seed, 1)))])
        if not lazy.equals(want) or not big.ldp.privatize("c", krr, seed=seed).equals(want):
            fails.append("past one chunk, the reports are not each chunk's batch path on its own stream")
    reg = load_registry(kinds=KINDS)
    mech = reg["bucketed"].mechanism_class()(**reg["bucketed"].canonical[0])
    lo, hi = float(mech.lower), float(mech.upper)
    x = np.array([lo + (hi - lo) * ((j * 7) % 20) / 20 for j in range(40)])
    reports = pl.DataFrame({"x": x}).ldp.privatize("x", mech, seed=seed)
    est = mech.estimate(mech.randomize(x, rng=chunk_source(seed, 0)))
    hist = reports.ldp.distribution(mech)
    q = reports.lazy().ldp.quantiles(mech, [0.5])
    r = reports.ldp.range_count(mech, lo, (lo + hi) / 2)
    if not np.array_equal(hist["estimate"].to_numpy(), est.to_polars()["estimate"].to_numpy()):
        fails.append("the namespace's distribution differs from the mechanism's estimate of the same reports")
    if q["estimate"].to_list() != [row["estimate"] for row in est.quantiles([0.5])] or r["fraction"].item() != est.range_count(lo, (lo + hi) / 2).fraction:
        fails.append("the namespace's quantiles or range count differ from the mechanism's estimate")
    fails += _refusal_fails("distribution of a mechanism that is no distribution", lambda: reports.ldp.distribution(KRR(epsilon=1.0, d=4)))
    return fails


# -- ldp collect: other formats, the ledger's options, partitioned ledgers, refusals that spend nothing --
def _collect_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    work = Path(tempfile.mkdtemp(dir=tmp))
    items = ["maps", "mail", "chat"]
    sets = [";".join(items[(j + k) % 3] for k in range(1 + j % 2)) for j in range(24)]
    pl.DataFrame({"user": np.arange(24), "apps": sets}).write_csv(work / "in.csv")
    ledger = _ledger(work, "collect", cohorts=2)
    ledger.close()
    spec = {"name": "oue", "epsilon": 1.25, "categories": items, "m": 2, "on_long": "sample"}
    base = {"input": {"path": "in.csv", "column": "apps", "user_id": "user", "list_separator": ";"}, "mechanism": spec,
            "collection": {"seed": seed}, "output": {"estimates": "est.csv", "reports": "reports"}}
    job = _write_job(work / "csv.toml", base if quick else {**base, "output": {**base["output"], "plot": "est.svg"}})
    rc, out, err = _run(["collect", job, "--json"])
    if rc != 0:
        return [f"a CSV job with a list separator: exit status {rc}: {err.strip()[-160:]}"]
    parts = sorted((work / "reports").glob("part-*.parquet"))
    mech = mechanism_from_spec(read_report_spec(parts[0])[0])
    reports = pl.concat([pl.read_parquet(p) for p in parts])
    split = pl.read_csv(work / "in.csv").with_columns(pl.col("apps").str.split(";"))
    if not _same(reports, split.ldp.privatize("apps", mech, seed=seed, user_id="user")):
        fails.append("a CSV job's reports differ from the namespace's privatize of the split column")
    est, want = pl.read_csv(work / "est.csv"), reports.ldp.estimate(mech, postprocess="projection")
    if not np.allclose(est["estimate"].to_numpy(), want["estimate"].to_numpy(), rtol=1e-12, atol=1e-15):
        fails.append("a CSV estimates file differs from the estimate of the kept reports")
    if not quick and b"<svg" not in (work / "est.svg").read_bytes()[:400]:
        fails.append("the job's plot is not an SVG")
    # the ledger: charged report_charge once on the job's cohorts; a retry answers from the kept reports
    ledgered = {**base, "input": {"path": "in.csv", "column": "apps", "list_separator": ";"}, "output": {"estimates": "l1.parquet"},
                "budget": {"ledger": "collect.ledger", "query_id": "c1", "cohorts": [1]}}
    rc1, out1, _ = _run(["collect", _write_job(work / "l1.toml", ledgered), "--json"])
    rc2, out2, _ = _run(["collect", _write_job(work / "l2.toml", {**ledgered, "output": {"estimates": "l2.parquet"}}), "--json"])
    with Accountant(work / "collect.ledger") as acc:
        rows = acc.history()
        if (rc1, rc2) != (0, 0) or len(rows) != 1 or rows[0].epsilon != report_charge(mech) or rows[0].cohorts != (1,) or acc.spent([0]) != 0:
            fails.append(f"a ledgered job did not charge report_charge once on its cohorts (exits {rc1}, {rc2})")
        elif not json.loads(out1)["budget"]["charged"] or json.loads(out2)["budget"]["charged"] or not pl.read_parquet(work / "l1.parquet").equals(
                pl.read_parquet(work / "l2.parquet")):
            fails.append("a retried job was not answered from the first run's kept reports")
        before = _state(acc)
    fresh = {**ledgered, "budget": {**ledgered["budget"], "query_id": "c2"}}  # a new query: each refusal for its own reason
    refusals = {
        "[budget] without query_id": {**fresh, "budget": {"ledger": "collect.ledger"}},
        "estimates as .txt": {**fresh, "output": {"estimates": "e.txt"}},
        "a plot as .gif": {**fresh, "output": {"estimates": "e.csv", "plot": "p.gif"}},
        "estimates into a directory": {**fresh, "output": {"estimates": "reports"}},
        "reports into a file": {**fresh, "output": {"estimates": "e.csv", "reports": "in.csv"}},
        "an empty output path": {**fresh, "output": {"estimates": " "}},
        "a missing input file": {**fresh, "input": {"path": "none.csv", "column": "apps"}},
        "an input directory": {**fresh, "input": {"path": "reports", "column": "apps"}},
        "an input .json": {**fresh, "input": {"path": "collect.ledger.json", "column": "apps"}},
        "an input without rows": {**fresh, "input": {"path": "empty.csv", "column": "apps"}},
        "a key-value mechanism": {**fresh, "mechanism": {"name": "pckv", "epsilon": 1.0, "d": 3}},
        "params that are no table": {**fresh, "mechanism": {**spec, "params": 3}},
        "params repeating epsilon": {**fresh, "mechanism": {**spec, "params": {"epsilon": 2.0}}},
        "a user id column that is absent": {**fresh, "input": {**ledgered["input"], "user_id": "uid"}},
        "a set past the categories": {**fresh, "mechanism": {**spec, "categories": ["maps", "mail"]}},
        "a partitioned retry": {**fresh, "input": {"path": "part-*.parquet", "column": "apps"}, "output": {"estimates": "p.csv", "reports": "preports"}},
        "a partitioned job without reports": {**fresh, "input": {"path": "part-*.parquet", "column": "apps"}},
        "a partitioned job with a list separator": {**fresh, "output": {"estimates": "p.csv", "reports": "p2"}},
        "a partitioned job with a missing column": {**fresh, "input": {"path": "part-*.parquet", "column": "x"}, "output": {"estimates": "p.csv", "reports": "p3"}},
        "a partitioned job with an unknown item in its last partition": {**fresh, "input": {"path": "bad-*.parquet", "column": "apps"},
                                                                         "output": {"estimates": "p.csv", "reports": "p4"}},
    }
    (work / "collect.ledger.json").write_text("{}")
    (work / "empty.csv").write_text("user,apps\n")
    for j in range(2):
        split.head(12 * (j + 1)).tail(12).write_parquet(work / f"part-{j}.parquet")
        split.head(12 * (j + 1)).tail(12).with_columns(pl.when(pl.col("user") == 23).then(pl.lit(["zq7"])).otherwise(pl.col("apps")).alias("apps")).write_parquet(
            work / f"bad-{j}.parquet")
    for label, sections in refusals.items():
        if "budget" in sections and "query_id" in sections["budget"]:  # its own new query id: refused for its own reason
            sections = {**sections, "budget": {**sections["budget"], "query_id": f"c2-{len(label)}-{label[:12]}"}}
        argv = ["collect", _write_job(work / "bad.toml", sections)] + (["--executor", "local"] if label.startswith("a partitioned") else [])
        if label == "a partitioned retry":
            sections = {**sections, "budget": {"ledger": "collect.ledger", "query_id": "c1", "cohorts": [1]}}
            argv[1] = _write_job(work / "bad.toml", sections)
        sentinel = {"a set past the categories": "chat", "a partitioned job with an unknown item in its last partition": "zq7"}.get(label)
        fails += _clean_exit(argv, f"collect: {label}", sentinel)  # a user's item, outside the categories: never echoed
        with Accountant(work / "collect.ledger") as acc:
            if _state(acc) != before:
                fails.append(f"collect: {label}: the refused job changed the ledger")
                before = _state(acc)
    for label, text in (("invalid TOML", "[input\npath = 1"), ("an unknown section", "[inputs]\npath = 'x'\n"),
                        ("a missing [mechanism] epsilon", "[input]\npath = 'in.csv'\ncolumn = 'apps'\n[mechanism]\nname = 'oue'\n[output]\nestimates = 'e.csv'\n")):
        (work / "bad.toml").write_text(text)
        fails += _clean_exit(["collect", work / "bad.toml"], f"collect: {label}")
    with Accountant(work / "collect.ledger") as acc:
        if _state(acc) != before:
            fails.append("a refused job changed the ledger")
    if not quick:  # a partitioned job with a ledger: charged once, its parts' aggregate the estimate; a plot written
        part = {**ledgered, "input": {"path": "part-*.parquet", "column": "apps", "user_id": "user"},
                "output": {"estimates": "pe.parquet", "reports": "preports", "plot": "pe.png"}, "budget": {"ledger": "collect.ledger", "query_id": "p1"}}
        rc, _o, err = _run(["collect", _write_job(work / "part.toml", part), "--executor", "local", "--json"])
        with Accountant(work / "collect.ledger") as acc:
            new = [r for r in acc.history() if r.query_id == "p1"]
            if rc != 0 or len(new) != 1 or new[0].epsilon != report_charge(mech) or new[0].cohorts != (0, 1):
                fails.append(f"a partitioned ledgered job did not charge report_charge once (exit {rc})")
        kept = pl.concat([pl.read_parquet(p) for p in sorted((work / "preports").rglob("part-*.parquet"))])
        if rc == 0 and not np.allclose(pl.read_parquet(work / "pe.parquet")["estimate"].to_numpy(),
                                       kept.ldp.estimate(mech, postprocess="projection")["estimate"].to_numpy(), rtol=1e-12, atol=1e-15):
            fails.append("a partitioned job's estimates differ from the estimate of its parts")
        if rc == 0 and (work / "pe.png").read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
            fails.append("the job's plot is not a PNG")
        fails += _clean_exit(["collect", _write_job(work / "part2.toml", {**part, "output": {**part["output"], "reports": "preports2"}}),
                              "--executor", "local"], "collect: a partitioned retry")
        # an open alphabet over partitions: parameters derived for the candidates, estimated over them
        sites = ["maps", "mail", "chat", "news"]
        for j in range(2):
            pl.DataFrame({"site": [sites[(k * (j + 1)) % 4] for k in range(150)]}).write_parquet(work / f"open-{j}.parquet")
        cands = ["maps", "mail", "chat"]
        job_open = {"input": {"path": "open-*.parquet", "column": "site"}, "mechanism": {"name": "orr", "epsilon": 2.0},
                    "collection": {"seed": seed, "candidates": cands}, "output": {"estimates": "oe.parquet", "reports": "oreports"}}
        rc, _o, err = _run(["collect", _write_job(work / "open.toml", job_open), "--executor", "local", "--json"])
        oparts = sorted((work / "oreports").rglob("part-*.parquet"))
        if rc != 0 or not oparts:
            fails.append(f"a partitioned open-alphabet job: exit status {rc}")
        else:
            omech = mechanism_from_spec(read_report_spec(oparts[0])[0])
            want = pl.concat([pl.read_parquet(p) for p in oparts]).ldp.estimate(omech, candidates=cands, postprocess="projection")
            got = pl.read_parquet(work / "oe.parquet")
            if got["item"].to_list() != want["item"].to_list() or not np.allclose(got["estimate"].to_numpy(), want["estimate"].to_numpy(), rtol=1e-12, atol=1e-15):
                fails.append("a partitioned open-alphabet job's estimates differ from the candidates' estimate of its parts")
    return fails


# -- simulate, demo, their options and families ----------------------------------------------------
def _simulate_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    for dist, truth in (("geometric", "population"), ("uniform", "empirical")):
        argv = ["simulate", "--mechanism", "olh", "--d", 6, "--epsilon", 1.5, "--n", 300, "--distribution", dist, "--truth", truth,
                "--param", "g=4", "--seed", seed, "--json"]
        rc, out, err = _run(argv)
        want = simulate(build("olh", epsilon=1.5, d=6, n=300, g=4), n=300, distribution=dist, truth=truth, seed=seed).to_dict()
        if rc != 0 or _untimed(out) != _untimed(json.dumps(want)):
            fails.append(f"ldp simulate --distribution {dist} --param g=4 differs from the library's simulate of the same mechanism")
    keyed = build_longitudinal("l-grr", d=3, epsilon_perm=2.0, epsilon_1=1.0)
    quiet = simulate_longitudinal(keyed, rounds=2, change_prob=0.2, n=60, seed=seed)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        loud = simulate_longitudinal(keyed, rounds=2, change_prob=0.2, n=60, seed=seed, progress=True)
    if _untimed(json.dumps(loud, default=str)) != _untimed(json.dumps(quiet, default=str)) or out.getvalue().count("round") != 2:
        fails.append("simulate_longitudinal with progress gave another result, or did not report each round")
    if dict(parse_params(["a=[0.5, 0.25]", "b=3", "c=0.5", "e=text"])) != {"a": [0.5, 0.25], "b": 3, "c": 0.5, "e": "text"}:
        fails.append("--param did not read a JSON list, an integer, a float and a text")
    gen = np.random.default_rng(seed)
    theta = true_distribution("geometric", 5, gen)
    batch, f = draw_sets(theta, 400, 2, gen)
    if not np.isclose(f.sum(), 2.0) or abs(float(f[0]) - float(theta[0])) > 0.5:
        fails.append("draw_sets' frequencies are not those of sets of m=2 distinct items")
    krr = KRR(epsilon=1.0, d=4)
    for label, call, sentinel in (
        ("--param without =", lambda: parse_params(["g"]), None), ("--param repeating an option", lambda: parse_params(["epsilon=2"]), None),
        ("--param given twice", lambda: parse_params(["g=2", "g=3"]), None), ("--param with a bad list", lambda: parse_params([f"g=[{SENTINEL},"]), None),
        ("an unknown truth", lambda: simulate(krr, n=10, truth="zq7"), None), ("an unknown distribution", lambda: simulate(krr, n=10, distribution="zq7"), None),
        ("an unknown true distribution", lambda: true_distribution("zq7", 4, gen), None), ("sets past d", lambda: draw_sets(theta, 10, 9, gen), None),
        ("an open alphabet", lambda: simulate(build("orr", epsilon=1.0, k=4), n=10), None),
        ("a simulation past memory", lambda: check_simulation_memory(krr, 1 << 40), None),
        ("an unknown longitudinal name", lambda: build_longitudinal("zq7", d=3, epsilon_perm=2.0, epsilon_1=1.0), None),
        ("an unknown mean name", lambda: build_mean("zq7", epsilon=1.0), None),
    ):
        fails += _refusal_fails(label, call, sentinel)
    fails += _clean_exit(["demo", "--mechanism", "l-grr", "--epsilon", 1, "--json"], "demo of a longitudinal name")
    fails += _clean_exit(["simulate", "--mechanism", "krr", "--d", 4, "--epsilon", 1, "--n", 50, "--param", "epsilon=3"], "simulate --param epsilon=")
    if not quick:  # the text renderings say what the JSON says
        for name, n in (("krr", 60), ("krr", 300), ("bucketed", 300), ("pckv", 300), ("smp", 300)):  # 60 users: the demo's warning
            rc_j, out_j, _ = _run(["demo", "--mechanism", name, "--epsilon", 2, "--n", n, "--seed", seed, "--json"])
            rc_t, out_t, _ = _run(["demo", "--mechanism", name, "--epsilon", 2, "--n", n, "--seed", seed])
            doc = json.loads(out_j) if rc_j == 0 else {}
            total = len(doc.get("rows", []))
            if rc_j or rc_t or f"{doc.get('covered')}/{total} true" not in out_t or (("warning" in doc) != ("warning:" in out_t)):
                fails.append(f"ldp demo {name} (n={n}): the text does not say what the JSON says")
        hh = tmp / "words.parquet"
        pl.DataFrame({"w": _WORDS}).write_parquet(hh)
        argv = ["heavy-hitters", "simulate", "--input", hh, "--column", "w", "--epsilon", 4, "--top-k", 3, "--alphabet", "ab", "--max-length", 4, "--seed", seed]
        rc_j, out_j, _ = _run(argv + ["--json"])
        rc_t, out_t, _ = _run(argv)
        top = json.loads(out_j)["items"][0]["item"] if rc_j == 0 else None
        if rc_t != 0 or top is None or f"  {top:<20} " not in out_t:
            fails.append("ldp heavy-hitters' text does not list the JSON's first string")
    for label, argv in (("a missing input", ["--input", tmp / "none.parquet", "--column", "w"]), ("an input .txt", ["--input", tmp / "w.txt", "--column", "w"]),
                        ("a missing column", ["--input", tmp / "words.parquet", "--column", "x"])):
        (tmp / "w.txt").write_text("w\n")
        pl.DataFrame({"w": _WORDS}).write_parquet(tmp / "words.parquet")
        fails += _clean_exit(["heavy-hitters", "simulate", *argv, "--epsilon", 4], f"heavy-hitters with {label}")
    return fails


# -- the discovery protocol's levels and SFP --------------------------------------------------------
def _protocol_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    series = pl.Series("w", _WORDS)
    kw = dict(epsilon=4.0, top_k=3, alphabet="ab", max_length=4)
    for oracle in ("orr",) if quick else ("orr", "cms", "hcms", "count-sketch"):
        q = build_query("pem", oracle=oracle, step=2, **kw)
        if q.lengths[0] != 2 or q.report_cost() != max(report_charge(m) for m in q.mechanisms):
            fails.append(f"{oracle}: step=2 did not start at length 2, or the charge is not the oracles' realized ε")
        levels = q.assign_levels(len(_WORDS), user_ids=np.arange(len(_WORDS)), salt=seed)
        if not np.array_equal(levels, q.assign_levels(len(_WORDS), user_ids=np.arange(len(_WORDS)), salt=seed)):
            fails.append(f"{oracle}: levels from salted user ids are not stable")
        reports = q.privatize(series, rng=SeededRandomSource(seed), levels=levels)
        if np.bincount(reports["level"].to_numpy(), minlength=len(q.shares)).tolist() != np.bincount(levels, minlength=len(q.shares)).tolist():
            fails.append(f"{oracle}: privatize did not put each user in the level it was given")
        whole = q.discover(reports).to_polars()
        path = tmp / f"r-{oracle}.parquet"
        reports.write_parquet(path)
        half = reports.height // 2
        a, b = q.accumulator().add(reports.head(half)), q.accumulator().add([reports.tail(reports.height - half).lazy()])
        for label, acc in (("a list of Parquet paths", q.accumulator().add([str(path)])), ("a LazyFrame", q.accumulator().add(reports.lazy())),
                           ("two merged halves", a.merge(b))):
            if acc.n != reports.height or not _same(q.discover(acc).to_polars(), whole):
                fails.append(f"{oracle}: the accumulator fed {label} gave another discovery")
        other = build_query("pem", oracle=oracle, **{**kw, "top_k": 2})
        for label, call in (("an accumulator of another query", lambda: other.discover(a)), ("a merge across queries", lambda: a.merge(other.accumulator())),
                            ("a level past the groups", lambda: q.accumulator().add(reports.with_columns(pl.lit(99, dtype=pl.UInt8).alias("level")))),
                            ("a frame without levels", lambda: q.accumulator().add(reports.drop("level"))),
                            ("a group without reports", lambda: q.discover(reports.filter(pl.col("level") != 0))),
                            ("levels of the wrong shape", lambda: q.privatize(series, levels=levels[:-1])),
                            ("levels without a salt", lambda: q.assign_levels(3, user_ids=[1, 2, 3]))):
            fails += _refusal_fails(f"{oracle}: {label}", call)
    q = build_query("pem", **kw)
    only = np.full(len(_WORDS), q.holdout, dtype=np.int64)
    only[: len(q.lengths)] = np.arange(len(q.lengths))  # one user per level, the rest held out
    few = q.privatize(series, rng=SeededRandomSource(seed), levels=only)
    if sorted(set(few["level"].to_list())) != list(range(len(q.shares))) or few.height != len(_WORDS):
        fails.append("privatize did not keep one report per user when a level has a single user")
    fails += _refusal_fails("levels that are no integers", lambda: q.privatize(series, rng=SeededRandomSource(seed), levels=np.zeros(len(_WORDS), dtype=np.float64)))
    fails += _refusal_fails("no values", lambda: q.privatize(pl.Series("w", [], dtype=pl.String)))
    faint = build_query("pem", **{**kw, "epsilon": 0.05}).discover(build_query("pem", **{**kw, "epsilon": 0.05}).privatize(series, rng=SeededRandomSource(seed)))
    if not all(re.fullmatch(r"[ab]{1,4}", item) for item in faint.to_polars()["item"].to_list()):
        fails.append("a discovery at a tiny ε returned a string outside its domain")
    if q.epsilon_per_user != kw["epsilon"] or q.spec()["prefix_lengths"] != list(q.lengths):
        fails.append("the query does not describe itself (epsilon_per_user, spec)")
    stepwise = build_query("pem", step=1, **kw)  # a level per character: short strings finish early and are pooled across levels
    found = stepwise.discover(stepwise.privatize(series, rng=SeededRandomSource(seed))).to_polars()
    if not all(re.fullmatch(r"[ab]{1,4}", item) for item in found["item"].to_list()) or found.height > stepwise.top_k:
        fails.append("a discovery level by level returned a string outside its domain, or more than top_k")
    faint = build_query("pem", step=1, **{**kw, "epsilon": 0.05})
    if faint.discover(faint.privatize(series, rng=SeededRandomSource(seed))).to_polars().height > faint.top_k:
        fails.append("a discovery whose levels keep nothing returned more than top_k")
    with Accountant.create(tmp / "charge.ledger", Population(name="charge", lifetime_cap="20")) as acc:
        rec = stepwise.charge(acc, "d1")
        if rec.epsilon != stepwise.report_cost() or acc.spent() != rec.epsilon or rec.params != stepwise.spec():
            fails.append("PrefixDiscovery.charge did not record report_cost with the query's spec")
    q = build_query("treehist", **kw)
    mdf = q.min_detectable_frequency(1000, by_level=True)
    if len(mdf) != len(q.lengths) or max(mdf) != q.min_detectable_frequency(1000) or not all(0 < x for x in mdf):
        fails.append("the per-level minimum detectable frequencies do not give the announced one")
    for label, extra in (("an unknown method", {"method": "zq7"}), ("an unknown oracle", {"oracle": "zq7"}), ("finish_z past 10", {"finish_z": 11.0}),
                         ("screen_z past 10", {"screen_z": 11.0}), ("a step with too many extensions", {"step": 4, "max_candidates": 8})):
        method = extra.pop("method", "pem")
        fails += _refusal_fails(f"protocol {label}", lambda m=method, e=extra: build_query(m, **kw, **e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # SFP is demoted (it says so)
        sfp = build_query("sfp", word_share=0.3, **{**kw, "epsilon": 6.623})
        if sfp.report_cost() != report_charge(sfp.word_mechanism) + max(report_charge(m) for m in sfp.fragment_mechanisms):
            fails.append("sfp: the charge is not the word and fragment oracles' realized ε added up")
        if not np.isnan(sfp.min_detectable_frequency(1000)) or not 0 < sfp.position_threshold(1000):
            fails.append("sfp: no NaN announced, or no position threshold")
        reports = sfp.privatize(series, rng=SeededRandomSource(seed))
        if sfp.privatize(series[:1], rng=SeededRandomSource(seed)).height != 1 or sfp.epsilon_per_user != 6.623:
            fails.append("sfp: one user did not give one row of reports")
        with Accountant.create(tmp / "sfp.ledger", Population(name="sfp", lifetime_cap="20")) as acc:
            rec = sfp.charge(acc, "s1")
            if rec.epsilon != sfp.report_cost() or rec.params != sfp.spec() or rec.epsilon <= Fraction(6.623) - Fraction(1, 1 << 40):
                fails.append("sfp: charge did not record report_cost with the query's spec")
        for label, call in (("no values", lambda: sfp.privatize([])), ("a frame that is not SFP's", lambda: sfp.discover(reports.drop("word_report"))),
                            ("a position without reports", lambda: sfp.discover(reports.filter(pl.col("position") != 0))),
                            ("too few users to join", lambda: build_query("sfp", **{**kw, "epsilon": 0.1}).discover(
                                build_query("sfp", **{**kw, "epsilon": 0.1}).privatize(series[:8], rng=SeededRandomSource(seed)))),
                            ("word_share 1", lambda: build_query("sfp", word_share=1.0, **kw)),
                            ("too many fragment items", lambda: build_query("sfp", puzzle_bits=16, fragment=4, **{**kw, "max_length": 8}))):
            fails += _refusal_fails(f"sfp: {label}", call)
    return fails


# -- the ledger's audit, period and backup paths ---------------------------------------------------
def _ledger_case(tmp: Path, seed: int, quick: bool) -> list:
    fails: list = []
    work = Path(tempfile.mkdtemp(dir=tmp))
    pop = Population(name="audit", lifetime_cap="5", period_cap="2", period="day", cohorts=1000)
    acc = Accountant.create(work / "a.ledger", pop)
    try:
        day = datetime(2026, 1, 5, 12, tzinfo=timezone.utc)
        krr = KRR(epsilon=1.25, d=4)
        acc.spend("p1", krr, cohorts=range(950), when=day)  # past SQLite's 900 bound variables per statement
        acc.spend("p2", krr, cohorts=[0, 999], when=day + timedelta(days=1))
        charge = report_charge(krr)
        rem = acc.remaining_by_cohort(when=day)
        if acc.spent([0]) != 2 * charge or acc.spent([999]) != charge or rem[0] != 2 - charge or rem[960] != 2:
            fails.append("the totals over many cohorts and two periods are not the exact charges")
        if acc.remaining([0], when=day + timedelta(days=1)) != min(5 - 2 * charge, 2 - charge) or acc.spends_since(day + timedelta(hours=1)) != 1:
            fails.append("a period's remaining budget or spends_since is not what the rows say")
        if acc.check(krr, cohorts=[5], when=day + timedelta(days=2)) != 2 - charge:
            fails.append("check() does not return what would remain")
        keyed = build_longitudinal("l-grr", d=3, epsilon_perm=2.0, epsilon_1=1.0)
        rec = acc.spend_collection("k1", keyed, 1, cohorts=[3], when=day + timedelta(days=3))
        if rec.epsilon != collection_charge(keyed, 1) or rec.params.get("collection") != 1:
            fails.append("spend_collection did not charge collection_charge(mechanism, t)")
        zero = acc.spend("z0", 0, cohorts=[7], when=day)
        if zero.epsilon != 0 or acc.spent([7]) != charge or len(acc.history()) != 4:
            fails.append("a spend of ε = 0 was not recorded as a row that changes no total")
        if "remaining=" not in repr(acc):
            fails.append("the ledger's repr does not say what remains")
        fails += _refusals_spend_nothing(acc, [
            ("a spend past the period cap", lambda: acc.spend("p3", krr, cohorts=[0], when=day + timedelta(days=1)), None),
            ("a check past the lifetime cap", lambda: acc.check(KRR(epsilon=6.0, d=4), cohorts=[1]), None),
            ("a check of ε = 0", lambda: acc.check(0), None),
            ("a query id reused with another ε", lambda: acc.spend("p1", KRR(epsilon=1.0, d=4), cohorts=range(950), when=day), None),
            ("a query id reused with other parameters", lambda: acc.spend("p1", krr, cohorts=range(950), when=day, params={"x": 1}), None),
            ("an empty query id", lambda: acc.spend("", krr), None), ("d_in that is no int", lambda: acc.spend("p4", krr, d_in=1.5), None),
            ("cohorts that are no list", lambda: acc.spend("p4", krr, cohorts=7), None),
            ("a cohort of another type", lambda: acc.spend("p4", krr, cohorts=["zq7"]), "zq7"),
        ])
        def crash() -> Any:
            raise OSError("the disk filled up")  # a release that fails after its spend

        before = _state(acc)
        if _refusal_fails("", lambda: acc.release("r1", krr, crash, cohorts=[990], when=day + timedelta(days=4)), kinds=(OSError,)):
            fails.append("a release whose production failed did not raise its error")
        spent_once = _state(acc)
        retry = _refusal_fails("", lambda: acc.release("r1", krr, lambda: np.zeros(3), cohorts=[990], when=day + timedelta(days=4)))
        if (acc.release_status("r1") != "partial" or retry or _state(acc) != spent_once or spent_once == before
                or acc.spent([990]) != charge):
            fails.append("a release that failed after its spend is not charged once, marked partial and its retry refused")
        backup = acc.backup(work / "b.ledger")
        with Accountant(backup) as b:
            if _state(b) != _state(acc):
                fails.append("the backup holds other totals or rows")
        for label, call in (("a backup onto a file", lambda: acc.backup(backup)), ("a backup into no directory", lambda: acc.backup(work / "no" / "b"))):
            fails += _refusal_fails(label, call)
    finally:
        acc.close()
    if not repr(acc).startswith("Accountant("):
        fails.append("a closed ledger's repr failed")
    # copies edited behind the ledger's back are refused
    edits = {"an edited total": "UPDATE cohort_total SET total = '0' WHERE cohort = 0",
             "a rewritten population": "UPDATE meta SET value = replace(value, '\"5/1\"', '\"50/1\"') WHERE key = 'population'",
             "a broken population": "UPDATE meta SET value = '{' WHERE key = 'population'", "another schema": "UPDATE meta SET value = '0' WHERE key = 'schema'"}
    for label, sql in edits.items():
        copy = work / f"edit-{len(label)}.ledger"
        shutil.copy(work / "a.ledger", copy)
        con = sqlite3.connect(copy)
        con.execute(sql)
        con.commit()
        con.close()
        fails += _refusal_fails(f"a ledger with {label}", lambda c=copy: Accountant(c).close())
    con = sqlite3.connect(work / "a.ledger")
    try:
        page = con.execute("PRAGMA page_size").fetchone()[0]
        roots = [r for (r,) in con.execute("SELECT rootpage FROM sqlite_master WHERE name IN ('cohort_total', 'period_total', 'spend')")]
    finally:
        con.close()
    for root in roots:  # a damaged table page (its b-tree page type overwritten) is refused, never read as budget
        data = bytearray((work / "a.ledger").read_bytes())
        data[(root - 1) * page] = 0x77
        damaged = work / f"damaged-{root}.ledger"
        damaged.write_bytes(bytes(data))
        fails += _refusal_fails("a ledger with a damaged table page", lambda c=damaged: Accountant(c).close())
    (work / "junk.ledger").write_bytes(b"not a ledger at all " * 64)
    (work / "empty.ledger").touch()
    sqlite3.connect(work / "plain.ledger").execute("CREATE TABLE t (x)").connection.close()
    other = Population(name="audit", lifetime_cap="6", period_cap="2", period="day", cohorts=1000)
    for label, call in (("a file that is no SQLite", lambda: Accountant(work / "junk.ledger")), ("a plain SQLite file", lambda: Accountant(work / "plain.ledger")),
                        ("another population", lambda: Accountant(work / "a.ledger", other)), ("a directory", lambda: Accountant(work)),
                        ("a missing ledger", lambda: Accountant(work / "none.ledger")),
                        ("create over a ledger", lambda: Accountant.create(work / "a.ledger", pop)),
                        ("create of another population over it", lambda: Accountant.create(work / "a.ledger", other, exist_ok=True)),
                        ("create in a directory", lambda: Accountant.create(work, pop)),
                        ("create under a file", lambda: Accountant.create(work / "junk.ledger" / "x" / "l", pop, parents=True)), ("create without its directory", lambda: Accountant.create(work / "x" / "l", pop)),
                        ("create with no population", lambda: Accountant.create(work / "n.ledger", "audit")),
                        ("create at a path that is no path", lambda: Accountant.create(True, pop))):
        fails += _refusal_fails(label, call)
    fails += _hot_journal(work)
    with Accountant.create(work / "a.ledger", pop, exist_ok=True) as again, Accountant.create(work / "d" / "e" / "n.ledger", pop, parents=True) as fresh:
        if again.spent([0]) != 2 * report_charge(KRR(epsilon=1.25, d=4)) or fresh.spent() != 0:
            fails.append("create(exist_ok=True) did not open the ledger, or parents=True did not create an empty one")
    return fails


def _hot_journal(work: Path) -> list:
    """A ledger copied (with its journal) while a writer was mid-transaction opens at its last
    commit: SQLite's rollback of the hot journal, never the half-written totals."""
    path = work / "hot.ledger"
    with Accountant.create(path, Population(name="hot", lifetime_cap="5")) as acc:
        acc.spend("h1", KRR(epsilon=1.0, d=4))
        committed = _state(acc)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA cache_size = 1")  # a tiny cache: the changed pages spill into the file before the commit
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE cohort_total SET total = '0'")
        con.execute("CREATE TABLE pad (x BLOB)")
        con.executemany("INSERT INTO pad VALUES (?)", [(bytes(4000),)] * 40)
        copy = work / "hot-copy"
        copy.mkdir()
        for suffix in ("", "-journal"):
            if Path(f"{path}{suffix}").exists():
                shutil.copy(f"{path}{suffix}", f"{copy / path.name}{suffix}")
        con.execute("ROLLBACK")
    finally:
        con.close()
    try:
        with Accountant(copy / path.name) as acc:
            if _state(acc) != committed:
                return ["a ledger copied mid-transaction did not open at its last commit"]
    except LedgerError:
        return ["a ledger copied mid-transaction (with its hot journal) was refused instead of rolled back"]
    return []


#: the cases: ``(row label, function)``
CASES = (
    ("user path namespace heavy-hitters (ledger, sets, inferred domain)", _discovery_case),
    ("user path namespace key-value (both layouts, ledger)", _key_value_case),
    ("user path namespace several attributes (ledger)", _multi_case),
    ("user path namespace privatize (ledger scans, dictionaries, other, sink, poison)", _namespace_case),
    ("user path collect (CSV sets, ledger options, partitioned ledger, refusals)", _collect_case),
    ("user path simulate and demo (distributions, params, text)", _simulate_case),
    ("user path discovery protocol (levels, oracles, accumulators, sfp)", _protocol_case),
    ("user path ledger (audit, periods, backup, many cohorts)", _ledger_case),
)


def user_path_rows(*, seed: int = 0, quick: bool = False, only: Optional[tuple] = None) -> list:
    """One row per case (``name`` ``user path …``, ``workflow``, ``passed``, ``failures``,
    ``seconds``); ``only``: the labels of the cases to run (default: all)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="ldp-verify-paths-") as t:
        for label, run in CASES:
            if only is not None and label not in only:
                continue
            t0 = time.perf_counter()
            tmp = Path(tempfile.mkdtemp(dir=t))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # the demoted SFP says so; the cases check its refusals
                    fails = run(tmp, seed, quick)
            except Exception as e:  # noqa: BLE001 - a crash of a path is a failure, reported
                fails = [f"{type(e).__name__}: {str(e)[:200]}"]
            rows.append({"name": label, "instance": {}, "declared_epsilon": float("nan"), "realized_epsilon": float("nan"), "workflow": True,
                         "failures": fails[:8], "passed": not fails, "seconds": round(time.perf_counter() - t0, 2)})
    return rows


# -- seeded bugs: a defective door swapped in for one case ------------------------------------------
def _hh_retry_free(frame: Any, column: str, *, epsilon: float, accountant: Any = None, query_id: Optional[str] = None,
                   budget_cohorts: Any = None, **kw: Any) -> pl.DataFrame:
    """heavy_hitters charging with a plain spend, then randomizing: a retried query id is free and
    releases the users again."""
    if accountant is not None:
        q = build_query(kw.get("method", "pem"), epsilon=epsilon, **{k: v for k, v in kw.items() if k not in ("method", "seed", "set_size")})
        accountant.spend(query_id, q.report_cost(), mechanism=q.method, params=q.spec(), cohorts=budget_cohorts)
    return _REAL["heavy_hitters"](frame, column, epsilon=epsilon, **kw)


def _kv_retry_fresh(frame: Any, keys: str, mechanism: Any, *, accountant: Any = None, query_id: Optional[str] = None,
                    budget_cohorts: Any = None, keep_reports: bool = False, **kw: Any) -> pl.DataFrame:
    """privatize_key_values spending first and randomizing every time: a retry gives fresh reports."""
    if accountant is not None:
        accountant.spend(query_id, mechanism, cohorts=budget_cohorts)
    return _REAL["privatize_key_values"](frame, keys, mechanism, **kw)


def _attributes_next_stream(frame: Any, columns: Any, mechanism: Any, *, seed: Any = None, **kw: Any) -> pl.DataFrame:
    """privatize_attributes on the next seed's streams (not the batch path's)."""
    return _REAL["privatize_attributes"](frame, columns, mechanism, seed=seed + 1 if isinstance(seed, int) else seed, **kw)


def _outputs_unchecked(job: Any) -> None:
    """collect checking its outputs only when it writes them (after the spend)."""


#: the real doors the bugs wrap
_REAL = {"heavy_hitters": _pns.heavy_hitters, "privatize_key_values": _pkv.privatize_key_values, "privatize_attributes": _pm.privatize_attributes}
#: ``bug -> (case label, module, attribute, defective replacement)``: each must make its case fail
USER_PATH_BUGS = {
    "heavy-hitters-retry-free": (CASES[0][0], _pns, "heavy_hitters", _hh_retry_free),
    "key-value-retry-rerandomizes": (CASES[1][0], _pkv, "privatize_key_values", _kv_retry_fresh),
    "attributes-next-stream": (CASES[2][0], _pm, "privatize_attributes", _attributes_next_stream),
    "collect-spends-before-output-checks": (CASES[4][0], _collect, "_check_outputs", _outputs_unchecked),
}


def user_path_self_test(*, seed: int = 0, quick: bool = False) -> list:
    """Every seeded bug swapped in (for its one case, then restored) and its case run: ``caught``
    iff the case fails."""
    rows = []
    for bug, (label, module, attr, defect) in USER_PATH_BUGS.items():
        real = getattr(module, attr)
        setattr(module, attr, defect)
        try:
            row = user_path_rows(seed=seed, quick=quick, only=(label,))[0]
        finally:
            setattr(module, attr, real)
        bug_row = {k: v for k, v in row.items() if k != "workflow"}  # reported as a seeded bug (CAUGHT / MISSED), not as a workflow
        rows.append({**bug_row, "name": bug, "seeded_bug": True, "caught": not row["passed"], "caught_by": [label] if not row["passed"] else []})
    return rows
