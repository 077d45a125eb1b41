"""The ``ldp`` namespace on Polars DataFrames and LazyFrames.

>>> import polars as pl
>>> import ldp_plugin as ldp
>>> df = pl.DataFrame({"user": [1, 2, 3, 4], "color": ["red", "blue", "red", "green"]})
>>> mech = ldp.KRR(epsilon=2.0, categories=["red", "green", "blue"])
>>> reports = df.ldp.privatize("color", mech, user_id="user", seed=0)
>>> reports.columns
['report', 'ldp_spec']
>>> reports.ldp.estimate(mech).columns
['item', 'estimate', 'std_error', 'ci_lower', 'ci_upper']

``privatize(column, mechanism, ...)`` randomizes one value (scalar column) or one set (``List``
column, with a :class:`ldp_plugin.SampleOne` mechanism) per row; ``estimate(mechanism, ...)``
aggregates a reports frame into a tidy estimate frame. Both work on Arrow buffers with numpy
(never row by row) in fixed chunks of :data:`ROWS_PER_CHUNK` rows. With an integer ``seed``
chunk ``j`` uses its own seeded stream, so a DataFrame and a LazyFrame of the same rows give the
same reports however the engine batches them; without a seed the OS CSPRNG is used.

A LazyFrame is **streamed** (``collect_batches`` on Polars' streaming engine, memory bounded by a
few chunks) but the reports are **materialized once** — in memory, or as Parquet parts under
``sink=DIR`` — never returned as a lazy query: a lazy randomization would draw fresh noise on every
``collect`` and silently release the data again.

Validation (errors name the problem and the row, never a value): missing column, wrong dtype, null
values or sets, null items inside sets, null or duplicate user ids (one report per user per
query), unknown items (an error, or ``unknown="other"`` to map them to an ``other`` category the
mechanism declares), sets longer than ``m`` (the :class:`SampleOne` policy), empty frames.
Report columns: ``cohort`` (UInt32, cohort mechanisms), ``seed`` (UInt64, OLH), ``report``
(UInt32 / Boolean / ``Array(UInt8, bytes)`` for packed bits / ``Array(UInt32, k)`` for subsets),
``ldp_spec`` (the spec the reports were made under, an Enum of one category: one byte per row;
:mod:`ldp_plugin.mechanisms.frame_spec`); the user id only with ``keep_user_id=True``. Counts are
int64 throughout. Every estimate of a reports frame refuses one without ``ldp_spec``, with the spec
of another mechanism or parameter set, or mixing specs; keep the column through filters, selects,
concatenations and files (Parquet, IPC and CSV keep it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import polars as pl

from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.hashing import assign_cohorts
from ldp_plugin.persist import write_reports, INCOMPLETE_MARKER
from ldp_plugin.mechanisms import Mechanism
from ldp_plugin.mechanisms import reports as codecs
from ldp_plugin.mechanisms.protocol import refuse_keyed
from ldp_plugin.sampling import RNGLike, chunk_source

from .polars_discovery import heavy_hitters
from .polars_frames import ROWS_PER_CHUNK, accumulate_reports, check_frame, check_seed, check_spec_column, estimate_frame, strict
from . import polars_distribution as _pd, polars_key_value as _pkv, polars_multi as _pm
from ldp_plugin.progress import progress
from ldp_plugin._boundary import can_write_under
from ldp_plugin.robust.bounds import poison_bound
from .polars_user_ids import check_user_ids

__all__ = ["ROWS_PER_CHUNK", "privatize", "check_input", "estimate", "reports_to_frame", "frame_to_reports", "LDPFrame", "LDPLazyFrame"]

UNKNOWN = ("error", "other")


def _check_mechanism(mechanism: Any) -> None:
    if not isinstance(mechanism, Mechanism):
        raise LDPParameterError("mechanism must be an ldp_plugin mechanism (e.g. KRR(...), ORR(...), SampleOne(...))")


# -- report batches <-> frames (the layout is the mechanism's: reports.report_schema(mechanism)) -------------
def reports_to_frame(mechanism: Any, reports: Any) -> pl.DataFrame:
    """A report batch of ``mechanism`` as Polars columns (see the module docstring)."""
    _check_mechanism(mechanism)
    return codecs.reports_to_frame(mechanism, reports)


def frame_to_reports(mechanism: Any, frame: pl.DataFrame) -> Any:
    """The native report batch of ``mechanism`` from a reports frame, tagged with its spec; a frame
    without the spec column, or of another spec, is refused (:mod:`ldp_plugin.mechanisms.frame_spec`)."""
    _check_mechanism(mechanism)
    check_frame(frame, "reports")
    if isinstance(frame, pl.LazyFrame):
        raise LDPInputError("frame_to_reports takes a DataFrame (collect the LazyFrame, or estimate it streamed with estimate)")
    check_spec_column(frame, mechanism)
    return codecs.frame_to_reports(mechanism, frame)


# -- privatize ------------------------------------------------------------------------------------------
#: input kinds with their own Polars entry point: what a user holds, and the method
_ENTRY_BY_KIND = {"key-value": ("a set of (key, value) pairs", "privatize_key_values"),
                  "tuple": ("one value per attribute (several columns)", "privatize_attributes")}


class _Privatizer:
    def __init__(self, mechanism, column, *, user_id, cohorts, keep_user_id, unknown, other, rng):
        _check_mechanism(mechanism)
        refuse_keyed(mechanism, "privatize")
        entry = _ENTRY_BY_KIND.get(mechanism.input_kind)
        if entry is not None:
            raise LDPParameterError(f"{mechanism.name} takes {entry[0]} per user, which privatize's one column cannot hold: "
                                    f"use df.ldp.{entry[1]}(...)")
        if unknown not in UNKNOWN:
            raise LDPParameterError(f"unknown must be one of {UNKNOWN} (got {unknown!r})")
        self.mechanism = mechanism
        self.base = mechanism.base
        self.is_set = mechanism.input_kind == "set"
        self.column = column
        self.user_id = user_id
        self.keep_user_id = keep_user_id
        self.unknown = unknown
        self.other = other
        self.rng = rng
        self.is_cohort = mechanism.takes_cohorts
        if cohorts is not None:
            if not self.is_cohort:
                raise LDPParameterError("cohorts= applies only to cohort mechanisms (orr, orappor)")
            if user_id is None:
                raise LDPParameterError("cohorts=SALT assigns cohorts from a salted hash of the user id: pass user_id=")
            if isinstance(cohorts, bool) or not isinstance(cohorts, (int, np.integer)) or not 0 <= int(cohorts) < 1 << 64:
                raise LDPParameterError("cohorts must be None (fresh randomness) or an integer salt in [0, 2**64)")
        self.cohort_salt = cohorts
        if keep_user_id and user_id is None:
            raise LDPParameterError("keep_user_id=True needs user_id=")
        categories = mechanism.categories
        if unknown == "other":
            if categories is None or other not in categories:
                raise LDPParameterError(f"unknown='other' needs a mechanism whose categories include {other!r}")
        self.categories = categories

    def check_schema(self, schema: pl.Schema) -> None:
        if self.column not in schema:
            raise LDPInputError(f"column {self.column!r} is not in the frame")
        dtype = schema[self.column]
        is_list = isinstance(dtype, (pl.List, pl.Array))
        if is_list and not self.is_set:
            raise LDPInputError(f"column {self.column!r} holds sets (dtype {dtype}): wrap the mechanism as SampleOne(mechanism=..., m=...)")
        inner = dtype.inner if is_list else dtype
        if self.mechanism.input_kind == "number":
            if not inner.is_numeric() or is_list:
                raise LDPInputError(f"column {self.column!r} must hold numbers for {self.mechanism.name} (got {dtype})")
        elif not (inner.is_integer() or inner in (pl.String, pl.Categorical, pl.Enum, pl.Boolean) or isinstance(inner, (pl.Categorical, pl.Enum))):
            raise LDPInputError(f"column {self.column!r} must hold integers, strings or booleans (got {dtype})")
        if self.user_id is not None and self.user_id not in schema:
            raise LDPInputError(f"user id column {self.user_id!r} is not in the frame")

    def check_users(self, frame: pl.DataFrame | pl.LazyFrame) -> int:
        """The row count (a frame without rows is refused). The user ids are checked by
        :meth:`check_ids` — before any spend, or alongside the randomization when nothing is
        spent or written (:func:`_release` returns no report before the check has passed)."""
        n = frame.height if isinstance(frame, pl.DataFrame) else int(frame.select(pl.len()).collect(engine="streaming").item())
        if n == 0:
            raise LDPInputError("the frame has no rows: nothing to privatize")
        return n

    def check_ids(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        """With ``user_id``: no null and no repeated id, exactly, in O(24 bytes) per user
        (:mod:`~ldp_plugin.adapters.polars_user_ids`: integer ids as themselves, others by a
        64-bit hash with an exact re-check of any shared hash)."""
        if self.user_id is not None:
            check_user_ids(frame, self.user_id)

    def check_values(self, lf: pl.LazyFrame) -> None:
        """Closed alphabets: one streamed scan for items outside the categories (nulls too), so a
        bad value anywhere in the input is refused before any budget is spent; open alphabets and
        ``unknown="other"``: a scan for nulls. The error gives the absolute row number, never the
        value."""
        col = self.column
        if self.mechanism.input_kind == "number":  # every value present, finite and in [lower, upper]
            lo, hi = self.mechanism.lower, self.mechanism.upper
            e = pl.col(col).cast(pl.Float64)
            bad = lf.select(pl.int_range(pl.len()).alias("_row"), (e.is_null() | e.is_nan() | (e < lo) | (e > hi)).alias("_bad"))
            first = bad.filter(pl.col("_bad")).select("_row").head(1).collect(engine="streaming")
            if first.height:
                raise LDPInputError(f"column {col!r} holds a missing value or one outside [lower, upper] = [{lo!r}, {hi!r}] at row "
                                    f"{int(first.item())}; nothing was spent")
            return
        spec = self.mechanism.spec() if self.is_set else {}
        spec = spec.get("params", spec)  # a family's parameters, or a wrapper's own (m, on_long)
        if self.is_set and spec.get("on_long") == "error" and isinstance(spec.get("m"), int) and isinstance(lf.collect_schema()[col], (pl.List, pl.Array)):
            m = spec["m"]  # a set longer than m is refused here, before the spend (not while streaming after it)
            long = lf.select(pl.int_range(pl.len()).alias("_row"), (pl.col(col).list.unique().list.len() > m).alias("_bad"))
            first = long.filter(pl.col("_bad")).select("_row").head(1).collect(engine="streaming")
            if first.height:
                raise LDPInputError(f"column {col!r} holds a set of more than m={m} items at row {int(first.item())} "
                                    "(on_long='error'; on_long='sample' samples m of them); nothing was spent")
        self._check_nulls(lf)  # every alphabet, open or closed: a null set, item or value costs no budget either
        if self.unknown == "other" or not self.mechanism.closed:
            return
        cats = self.categories
        dtype = lf.collect_schema()[col]
        if cats is not None and not self.is_set and (dtype == pl.Categorical or isinstance(dtype, pl.Enum)):
            # a dictionary column: check its distinct labels (hashed on the physical codes), and
            # scan the rows for the first bad one only when there is one
            labels = lf.select(pl.col(col).unique()).collect(engine="streaming").to_series()
            if not labels.null_count() and bool(labels.cast(pl.String).is_in(pl.Series(list(cats)).cast(pl.String, strict=False)).all()):
                return
        if cats is None:  # integer codes in [0, d)
            d = self.mechanism.domain_size
            test = lambda e: e.is_null() | (e.cast(pl.Int64, strict=False) < 0) | (e.cast(pl.Int64, strict=False) >= d) | e.cast(pl.Int64, strict=False).is_null()  # noqa: E731
        else:
            allowed = pl.Series(list(cats)).cast(pl.String, strict=False)
            if self.is_set:  # inside list.eval: the categories as one list literal (a bare Series there is ambiguous, deprecated by Polars)
                allowed = pl.lit(allowed).implode()
            test = lambda e: e.is_null() | ~e.cast(pl.String, strict=False).is_in(allowed)  # noqa: E731
        if self.is_set and isinstance(lf.collect_schema()[col], (pl.List, pl.Array)):
            bad = lf.select(pl.int_range(pl.len()).alias("_row"), pl.col(col).list.eval(test(pl.element())).list.any().alias("_bad"))
        else:
            bad = lf.select(pl.int_range(pl.len()).alias("_row"), test(pl.col(col)).alias("_bad"))
        first = bad.filter(pl.col("_bad")).select("_row").head(1).collect(engine="streaming")
        if first.height:
            raise LDPInputError(f"column {col!r} holds an item that is not one of the mechanism's categories (or a null) at row {int(first.item())}; nothing was spent")

    def _check_nulls(self, lf: pl.LazyFrame) -> None:
        """One streamed scan for the first null value (or null set, or null item inside a set);
        the error gives the absolute row number, as :meth:`prepare` would after the spend."""
        col = self.column
        listed = isinstance(lf.collect_schema()[col], (pl.List, pl.Array))
        for what, bad in (("set" if self.is_set else "value", pl.col(col).is_null()),
                          ("item in the set", pl.col(col).list.eval(pl.element().is_null()).list.any().fill_null(False) if listed else None)):
            if bad is None:
                continue
            first = lf.select(pl.int_range(pl.len()).alias("_row"), bad.alias("_bad")).filter(pl.col("_bad")).select("_row").head(1).collect(engine="streaming")
            if first.height:
                raise LDPInputError(f"column {col!r} has a null {what} at row {int(first.item())}; nothing was spent")

    def _map_other(self, series: pl.Series) -> pl.Series:
        cats = pl.Series(list(self.categories))
        if self.is_set:
            # the categories as one list literal (a bare Series inside list.eval is ambiguous: deprecated by Polars)
            mapped = series.list.eval(pl.when(pl.element().is_in(pl.lit(cats).implode())).then(pl.element()).otherwise(pl.lit(self.other)))
            return mapped.list.unique(maintain_order=True)
        name = series.name
        return series.to_frame().select(
            pl.when(pl.col(name).is_in(cats)).then(pl.col(name)).otherwise(pl.lit(self.other)).alias(name)
        ).to_series()

    def prepare(self, chunk: pl.DataFrame, offset: int) -> tuple:
        """The cheap, data-checking half of a chunk: nulls, unknown items, cohorts, and (for
        single-value mechanisms) the dictionary encoding — run one chunk ahead of the
        randomization, in a helper thread (Polars releases the GIL), by :func:`_release`."""
        series = chunk[self.column]
        if series.null_count():
            pos = offset + int(series.is_null().arg_true()[0])
            raise LDPInputError(f"column {self.column!r} has a null {'set' if self.is_set else 'value'} at row {pos}")
        if self.unknown == "other":
            series = self._map_other(series)
        by_codes = self.mechanism.input_kind == "value" and not self.mechanism.needs_user_keys
        if series.dtype == pl.Categorical and not by_codes:  # encode() maps Categoricals through their physical codes
            series = series.cast(pl.String)
        coh = None
        if self.is_cohort and self.cohort_salt is not None:
            coh = assign_cohorts(chunk[self.user_id], self.base.cohorts, int(self.cohort_salt))
        codes = None
        if by_codes:
            try:
                codes = self.mechanism.encode(series)  # randomize(values) is randomize_encoded(encode(values))
            except LDPInputError as e:
                raise LDPInputError(f"{e} [rows {offset}..{offset + chunk.height - 1} of the frame]") from None
        return series, codes, coh

    def finish(self, chunk: pl.DataFrame, prepared: tuple, index: int, offset: int, partition: Optional[int] = None) -> pl.DataFrame:
        """The randomizing half of a chunk (its own random stream: results never depend on the
        pipelining)."""
        series, codes, coh = prepared
        source = chunk_source(self.rng, index, partition)
        try:
            if codes is not None:
                reports = self.mechanism.randomize_encoded(codes, rng=source, cohorts=coh)
            else:
                reports = self.mechanism.randomize(series, rng=source, cohorts=coh)
        except LDPInputError as e:
            raise LDPInputError(f"{e} [rows {offset}..{offset + chunk.height - 1} of the frame]") from None
        out = reports_to_frame(self.mechanism, reports)
        if self.keep_user_id:
            out = out.insert_column(0, chunk[self.user_id])
        return out


def _rechunk(batches: Iterator[pl.DataFrame], rows: int) -> Iterator[pl.DataFrame]:
    """Re-cut a stream of frames into frames of exactly ``rows`` rows (the last may be shorter)."""
    buf: list[pl.DataFrame] = []
    held = 0
    for b in batches:
        while b.height:
            take = min(rows - held, b.height)
            buf.append(b.slice(0, take))
            held += take
            b = b.slice(take)
            if held == rows:
                yield pl.concat(buf, rechunk=True)
                buf, held = [], 0
    if held:
        yield pl.concat(buf, rechunk=True)


def check_input(frame: pl.DataFrame | pl.LazyFrame, column: str, mechanism: Any, *, user_id: Optional[str] = None, cohorts: Optional[int] = None,
                unknown: str = "error", other: Any = "other") -> int:
    """Every check :func:`privatize` makes before a spend — the arguments, the schema, the rows, the
    user ids (no null, no repeat) and every value (a streamed scan) — randomizing nothing; the row
    count. What a caller that spends before the randomization runs elsewhere (a partitioned job's
    executor) runs on each input first, so a bad input costs no budget."""
    check_frame(frame)
    p = _Privatizer(mechanism, column, user_id=user_id, cohorts=cohorts, keep_user_id=False, unknown=unknown, other=other, rng=None)
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    p.check_schema(lf.collect_schema())
    n = p.check_users(frame)
    p.check_ids(frame)
    p.check_values(lf)
    return n


@strict
def privatize(
    frame: pl.DataFrame | pl.LazyFrame,
    column: str,
    mechanism: Any,
    *,
    user_id: Optional[str] = None,
    cohorts: Optional[int] = None,
    seed: RNGLike = None,
    keep_user_id: bool = False,
    unknown: str = "error",
    other: Any = "other",
    sink: Optional[str | Path] = None,
    accountant: Any = None,
    query_id: Optional[str] = None,
    budget_cohorts: Optional[Sequence[int]] = None,
    keep_reports: bool = False,
    partition: Optional[int] = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Randomize ``column`` (one value or one set per user) with ``mechanism`` → a reports frame.

    :param user_id: the user id column: checked for nulls and duplicates (one report per user).
    :param cohorts: cohort mechanisms only: ``None`` draws each user's cohort uniformly at random;
        an integer is a salt, and the cohort is the salted hash of the user id (stable across
        collections, independent of the data).
    :param seed: ``None`` for the OS CSPRNG; an integer for reproducible, *non-secure* reports.
    :param unknown: ``"error"`` or ``"other"`` (unknown items become ``other``, a declared category).
    :param sink: a directory: write the reports as Parquet parts there (with the mechanism in
        their metadata, :mod:`ldp_plugin.persist`) and return a scan of them.
    :param partition: the index of this frame in a partitioned job: with a ``seed``, chunk ``j``
        of partition ``i`` uses the stream ``(seed, i, j)`` — never the same stream twice.
    :param accountant: a :class:`ldp_plugin.Accountant`: the mechanism's ε is spent under
        ``query_id`` on ``budget_cohorts`` (the population's cohorts this frame covers; all by
        default) after the frame's schema and user ids are validated and **before** any report is
        produced. A refused query raises :class:`ldp_plugin.BudgetExceededError` and randomizes
        nothing. A retried ``query_id`` is not charged again and returns the kept reports
        (``keep_reports=True``), or is refused if they were not kept. Errors found while streaming
        (e.g. an unknown item in a later chunk) come after the spend: budget is lost, privacy never.
    """
    check_frame(frame)
    check_seed(seed)  # a bad seed is refused before the spend, not after it
    p = _Privatizer(mechanism, column, user_id=user_id, cohorts=cohorts, keep_user_id=keep_user_id, unknown=unknown, other=other, rng=seed)
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    p.check_schema(lf.collect_schema())
    p.check_users(frame)
    alongside = accountant is None and sink is None  # nothing spent or written before the reports return
    if not alongside:
        p.check_ids(frame)
    if accountant is None and (query_id is not None or keep_reports):
        raise LDPParameterError("query_id/keep_reports need an accountant=")
    if keep_reports and sink is not None:
        raise LDPParameterError("keep_reports stores the reports in the ledger; it cannot be combined with sink=")
    if sink is not None:  # every cheap check before any spend
        out_dir = Path(sink)
        if out_dir.exists() and not out_dir.is_dir():
            raise LDPParameterError(f"sink {str(out_dir)!r} is a file; reports are written into a directory (give a new or existing directory)")
        probe = out_dir
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir() or not os.access(probe, os.W_OK) or not can_write_under(probe):
            raise LDPParameterError(f"sink directory {str(out_dir)!r} cannot be created (its nearest existing parent is not a writable directory)")
        if out_dir.exists() and any(out_dir.glob("part-*.parquet")):
            raise LDPParameterError(f"sink directory {str(out_dir)!r} already holds report parts: use a new directory")
        if out_dir.exists() and not os.access(out_dir, os.W_OK):
            raise LDPParameterError(f"sink directory {str(out_dir)!r} is not writable")
    if accountant is not None:
        if not query_id:
            raise LDPParameterError("spending from an accountant needs a query_id")
        p.check_values(lf)  # one streamed scan: an unknown item late in the file costs no budget
        return accountant.release(
            query_id, mechanism, lambda: _release(p, frame, lf, column, user_id, sink, partition, mechanism),
            cohorts=budget_cohorts, keep_reports=keep_reports,
        )
    return _release(p, frame, lf, column, user_id, sink, partition, mechanism, check_ids=alongside)


