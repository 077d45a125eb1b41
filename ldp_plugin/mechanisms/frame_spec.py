"""Reports frames that carry the spec their reports were made under: the ``ldp_spec`` column.

A Polars frame has no metadata that survives what users do between ``privatize`` and ``estimate``
(filter, select, concat, a Parquet or IPC round trip, a LazyFrame's batches). A **column** does: every
reports frame (:func:`.reports.reports_to_frame`, hence every Polars ``privatize*``, the collector's
report files, the ledger's kept reports) carries ``ldp_spec``, an ``Enum`` whose one category is the
producer's canonical spec JSON (:meth:`Mechanism.spec`, the mechanism called: a wrapper's own). Its
physical type is one byte per row; the text is stored once, in the dtype (and once per Parquet row
group). It survives filter, select, slicing, ``pl.concat`` of frames of the same spec (frames of two
specs do not concatenate: their Enums differ), Parquet / IPC files and streamed batches; a CSV round
trip or a cast leaves a string column holding the same text, which is read the same way.

:func:`check_frame_spec` is the one check of a frame's spec column: rows without a spec (nulls), a
column mixing several specs, a column that is not a spec, or the spec of another mechanism or
parameter set are refused with an :class:`LDPInputError` that names the specs (the mechanisms and
the parameters that differ, :func:`.tagged.refuse_spec`) — never a report value, never the column's
text when it is not a spec. The Polars estimators refuse a frame without the column
(:func:`missing_spec_error`): nothing says what made it.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import polars as pl

from .._errors import LDPInputError
from .tagged import describe_spec, refuse_spec, spec_origin

__all__ = ["SPEC_COLUMN", "spec_text", "spec_dtype", "spec_series", "frame_spec", "check_frame_spec", "missing_spec_error"]

#: the column of a reports frame that names the spec its reports were made under
SPEC_COLUMN = "ldp_spec"


def spec_text(mech: Any) -> str:
    """``mech``'s spec as canonical JSON (sorted keys, no spaces): the text of its frames' spec column."""
    return json.dumps(spec_origin(mech).spec, sort_keys=True, separators=(",", ":"))


def spec_dtype(mech: Any) -> pl.Enum:
    """The dtype of ``mech``'s spec column: an ``Enum`` whose one category is :func:`spec_text`."""
    return pl.Enum([spec_text(mech)])


def spec_series(mech: Any, n: int) -> pl.Series:
    """The spec column of ``n`` reports of ``mech`` (a constant series: one byte per row)."""
    return pl.Series(SPEC_COLUMN, [spec_text(mech)], dtype=spec_dtype(mech)).new_from_index(0, n)


def missing_spec_error() -> LDPInputError:
    """The refusal of a reports frame without a spec column (hand-made, or stripped by a select)."""
    return LDPInputError(
        f"the reports frame has no {SPEC_COLUMN!r} column, so nothing says which mechanism and parameters made its reports: "
        "keep the column from privatize (select it with the report columns), or build the frame from a report batch with "
        "ldp_plugin.adapters.reports_to_frame(mechanism, reports)"
    )


def _is_spec(spec: Any) -> bool:
    """A spec's shape: ``{"name": str, "params": dict}``, or a wrapper ``{"set": str, "mechanism": spec, ...}``."""
    if not isinstance(spec, dict):
        return False
    if "name" in spec:
        return isinstance(spec["name"], str) and isinstance(spec.get("params", {}), dict)
    return isinstance(spec.get("set"), str) and _is_spec(spec.get("mechanism"))


def _parse(text: Any) -> dict:
    try:
        spec = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        spec = None
    if not _is_spec(spec):  # the column's text is never repeated: it may be anything
        raise LDPInputError(f"the reports frame's {SPEC_COLUMN!r} column does not hold a mechanism spec "
                            "(it is written by privatize / reports_to_frame)")
    return spec


def frame_spec(column: pl.Series) -> Optional[dict]:
    """The one spec a frame's spec column names (``None`` for a column without rows and without a
    declared spec). Nulls, several specs, or text that is not a spec are refused."""
    nulls = column.null_count()
    if nulls:
        raise LDPInputError(f"the reports frame has {nulls} row(s) without a spec (null {SPEC_COLUMN!r}): "
                            "every report must carry the spec it was made under")
    dtype = column.dtype
    if isinstance(dtype, pl.Enum) and dtype.categories.len() == 1:
        texts = dtype.categories.to_list()  # an Enum of one category: every row holds it
    elif isinstance(dtype, (pl.Enum, pl.Categorical)) or dtype == pl.String:
        texts = column.unique().cast(pl.String).to_list()
    else:
        raise LDPInputError(f"the reports frame's {SPEC_COLUMN!r} column does not hold a mechanism spec (dtype {dtype})")
    if not texts:
        return None
    specs = [_parse(t) for t in texts]
    canon = {json.dumps(s, sort_keys=True, separators=(",", ":")) for s in specs}
    if len(canon) > 1:
        shown = "; ".join(sorted(describe_spec(s) for s in specs)[:3])
        raise LDPInputError(f"the reports frame mixes reports made under {len(canon)} different specs ({shown}"
                            f"{'; ...' if len(canon) > 3 else ''}): estimate each spec's reports on their own")
    return specs[0]


def check_frame_spec(mech: Any, column: pl.Series) -> None:
    """Refuse a spec column that does not name exactly ``mech``'s spec (module docstring)."""
    dtype = column.dtype
    mine = spec_text(mech)
    if isinstance(dtype, pl.Enum) and dtype.categories.len() == 1 and not column.null_count() and dtype.categories[0] == mine:
        return  # the common case, O(1): the frame privatize made with this mechanism
    made = frame_spec(column)
    if made is None:
        return
    if json.dumps(made, sort_keys=True, separators=(",", ":")) != mine:
        refuse_spec(made, spec_origin(mech).spec)
