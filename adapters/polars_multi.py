"""Several attributes per user: ``df.ldp.privatize_attributes(["country", "app", "os"],
ldp.SMP(...))`` — several integer-code columns in, **one report per user** out — and
``reports.ldp.attribute_frequencies(mech)``, the tidy per-attribute estimate
``attribute, item, estimate, std_error, ci_lower, ci_upper``.

Every value is checked (present, an integer code of its attribute) before anything is randomized;
errors give the column and the row, never the value. ``seed=None`` uses the OS CSPRNG; an integer
gives each chunk its own seeded stream (:func:`ldp_plugin.sampling.chunk_source`).

>>> import numpy as np, polars as pl, ldp_plugin as ldp
>>> df = pl.DataFrame({"country": [0, 1, 2, 1], "app": [3, 0, 1, 1]})
>>> smp = ldp.SMP(epsilon=2.0, domains=(3, 4))
>>> reports = df.ldp.privatize_attributes(["country", "app"], smp, seed=0)
>>> reports.columns, reports.height
(['attribute', 'report', 'ldp_spec'], 4)
>>> reports.ldp.attribute_frequencies(smp, names=["country", "app"])["attribute"].unique(maintain_order=True).to_list()
['country', 'app']
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import polars as pl

from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.mechanisms.reports import reports_to_frame
from ldp_plugin.sampling import RNGLike, chunk_source
from ldp_plugin.mechanisms.protocol import InputKind, Mechanism


from .polars_frames import ROWS_PER_CHUNK, accumulate_reports, check_frame, check_release_arguments, check_seed, release_with, strict
from .polars_user_ids import check_user_ids

__all__ = ["privatize_attributes", "attribute_frequencies"]


def _check(mechanism: Any) -> None:
    if not isinstance(mechanism, Mechanism) or mechanism.input_kind is not InputKind.TUPLE:
        raise LDPParameterError("privatize_attributes and attribute_frequencies need a multi-attribute mechanism (SPL, SMP, RSFD)")


@strict
def privatize_attributes(frame: pl.DataFrame | pl.LazyFrame, columns: Sequence[str], mechanism: Any, *, seed: RNGLike = None,
                         user_id: Optional[str] = None, keep_user_id: bool = False, accountant: Any = None, query_id: Optional[str] = None,
                         budget_cohorts: Optional[Sequence[int]] = None, keep_reports: bool = False) -> pl.DataFrame:
    """One report per user from the attribute ``columns`` (in the mechanism's attribute order).
    ``accountant=``/``query_id=``: the mechanism's ε is spent in the ledger after every check and
    before any report exists (as :meth:`LDPFrame.privatize`)."""
    _check(mechanism)
    check_frame(frame)
    check_release_arguments(accountant, query_id, keep_reports)
    check_seed(seed)  # before the spend
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
        raise LDPParameterError(f"columns must be a list of {mechanism.attributes} column names (got {type(columns).__name__})")
    columns = list(columns)
    if len(columns) != mechanism.attributes or len(set(columns)) != len(columns):
        raise LDPParameterError(f"{mechanism.name} needs {mechanism.attributes} distinct attribute columns (got {columns!r})")
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    missing = [c for c in columns + ([user_id] if user_id else []) if c not in df.columns]
    if missing:
        raise LDPInputError(f"column(s) {missing} are not in the frame")
    if keep_user_id and user_id is None:
        raise LDPParameterError("keep_user_id=True needs user_id=")
    if df.height == 0:
        raise LDPInputError("the frame has no rows: nothing to privatize")
    if user_id is not None:
        check_user_ids(df, user_id)  # exact, without a Python object per row
    for j, c in enumerate(columns):  # every cheap check before any report exists
        s = df[c]
        if not s.dtype.is_integer():
            raise LDPInputError(f"column {c!r} must hold integer codes of attribute {j} (got {s.dtype})")
        if s.null_count():
            raise LDPInputError(f"column {c!r} has a null at row {int(s.is_null().arg_true()[0])}")
        bad = (s < 0) | (s >= mechanism.domains[j])
        if bad.any():
            raise LDPInputError(f"column {c!r} holds a code outside [0, {mechanism.domains[j]}) at row {int(bad.arg_true()[0])}")

    def produce() -> pl.DataFrame:
        parts = []
        for i, start in enumerate(range(0, df.height, ROWS_PER_CHUNK)):
            chunk = df.slice(start, ROWS_PER_CHUNK)
            codes = np.stack([chunk[c].to_numpy().astype(np.int64) for c in columns], axis=1)
            out = reports_to_frame(mechanism, mechanism.randomize_encoded(codes, rng=chunk_source(seed, i)))
            if keep_user_id:
                out = out.insert_column(0, chunk[user_id])
            parts.append(out)
        return pl.concat(parts, rechunk=True)
    return release_with(accountant, query_id, mechanism, produce, cohorts=budget_cohorts, keep_reports=keep_reports)


@strict
def attribute_frequencies(reports: pl.DataFrame | pl.LazyFrame, mechanism: Any, *, names: Optional[Sequence[str]] = None,
                          confidence: float = 0.95, target: str = "sample") -> pl.DataFrame:
    """Per-attribute frequencies ``attribute, item, estimate, std_error, ci_lower, ci_upper``
    (``attribute`` is the index, or ``names[j]``)."""
    _check(mechanism)
    if names is not None and len(names) != mechanism.attributes:
        raise LDPParameterError(f"names must give {mechanism.attributes} attribute names")
    labels = None if names is None else mechanism.group_labels(names)
    out = mechanism.estimate_from(accumulate_reports(reports, mechanism), confidence=confidence, target=target).to_polars()
    if labels is not None:  # an attribute's name (SMPPairs: "a x b" for each pair)
        out = out.with_columns(pl.col("attribute").map_elements(lambda j: labels[j], return_dtype=pl.String))
    return out
