"""Report codecs: rows, frames and the wire, all derived from a mechanism's ``report_fields()``.

One description (:class:`ReportField`: name, dtype, width, kind, bound per column) and the
mechanism's two column hooks (``to_columns`` / ``from_columns``: its native report batch as named
arrays, views not copies) give every codec as a free function of the mechanism:
:func:`report_schema` (Polars), :func:`reports_to_frame` / :func:`frame_to_reports`,
:func:`check_reports` (row-wise validation: accepted reports and rejected counts by reason), the
versioned wire encoding (:func:`to_wire`, :func:`to_wire_each`, :func:`from_wire`,
:func:`from_wire_many`, :func:`wire_size`, :func:`wire_fingerprint`) and :func:`report_bits`.
A wrapper's reports are its ``base`` mechanism's; its fingerprint is its own spec's.

Wire format (version 1), a batch of ``n`` reports (one report is a batch of one)::

    b"LDPW" | version u8 | flags u8 | tag length u16 LE | tag | fingerprint (16 bytes) | n u32 LE
    | each report field in order: n · width · itemsize bytes, little-endian

The fingerprint binds the bytes to the mechanism and its parameters; the tag (e.g. a query's
content hash, at most 255 bytes) binds them to one query. Decoding never raises on hostile input:
a bad header rejects the blob (reason ``malformed``, ``wrong_tag`` or ``wrong_mechanism``), a bad
row is dropped and counted (``out_of_range``, ``padding_bits``, ``not_sorted``).
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from .frame_spec import SPEC_COLUMN, check_frame_spec, spec_dtype, spec_series
from .tagged import tag_reports

__all__ = ["ReportField", "WIRE_MAGIC", "WIRE_VERSION", "REJECT_REASONS", "report_bits", "report_schema", "report_count", "rows_to_reports",
           "reports_to_frame", "frame_to_reports", "check_reports", "checked_reports", "to_wire", "to_wire_each", "from_wire", "from_wire_many",
           "wire_size", "wire_fingerprint"]

WIRE_MAGIC = b"LDPW"
WIRE_VERSION = 1
_HEADER = struct.Struct("<4sBBH")
REJECT_REASONS = ("malformed", "wrong_tag", "wrong_mechanism", "out_of_range", "padding_bits", "not_sorted")


@dataclass(frozen=True)
class ReportField:
    """One column of a report batch.

    ``kind``: ``"int"`` (``0 <= v < bound``; no bound: any value of the dtype), ``"bits"`` (packed
    bits, ``bound`` of them; padding bits must be 0), ``"sorted"`` (strictly increasing codes
    ``< bound``), ``"bool"``. ``width`` 0 is one value per report, else a fixed-width row."""

    name: str
    dtype: str
    width: int = 0
    kind: str = "int"
    bound: Optional[int] = None

    def polars_dtype(self):
        inner = {"uint8": pl.UInt8, "uint16": pl.UInt16, "uint32": pl.UInt32, "uint64": pl.UInt64, "bool": pl.Boolean}[self.dtype]
        return pl.Array(inner, self.width) if self.width else inner

    def row_problems(self, arr: np.ndarray) -> dict:
        """Boolean masks (one entry per report) of the rows this field makes invalid."""
        out = {}
        if self.kind in ("int", "sorted") and self.bound is not None:
            bad = arr >= self.bound
            out["out_of_range"] = bad.any(axis=1) if arr.ndim == 2 else bad
        if self.kind == "sorted" and arr.ndim == 2 and arr.shape[1] > 1:
            out["not_sorted"] = (np.diff(arr.astype(np.int64), axis=1) <= 0).any(axis=1)
        if self.kind == "bits" and self.bound is not None and self.bound % 8 and arr.size:
            out["padding_bits"] = (arr[:, -1] >> (self.bound % 8)) != 0
        return out


def report_bits(mech) -> int:
    """Information bits of one report (what ``ldp choose`` shows; the wire uses whole bytes)."""
    bits = 0
    for f in mech.base.report_fields():
        if f.kind == "bits":
            bits += f.bound
        elif f.kind == "bool":
            bits += 1
        elif f.bound is None:
            bits += 8 * np.dtype(f.dtype).itemsize * max(f.width, 1)
        else:
            bits += max(1, (int(f.bound) - 1).bit_length()) * max(f.width, 1)
    return bits


def report_schema(mech):
    """The Polars schema of a reports frame: the report batch's columns (cohort/seed included) and the
    spec column (:data:`.frame_spec.SPEC_COLUMN`, ``mech``'s spec)."""
    return pl.Schema({**{f.name: f.polars_dtype() for f in mech.base.report_fields()}, SPEC_COLUMN: spec_dtype(mech)})


def report_count(mech, reports: Any) -> int:
    cols = mech.base._to_columns(reports)
    return int(next(iter(cols.values())).shape[0])


def reports_to_frame(mech, reports: Any):
    """A report batch as a Polars DataFrame with :func:`report_schema` and the spec column
    (:data:`.frame_spec.SPEC_COLUMN`: ``mech``'s spec, the producer's)."""
    base = mech.base
    cols = base._to_columns(reports)
    series = []
    for f in base.report_fields():
        a = np.asarray(cols[f.name])
        if f.dtype == "bool":
            a = a.astype(np.bool_, copy=False)
        else:
            a = a.astype(np.dtype(f.dtype), copy=False)
        series.append(pl.Series(f.name, a, dtype=f.polars_dtype()))
    series.append(spec_series(mech, len(series[0]) if series else 0))
    return pl.DataFrame(series)


def frame_to_reports(mech, frame: Any) -> Any:
    """The native report batch from a reports frame (columns checked, nulls refused). A frame with
    a spec column must name ``mech``'s spec (:func:`.frame_spec.check_frame_spec`) and gives a batch
    tagged with it; a frame without one (a library-internal selection of report columns) gives an
    untagged batch — the Polars estimators refuse such a frame before they get here."""
    if SPEC_COLUMN in frame.columns:
        check_frame_spec(mech, frame[SPEC_COLUMN])
        return tag_reports(mech, _frame_columns(mech, frame))
    return _frame_columns(mech, frame)


def _frame_columns(mech, frame: Any) -> Any:
    base = mech.base
    fields = base.report_fields()
    missing = [f.name for f in fields if f.name not in frame.columns]
    if missing:
        raise LDPInputError(f"the reports frame lacks column(s) {missing} for mechanism {base.name}")
    cols = {}
    for f in fields:
        s = frame[f.name]
        if s.null_count():
            raise LDPInputError(f"the reports frame has nulls in column {f.name!r}")
        a = s.to_numpy()
        if a.dtype == object or (f.width and a.ndim != 2):
            raise LDPInputError(f"the reports frame's column {f.name!r} does not have the mechanism's layout ({f.polars_dtype()})")
        cols[f.name] = a
    return base._from_columns(cols)


def check_reports(mech, reports: Any) -> tuple[Any, dict]:
    """Row-wise validation: ``(accepted reports, {reason: rejected count})``. A report batch
    with the wrong shape or dtype raises :class:`LDPInputError`; a bad row is dropped and
    counted, never estimated.

    The ONE path of every row check: each field's own (:meth:`ReportField.row_problems`: range,
    padding bits, order; a boolean byte other than 0/1), then the family's
    (``mechanism.base._row_problems(columns)``: e.g. a tree report's level and the bits of the
    other levels, each attribute's own range). The wire decoders, the collector and every
    accumulator call this function, so a row one of them accepts, all of them accept."""
    base = mech.base
    cols = base._to_columns(reports)
    fields = base.report_fields()
    n = int(np.asarray(cols[fields[0].name]).shape[0])
    bad = np.zeros(n, dtype=bool)
    counts: dict = {}
    for f in fields:
        a = np.asarray(cols[f.name])
        if a.shape[0] != n or (a.ndim != (2 if f.width else 1)) or (f.width and a.shape[1] != f.width):
            raise LDPInputError(f"report column {f.name!r} does not have the mechanism's shape")
        if f.dtype == "bool":
            if a.dtype != np.bool_:
                raise LDPInputError(f"report column {f.name!r} must be boolean")
        elif a.dtype.kind not in "iu":
            raise LDPInputError(f"report column {f.name!r} must hold integers")
        elif a.dtype.kind == "i" and a.size and int(a.min()) < 0:
            neg = (a < 0).any(axis=1) if a.ndim == 2 else a < 0
            counts["out_of_range"] = counts.get("out_of_range", 0) + int((neg & ~bad).sum())
            bad |= neg
        problems = f.row_problems(a)
        if f.dtype == "bool" and a.size:  # a wire byte other than 0/1 is not a boolean
            problems["out_of_range"] = a.view(np.uint8) > 1
        bad = _count_new(counts, bad, problems)
    bad = _count_new(counts, bad, base._row_problems(cols))
    if not bad.any():
        return reports, counts
    keep = ~bad
    return base._from_columns({k: np.asarray(v)[keep] for k, v in cols.items()}), counts


def checked_reports(mechanism: Any, reports: Any) -> Any:
    """The reports if every row has the mechanism's layout and range, else :class:`LDPInputError`
    (an accumulator adds a batch whole or not at all)."""
    ok, rejected = check_reports(mechanism, reports)
    if rejected:
        raise LDPInputError(f"{mechanism.name}: {sum(rejected.values())} report(s) do not have the mechanism's layout or range")
    return ok


def _count_new(counts: dict, bad: np.ndarray, problems: dict) -> np.ndarray:
    """``bad`` with every mask of ``problems`` added; each row is counted once, under the first
    reason that rejects it."""
    for reason, mask in problems.items():
        mask = np.asarray(mask, dtype=bool)
        new = mask & ~bad
        if new.any():
            counts[reason] = counts.get(reason, 0) + int(new.sum())
            bad = bad | mask
    return bad


def to_wire(mech, reports: Any, *, tag: bytes = b"") -> bytes:
    """The versioned binary encoding of a report batch (see the module docstring)."""
    base = mech.base
    if len(tag) > 255:
        raise LDPParameterError("a wire tag is at most 255 bytes")
    cols = base._to_columns(reports)
    fields = base.report_fields()
    n = int(np.asarray(cols[fields[0].name]).shape[0])
    parts = [_HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag)), bytes(tag), wire_fingerprint(mech), struct.pack("<I", n)]
    for f in fields:
        a = np.asarray(cols[f.name]).astype(np.dtype(f.dtype).newbyteorder("<"), copy=False)
        parts.append(np.ascontiguousarray(a).tobytes())
    return b"".join(parts)


