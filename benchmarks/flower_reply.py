"""A node's Flower reply, from the reply message to the accumulator: wire version 2 (one blob)
against the list of reports the version-1 wire carried, in the same run.

    python3 benchmarks/flower_reply.py [--n 1000000] [--repeats 3]

For k-RR and OUE (d = 64, ε = 1): ``n`` envelopes made by the device path; the reply record built
by the app's ``_record`` (wire 2), then timed: ``reply_to_raw`` + ``Collector.ingest_reply`` (every
check: sizes, quota, headers, nonces, the query tag, the report fields) into the accumulator.
The list row times the same checks on the same envelopes given as a list of ``bytes`` (what a
version-1 reply deserialized into). Best of ``--repeats``, in reports per second."""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from flwr.app import ConfigRecord, Message, RecordDict
from flwr.supercore.task_identity import TaskIdentity

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.app import _record, reply_to_raw
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.reports import to_wire_each


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    out = {}
    for mech in (ldp.KRR(epsilon=1.0, d=64), ldp.OUE(epsilon=1.0, d=64)):
        q = Query.for_mechanism("bench", mech, min_batch=1)
        envs = seal(to_wire_each(mech, mech.randomize_encoded(np.arange(args.n) % 64), tag=q.content_hash))
        reply = {"devices": args.n, "reports": envs, "refused": {}, "retry": False}
        ask = Message(content=RecordDict({"query": ConfigRecord({"json": q.to_json()})}), dst_node_id=7, message_type="query")
        msg = Message(content=_record(reply), reply_to=ask)

        def blob() -> None:
            raw, err = reply_to_raw(msg)
            res = Collector(q).ingest_reply(raw, quota=args.n)
            assert err is None and res["accepted"] == args.n

        def listed() -> None:
            res = Collector(q).ingest_reply({"devices": args.n, "reports": list(envs), "refused": "{}", "retry": False}, quota=args.n)
            assert res["accepted"] == args.n

        for name, fn in (("wire2_blob", blob), ("list_of_bytes", listed)):
            best = min(_time(fn) for _ in range(args.repeats))
            out[f"{mech.name} d=64 {name}"] = round(args.n / best)
    print(json.dumps({"machine": f"{platform.machine()}, Python {platform.python_version()}", "n": args.n, "reports_per_second": out}, indent=1))


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
