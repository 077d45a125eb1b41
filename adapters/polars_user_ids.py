"""One report per user per query: the user-id column holds no null and no repeated id — checked
exactly, without a Python object per row: 8 bytes per user hold the keys (the integer ids, or
the hashes of other ids) and at most 16 more per user are used while they are checked.

* **Integer ids** are compared as themselves. When their span ``max − min + 1`` is at most
  ``8·n`` (row numbers, dense account ids) each id sets one byte of a mask and the ids are
  distinct iff ``n`` bytes are set (one scatter, no sort); a span below ``n`` is a repeat by the
  pigeonhole principle; otherwise a sorted copy is scanned for equal neighbours.
* **Any other ids** (strings, Categoricals, ...) are reduced to Polars' 64-bit hash in one
  (streamed, for a LazyFrame) pass — the ids themselves are never materialized — and the sorted
  hashes are scanned for equal neighbours. Equal hashes are a repeat **or a collision**, so they
  are never taken as an answer: the rows whose hash is shared are read again and compared exactly
  (``is_duplicated`` on those few ids). No false accept (equal ids have equal hashes) and no false
  refusal (a collision alone is re-checked).

The count of rows with a repeated id in an error is exact; the error never shows an id.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ldp_plugin._errors import LDPInputError

__all__ = ["check_user_ids", "id_problems"]

#: the byte mask of integer ids is used while its span is at most this many bytes per user
MASK_BYTES_PER_USER = 8


def _id_keys(column: str) -> pl.Expr:
    """The 64-bit key of a non-integer id (the only place the hash is chosen: the exact re-check
    recomputes the same expression, and the tests replace it to force collisions)."""
    return pl.col(column).hash()


def check_user_ids(frame: pl.DataFrame | pl.LazyFrame, column: str) -> None:
    """Raise :class:`LDPInputError` if ``column`` holds a null or a repeated id (exact)."""
    nulls, repeated = id_problems(frame, column)
    if nulls:
        raise LDPInputError(f"user id column {column!r} has {nulls} null(s)")
    if repeated:
        raise LDPInputError(f"user id column {column!r} has {repeated} rows with a repeated id: one report per user per query")


def id_problems(frame: pl.DataFrame | pl.LazyFrame, column: str) -> tuple[int, int]:
    """``(null ids, rows whose id another row repeats)`` of ``column`` — the second counted only
    when there is no null (0 otherwise); both exact."""
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    if lf.collect_schema()[column].is_integer():
        ids = frame.get_column(column) if isinstance(frame, pl.DataFrame) else lf.select(column).collect(engine="streaming").to_series()
        if ids.null_count():
            return ids.null_count(), 0
        return 0, (0 if _distinct_ints(ids.to_numpy()) else int(ids.is_duplicated().sum()))
    # only the 64-bit keys are collected (streamed); a null id keeps a null key
    keys = lf.select(pl.when(pl.col(column).is_null()).then(None).otherwise(_id_keys(column)).alias("k")).collect(engine="streaming").to_series()
    if keys.null_count():
        return keys.null_count(), 0
    return 0, _repeated_by_keys(lf, column, keys.to_numpy())


def _distinct_ints(arr: np.ndarray) -> bool:
    """Whether the integers ``arr`` are pairwise distinct (exact)."""
    n = arr.size
    if n < 2:
        return True
    if arr.dtype.itemsize < 8:
        arr = arr.astype(np.int64)  # a difference below the span must not wrap a narrow dtype
    lo, hi = arr.min(), arr.max()
    span = int(hi) - int(lo) + 1
    if span < n:  # pigeonhole
        return False
    if span <= MASK_BYTES_PER_USER * n:
        mask = np.zeros(span, dtype=np.bool_)
        mask[arr - lo if lo else arr] = True  # 0 <= id - lo < span: no wrap in a 64-bit dtype
        return int(np.count_nonzero(mask)) == n
    keys = np.sort(arr)
    return not bool((keys[1:] == keys[:-1]).any())


def _repeated_by_keys(lf: pl.LazyFrame, column: str, keys: np.ndarray) -> int:
    """Rows with a repeated id, given every row's 64-bit key: 0 when all keys differ; otherwise
    the rows holding a shared key are read again and compared exactly."""
    keys = np.sort(keys)
    same = keys[1:] == keys[:-1]
    if not same.any():
        return 0
    shared = pl.Series("k", np.unique(keys[1:][same]), dtype=pl.UInt64)
    expected = int(same.sum()) + shared.len()  # rows holding a shared key: a run of L rows adds L − 1
    del keys, same
    ids = lf.filter(_id_keys(column).is_in(pl.lit(shared).implode())).select(column).collect(engine="streaming").to_series()
    if ids.len() != expected:  # the keys were not reproduced: compare every id (never a silent pass)
        ids = lf.select(column).collect(engine="streaming").to_series()
    return int(ids.is_duplicated().sum())