def _release(p, frame, lf, column, user_id, sink, partition, mechanism, check_ids=False):
    cols = [column] + ([user_id] if user_id is not None and user_id != column else [])
    if isinstance(frame, pl.DataFrame):
        batches: Iterator[pl.DataFrame] = iter([frame.select(cols)])
    else:
        batches = iter(lf.select(cols).collect_batches(chunk_size=ROWS_PER_CHUNK, maintain_order=True, engine="streaming"))
    if sink is not None:

        out_dir = Path(sink)
        out_dir.mkdir(parents=True, exist_ok=True)
        marker = out_dir / INCOMPLETE_MARKER
        marker.write_text("this release has not completed; its parts are not the whole population\n")
    parts = []
    offset = 0

    from concurrent.futures import ThreadPoolExecutor

    chunks = enumerate(progress(_rechunk(batches, ROWS_PER_CHUNK), desc="privatize", unit="chunk"))
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ldp-prepare") as pool:
        # the user-id check (check_ids=True: nothing is spent or written here) runs alongside the
        # randomization, and no report is returned before it has passed; its error comes first
        ids = pool.submit(p.check_ids, frame) if check_ids else None
        try:
            # prepare (encode, check) chunk i + 1 while chunk i is randomized: the two overlap on 2 cores
            nxt = next(chunks, None)
            pending = None if nxt is None else (nxt[0], nxt[1], offset, pool.submit(p.prepare, nxt[1], offset))
            while pending is not None:
                i, chunk, off, fut = pending
                prepared = fut.result()  # errors surface in row order
                nxt = next(chunks, None)
                pending = None if nxt is None else (nxt[0], nxt[1], off + chunk.height, pool.submit(p.prepare, nxt[1], off + chunk.height))
                out = p.finish(chunk, prepared, i, off, partition)
                if sink is not None:
                    write_reports(out, out_dir / f"part-{i:06d}.parquet", mechanism)
                else:
                    parts.append(out)
                if ids is not None and ids.done():
                    ids = ids.result()  # raises on a null or repeated id
        except LDPInputError:
            if ids is not None:
                ids.result()  # a user-id error is reported before a value error, as when checked first
            raise
        if ids is not None:
            ids.result()
    if sink is not None:
        marker.unlink()  # complete: every part is written
        return pl.scan_parquet(out_dir / "part-*.parquet")
    return pl.concat(parts, rechunk=True)


