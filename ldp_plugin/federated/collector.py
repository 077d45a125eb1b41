"""The server side: a collector that sees nothing but reports, and validates every one.

For one query it takes envelopes (:mod:`~ldp_plugin.federated.envelope`: a 16-byte nonce and
exactly one wire report) and checks each, cheapest first, before any decoding: its type and its
exact length (fixed by the query — a batch blob under one id, or a header claiming
n = 4,294,967,295 reports, is one rejected element, ``not_one_report``), the wire header (magic,
version, the query's content hash as tag, the mechanism's fingerprint, a report count of 1),
then a replayed nonce (``duplicate``, whatever framing it is resent under), then the value ranges
(:func:`~ldp_plugin.mechanisms.reports.check_reports`). Every rejection counts one per element actually received, so the
rejected counts — and the memory held (one 16-byte nonce per accepted report plus the
accumulator) — are bounded by the bytes received (and, when the server passes the registered
quota as ``expected_reports``, by the nonce table reserved for it: at most
:data:`~.nonces.RESERVE_MAX` keys). Accepted reports stream into the mechanism's
accumulator; a malformed report never crashes it and never changes the estimate.

Per node, :meth:`Collector.ingest_reply` first validates the whole reply
(:func:`~ldp_plugin.federated.reply.validate_reply`: field types and ranges, report count and
byte size within the node's quota — the devices it registered, capped by the operator); a reply
that fails is that node's error, counted by reason, and none of its reports is looked at.
Accepted reports can be persisted as Parquet parts with the spec in their metadata (so
``ldp aggregate`` reads them); an estimate is released only once the query's minimum batch has
arrived.

Columnar path: :meth:`Collector.ingest_array` takes a batch as one buffer of
concatenated envelopes (or an ``(m, envelope size)`` uint8 array; a Flower reply's ``blob`` is
read in place) and runs every check above as array operations — the header bytes compared, the
nonce admitted and the admitted rows' payload bytes gathered into one dense array, in one pass
over the rows (:meth:`~.nonces.NonceSet.admit_envelopes`: a row with a wrong header is never
admitted), the payloads viewed as report columns
(:func:`~ldp_plugin.mechanisms.reports.rows_to_reports`), range-checked by
:func:`~ldp_plugin.mechanisms.reports.check_reports` and added to the accumulator — with no
Python object per report; only a rejected row is classified on its own. :meth:`Collector.ingest` (a list of
envelopes) and :meth:`Collector.ingest_reply` (a Flower node's reply) copy a list of exact-size
``bytes`` into one array for :meth:`ingest_array`; a list with any odd element joins the
well-formed ones and classifies the rest one by one — the same counts either way.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.reports import check_reports, from_wire_many, report_count, reports_to_frame, rows_to_reports, to_wire
from ..persist import write_reports
from .envelope import NONCE_BYTES, envelope_size
from .nonces import NonceSet
from .query import Query
from .reply import validate_reply

__all__ = ["Collector"]

_WIRE_PREFIX = struct.Struct("<4sBBH")
_CHUNK = 1 << 16
#: rows per step of the columnar path (bounds its working memory at tens of MB)
_ARRAY_CHUNK = 1 << 20


class Collector:
    def __init__(self, query: Query, *, out_dir: Optional[str | Path] = None, expected_reports: int = 0):
        """``expected_reports``: the most reports this query can accept (the nodes' registered
        quotas): the nonce table is sized for them (up to :data:`~.nonces.RESERVE_MAX`) and its
        memory touched now — while the query travels to the nodes — rather than grown while their
        replies are counted. Checks and counts are the same with or without it."""
        self.query = query
        self.mechanism = query.mechanism()
        self.tag = query.content_hash
        self.acc = self.mechanism.accumulator()
        self.accepted = 0
        self.rejected: dict = {}
        self.node_errors: dict = {}
        self.node_accumulators: dict = {}  # node id -> its accepted reports' accumulator (robust aggregation)
        self.bytes_received = 0
        self._nonces = NonceSet()
        self._nonces.reserve(expected_reports)
        self.size = envelope_size(self.mechanism, self.tag)
        empty, _ = from_wire_many(self.mechanism, [], tag=self.tag)
        self._header = to_wire(self.mechanism, empty, tag=self.tag)[:-4] + struct.pack("<I", 1)  # the exact header of a one-report blob
        self.out_dir = None if out_dir is None else Path(out_dir)
        self._parts = 0

    def _classify(self, env: Any) -> Optional[str]:
        """The rejection reason of one envelope before decoding, or ``None``."""
        if not isinstance(env, (bytes, bytearray)):
            return "malformed"
        if len(env) == self.size and env[NONCE_BYTES:NONCE_BYTES + len(self._header)] == self._header:
            return None
        body = bytes(env[NONCE_BYTES:NONCE_BYTES + len(self._header)])
        if len(body) < len(self._header):
            return "malformed"
        try:
            _magic, _version, _flags, tlen = _WIRE_PREFIX.unpack_from(body, 0)
        except struct.error:
            return "malformed"
        if body[:6] != self._header[:6]:  # magic and version
            return "malformed"
        pos = _WIRE_PREFIX.size
        if tlen != len(self.tag) or body[pos:pos + tlen] != self.tag:
            return "wrong_tag"
        if body[pos + tlen:pos + tlen + 16] != self._header[pos + tlen:pos + tlen + 16]:
            return "wrong_mechanism"
        return "not_one_report"

    def ingest(self, envelopes: Iterable) -> dict:
        """Validate and add a list of envelopes (each one report); returns this batch's counts.
        The usual list — every element ``bytes`` of exactly the envelope size — is copied into one
        ``(m, size)`` array and checked by :meth:`ingest_array`. Any other list is processed in
        chunks of 2^16 (bounded working memory beyond the seen nonces); in each,
        the well-formed envelopes are checked in one vectorized pass (exact length, header
        bytes), their nonces against every nonce seen for this query; anything else is
        classified one by one (:meth:`_classify`) — one rejection per element received."""
        envs = list(envelopes)
        joined = self._one_buffer(envs)
        if joined is not None:  # every element one envelope of the exact size: the columnar path
            return self.ingest_array(joined)
        total: dict = {"accepted": 0, "rejected": {}}
        for start in range(0, max(len(envs), 1), _CHUNK):
            res = self._ingest_chunk(envs[start:start + _CHUNK])
            total["accepted"] += res["accepted"]
            for k, v in res["rejected"].items():
                total["rejected"][k] = total["rejected"].get(k, 0) + v
        return total

    def _one_buffer(self, envs: list) -> Optional[np.ndarray]:
        """The ``(m, size)`` uint8 rows of ``envs`` when every element is ``bytes``/``bytearray`` of
        exactly the envelope size — C-level passes and one copy, no Python loop per report — else
        ``None``: then each element is classified on its own by the list path."""
        types = set(map(type, envs))
        if not envs or not types <= {bytes, bytearray} or set(map(len, envs)) != {self.size}:
            return None
        if types == {bytes}:  # numpy copies fixed-width bytes exactly (all are `size` long: no padding)
            return np.array(envs, dtype=f"S{self.size}").view(np.uint8).reshape(len(envs), self.size)
        return np.frombuffer(b"".join(envs), dtype=np.uint8).reshape(len(envs), self.size)

    def _ingest_chunk(self, envs: list) -> dict:
        rejected: dict = {}
        size = self.size
        exact = [i for i, e in enumerate(envs) if isinstance(e, (bytes, bytearray)) and len(e) == size]
        self.bytes_received += sum(len(e) for e in envs if isinstance(e, (bytes, bytearray)))
        odd: set = set()
        n = 0
        if exact:
            buf = np.frombuffer(b"".join(bytes(envs[i]) for i in exact), dtype=np.uint8).reshape(len(exact), size)
            n, bad_rows = self._ingest_rows(buf, rejected)
            odd = set(exact[j] for j in bad_rows.tolist())
        exact_set = set(exact)
        for i, env in enumerate(envs):
            if i in exact_set and i not in odd:
                continue
            reason = self._classify(env) or "malformed"
            rejected[reason] = rejected.get(reason, 0) + 1
        return self._tally(n, rejected)

    def ingest_array(self, envelopes: Any) -> dict:
        """Validate and add a batch given as ONE buffer: bytes-like holding concatenated envelopes
        (each exactly the query's envelope size), or an ``(m, size)`` uint8 array. Every check of
        :meth:`ingest` runs, as array operations over the rows (no Python object per report); a
        trailing partial envelope is one ``malformed`` element. Returns this batch's counts."""
        if isinstance(envelopes, np.ndarray):
            if envelopes.dtype != np.uint8 or envelopes.ndim != 2 or envelopes.shape[1] != self.size:
                raise LDPParameterError(f"ingest_array takes a bytes-like buffer or an (m, {self.size}) uint8 array of envelopes")
            rows, tail = envelopes, 0
        else:
            try:
                flat = np.frombuffer(memoryview(envelopes).cast("B"), dtype=np.uint8)
            except (TypeError, ValueError):
                raise LDPParameterError("ingest_array takes a bytes-like buffer or a uint8 array of envelopes") from None
            m = flat.size // self.size
            rows, tail = flat[: m * self.size].reshape(m, self.size), flat.size - m * self.size
        self.bytes_received += int(rows.size) + int(tail)
        total: dict = {"accepted": 0, "rejected": {}}
        for start in range(0, rows.shape[0], _ARRAY_CHUNK):
            rejected: dict = {}
            block = rows[start:start + _ARRAY_CHUNK]
            n, bad_rows = self._ingest_rows(block, rejected)
            for j in bad_rows.tolist():  # each rejected row on its own (bounded by the rows received)
                reason = self._classify(block[j].tobytes()) or "malformed"
                rejected[reason] = rejected.get(reason, 0) + 1
            res = self._tally(n, rejected)
            total["accepted"] += res["accepted"]
            for k, v in res["rejected"].items():
                total["rejected"][k] = total["rejected"].get(k, 0) + v
        if tail:
            self._tally(0, {"malformed": 1})
            total["rejected"]["malformed"] = total["rejected"].get("malformed", 0) + 1
        return total

    def _ingest_rows(self, buf: np.ndarray, rejected: dict) -> tuple:
        """The array core: rows of exactly one envelope each. Checks the header bytes, admits
        fresh nonces (counting ``duplicate``s), decodes and range-checks the payloads and adds the
        accepted reports. Returns (accepted count, indices of rows whose header is not the
        query's — the caller classifies those)."""
        poff = NONCE_BYTES + len(self._header)
        # 2: wrong header, 1: new nonce, 0: replay; the admitted rows' payload bytes gathered densely in the same pass
        status, payload = self._nonces.admit_envelopes(buf, NONCE_BYTES, self._header, poff)
        n_fresh = payload.shape[0]
        bad_rows = np.flatnonzero(status == 2) if n_fresh < buf.shape[0] else np.zeros(0, dtype=np.intp)
        dup = buf.shape[0] - n_fresh - bad_rows.size
        if dup:
            rejected["duplicate"] = rejected.get("duplicate", 0) + dup
        if not n_fresh:
            return 0, bad_rows
        reports, rej = check_reports(self.mechanism, rows_to_reports(self.mechanism, payload))
        for k, v in rej.items():
            rejected[k] = rejected.get(k, 0) + int(v)
        n = report_count(self.mechanism, reports)
        if n:
            self.acc.add(reports)
            if self.out_dir is not None:
                self.out_dir.mkdir(parents=True, exist_ok=True)
                write_reports(reports_to_frame(self.mechanism, reports), self.out_dir / f"part-{self._parts:06d}.parquet", self.mechanism)
                self._parts += 1
        return n, bad_rows

    def _tally(self, n: int, rejected: dict) -> dict:
        self.accepted += n
        for k, v in rejected.items():
            self.rejected[k] = self.rejected.get(k, 0) + v
        return {"accepted": n, "rejected": rejected}

    def ingest_reply(self, raw: Any, *, quota: int, node: Any = None) -> dict:
        """One node's reply, validated whole first (see :func:`validate_reply`). Returns
        ``{"accepted", "rejected", "refused", "retry", "error"}``; ``error`` is the node's error
        reason (then nothing of the reply was counted) or ``None``. With ``node`` (its id), the
        accepted reports are also kept in that node's own accumulator (``node_accumulators``), for
        the robust combination of :func:`ldp_plugin.robust.aggregation.combine_accumulators`.
        A reply whose reports are all envelopes of the exact size (the usual case) is joined into
        one buffer and checked by :meth:`ingest_array`; any other goes through :meth:`ingest`, which
        classifies each odd element — the same checks and counts either way."""
        reply, error = validate_reply(raw, quota=quota, envelope_size=self.size)
        if error is not None:
            self.node_errors[error] = self.node_errors.get(error, 0) + 1
            return {"accepted": 0, "rejected": {}, "refused": {}, "retry": False, "error": error}
        reports = reply["reports"]
        blob = isinstance(reports, (bytes, bytearray))  # the Flower wire: already one buffer
        joined = None if blob else self._one_buffer(reports)  # a list of exact envelopes: joined once

        def take() -> dict:
            if blob:
                return self.ingest_array(reports) if reports else {"accepted": 0, "rejected": {}}
            return self.ingest_array(joined) if joined is not None else self.ingest(reports)

        if node is None:
            res = take()
        else:  # this reply into a fresh accumulator, then into the total and the node's own
            total, self.acc = self.acc, self.mechanism.accumulator()
            try:
                res = take()
            finally:
                mine, self.acc = self.acc, total
            self.acc = self.acc.merge(mine)
            prev = self.node_accumulators.get(node)
            self.node_accumulators[node] = mine if prev is None else prev.merge(mine)
        return {**res, "refused": reply["refused"], "retry": reply["retry"], "error": None}

    def estimate(self, **kw):
        """The estimate, only once the query's minimum batch has arrived."""
        if self.accepted < self.query.min_batch:
            raise LDPParameterError(f"only {self.accepted} reports accepted; the query releases an estimate from min_batch={self.query.min_batch}")
        return self.mechanism.estimate_from(self.acc, **kw)
