"""Mechanisms, report batches and accumulator state as data.

* **Mechanism spec**: a JSON-able description ``{"name": <registry name>, "params": {...}}`` (or
  ``{"set": "sample-one", "m": ..., "on_long": ..., "mechanism": <spec>}`` for sets) from which the
  same frozen mechanism is rebuilt — only registered constructors are ever imported from a spec.
  Its **fingerprint** (SHA-256 of the canonical JSON and the report format version) identifies the
  mechanism *and its parameters*: merging or aggregating across different fingerprints is refused.
* **Reports on disk**: Parquet files whose columns are those of
  :func:`ldp_plugin.adapters.reports_to_frame` (``cohort`` UInt32 for cohort mechanisms, ``seed``
  UInt64 for OLH, ``report``: UInt32 / Boolean / Array(UInt8) packed bits / Array(UInt32) subsets)
  with the spec in the file's key-value metadata under ``ldp_plugin.mechanism`` and the fingerprint
  under ``ldp_plugin.fingerprint``.
* **Accumulator state**: a small JSON file — format, spec, fingerprint, ``n``, the int64 counts
  (and per-cohort sizes), and the report files already ingested (absolute path, size, mtime), so
  new files merge in without re-reading old ones. Written atomically (temporary file + rename).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from ._boundary import read_small_file
from ._errors import LDPInputError, LDPParameterError
from .mechanisms import Mechanism
from .registry import KINDS, load_registry, from_spec

#: The file a directory release writes first and removes last: its presence marks a release
#: that did not finish (an aggregation refuses it unless told to allow a partial release).
INCOMPLETE_MARKER = ".ldp-release-incomplete"

__all__ = [
    "REPORT_FORMAT",
    "mechanism_spec",
    "mechanism_from_spec",
    "spec_fingerprint",
    "write_reports",
    "read_report_spec",
    "AccumulatorState",
]

REPORT_FORMAT = "ldp-plugin-reports/1"
STATE_FORMAT = "ldp-plugin-accumulator/1"
META_SPEC = "ldp_plugin.mechanism"
META_FP = "ldp_plugin.fingerprint"


def mechanism_spec(mechanism: Any) -> dict:
    """The JSON-able spec of a mechanism (its :meth:`~ldp_plugin.mechanisms.Mechanism.spec`)."""

    if not isinstance(mechanism, Mechanism):
        raise LDPParameterError(f"{type(mechanism).__name__} is not an ldp_plugin mechanism: only mechanisms can be stored")
    spec = mechanism.spec()
    if "set" not in spec and spec.get("name") != "memoized-krr":

        if spec.get("name") not in load_registry(kinds=KINDS):
            raise LDPParameterError(f"{type(mechanism).__name__} is not a registered mechanism: only registered mechanisms can be stored")
    return spec


def mechanism_from_spec(spec: Any) -> Any:
    """Rebuild the mechanism of a spec (a dict or its JSON text); only registered constructors
    (:func:`ldp_plugin.registry.from_spec`)."""

    return from_spec(spec)


def spec_fingerprint(spec: dict) -> str:
    text = json.dumps({"format": REPORT_FORMAT, "spec": spec}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def write_reports(frame: Any, path: str | Path, mechanism: Any) -> Path:
    """Write a reports frame as Parquet with the mechanism spec and fingerprint in its metadata."""
    spec = mechanism_spec(mechanism)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    meta = {META_SPEC: json.dumps(spec, sort_keys=True), META_FP: spec_fingerprint(spec)}
    frame.lazy().sink_parquet(tmp, metadata=meta)  # Polars' streaming writer
    os.replace(tmp, path)  # a partially written file never looks like a finished partition
    return path


def read_report_spec(path: str | Path) -> tuple[dict, str]:
    """The (spec, fingerprint) stored in a report file's metadata."""
    import polars as pl

    try:
        meta = pl.read_parquet_metadata(str(path))
    except Exception as e:
        raise LDPInputError(f"{str(path)!r} is not a readable Parquet file ({type(e).__name__})") from None
    if META_SPEC not in meta:
        raise LDPInputError(f"{str(path)!r} has no ldp-plugin mechanism metadata (write reports with write_reports or sink=)")
    spec = json.loads(meta[META_SPEC])
    fp = meta.get(META_FP, "")
    if fp != spec_fingerprint(spec):
        raise LDPInputError(f"{str(path)!r} has inconsistent mechanism metadata (fingerprint mismatch)")
    return spec, fp


