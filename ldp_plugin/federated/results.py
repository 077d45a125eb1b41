"""A round's results as files: the accepted reports as Parquet parts (the spec in their metadata,
so ``ldp aggregate`` reads them) under ``<out>/<plan>/round-NNNN/<query>/``, and one JSON summary
per round ``<out>/<plan>/round-NNNN.json`` written atomically (a temporary file, then rename), so
a reader never sees a half summary and a rerun of the round replaces it whole."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Optional

__all__ = ["round_dir", "summary_path", "write_summary", "estimate_rows", "released_rows"]


def round_dir(out_dir: Path, plan: str, r: int, query: str) -> Path:
    d = Path(out_dir) / plan / f"round-{r:04d}" / query
    if d.exists():
        shutil.rmtree(d)  # a rerun of the round: its parts are rewritten, never appended
    d.mkdir(parents=True, exist_ok=True)
    return d


def summary_path(out_dir: Path, plan: str, r: int) -> Path:
    """Where round ``r``'s summary of ``plan`` is written."""
    return Path(out_dir) / plan / f"round-{r:04d}.json"


def write_summary(out_dir: Path, plan: str, r: int, summary: dict) -> Path:
    path = summary_path(out_dir, plan, r)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path


def _num(x: Any) -> Optional[float]:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def estimate_rows(est: Any) -> list:
    """Item, estimate and confidence interval per item (frequency oracles and set queries), or
    one row for a scalar estimate (means)."""
    items = getattr(est, "items", None)
    values = getattr(est, "estimate", getattr(est, "mean", est))
    lo, hi = getattr(est, "ci_lower", None), getattr(est, "ci_upper", None)
    try:
        n = len(values)
    except TypeError:
        return [{"item": None, "estimate": _num(values), "ci_lower": _num(lo), "ci_upper": _num(hi)}]
    rows = []
    for i in range(n):
        item = items[i] if items is not None else i
        rows.append({"item": item if isinstance(item, (int, str)) else str(item), "estimate": _num(values[i]),
                     "ci_lower": None if lo is None else _num(lo[i]), "ci_upper": None if hi is None else _num(hi[i])})
    return rows


def released_rows(col: Any) -> list:
    """The rows of a collector's released estimate: the raw (unbiased, not post-processed) one
    where the estimator has post-processing options, else its only estimate."""
    try:
        return estimate_rows(col.estimate(postprocess="none"))
    except TypeError:  # an estimator without post-processing options
        return estimate_rows(col.estimate())
