"""Key–value sets: ``df.ldp.privatize_key_values("keys", ldp.PCKV(...), values="durations")``
(two list columns) or ``df.ldp.privatize_key_values("apps", pckv)`` (one list-of-struct column with
fields ``key`` and ``value``) → one report per user; ``reports.ldp.key_values(pckv)`` → ``key,
frequency, frequency_se, frequency_ci_lower, frequency_ci_upper, mean, mean_se, mean_ci_lower,
mean_ci_upper``.

>>> import polars as pl, ldp_plugin as ldp
>>> df = pl.DataFrame({"keys": [[0, 2], [], [1]], "values": [[0.5, -1.0], [], [0.25]]})
>>> pckv = ldp.PCKV(epsilon=2.0, d=3, ell=2)
>>> reports = df.ldp.privatize_key_values("keys", pckv, values="values", seed=0)
>>> reports.height, reports.ldp.key_values(pckv).columns[:3]
(3, ['key', 'frequency', 'frequency_se'])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import polars as pl

from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.mechanisms.key_value import KeyValueBatch
from ldp_plugin.mechanisms.reports import reports_to_frame
from ldp_plugin.sampling import RNGLike, chunk_source
from ldp_plugin.mechanisms.protocol import InputKind, Mechanism


from .polars_frames import ROWS_PER_CHUNK, accumulate_reports, check_frame, check_release_arguments, check_seed, release_with, strict

__all__ = ["privatize_key_values", "key_values"]


def _check(mechanism: Any) -> None:
    if not isinstance(mechanism, Mechanism) or mechanism.input_kind is not InputKind.KEY_VALUE:
        raise LDPParameterError("privatize_key_values and key_values need a key-value mechanism (PCKV)")


def _batch(df: pl.DataFrame, keys: str, values: Optional[str]) -> KeyValueBatch:
    ks = df[keys]
    if values is None:
        if not (isinstance(ks.dtype, pl.List) and isinstance(ks.dtype.inner, pl.Struct)):
            raise LDPInputError(f"column {keys!r} must be a list of structs with fields 'key' and 'value' (or give values=)")
        names = [f.name for f in ks.dtype.inner.fields]
        if "key" not in names or "value" not in names:
            raise LDPInputError(f"the structs of column {keys!r} need fields 'key' and 'value'")
        if ks.null_count():
            raise LDPInputError(f"column {keys!r} has a null set at row {int(ks.is_null().arg_true()[0])} (an empty set is [])")
        lens = ks.list.len()
        flat = ks.filter(lens > 0).explode().struct.unnest() if lens.sum() else pl.DataFrame({"key": [], "value": []})
        k, v = flat["key"], flat["value"]
    else:
        vs = df[values]
        for name, s in ((keys, ks), (values, vs)):
            if not isinstance(s.dtype, pl.List):
                raise LDPInputError(f"column {name!r} must be a list column")
            if s.null_count():
                raise LDPInputError(f"column {name!r} has a null list at row {int(s.is_null().arg_true()[0])} (an empty set is [])")
        lens = ks.list.len()
        bad = lens != vs.list.len()
        if bad.any():
            raise LDPInputError(f"columns {keys!r} and {values!r} have lists of different lengths at row {int(bad.arg_true()[0])}")
        # empty lists filtered first: exploding one gives a null row in some Polars versions
        k, v = ks.filter(lens > 0).explode(), vs.filter(lens > 0).explode()
    if k.null_count() or v.null_count():
        raise LDPInputError("a key or a value inside a set is null")
    offsets = np.concatenate([[0], np.cumsum(lens.to_numpy().astype(np.int64))])
    for what, s in (("keys", k), ("values", v)):  # checked by dtype: a cast's error would repeat the offending values
        if not s.dtype.is_numeric():
            raise LDPInputError(f"the {what} inside the sets must be numbers (keys: integer codes in [0, d); values: in [-1, 1]), "
                                f"got {s.dtype}")
    return KeyValueBatch(k.cast(pl.Float64).to_numpy(), v.cast(pl.Float64).to_numpy(), offsets)


@strict
def privatize_key_values(frame: pl.DataFrame | pl.LazyFrame, keys: str, mechanism: Any, *, values: Optional[str] = None,
                         seed: RNGLike = None, accountant: Any = None, query_id: Optional[str] = None,
                         budget_cohorts: Optional[Sequence[int]] = None, keep_reports: bool = False) -> pl.DataFrame:
    """One report per user from a list-of-struct column, or from two list columns.
    ``accountant=``/``query_id=``: the mechanism's ε is spent in the ledger after every check and
    before any report exists (as :meth:`LDPFrame.privatize`)."""
    _check(mechanism)
    check_frame(frame)
    check_release_arguments(accountant, query_id, keep_reports)
    check_seed(seed)  # before the spend
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    for c in [keys] + ([values] if values else []):
        if c not in df.columns:
            raise LDPInputError(f"column {c!r} is not in the frame")
    if df.height == 0:
        raise LDPInputError("the frame has no rows: nothing to privatize")
    batches = []
    for start in range(0, df.height, ROWS_PER_CHUNK):  # every chunk checked before any report exists
        batches.append(mechanism.encode_pairs(_batch(df.slice(start, ROWS_PER_CHUNK), keys, values)))

    def produce() -> pl.DataFrame:
        parts = [reports_to_frame(mechanism, mechanism.randomize(b, rng=chunk_source(seed, i))) for i, b in enumerate(batches)]
        return pl.concat(parts, rechunk=True)
    return release_with(accountant, query_id, mechanism, produce, cohorts=budget_cohorts, keep_reports=keep_reports)


@strict
def key_values(reports: pl.DataFrame | pl.LazyFrame, mechanism: Any, *, confidence: float = 0.95, target: str = "sample") -> pl.DataFrame:
    """Each key's frequency and mean value with standard errors and intervals for ``target``
    (and ``interval_kind``: ``"bound"`` when the mechanism sampled users above ``ell``;
    ``mean_interval_kind``: ``"bound"`` for ``target="sample"``, whose means' standard errors are
    conservative)."""
    _check(mechanism)
    est = mechanism.estimate_from(accumulate_reports(reports, mechanism), confidence=confidence, target=target)
    return est.to_polars().with_columns(pl.lit(est.interval_kind).alias("interval_kind"),
                                        pl.lit(est.mean_interval_kind).alias("mean_interval_kind"))