def file_identity(path: str | Path) -> dict:
    st = os.stat(path)
    return {"path": str(Path(path).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


@dataclasses.dataclass
class AccumulatorState:
    """Counts of one mechanism (by fingerprint) as data: mergeable, savable, incremental."""

    spec: dict
    fingerprint: str
    counts: np.ndarray
    n: int
    n_c: Optional[np.ndarray] = None
    ingested: list = dataclasses.field(default_factory=list)
    #: the accumulator's other summed arrays (tree and multi-attribute families: ``flat``,
    #: ``per_level``, ``covered``, ...; ``counts`` holds the first), by name
    extra: dict = dataclasses.field(default_factory=dict)

    @staticmethod
    def _arrays(acc: Any) -> dict:
        """The accumulator's summed state arrays (its ``_summed`` fields but ``n`` / ``n_c``)."""
        names = [f for f in getattr(acc, "_summed", ("counts", "n")) if f not in ("n", "n_c")]
        return {f: np.asarray(getattr(acc, f)) for f in names}

    @classmethod
    def empty(cls, mechanism: Any) -> "AccumulatorState":
        return cls.from_accumulator(mechanism, mechanism.accumulator())

    @classmethod
    def from_accumulator(cls, mechanism: Any, acc: Any, ingested: Iterable = ()) -> "AccumulatorState":
        spec = mechanism_spec(mechanism)
        arrays = cls._arrays(acc)
        first = next(iter(arrays))
        extra = {k: v.copy() for k, v in arrays.items() if k != first}
        return cls(spec, spec_fingerprint(spec), arrays[first].copy(), int(acc.n), acc.n_c.copy() if hasattr(acc, "n_c") else None, list(ingested),
                   extra)

    def mechanism(self) -> Any:
        return mechanism_from_spec(self.spec)

    def accumulator(self) -> Any:
        acc = self.mechanism().accumulator()
        names = list(self._arrays(acc))
        setattr(acc, names[0], self.counts.astype(np.asarray(getattr(acc, names[0])).dtype).copy())
        for k in names[1:]:
            if k not in self.extra:
                raise LDPInputError("the accumulator state lacks a field of its mechanism's accumulator (written by another version?)")
            setattr(acc, k, np.asarray(self.extra[k]).astype(np.asarray(getattr(acc, k)).dtype).copy())
        if self.n_c is not None:
            acc.n_c = self.n_c.astype(np.int64).copy()
        else:
            acc.n = int(self.n)
        return acc

    def estimate(self, **kw) -> Any:
        mech = self.mechanism()
        return mech.estimate_from(self.accumulator(), **kw)

    def __add__(self, other: "AccumulatorState") -> "AccumulatorState":
        return self.merge(other)

    def merge(self, other: "AccumulatorState") -> "AccumulatorState":
        if not isinstance(other, AccumulatorState):
            raise LDPParameterError("can only merge accumulator states")
        if other.fingerprint != self.fingerprint:
            raise LDPParameterError(
                "can only merge accumulators of the same mechanism and parameters "
                f"(fingerprints {self.fingerprint[:12]}… and {other.fingerprint[:12]}… differ)"
            )
        seen = {i["path"] for i in self.ingested}
        dup = [i["path"] for i in other.ingested if i["path"] in seen]
        if dup:
            raise LDPParameterError(f"refusing to count a report file twice: {dup[0]!r}")
        return AccumulatorState(
            self.spec,
            self.fingerprint,
            self.counts + other.counts,
            self.n + other.n,
            None if self.n_c is None else self.n_c + other.n_c,
            self.ingested + other.ingested,
            {k: v + other.extra[k] for k, v in self.extra.items()},
        )

    # -- files ---------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        path = Path(path)
        doc = {
            "format": STATE_FORMAT,
            "fingerprint": self.fingerprint,
            "mechanism": self.spec,
            "n": int(self.n),
            "counts": [int(c) for c in self.counts.ravel()],
            "shape": list(self.counts.shape),
            "n_c": None if self.n_c is None else [int(c) for c in self.n_c],
            "ingested": self.ingested,
        }
        if self.extra:
            doc["extra"] = {k: {"values": np.asarray(v).ravel().tolist(), "shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)}
                            for k, v in self.extra.items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "AccumulatorState":
        path = Path(path)
        if path.is_dir():
            raise LDPInputError(f"accumulator state {str(path)!r} is a directory; give a JSON file path")
        try:
            doc = json.loads(read_small_file(path, "accumulator state", limit=1 << 30))  # never a device read forever
        except LDPParameterError as e:
            raise LDPInputError(str(e)) from None
        except FileNotFoundError:
            raise LDPInputError(f"accumulator state {str(path)!r} does not exist") from None
        except (ValueError, UnicodeDecodeError):
            raise LDPInputError(f"accumulator state {str(path)!r} is not valid JSON") from None
        except OSError as e:
            raise LDPInputError(f"accumulator state {str(path)!r} cannot be read ({e.strerror or type(e).__name__})") from None
        if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
            raise LDPInputError(f"{str(path)!r} is not an ldp-plugin accumulator state (a JSON object written by --state)")
        try:
            spec = doc["mechanism"]
            if spec_fingerprint(spec) != doc.get("fingerprint"):
                raise LDPInputError(f"accumulator state {str(path)!r} is corrupted (fingerprint mismatch)")
            counts = np.array(doc["counts"], dtype=np.int64).reshape(doc["shape"])
            n_c = None if doc.get("n_c") is None else np.array(doc["n_c"], dtype=np.int64)
            n = int(doc["n"])
            extra = {k: np.array(e["values"], dtype=np.dtype(e["dtype"]) if e["dtype"] in ("int64", "float64") else np.int64).reshape(e["shape"])
                     for k, e in dict(doc.get("extra") or {}).items()}
        except LDPInputError:
            raise
        except (KeyError, TypeError, ValueError, OverflowError):
            raise LDPInputError(f"accumulator state {str(path)!r} is corrupted (missing or malformed fields)") from None
        if n_c is not None and int(n_c.sum()) != n:
            raise LDPInputError(f"accumulator state {str(path)!r} is corrupted (cohort sizes do not add up)")
        return cls(spec, doc["fingerprint"], counts, n, n_c, list(doc.get("ingested", [])), extra)