def to_wire_each(mech, reports: Any, *, tag: bytes = b"") -> list:
    """One wire blob per report (a batch of one each), as a device sends it; vectorized:
    the header is built once and each report's row bytes appended."""
    base = mech.base
    cols = base._to_columns(reports)
    fields = base.report_fields()
    n = int(np.asarray(cols[fields[0].name]).shape[0])
    header = _HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag)) + bytes(tag) + wire_fingerprint(mech) + struct.pack("<I", 1)
    parts = []
    for f in fields:
        a = np.ascontiguousarray(np.asarray(cols[f.name]).astype(np.dtype(f.dtype).newbyteorder("<"), copy=False))
        parts.append(a.reshape(n, -1).view(np.uint8).reshape(n, -1))
    rows = np.hstack(parts) if parts else np.zeros((n, 0), dtype=np.uint8)
    return [header + r.tobytes() for r in rows]


def from_wire_many(mech, blobs: Any, *, tag: Optional[bytes] = None) -> tuple[Any, dict]:
    """Decode many one-report blobs (as a collector receives them): the well-formed ones in
    one vectorized pass, anything else blob by blob with :meth:`from_wire`. Never raises on
    hostile input; returns ``(accepted reports, {reason: rejected count})``."""
    base = mech.base
    blobs = list(blobs)
    counts: dict = {}
    tag_b = b"" if tag is None else bytes(tag)
    header = _HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag_b)) + tag_b + wire_fingerprint(mech) + struct.pack("<I", 1)
    size = wire_size(mech, 1, tag=tag_b)
    fast = [i for i, b in enumerate(blobs) if isinstance(b, (bytes, bytearray)) and len(b) == size and bytes(b[: len(header)]) == header]
    fast_set = set(fast)
    pieces = []
    if fast:
        body = np.frombuffer(b"".join(bytes(blobs[i][len(header):]) for i in fast), dtype=np.uint8).reshape(len(fast), -1)
        ok, rej = check_reports(mech, rows_to_reports(mech, body))
        pieces.append(ok)
        for k, v in rej.items():
            counts[k] = counts.get(k, 0) + v
    for i, b in enumerate(blobs):
        if i in fast_set:
            continue
        ok, rej = from_wire(mech, b if isinstance(b, (bytes, bytearray)) else b"", tag=tag)
        for k, v in rej.items():
            counts[k] = counts.get(k, 0) + v
        if report_count(mech, ok):
            pieces.append(ok)
    if not pieces:
        return base._from_columns(_empty_columns(mech)), counts
    merged = {}
    for name in base._to_columns(pieces[0]):
        merged[name] = np.concatenate([np.asarray(base._to_columns(p)[name]) for p in pieces])
    return base._from_columns(merged), counts


