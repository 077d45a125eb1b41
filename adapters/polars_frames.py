"""Tidy Polars output for estimates (the dataframe namespace ``ldp`` builds on this)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence

import polars as pl

from ldp_plugin._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ldp_plugin.sampling import as_source
from ldp_plugin.estimation import FrequencyEstimate
from ldp_plugin.mechanisms.frame_spec import SPEC_COLUMN, missing_spec_error
from ldp_plugin.mechanisms.reports import frame_to_reports, report_schema

#: rows per streamed chunk of a LazyFrame (every Polars adapter)
ROWS_PER_CHUNK = 1 << 18

__all__ = ["estimate_frame", "accumulate_reports", "check_spec_column", "check_release_arguments", "release_with"]


def estimate_frame(estimate: FrequencyEstimate, truth: Optional[Sequence[float]] = None) -> pl.DataFrame:
    """``item, estimate, std_error, ci_lower, ci_upper`` (and ``truth``, ``covered`` if given), and
    ``interval_kind`` when the intervals are not plain ones (``"bound"``: they claim their coverage
    only — IBU's conservative intervals, or lower bounds: :class:`~ldp_plugin.estimation.FrequencyEstimate`)."""
    df = estimate.to_polars(truth)
    kind = getattr(estimate, "interval_kind", "interval")
    if kind != "interval":
        df = df.with_columns(pl.lit(kind).alias("interval_kind"))
    if truth is not None:
        df = df.with_columns(covered=(pl.col("truth") >= pl.col("ci_lower")) & (pl.col("truth") <= pl.col("ci_upper")))
    return df


def check_release_arguments(accountant: Any, query_id: Optional[str], keep_reports: bool) -> None:
    """The ledger arguments of a ``privatize_*`` method, checked before anything else."""
    if accountant is None and (query_id is not None or keep_reports):
        raise LDPParameterError("query_id/keep_reports need an accountant=")
    if accountant is not None and not query_id:
        raise LDPParameterError("spending from an accountant needs a query_id")


def release_with(accountant: Any, query_id: Optional[str], mechanism: Any, produce: Any, *, cohorts: Optional[Sequence[int]] = None,
                 keep_reports: bool = False) -> Any:
    """``produce()`` — the reports — after the atomic spend of ``mechanism``'s ε under ``query_id``
    when an ``accountant`` is given (call it after every cheap check: a refused query randomizes
    nothing; a retry returns the kept reports), else directly."""
    if accountant is None:
        return produce()
    return accountant.release(query_id, mechanism, produce, cohorts=cohorts, keep_reports=keep_reports)


def accumulate_reports(reports: pl.DataFrame | pl.LazyFrame, mechanism: Any) -> Any:
    """The mechanism's accumulator over a reports frame, added in chunks of
    :data:`ROWS_PER_CHUNK` rows (a LazyFrame streamed, only its report columns and its spec column
    read); a frame without one of the mechanism's report columns, without the spec column, with the
    spec of another mechanism or parameter set (or several specs), or without rows, is refused
    (:mod:`ldp_plugin.mechanisms.frame_spec`: every chunk's spec is checked before it is counted)."""
    check_frame(reports, "reports")  # anything else is refused by its type (not an AttributeError)
    check_spec_column(reports, mechanism)
    cols = list(report_schema(mechanism).names())
    if isinstance(reports, pl.LazyFrame):
        batches = reports.select(cols).collect_batches(chunk_size=ROWS_PER_CHUNK, engine="streaming")
    else:
        selected = reports.select(cols)
        batches = (selected.slice(start, ROWS_PER_CHUNK) for start in range(0, reports.height, ROWS_PER_CHUNK))
    acc = mechanism.accumulator()
    for batch in batches:
        acc.add(frame_to_reports(mechanism, batch))
    if acc.n == 0:
        raise LDPInputError("the reports frame is empty: nothing to estimate")
    return acc


def check_spec_column(reports: pl.DataFrame | pl.LazyFrame, mechanism: Any) -> None:
    """A reports frame has the mechanism's report columns and the spec column (its values are
    checked chunk by chunk where the reports are read, :func:`frame_to_reports`)."""
    schema = reports.collect_schema() if isinstance(reports, pl.LazyFrame) else reports.schema
    missing = [c for c in report_schema(mechanism).names() if c not in schema and c != SPEC_COLUMN]
    if missing:
        raise LDPInputError(f"the reports frame lacks column(s) {missing} for mechanism {mechanism.name}")
    if SPEC_COLUMN not in schema:
        raise missing_spec_error()


def strict(fn: Callable) -> Callable:
    """An adapter function whose bad call (a misspelt or unknown keyword, a missing argument) is an
    :class:`LDPArgumentError` naming what it takes — never ignored, never a bare ``TypeError``."""
    sig = inspect.signature(fn)
    takes = ", ".join(p.name for p in sig.parameters.values())

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            sig.bind(*args, **kwargs)
        except TypeError:
            unknown = sorted(k for k in kwargs if k not in sig.parameters)
            which = f"has no parameter(s) {unknown}" if unknown else "was called with invalid arguments"
            raise LDPArgumentError(f"{fn.__name__} {which}; it takes {takes}") from None
        return fn(*args, **kwargs)
    return wrapper


def check_frame(frame: Any, what: str = "frame") -> None:
    """``frame`` is a Polars DataFrame or LazyFrame (anything else is refused by its type)."""
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        raise LDPInputError(f"{what} must be a Polars DataFrame or LazyFrame (got {type(frame).__name__})")


def check_seed(seed: Any) -> None:
    """The ``seed`` is usable (None, an integer seed or a random source), checked before any spend."""
    if seed is not None:
        as_source(seed)