# -- estimate ---------------------------------------------------------------------------------------------
@strict
def estimate(
    reports: pl.DataFrame | pl.LazyFrame,
    mechanism: Any,
    *,
    candidates: Optional[Sequence] = None,
    postprocess: Optional[str] = None,
    confidence: float = 0.95,
    target: str = "sample",
    poison_fraction: Optional[float] = None,
    poison_count: Optional[int] = None,
) -> pl.DataFrame:
    """Aggregate a reports frame (streamed if lazy) → ``item, estimate, std_error, ci_lower, ci_upper``
    (numeric mechanisms: one row ``mean, std_error, ci_lower, ci_upper, n``).

    ``poison_fraction=β`` (or ``poison_count=m``) adds ``poison_shift`` and ``poison_shift_down``
    after the interval: how far a fraction ``β`` of arbitrary well-formed fake reports can have
    moved each estimate up / down (exact for the raw estimate; :mod:`ldp_plugin.robust.bounds`).

    ``target="sample"`` (default): the intervals cover the frequencies of the users who reported;
    ``"population"``: of a population they are an i.i.d. sample of (wider: the sampling variance
    ``θ(1−θ)/n`` is added). A Polars frame carries no metadata: keep the target with the frame
    (``mechanism.estimate(...)`` returns a :class:`FrequencyEstimate` whose ``target`` says it)."""
    _check_mechanism(mechanism)
    check_frame(reports, "reports")
    acc = accumulate_reports(reports, mechanism)
    # candidates= and postprocess= only when given (None: the mechanism's default; a family without them refuses them)
    options = {k: v for k, v in (("candidates", candidates), ("postprocess", postprocess)) if v is not None}
    est = mechanism.estimate_from(acc, confidence=confidence, target=target, **options)
    if poison_fraction is None and poison_count is None:
        return estimate_frame(est)
    bound = poison_bound(mechanism, est, poison_fraction=poison_fraction, poison_count=poison_count)
    return estimate_frame(est).with_columns(poison_shift=pl.Series(bound.poison_shift), poison_shift_down=pl.Series(bound.poison_shift_down))


