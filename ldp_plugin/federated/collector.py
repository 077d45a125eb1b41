"""The server side: a collector that sees nothing but reports, and validates every one.

For one query it decodes wire reports (the query's content hash as tag, the mechanism's
fingerprint, the wire format, value ranges, set padding bits), rejects a replayed report
(``duplicate``: the same bytes twice), counts every rejection by reason, and streams the accepted
reports into the mechanism's accumulator — a malformed report never crashes it and never
changes the estimate. Accepted reports can be persisted as Parquet parts with the spec in their
metadata (so ``ldp aggregate`` reads them); an estimate is released only once the query's
minimum batch has arrived.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from .._errors import LDPParameterError
from .query import Query

__all__ = ["Collector"]


class Collector:
    def __init__(self, query: Query, *, out_dir: Optional[str | Path] = None):
        self.query = query
        self.mechanism = query.mechanism()
        self.tag = query.content_hash
        self.acc = self.mechanism.accumulator()
        self.accepted = 0
        self.rejected: dict = {}
        self._seen: set = set()
        self.out_dir = None if out_dir is None else Path(out_dir)
        self._parts = 0

    def ingest(self, ids: Iterable, blobs: Iterable) -> dict:
        """Validate and add a batch of one-report blobs with their report ids; returns this
        batch's counts. A report id seen before (a replay) is rejected as ``duplicate``; a missing
        or malformed id as ``malformed``."""
        fresh, dup, bad_id = [], 0, 0
        ids, blobs = list(ids), list(blobs)
        if len(ids) != len(blobs):
            bad_id += abs(len(ids) - len(blobs))
        for rid, b in zip(ids, blobs):
            if not isinstance(rid, (bytes, bytearray)) or len(rid) != 16:
                bad_id += 1
                continue
            key = bytes(rid)
            if key in self._seen:
                dup += 1
                continue
            self._seen.add(key)
            fresh.append(b)
        reports, rejected = self.mechanism.from_wire_many(fresh, tag=self.tag)
        if dup:
            rejected["duplicate"] = rejected.get("duplicate", 0) + dup
        if bad_id:
            rejected["malformed"] = rejected.get("malformed", 0) + bad_id
        n = self.mechanism.report_count(reports)
        if n:
            self.acc.add(reports)
            if self.out_dir is not None:
                from ..persist import write_reports

                write_reports(self.mechanism.reports_to_frame(reports), self.out_dir / f"part-{self._parts:06d}.parquet", self.mechanism)
                self._parts += 1
        self.accepted += n
        for k, v in rejected.items():
            self.rejected[k] = self.rejected.get(k, 0) + v
        return {"accepted": n, "rejected": rejected}

    def estimate(self, **kw):
        """The estimate, only once the query's minimum batch has arrived."""
        if self.accepted < self.query.min_batch:
            raise LDPParameterError(f"only {self.accepted} reports accepted; the query releases an estimate from min_batch={self.query.min_batch}")
        return self.mechanism.estimate_from(self.acc, **kw)
