"""The server side: a collector that sees nothing but reports, and validates every one.

For one query it takes envelopes (:mod:`~ldp_plugin.federated.envelope`: a 16-byte nonce and
exactly one wire report) and checks each, cheapest first, before any decoding: its type and its
exact length (fixed by the query — a batch blob under one id, or a header claiming
n = 4,294,967,295 reports, is one rejected element, ``not_one_report``), the wire header (magic,
version, the query's content hash as tag, the mechanism's fingerprint, a report count of 1),
then a replayed nonce (``duplicate``, whatever framing it is resent under), then the value ranges
(:meth:`check_reports`). Every rejection counts one per element actually received, so the
rejected counts — and the memory held (one 16-byte nonce per accepted report plus the
accumulator) — are bounded by the bytes received. Accepted reports stream into the mechanism's
accumulator; a malformed report never crashes it and never changes the estimate.

Per node, :meth:`Collector.ingest_reply` first validates the whole reply
(:func:`~ldp_plugin.federated.reply.validate_reply`: field types and ranges, report count and
byte size within the node's quota — the devices it registered, capped by the operator); a reply
that fails is that node's error, counted by reason, and none of its reports is looked at.
Accepted reports can be persisted as Parquet parts with the spec in their metadata (so
``ldp aggregate`` reads them); an estimate is released only once the query's minimum batch has
arrived.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from .._errors import LDPParameterError
from .envelope import NONCE_BYTES, envelope_size
from .query import Query
from .reply import validate_reply

__all__ = ["Collector"]

_WIRE_PREFIX = struct.Struct("<4sBBH")
_CHUNK = 1 << 16


class Collector:
    def __init__(self, query: Query, *, out_dir: Optional[str | Path] = None):
        self.query = query
        self.mechanism = query.mechanism()
        self.tag = query.content_hash
        self.acc = self.mechanism.accumulator()
        self.accepted = 0
        self.rejected: dict = {}
        self.node_errors: dict = {}
        self.node_accumulators: dict = {}  # node id -> its accepted reports' accumulator (robust aggregation)
        self.bytes_received = 0
        self._nonces: set = set()
        self.size = envelope_size(self.mechanism, self.tag)
        empty, _ = self.mechanism.from_wire_many([], tag=self.tag)
        self._header = self.mechanism.to_wire(empty, tag=self.tag)[:-4] + struct.pack("<I", 1)  # the exact header of a one-report blob
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
        Processed in chunks of 2^16 (bounded working memory beyond the seen nonces); in each,
        the well-formed envelopes are checked in one vectorized pass (exact length, header
        bytes), their nonces against every nonce seen for this query; anything else is
        classified one by one (:meth:`_classify`) — one rejection per element received."""
        envs = list(envelopes)
        total: dict = {"accepted": 0, "rejected": {}}
        for start in range(0, max(len(envs), 1), _CHUNK):
            res = self._ingest_chunk(envs[start:start + _CHUNK])
            total["accepted"] += res["accepted"]
            for k, v in res["rejected"].items():
                total["rejected"][k] = total["rejected"].get(k, 0) + v
        return total

    def _ingest_chunk(self, envs: list) -> dict:
        rejected: dict = {}
        size, hl = self.size, len(self._header)
        exact = [i for i, e in enumerate(envs) if isinstance(e, (bytes, bytearray)) and len(e) == size]
        self.bytes_received += sum(len(e) for e in envs if isinstance(e, (bytes, bytearray)))
        fresh_rows = np.zeros(0, dtype=np.int64)
        buf = None
        if exact:
            buf = np.frombuffer(b"".join(bytes(envs[i]) for i in exact), dtype=np.uint8).reshape(len(exact), size)
            ok = (buf[:, NONCE_BYTES:NONCE_BYTES + hl] == np.frombuffer(self._header, dtype=np.uint8)).all(axis=1)
            nonces = np.ascontiguousarray(buf[:, :NONCE_BYTES]).view(f"V{NONCE_BYTES}").ravel().tolist()
            seen, fresh, dup = self._nonces, [], 0
            for j in np.flatnonzero(ok).tolist():
                nb = nonces[j]
                if nb in seen:
                    dup += 1
                else:
                    seen.add(nb)
                    fresh.append(j)
            if dup:
                rejected["duplicate"] = dup
            fresh_rows = np.asarray(fresh, dtype=np.int64)
            odd = set(exact[j] for j in np.flatnonzero(~ok).tolist())
        else:
            odd = set()
        exact_set = set(exact)
        for i, env in enumerate(envs):
            if i in exact_set and i not in odd:
                continue
            reason = self._classify(env) or "malformed"
            rejected[reason] = rejected.get(reason, 0) + 1
        n = 0
        if fresh_rows.size:
            bodies = [r.tobytes() for r in buf[fresh_rows, NONCE_BYTES:]]
            reports, rej = self.mechanism.from_wire_many(bodies, tag=self.tag)
            for k, v in rej.items():
                rejected[k] = rejected.get(k, 0) + int(v)
            n = self.mechanism.report_count(reports)
            if n:
                self.acc.add(reports)
                if self.out_dir is not None:
                    from ..persist import write_reports

                    self.out_dir.mkdir(parents=True, exist_ok=True)
                    write_reports(self.mechanism.reports_to_frame(reports), self.out_dir / f"part-{self._parts:06d}.parquet", self.mechanism)
                    self._parts += 1
        self.accepted += n
        for k, v in rejected.items():
            self.rejected[k] = self.rejected.get(k, 0) + v
        return {"accepted": n, "rejected": rejected}

    def ingest_reply(self, raw: Any, *, quota: int, node: Any = None) -> dict:
        """One node's reply, validated whole first (see :func:`validate_reply`). Returns
        ``{"accepted", "rejected", "refused", "retry", "error"}``; ``error`` is the node's error
        reason (then nothing of the reply was counted) or ``None``. With ``node`` (its id), the
        accepted reports are also kept in that node's own accumulator (``node_accumulators``), for
        the robust combination of :func:`ldp_plugin.robust.aggregation.combine_accumulators`."""
        reply, error = validate_reply(raw, quota=quota, envelope_size=self.size)
        if error is not None:
            self.node_errors[error] = self.node_errors.get(error, 0) + 1
            return {"accepted": 0, "rejected": {}, "refused": {}, "retry": False, "error": error}
        if node is None:
            res = self.ingest(reply["reports"])
        else:  # this reply into a fresh accumulator, then into the total and the node's own
            total, self.acc = self.acc, self.mechanism.accumulator()
            try:
                res = self.ingest(reply["reports"])
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
