"""``df.ldp.heavy_hitters(...)``: discovery of frequent strings in a column (a thin adapter over
:mod:`ldp_plugin.discovery`)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import polars as pl

from ldp_plugin._errors import LDPInputError, LDPParameterError
from ldp_plugin.discovery.prefix import INFERRED, infer_domain
from ldp_plugin.discovery.query import build_query
from ldp_plugin.sampling import RNGLike, as_source

from .polars_frames import check_seed, strict

__all__ = ["heavy_hitters", "sample_one_string", "check_sets"]

#: A padded set's dummy element: the empty finished string, never returned as an item.
_PAD = ""


def check_sets(column: pl.Series, set_size: int) -> np.ndarray:
    """The sets' sizes, after the checks SampleOne needs (an integer ``set_size`` in [1, 65536]; no
    null set or null string, none longer than ``set_size``, no repeated or empty string) — cheap,
    so run before any spend."""
    if isinstance(set_size, bool) or not isinstance(set_size, int) or not 1 <= set_size <= 1 << 16:
        raise LDPParameterError(f"set_size must be an integer in [1, 65536] (got {set_size!r})")
    if column.null_count():
        raise LDPInputError(f"column has {column.null_count()} null set(s)")
    if int(column.list.eval(pl.element().is_null()).list.any().sum()):
        raise LDPInputError("sets must not contain a null string (an empty set is [])")
    sizes = column.list.len().to_numpy()
    if sizes.size and int(sizes.max()) > set_size:
        raise LDPInputError(f"{int((sizes > set_size).sum())} set(s) hold more than set_size={set_size} strings; raise set_size")
    if int((column.list.unique().list.len().to_numpy() != sizes).sum()):
        raise LDPInputError("sets must not repeat a string")
    if int(column.list.eval(pl.element().str.len_chars() == 0).list.any().sum()):
        raise LDPInputError("sets must not contain the empty string (it pads the sets)")
    return sizes


def sample_one_string(column: pl.Series, set_size: int, rng: RNGLike = None) -> pl.Series:
    """SampleOne for sets of strings: each set (at most ``set_size`` strings, distinct) is padded to
    ``set_size`` with a dummy and one element is drawn uniformly (on the device). An item held by a
    fraction ``θ`` of users is then reported with frequency ``θ/set_size``."""
    sizes = check_sets(column, set_size)
    pick = as_source(rng).uniform_int(set_size, column.len()).astype(np.int64)
    inside = pick < sizes
    idx = pl.Series(np.where(inside, pick, 0))
    chosen = column.list.get(idx, null_on_oob=True)
    return pl.Series(column.name, np.where(inside, chosen.fill_null(_PAD).to_numpy(), _PAD), dtype=pl.String)


@strict
def heavy_hitters(
    frame: pl.DataFrame | pl.LazyFrame,
    column: str,
    *,
    epsilon: float,
    method: str = "pem",
    top_k: int = 20,
    seed: RNGLike = None,
    set_size: Optional[int] = None,
    accountant: Any = None,
    query_id: Optional[str] = None,
    budget_cohorts: Any = None,
    **query: Any,
) -> pl.DataFrame:
    """Discover the ``top_k`` most frequent strings of ``column`` (one string per user; a list
    column of sets needs ``set_size`` and goes through SampleOne) → ``item, estimate, std_error,
    ci_lower, ci_upper, p_value, significant``. ``epsilon`` is what each user spends; with an
    ``accountant`` it is charged under ``query_id`` after every check and before any report (the
    query's realized ε, :meth:`~ldp_plugin.discovery.PrefixDiscovery.report_cost`, charged once: a
    retried ``query_id`` is refused, since a second run would release the same users again).
    ``query`` passes :class:`~ldp_plugin.discovery.PrefixDiscovery` options (``alphabet``,
    ``max_length``, ``oracle``, ...); an ``alphabet`` or ``max_length`` not given is read from the
    column (:func:`~ldp_plugin.discovery.infer_domain`: its characters, its longest string, capped at
    64) — not private, so refused with an ``accountant``. Only the selected strings are returned
    (``top_k`` at most; ``unselected=True`` adds the rest, marked). For sets, estimates are the
    fractions of users holding an item."""
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    if column not in lf.collect_schema().names():
        raise LDPInputError(f"column {column!r} is not in the frame")
    series = lf.select(pl.col(column)).collect().to_series()
    is_set = isinstance(series.dtype, pl.List)
    if is_set and set_size is None:
        raise LDPParameterError("a column of sets needs set_size= (SampleOne pads every set to it)")
    if not is_set and set_size is not None:
        raise LDPParameterError("set_size applies to a column of sets (list of strings) only")
    if query.get("alphabet") is None or query.get("max_length") is None:
        if accountant is not None:
            raise LDPParameterError(
                "spending from an accountant needs a public domain: pass alphabet= and max_length= (inferring them from the data is not private)"
            )
        query["alphabet"], query["max_length"] = infer_domain(series, alphabet=query.get("alphabet"), max_length=query.get("max_length"))
        query["domain_source"] = INFERRED
    q = build_query(method, epsilon=epsilon, top_k=top_k + 1 if is_set else top_k, **query)
    if is_set:
        check_sets(series, set_size)  # before the spend: a refused set costs nothing
        q.codec.check(series.explode().drop_nulls(), name=column)
    else:
        q.codec.check(series, name=column)
    if accountant is not None:
        if not query_id:
            raise LDPParameterError("spending from an accountant needs a query_id")
    elif query_id is not None:
        raise LDPParameterError("query_id needs an accountant=")
    check_seed(seed)  # before the spend

    def produce() -> pl.DataFrame:
        source = as_source(seed)
        values = sample_one_string(series, set_size, source) if is_set else series
        out = q.discover(q.privatize(values, rng=source)).to_polars()
        if is_set:
            scale = float(set_size)
            out = (
                out.filter(pl.col("item") != _PAD)
                .head(top_k)
                .with_columns(pl.col("estimate", "std_error") * scale, (pl.col("ci_lower", "ci_upper") * scale).clip(0.0, 1.0))
            )
        return out
    if accountant is None:
        return produce()
    # the one release path: charged once (the query's realized ε, rounded up), a retried query id
    # refused — a second run would be a fresh release of the same users at no charge
    return accountant.release(query_id, q.report_cost(), produce, cohorts=budget_cohorts, mechanism=q.method, params=q.spec())
