"""Tidy Polars output for estimates (the dataframe namespace ``ldp`` builds on this)."""

from __future__ import annotations

from typing import Optional, Sequence

import polars as pl

from ldp_plugin.estimation import FrequencyEstimate

#: rows per streamed chunk of a LazyFrame (every Polars adapter)
ROWS_PER_CHUNK = 1 << 18

__all__ = ["estimate_frame"]


def estimate_frame(estimate: FrequencyEstimate, truth: Optional[Sequence[float]] = None) -> pl.DataFrame:
    """``item, estimate, std_error, ci_lower, ci_upper`` (and ``truth``, ``covered`` if given)."""
    df = estimate.to_polars(truth)
    if truth is not None:
        df = df.with_columns(covered=(pl.col("truth") >= pl.col("ci_lower")) & (pl.col("truth") <= pl.col("ci_upper")))
    return df