class _LDPNamespace:
    """The ``ldp`` namespace, one class for both frame kinds: every method in this body, each a thin
    call of the module function that does the work on the frame it holds (a new frame back)."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame):
        self._frame = frame

    def privatize(self, column: str, mechanism: Any, **kwargs) -> pl.DataFrame | pl.LazyFrame:
        """One report per user of ``column`` (:func:`privatize`)."""
        return privatize(self._frame, column, mechanism, **kwargs)

    def estimate(self, mechanism: Any, **kwargs) -> pl.DataFrame:
        """The frequency estimate of a reports frame (:func:`estimate`)."""
        return estimate(self._frame, mechanism, **kwargs)

    def heavy_hitters(self, column: str, **kwargs) -> pl.DataFrame:
        """Discover frequent strings of ``column`` (:func:`ldp_plugin.adapters.polars_discovery.heavy_hitters`)."""
        return heavy_hitters(self._frame, column, **kwargs)

    # -- numeric distributions (adapters/polars_distribution.py) ------------------------------------------
    def distribution(self, mechanism: Any, **kwargs) -> pl.DataFrame:
        """The histogram of a distribution mechanism's reports (:func:`.polars_distribution.distribution`)."""
        return _pd.distribution(self._frame, mechanism, **kwargs)

    def quantiles(self, mechanism: Any, qs: Sequence[float], **kwargs) -> pl.DataFrame:
        """Quantiles with intervals (:func:`.polars_distribution.quantiles`)."""
        return _pd.quantiles(self._frame, mechanism, qs, **kwargs)

    def range_count(self, mechanism: Any, lo: float, hi: float, **kwargs) -> pl.DataFrame:
        """The users in ``[lo, hi)`` with an interval (:func:`.polars_distribution.range_count`)."""
        return _pd.range_count(self._frame, mechanism, lo, hi, **kwargs)

    # -- several attributes per user (adapters/polars_multi.py) -----------------------------------------
    def privatize_attributes(self, columns: Sequence[str], mechanism: Any, **kwargs) -> pl.DataFrame:
        """One report per user from several attribute columns (:func:`.polars_multi.privatize_attributes`)."""
        return _pm.privatize_attributes(self._frame, columns, mechanism, **kwargs)

    def attribute_frequencies(self, mechanism: Any, **kwargs) -> pl.DataFrame:
        """Per-attribute frequencies of multi-attribute reports (:func:`.polars_multi.attribute_frequencies`)."""
        return _pm.attribute_frequencies(self._frame, mechanism, **kwargs)

    # -- key-value sets (adapters/polars_key_value.py) ---------------------------------------------------
    def privatize_key_values(self, keys: str, mechanism: Any, **kwargs) -> pl.DataFrame:
        """One report per user from key-value sets (:func:`.polars_key_value.privatize_key_values`)."""
        return _pkv.privatize_key_values(self._frame, keys, mechanism, **kwargs)

    def key_values(self, mechanism: Any, **kwargs) -> pl.DataFrame:
        """Each key's frequency and mean (:func:`.polars_key_value.key_values`)."""
        return _pkv.key_values(self._frame, mechanism, **kwargs)


class LDPFrame(_LDPNamespace):
    """``df.ldp.privatize(...)`` and ``reports.ldp.estimate(...)`` (see :mod:`ldp_plugin.adapters`)."""


class LDPLazyFrame(_LDPNamespace):
    """The same on a LazyFrame: the input is streamed, the reports materialized once."""
