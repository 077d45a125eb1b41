"""The HTTPS ingestion service's logic (``ldp serve``; the HTTP layer is :mod:`.serve`): devices that
are not Flower SuperNodes — browsers, phones — fetch the plan's queries and post their envelopes
(a 16-byte nonce + one wire report each, :mod:`.envelope`) with a per-client bearer token.

Every post is checked whole, cheapest first, **before anything is stored**: the token (only its
SHA-256 is kept; unknown → 401), the client's role (devices post, analysts read estimates → 403),
the query (one of the plan's, by content hash → 404), the media type (415), the body size (a whole
number of the query's envelopes, at most ``max_post`` of them → 413 / 400), the client's quota of
accepted reports for that query (→ 429), every envelope's header bytes (magic, version, the
query's tag, the mechanism's fingerprint, one report → 400 ``malformed``), replays (a nonce already
accepted for the query, or twice in the post → 409 ``replay``) and the report values
(:func:`~ldp_plugin.mechanisms.reports.check_reports` → 400). A refused post changes nothing: no
report is counted, no nonce is remembered, no quota is used. An accepted post goes into the query's
:class:`~.collector.Collector` — the same validation and accumulator as the Flower path, never a
second one — whose estimate is released only from the query's ``min_batch``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._boundary import read_small_file
from .._errors import LDPParameterError
from ..mechanisms.protocol import InputKind
from ..mechanisms.reports import check_reports, rows_to_reports
from .collector import Collector
from .envelope import NONCE_BYTES
from .plan import Plan
from .query import Query
from .results import released_rows

__all__ = ["ClientToken", "IngestService", "new_token", "load_tokens", "plan_queries"]

ROLES = ("device", "analyst")


@dataclass(frozen=True)
class ClientToken:
    """One client: its name, role and per-query quota of accepted reports (devices)."""

    name: str
    role: str
    quota: int


def new_token() -> str:
    """A fresh bearer token (256 bits from the OS CSPRNG, URL-safe text)."""
    return secrets.token_urlsafe(32)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def load_tokens(path: str | Path) -> dict:
    """``{sha256 hex of the token: ClientToken}`` from a JSON file
    ``{"clients": {"name": {"token_sha256": hex, "role": "device"|"analyst", "quota": n}}}``."""
    p = Path(path)
    text = read_small_file(p, "the tokens file")
    try:
        doc = json.loads(text)
    except ValueError:
        raise LDPParameterError(f"the tokens file {p.name!r} is not readable JSON") from None
    clients = doc.get("clients") if isinstance(doc, dict) else None
    if not isinstance(clients, dict) or not clients:
        raise LDPParameterError('the tokens file needs {"clients": {name: {"token_sha256", "role", "quota"}}}')
    out = {}
    for name, c in clients.items():
        if not isinstance(c, dict) or set(c) - {"token_sha256", "role", "quota"}:
            raise LDPParameterError("each client has token_sha256, role and quota only")
        h, role, quota = c.get("token_sha256"), c.get("role", "device"), c.get("quota", 10_000)
        if not isinstance(h, str) or len(h) != 64 or any(ch not in "0123456789abcdef" for ch in h):
            raise LDPParameterError("token_sha256 must be 64 lowercase hex digits (the SHA-256 of the token)")
        if role not in ROLES:
            raise LDPParameterError(f"role must be one of {ROLES}")
        if isinstance(quota, bool) or not isinstance(quota, int) or not 1 <= quota <= 1 << 30:
            raise LDPParameterError("quota must be an integer in [1, 2**30]")
        out[h] = ClientToken(str(name), role, quota)
    return out


def plan_queries(plan: Plan) -> list:
    """The plan's queries as the devices receive them (round ``first_round``; frequency queries only)."""
    out = []
    for pq in plan.queries:
        mech = pq.build()
        if pq.epsilon is None or mech.input_kind != InputKind.VALUE:
            raise LDPParameterError(f"query {pq.name!r}: ldp serve collects frequency queries (a mechanism with an epsilon over values)")
        out.append(Query(f"{plan.name}/{pq.name}/r{plan.first_round}", mech.spec(), pq.epsilon, min_batch=plan.min_batch))
    return out


class _Served:
    def __init__(self, query: Query, out_dir: Optional[Path]):
        self.query = query
        self.collector = Collector(query, out_dir=out_dir)
        self.seen: set = set()
        self.by_client: dict = {}