def rows_to_reports(mech, body: np.ndarray) -> Any:
    """The report batch whose wire payload rows (one report each, fields in order, little-endian)
    are the rows of the ``(n, bytes per report)`` uint8 array ``body`` — column views of ``body``'s
    own bytes (strided, possibly unaligned and read-only: no copy of the batch), no per-report
    object. Not validated: pass the result to :func:`check_reports`."""
    base = mech.base
    n = body.shape[0]
    cols, pos = {}, 0
    for f in base.report_fields():
        width = np.dtype(f.dtype).itemsize * max(f.width, 1)
        band = body[:, pos:pos + width]
        if band.strides[1] != 1:  # .view needs the bytes of a row contiguous
            band = np.ascontiguousarray(band)
        raw = band.view(np.dtype(f.dtype).newbyteorder("<")).astype(np.dtype(f.dtype), copy=False)
        cols[f.name] = raw.reshape(n, f.width) if f.width else raw.reshape(n)
        pos += width
    return base._from_columns(cols)


def wire_size(mech, n: int, *, tag: bytes = b"") -> int:
    """Bytes of a wire batch of ``n`` reports."""
    per = sum(np.dtype(f.dtype).itemsize * max(f.width, 1) for f in mech.base.report_fields())
    return _HEADER.size + len(tag) + 16 + 4 + n * per


