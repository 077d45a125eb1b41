"""The wire round trip of every registered name through the device's reply path.

For each registered mechanism (its first canonical instance) a deployed device (:mod:`._fixture`)
answers the query through the node's reply path (:func:`~ldp_plugin.federated.app.device_answer`),
its reply goes on the wire as the node's reply record (one blob of envelopes, the refusals as JSON
text) and into the server's :class:`~ldp_plugin.federated.collector.Collector` through
:meth:`~ldp_plugin.federated.collector.Collector.ingest_reply` — the path of every Flower round. The
layer passes iff, for every name:

1. every device answers, charged once, and every envelope has the query's exact length
   (:func:`~ldp_plugin.federated.envelope.envelope_size`: nonce + one wire report);
2. the collector accepts every report (no node error, no rejection) and its accumulator counts
   them all;
3. the retried query returns the kept envelopes byte for byte, and the collector counts each of
   them as a ``duplicate`` (the nonce is the report's id), its accumulator unchanged;
4. (a name over values: what ``ldp serve`` collects) the same envelopes posted to the HTTPS ingestion service (:class:`~ldp_plugin.federated.ingest.IngestService`,
   the path of browsers and phones) are accepted whole, and posted again are a ``replay`` that
   changes nothing; an analyst reads the count back. Once per run, every refusal of a post — no
   token, the wrong role, an unknown query, another media type, a body that is not whole
   envelopes, a post above ``max_post``, a client over its quota, an envelope of another query —
   stores nothing, and the reads refuse a missing token, a device reading counts and an unknown
   query; the collector's replay check counts the same on both kernel backends (numpy, numba).

Power: a reply path that reuses one nonce for a reply's envelopes (the seeded bug
``shared-nonce-reply``) loses every report but one at the collector."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ...federated.app import device_answer
from ...federated.collector import Collector
from ...federated.envelope import envelope_size
from ...federated.ingest import IngestService, load_tokens, new_token
from ...federated.query import Query
from ...mechanisms.protocol import InputKind
from ...registry import KINDS, load_registry
from ..production import kernel_env, numba_available
from ._fixture import DEVICES, Device, on_the_wire, wire_payloads

__all__ = ["wire_layer"]


def wire_layer(*, seed: int = 0, quick: bool = False, answer: Callable = device_answer, directory: str | Path,
               names: tuple | None = None) -> dict:
    """The module's checks on every registered name (or ``names``) with ``answer`` (default: the
    node's real reply path) in ``directory`` (a fresh temporary directory)."""
    t0 = time.perf_counter()
    reg = load_registry(kinds=KINDS)
    names = tuple(sorted(reg)) if names is None else tuple(names)
    dev = Device(Path(directory) / "device", policy={"lifetime_cap": "100000", "max_epsilon_per_query": "64"}, answer=answer)
    rows, failures = [], []
    for name in names:
        decl = reg[name]
        mech = decl.mechanism_class()(**decl.canonical[0])
        query = Query.for_mechanism(f"system/wire/{name}", mech)
        problems = []
        reply = dev.answer(query.to_json())
        sent = wire_payloads(reply)
        size = envelope_size(mech, query.content_hash)
        if reply.get("refused") or len(sent) != DEVICES or {len(e) for e in sent} != {size}:
            problems.append(f"{len(sent)} envelopes of lengths {sorted({len(e) for e in sent})} (refused {reply.get('refused')}); "
                            f"expected {DEVICES} of {size} bytes")
        col = Collector(query)
        res = col.ingest_reply(on_the_wire(reply), quota=DEVICES)
        if res["error"] is not None or res["accepted"] != DEVICES or res["rejected"] or col.acc.n != DEVICES:
            problems.append(f"the collector accepted {res['accepted']} (node error {res['error']}, rejected {res['rejected']}, counted {col.acc.n})")
        again = dev.answer(query.to_json())
        res2 = col.ingest_reply(on_the_wire(again), quota=DEVICES)
        if not again.get("retry") or wire_payloads(again) != sent or res2["accepted"] or res2["rejected"] != {"duplicate": DEVICES} \
                or col.acc.n != DEVICES:
            problems.append(f"the retried reply was accepted {res2['accepted']} times (rejected {res2['rejected']}); "
                            "expected the kept envelopes, each a duplicate")
        if mech.input_kind == InputKind.VALUE:  # what `ldp serve` collects (ingest.plan_queries)
            problems += _ingest(query, sent, Path(directory))
        rows.append({"name": name, "envelope_bytes": size, "accepted": res["accepted"], "passed": not problems})
        failures += [f"{name}: {p}" for p in problems]
    failures += _ingest_refusals(reg, dev, Path(directory)) + _both_backends(reg, dev)
    return {"layer": "wire", "names": len(rows), "rows": rows, "failures": failures, "seconds": round(time.perf_counter() - t0, 2),
            "passed": not failures}


