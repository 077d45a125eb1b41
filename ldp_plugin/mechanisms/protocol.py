"""The one mechanism protocol: what every layer above ``mechanisms/`` may ask of a mechanism.

Every mechanism and wrapper (frequency oracles, cohort mechanisms, finite channels, native set
mechanisms, :class:`SampleOne`, :class:`Memoized`) implements :class:`Mechanism`:

* ``input_kind`` (``"value"`` or ``"set"``), ``takes_cohorts``, ``closed`` (closed alphabet);
* the client: ``encode``, ``randomize(values, rng=None, cohorts=None)``,
  ``randomize_encoded(codes, rng=None, cohorts=None)`` and ``randomize_one(value, rng=None)``;
* reports: ``report_fields()`` (the columns, their dtype, width and allowed range) from which the
  Polars ``report_schema``, ``reports_to_frame`` / ``frame_to_reports``, the versioned **wire
  encoding** (``to_wire`` / ``from_wire``) and row-wise validation (``check_reports``: accepted
  reports and rejected counts by reason) are all derived — one description, no copies;
* ``spec()`` (the JSON-able ``{"name", "params"}`` the registry, Parquet metadata and ledgers
  store; rebuilt with :func:`ldp_plugin.registry.from_spec`) and ``wire_fingerprint()``;
* the server: ``accumulator()`` and ``estimate_from(acc, candidates=None, postprocess=...,
  confidence=..., target=...)``.

Wire format (version 1), a batch of ``n`` reports (one report is a batch of one)::

    b"LDPW" | version u8 | flags u8 | tag length u16 LE | tag | fingerprint (16 bytes) | n u32 LE
    | each report field in order: n · width · itemsize bytes, little-endian

The fingerprint binds the bytes to the mechanism and its parameters; the tag (e.g. a query's
content hash, at most 255 bytes) binds them to one query. Decoding never raises on hostile input:
a bad header rejects the blob (reason ``malformed``, ``wrong_tag`` or ``wrong_mechanism``), a bad
row is dropped and counted (``out_of_range``, ``padding_bits``, ``not_sorted``).
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import inspect
import json
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np

from .._errors import LDPArgumentError, LDPInputError, LDPParameterError

__all__ = ["Mechanism", "ReportField", "SeededReports", "SetInput", "WIRE_MAGIC", "WIRE_VERSION", "REJECT_REASONS", "json_value"]

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
        import polars as pl

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


def json_value(v: Any) -> Any:
    """A parameter as plain JSON (tuples → lists, numpy scalars → Python)."""
    if isinstance(v, tuple):
        return [json_value(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if v is None or isinstance(v, (str, int, float, bool, list)):
        return v
    raise LDPParameterError(f"mechanism parameter of type {type(v).__name__} cannot be stored as data")


class _CheckedArguments(abc.ABCMeta):
    """Constructing a mechanism with a missing, unknown or repeated keyword raises
    :class:`LDPParameterError` naming the parameter and what the constructor takes, instead of
    Python's ``__init__() missing 1 required keyword-only argument`` (a ``TypeError`` raised
    *inside* a constructor is not touched)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:  # the constructor's own signature (``inspect.signature(cls)`` would read this __call__)
            full = inspect.signature(cls.__init__)
        except (TypeError, ValueError):  # pragma: no cover - every mechanism has a signature
            return super().__call__(*args, **kwargs)
        sig = full.replace(parameters=list(full.parameters.values())[1:])
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise LDPArgumentError(_argument_message(cls, sig, args, kwargs, exc)) from None
        return super().__call__(*args, **kwargs)


