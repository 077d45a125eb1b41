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
   them as a ``duplicate`` (the nonce is the report's id), its accumulator unchanged.

Power: a reply path that reuses one nonce for a reply's envelopes (the seeded bug
``shared-nonce-reply``) loses every report but one at the collector."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ...federated.app import device_answer
from ...federated.collector import Collector
from ...federated.envelope import envelope_size
from ...federated.query import Query
from ...registry import KINDS, load_registry
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
        rows.append({"name": name, "envelope_bytes": size, "accepted": res["accepted"], "passed": not problems})
        failures += [f"{name}: {p}" for p in problems]
    return {"layer": "wire", "names": len(rows), "rows": rows, "failures": failures, "seconds": round(time.perf_counter() - t0, 2),
            "passed": not failures}