class IngestService:
    """The queries of a plan, their collectors, the clients' tokens and quotas; thread-safe."""

    def __init__(self, queries: list, tokens: dict, *, out_dir: Optional[str | Path] = None, max_post: int = 10_000):
        if not queries:
            raise LDPParameterError("ldp serve needs at least one query")
        self.tokens = dict(tokens)
        self.max_post = int(max_post)
        self._lock = threading.Lock()
        base = None if out_dir is None else Path(out_dir)
        self.served = {}
        for q in queries:
            key = q.content_hash.hex()
            self.served[key] = _Served(q, None if base is None else base / q.query_id.replace("/", "__"))

    # -- helpers -------------------------------------------------------------------------------------
    def client(self, authorization: Optional[str]) -> Optional[ClientToken]:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        return self.tokens.get(_digest(authorization[len("Bearer "):].strip()))

    def queries(self, authorization: Optional[str]) -> tuple:
        """``(status, body)`` of the query list (each query's canonical JSON text and its id)."""
        if self.client(authorization) is None:
            return 401, {"error": "unauthorized"}
        return 200, {"queries": [{"id": k, "json": s.query.to_json()} for k, s in self.served.items()]}

    def status(self, authorization: Optional[str], qid: str) -> tuple:
        """Counts of one query and, once its minimum batch arrived, its estimate (analysts only):
        the rows the Flower round releases (:func:`~ldp_plugin.federated.results.released_rows`:
        item, estimate and interval per item, or one row for a scalar estimate), whatever the
        estimator's result type."""
        c = self.client(authorization)
        if c is None:
            return 401, {"error": "unauthorized"}
        if c.role != "analyst":
            return 403, {"error": "forbidden"}
        s = self.served.get(qid)
        if s is None:
            return 404, {"error": "unknown_query"}
        with self._lock:
            col = s.collector
            body = {"query_id": s.query.query_id, "accepted": col.accepted, "rejected": dict(col.rejected), "min_batch": s.query.min_batch}
            if col.accepted >= s.query.min_batch:
                body["estimate"] = released_rows(col)
        return 200, body

    # -- the post ------------------------------------------------------------------------------------
    def post(self, authorization: Optional[str], qid: str, content_type: Optional[str], body: bytes) -> tuple:
        """``(status, response)`` of one post of envelopes; nothing is stored unless 200."""
        c = self.client(authorization)
        if c is None:
            return 401, {"error": "unauthorized"}
        if c.role != "device":
            return 403, {"error": "forbidden"}
        s = self.served.get(qid)
        if s is None:
            return 404, {"error": "unknown_query"}
        if (content_type or "").split(";")[0].strip() != "application/octet-stream":
            return 415, {"error": "unsupported_media_type"}
        size = s.collector.size
        if len(body) > size * self.max_post:
            return 413, {"error": "too_large", "max_reports": self.max_post}
        if not body or len(body) % size:
            return 400, {"error": "malformed", "detail": f"the body must be whole envelopes of {size} bytes"}
        rows = np.frombuffer(body, dtype=np.uint8).reshape(-1, size)
        m = rows.shape[0]
        header = np.frombuffer(s.collector._header, dtype=np.uint8)
        if not (rows[:, NONCE_BYTES:NONCE_BYTES + header.size] == header).all():
            return 400, {"error": "malformed", "detail": "an envelope's header is not this query's (tag, mechanism, one report)"}
        _, bad = check_reports(s.collector.mechanism, rows_to_reports(s.collector.mechanism, rows[:, NONCE_BYTES + header.size:]))
        if bad:
            return 400, {"error": "malformed", "detail": "report values out of range", "reasons": bad}
        nonces = [bytes(r[:NONCE_BYTES]) for r in rows]
        with self._lock:
            used = s.by_client.get(c.name, 0)
            if used + m > c.quota:
                return 429, {"error": "over_quota", "quota": c.quota, "used": used}
            if len(set(nonces)) != m or any(n in s.seen for n in nonces):
                return 409, {"error": "replay"}
            res = s.collector.ingest_array(rows)
            if res["accepted"] != m:  # pragma: no cover - every check above is the collector's own
                raise LDPParameterError("the collector refused a post the service had checked")
            s.seen.update(nonces)
            s.by_client[c.name] = used + m
        return 200, {"accepted": m}