def _argument_message(cls: Any, sig: inspect.Signature, args: tuple, kwargs: dict, exc: TypeError) -> str:
    name = cls.name if isinstance(getattr(cls, "name", None), str) else cls.__name__
    params = sig.parameters
    takes = ", ".join(p for p in params)
    unknown = sorted(k for k in kwargs if k not in params)
    if unknown:
        return f"{name} has no parameter(s) {unknown}; it takes {takes}"
    missing = [p.name for p in params.values() if p.default is inspect.Parameter.empty and p.name not in kwargs
               and p.kind is not inspect.Parameter.VAR_KEYWORD and p.kind is not inspect.Parameter.VAR_POSITIONAL]
    positional = [p for p in params.values() if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if args and len(args) > len(positional):
        return f"{name} takes keyword arguments only ({takes}); e.g. {cls.__name__}(epsilon=1.0, ...)"
    if missing:
        return f"{name} needs the parameter(s) {missing}; it takes {takes}"
    return f"{name}: invalid arguments; it takes {takes}"


class Mechanism(metaclass=_CheckedArguments):
    """Mixin base of every mechanism (see the module docstring). Subclasses supply
    ``report_fields`` and, if their native batch is not one array, ``_to_columns`` /
    ``_from_columns``."""

    name: ClassVar[str] = "abstract"
    input_kind: ClassVar[str] = "value"
    takes_cohorts: ClassVar[bool] = False
    # the client needs each user's secret key (memoized mechanisms: ``randomize_encoded(..., user_keys=)``)
    needs_user_keys: ClassVar[bool] = False
    # report columns a grouped (histogram) aggregation may use; None: aggregate batch by batch
    histogram_columns: ClassVar[Optional[tuple]] = None
    # fields left out of spec() (e.g. warner's fixed domain)
    spec_omits: ClassVar[tuple] = ()

    # -- description ---------------------------------------------------------------------------
    @property
    def base(self) -> "Mechanism":
        """The mechanism that produces the reports (a wrapper's inner, padded mechanism)."""
        return self

    categories: Optional[tuple] = None  # the declared item labels (a dataclass field where declared)

    @property
    def closed(self) -> bool:
        return True

    @property
    def domain_size(self) -> Optional[int]:
        """Number of items of a closed alphabet (None for an open one)."""
        return getattr(self, "d", None)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        """Expected squared l2 error of the raw estimator for ``n`` users: ``theta`` is the item
        distribution, ``f`` the set-item frequencies of set mechanisms; ``sampling="fixed"``
        measures against the users' own values, ``"iid"`` against a population they are drawn from."""
        raise LDPParameterError(f"{self.name} has no analytic error formula")

    def spec(self) -> dict:
        """``{"name": registry name, "params": {...}}``: enough to rebuild this exact mechanism."""
        params = {f.name: json_value(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init and f.name not in self.spec_omits}
        return {"name": self.name, "params": params}

    def wire_fingerprint(self) -> bytes:
        """16 bytes: SHA-256 of the canonical spec JSON (what the wire format carries)."""
        text = json.dumps(self.spec(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).digest()[:16]

    # -- client ------------------------------------------------------------------------------------
    def _check_no_cohorts(self, cohorts: Any) -> None:
        if cohorts is not None and not self.takes_cohorts:
            raise LDPParameterError(f"cohorts= applies only to cohort mechanisms (orr, orappor), not {self.name}")

    def randomize_encoded(self, codes: Any, *, rng: Any = None, cohorts: Any = None):
        """The client on already encoded values (:meth:`encode`); the path every caller uses."""
        from ..sampling import as_source

        self._check_no_cohorts(cohorts)
        return self._randomize_codes(np.asarray(codes), as_source(rng))

    def with_categories(self, categories: Any) -> "Mechanism":
        """The same mechanism over the labels ``categories`` (instead of codes ``0..d-1``)."""
        return dataclasses.replace(self, d=None, categories=tuple(categories))

    def report_bits(self) -> int:
        """Information bits of one report (what ``ldp choose`` shows; the wire uses whole bytes)."""
        bits = 0
        for f in self.base.report_fields():
            if f.kind == "bits":
                bits += f.bound
            elif f.kind == "bool":
                bits += 1
            elif f.bound is None:
                bits += 8 * np.dtype(f.dtype).itemsize * max(f.width, 1)
            else:
                bits += max(1, (int(f.bound) - 1).bit_length()) * max(f.width, 1)
        return bits

    # -- shuffle amplification ----------------------------------------------------------------------
    #: ``channel()`` is the real client's channel (False where it enumerates a fixed set of
    #: verification seeds instead of the client's random 64-bit seeds)
    channel_is_client: ClassVar[bool] = True

    def variation_parameters(self):
        """``(p, β, q)`` for :mod:`ldp_plugin.amplification`: exact from the realized channel on
        small domains (families with closed forms override); None when neither applies, and the
        generic parameters (valid for every ε-LDP randomizer) are used instead."""
        if not self.channel_is_client or (self.domain_size or 1 << 31) > 64 or self.verification_input_count() > 64:
            return None
        from ..amplification import exact_variation_parameters

        try:
            channel = self.channel()
        except LDPParameterError:  # more outputs than the channel enumeration allows
            return None
        return exact_variation_parameters(channel)

    def bayes_success(self):
        """One report's Bayes attacker success under a uniform prior, ``(1/d)·Σ_y max_x P(y|x)``
        (``ldp choose``): closed forms where a family has them, else exact from the realized
        channel on small domains, else None."""
        if self.channel_is_client and (self.domain_size or 1 << 31) <= 16 and self.verification_input_count() <= 16:
            M = self.channel().matrix
            return float(sum(max(M[x][y] for x in range(len(M))) for y in range(len(M[0]))) / len(M))
        return None

    def blanket_parameters(self):
        """``(d, γ)`` when the channel is ``R(x)(y) = γ/d + (1 − γ)·[y = x]`` (randomized
        response: the privacy-blanket bound of :mod:`ldp_plugin.amplification.blanket` applies);
        None otherwise."""
        return None

    # -- verification (ldp_plugin.verification drives the real client through these) ----------------
    def verification_input_count(self) -> int:
        """How many inputs the exact channel has (items; every set of up to ``m`` for sets)."""
        inputs = getattr(self, "verification_inputs", None)
        if inputs is not None:
            return len(inputs())
        d = self.domain_size
        if d is None:
            raise LDPParameterError("verification needs a closed-domain instance (give d)")
        return int(d)

    def sample_verification_outputs(self, x: int, n: int, source: Any) -> np.ndarray:
        """``n`` outputs of the real client on input ``x``, as column indices of :meth:`channel`
        (mechanisms with per-user seeds draw them from their verification seed set)."""
        codes = np.full(n, x, dtype=np.int64)
        hook = getattr(self, "_verification_randomize", None)
        reports = hook(codes, source) if hook is not None else self.randomize_encoded(codes, rng=source)
        return self.output_index(reports)

    # -- reports -----------------------------------------------------------------------------------
    def report_fields(self) -> tuple:
        """The report columns (:class:`ReportField`); every concrete mechanism declares its own
        (the protocol contract suite checks each registered one)."""
        raise NotImplementedError(f"{type(self).__name__} must declare report_fields()")  # pragma: no cover

    @property
    def report_schema(self):
        """The Polars schema of a report batch (cohort/seed columns included)."""
        import polars as pl

        return pl.Schema({f.name: f.polars_dtype() for f in self.base.report_fields()})

    def _to_columns(self, reports: Any) -> dict:
        return {"report": np.asarray(reports)}

    def _from_columns(self, cols: dict) -> Any:
        return cols["report"]

    def report_count(self, reports: Any) -> int:
        cols = self.base._to_columns(reports)
        return int(next(iter(cols.values())).shape[0])

    def reports_to_frame(self, reports: Any):
        """A report batch as a Polars DataFrame with :attr:`report_schema`."""
        import polars as pl

        base = self.base
        cols = base._to_columns(reports)
        series = []
        for f in base.report_fields():
            a = np.asarray(cols[f.name])
            if f.dtype == "bool":
                a = a.astype(np.bool_, copy=False)
            else:
                a = a.astype(np.dtype(f.dtype), copy=False)
            series.append(pl.Series(f.name, a, dtype=f.polars_dtype()))
        return pl.DataFrame(series)

    def frame_to_reports(self, frame: Any) -> Any:
        """The native report batch from a reports frame (columns checked, nulls refused)."""
        base = self.base
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

    def check_reports(self, reports: Any) -> tuple[Any, dict]:
        """Row-wise validation: ``(accepted reports, {reason: rejected count})``. A report batch
        with the wrong shape or dtype raises :class:`LDPInputError`; a bad row is dropped and
        counted, never estimated."""
        base = self.base
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
            for reason, mask in f.row_problems(a).items():
                new = mask & ~bad
                if new.any():
                    counts[reason] = counts.get(reason, 0) + int(new.sum())
                    bad |= mask
        if not bad.any():
            return reports, counts
        keep = ~bad
        return base._from_columns({k: np.asarray(v)[keep] for k, v in cols.items()}), counts

    # -- wire ----------------------------------------------------------------------------------------
    def to_wire(self, reports: Any, *, tag: bytes = b"") -> bytes:
        """The versioned binary encoding of a report batch (see the module docstring)."""
        base = self.base
        if len(tag) > 255:
            raise LDPParameterError("a wire tag is at most 255 bytes")
        cols = base._to_columns(reports)
        fields = base.report_fields()
        n = int(np.asarray(cols[fields[0].name]).shape[0])
        parts = [_HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag)), bytes(tag), self.wire_fingerprint(), struct.pack("<I", n)]
        for f in fields:
            a = np.asarray(cols[f.name]).astype(np.dtype(f.dtype).newbyteorder("<"), copy=False)
            parts.append(np.ascontiguousarray(a).tobytes())
        return b"".join(parts)

    def to_wire_each(self, reports: Any, *, tag: bytes = b"") -> list:
        """One wire blob per report (a batch of one each), as a device sends it; vectorized:
        the header is built once and each report's row bytes appended."""
        base = self.base
        cols = base._to_columns(reports)
        fields = base.report_fields()
        n = int(np.asarray(cols[fields[0].name]).shape[0])
        header = _HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag)) + bytes(tag) + self.wire_fingerprint() + struct.pack("<I", 1)
        parts = []
        for f in fields:
            a = np.ascontiguousarray(np.asarray(cols[f.name]).astype(np.dtype(f.dtype).newbyteorder("<"), copy=False))
            parts.append(a.reshape(n, -1).view(np.uint8).reshape(n, -1))
        rows = np.hstack(parts) if parts else np.zeros((n, 0), dtype=np.uint8)
        return [header + r.tobytes() for r in rows]

    def from_wire_many(self, blobs: Any, *, tag: Optional[bytes] = None) -> tuple[Any, dict]:
        """Decode many one-report blobs (as a collector receives them): the well-formed ones in
        one vectorized pass, anything else blob by blob with :meth:`from_wire`. Never raises on
        hostile input; returns ``(accepted reports, {reason: rejected count})``."""
        base = self.base
        blobs = list(blobs)
        counts: dict = {}
        tag_b = b"" if tag is None else bytes(tag)
        header = _HEADER.pack(WIRE_MAGIC, WIRE_VERSION, 0, len(tag_b)) + tag_b + self.wire_fingerprint() + struct.pack("<I", 1)
        size = self.wire_size(1, tag=tag_b)
        fast = [i for i, b in enumerate(blobs) if isinstance(b, (bytes, bytearray)) and len(b) == size and bytes(b[: len(header)]) == header]
        fast_set = set(fast)
        pieces = []
        if fast:
            body = np.frombuffer(b"".join(bytes(blobs[i][len(header):]) for i in fast), dtype=np.uint8).reshape(len(fast), -1)
            cols, pos = {}, 0
            for f in base.report_fields():
                width = np.dtype(f.dtype).itemsize * max(f.width, 1)
                raw = np.ascontiguousarray(body[:, pos:pos + width]).view(np.dtype(f.dtype).newbyteorder("<")).astype(np.dtype(f.dtype))
                cols[f.name] = raw.reshape(len(fast), f.width) if f.width else raw.reshape(len(fast))
                pos += width
            ok, rej = self.check_reports(base._from_columns(cols))
            pieces.append(ok)
            for k, v in rej.items():
                counts[k] = counts.get(k, 0) + v
        for i, b in enumerate(blobs):
            if i in fast_set:
                continue
            ok, rej = self.from_wire(b if isinstance(b, (bytes, bytearray)) else b"", tag=tag)
            for k, v in rej.items():
                counts[k] = counts.get(k, 0) + v
            if self.report_count(ok):
                pieces.append(ok)
        if not pieces:
            return base._from_columns(self._empty_columns()), counts
        merged = {}
        for name in base._to_columns(pieces[0]):
            merged[name] = np.concatenate([np.asarray(base._to_columns(p)[name]) for p in pieces])
        return base._from_columns(merged), counts

    def wire_size(self, n: int, *, tag: bytes = b"") -> int:
        """Bytes of a wire batch of ``n`` reports."""
        per = sum(np.dtype(f.dtype).itemsize * max(f.width, 1) for f in self.base.report_fields())
        return _HEADER.size + len(tag) + 16 + 4 + n * per

    def from_wire(self, data: bytes, *, tag: Optional[bytes] = None) -> tuple[Any, dict]:
        """Decode a wire batch → ``(accepted reports, {reason: rejected count})``. Never raises on
        malformed bytes: a bad header or length rejects the whole blob as one ``malformed``
        (or ``wrong_tag`` / ``wrong_mechanism``) report; bad rows are counted by reason."""
        base = self.base
        empty = base._from_columns(self._empty_columns())
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
        if fp != self.wire_fingerprint():
            return empty, {"wrong_mechanism": max(n, 1)}
        if len(data) != self.wire_size(n, tag=got_tag):
            return empty, {"malformed": max(n, 1)}
        cols = {}
        for f in base.report_fields():
            dt = np.dtype(f.dtype).newbyteorder("<")
            count = n * max(f.width, 1)
            a = np.frombuffer(data, dtype=dt, count=count, offset=pos).astype(np.dtype(f.dtype))
            pos += count * dt.itemsize
            cols[f.name] = a.reshape(n, f.width) if f.width else a
        return self.check_reports(base._from_columns(cols))

    def _empty_columns(self) -> dict:
        return {
            f.name: np.empty((0, f.width) if f.width else 0, dtype=np.dtype(f.dtype)) for f in self.base.report_fields()
        }

    # -- server --------------------------------------------------------------------------------------
    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample"):
        """Aggregate a report batch and estimate (see :meth:`estimate_from`)."""
        return self.estimate_from(self.accumulator().add(reports), candidates=candidates, postprocess=postprocess, confidence=confidence, target=target)

    def estimate_from(self, acc: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample"):
        """The estimate of an accumulator of this mechanism's reports (one signature everywhere).
        ``target="population"`` widens the intervals to cover the frequencies of a population the
        users are an i.i.d. sample of (:func:`ldp_plugin.estimation.retarget`)."""
        from ..estimation import retarget

        return retarget(acc.estimate(candidates=candidates, postprocess=postprocess, confidence=confidence), target)


from .mixins import MergeableCounts, SeededReports, SetInput, report_batch_arrays, report_batch_from_arrays  # noqa: E402,F401  (re-exported)