def _service(queries: list, directory: Path, *, quota: int = 2 * DEVICES, max_post: int = 4 * DEVICES) -> tuple:
    """An ingestion service with one device client and one analyst, their tokens read from the
    operator's tokens file (only the tokens' SHA-256 is kept)."""
    device, analyst = new_token(), new_token()
    clients = {"device": {"token_sha256": hashlib.sha256(device.encode()).hexdigest(), "role": "device", "quota": quota},
               "analyst": {"token_sha256": hashlib.sha256(analyst.encode()).hexdigest(), "role": "analyst", "quota": quota}}
    path = Path(directory) / "tokens.json"
    path.write_text(json.dumps({"clients": clients}))
    return IngestService(queries, load_tokens(path), max_post=max_post), f"Bearer {device}", f"Bearer {analyst}"


_BINARY = "application/octet-stream"


def _ingest(query: Query, sent: list, directory: Path) -> list:
    """Check 4 for one name: accepted whole, a replay refused, the count read back."""
    svc, dev, ana = _service([query], directory)
    qid = query.content_hash.hex()
    body = b"".join(sent)
    first = svc.post(dev, qid, _BINARY, body)
    again = svc.post(dev, qid, _BINARY, body)
    status, seen = svc.status(ana, qid)
    if first != (200, {"accepted": DEVICES}) or again[0] != 409 or status != 200 or seen["accepted"] != DEVICES or seen["rejected"]:
        return [f"the ingestion service answered {first[0]} then {again[0]} and counts {seen.get('accepted')} (rejected {seen.get('rejected')})"]
    return []


def _ingest_refusals(reg: dict, dev: Device, directory: Path) -> list:
    """Every refusal of a post stores nothing (check 4, once per run)."""
    decl = reg["krr"]
    mech = decl.mechanism_class()(**decl.canonical[0])
    query, other = Query.for_mechanism("system/ingest", mech), Query.for_mechanism("system/ingest-other", mech)
    envs = wire_payloads(dev.answer(query.to_json()))
    stray = wire_payloads(dev.answer(other.to_json()))
    svc, device, analyst = _service([query], directory, quota=DEVICES, max_post=DEVICES - 1)
    qid = query.content_hash.hex()
    cases = [("no token", (None, qid, _BINARY, envs[0]), 401), ("an analyst posting", (analyst, qid, _BINARY, envs[0]), 403),
             ("an unknown query", (device, other.content_hash.hex(), _BINARY, envs[0]), 404), ("another media type", (device, qid, "text/plain", envs[0]), 415),
             ("a body of broken envelopes", (device, qid, _BINARY, envs[0][:-1]), 400), ("a post above max_post", (device, qid, _BINARY, b"".join(envs)), 413),
             ("an envelope of another query", (device, qid, _BINARY, stray[0]), 400)]
    failures = []
    for label, args, want in cases:
        got, _ = svc.post(*args)
        if got != want:
            failures.append(f"ingest, {label}: status {got}, expected {want}")
    reads = [("the query list without a token", svc.queries(None), 401), ("the query list", svc.queries(device), 200),
             ("counts without a token", svc.status(None, qid), 401), ("counts read by a device", svc.status(device, qid), 403),
             ("counts of an unknown query", svc.status(analyst, other.content_hash.hex()), 404)]
    for label, (got, _), want in reads:
        if got != want:
            failures.append(f"ingest, {label}: status {got}, expected {want}")
    if svc.status(analyst, qid)[1]["accepted"]:
        failures.append("ingest: a refused post was counted")
    ok, _ = svc.post(device, qid, _BINARY, b"".join(envs[:DEVICES - 1]))  # within max_post and the quota (= DEVICES)
    last, _ = svc.post(device, qid, _BINARY, envs[-1])
    status, seen = svc.status(analyst, qid)
    if ok != 200 or last != 200 or seen["accepted"] != DEVICES:
        failures.append(f"ingest: the posts within quota answered {ok}, {last}; {seen.get('accepted')} counted")
    beyond, _ = svc.post(device, qid, _BINARY, envs[0])  # the quota is used up
    if beyond != 429 or svc.status(analyst, qid)[1]["accepted"] != DEVICES:
        failures.append(f"ingest: a post beyond the client's quota answered {beyond}")
    return failures


def _both_backends(reg: dict, dev: Device) -> list:
    """The collector's replay check (:class:`~ldp_plugin.federated.nonces.NonceSet`) on both kernel
    backends: each counts every report of a reply once and every resent one as a ``duplicate``,
    with the same accumulator."""
    if not numba_available():
        return []
    decl = reg["oue"]
    mech = decl.mechanism_class()(**decl.canonical[0])
    query = Query.for_mechanism("system/backends", mech)
    raw = on_the_wire(dev.answer(query.to_json()))
    seen, failures = {}, []
    for backend in ("numpy", "numba"):
        with kernel_env(backend):
            col = Collector(query)
            first = col.ingest_reply(raw, quota=DEVICES)
            again = col.ingest_reply(raw, quota=DEVICES)
            seen[backend] = (col.acc.n, np.asarray(col.acc.counts).tolist())
        if first["accepted"] != DEVICES or again["rejected"] != {"duplicate": DEVICES}:
            failures.append(f"the {backend} backend's collector accepted {first['accepted']} then rejected {again['rejected']}")
    if len({repr(v) for v in seen.values()}) != 1:
        failures.append("the two kernel backends' collectors counted differently")
    return failures