def from_wire(mech, data: bytes, *, tag: Optional[bytes] = None) -> tuple[Any, dict]:
    """Decode a wire batch → ``(accepted reports, {reason: rejected count})``. Never raises on
    malformed bytes: a bad header or length rejects the whole blob as one ``malformed``
    (or ``wrong_tag`` / ``wrong_mechanism``) report; bad rows are counted by reason."""
    base = mech.base
    empty = base._from_columns(_empty_columns(mech))
    try:
        data = bytes(data)
        magic, version, _flags, tlen = _HEADER.unpack_from(data, 0)
    except (struct.error, TypeError, ValueError):
        return empty, {"malformed": 1}
    if magic != WIRE_MAGIC or version != WIRE_VERSION:
        return empty, {"malformed": 1}
    pos = _HEADER.size
    got_tag = data[pos:pos + tlen]
    pos += tlen
    fp = data[pos:pos + 16]
    pos += 16
    if len(data) < pos + 4:
        return empty, {"malformed": 1}
    (n,) = struct.unpack_from("<I", data, pos)
    pos += 4
    if tag is not None and got_tag != bytes(tag):
        return empty, {"wrong_tag": max(n, 1)}
    if fp != wire_fingerprint(mech):
        return empty, {"wrong_mechanism": max(n, 1)}
    if len(data) != wire_size(mech, n, tag=got_tag):
        return empty, {"malformed": max(n, 1)}
    cols = {}
    for f in base.report_fields():
        dt = np.dtype(f.dtype).newbyteorder("<")
        count = n * max(f.width, 1)
        a = np.frombuffer(data, dtype=dt, count=count, offset=pos).astype(np.dtype(f.dtype))
        pos += count * dt.itemsize
        cols[f.name] = a.reshape(n, f.width) if f.width else a
    return check_reports(mech, base._from_columns(cols))


def _empty_columns(mech) -> dict:
    return {
        f.name: np.empty((0, f.width) if f.width else 0, dtype=np.dtype(f.dtype)) for f in mech.base.report_fields()
    }


def wire_fingerprint(mech) -> bytes:
    """16 bytes: SHA-256 of the canonical spec JSON (what the wire format carries)."""
    text = json.dumps(mech.spec(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()[:16]
