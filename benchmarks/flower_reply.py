"""Flower replies into one query's collector, as the ServerApp collects them, against the columnar
collector and a memory copy of the same bytes, in the same run.

    python3 benchmarks/flower_reply.py [--nodes 4] [--n 1000000] [--repeats 3]

For k-RR and OUE (d = 64, ε = 1), built before any timing: ``--nodes`` node replies of ``--n``
envelopes each (distinct CSPRNG nonces; the device path: ``to_wire_each`` + ``seal``), each made a
Flower reply message by the ClientApp's ``_record`` (reply wire 2: one ``blob``).

Timed (``collection``): what the ServerApp's ``_collect`` does once the replies arrived, into
one collector per query — per node ``reply_to_raw`` (the record → the plain reply) and
``Collector.ingest_reply(raw, quota=n, node=id)``: the reply validated whole (fields, quota,
size), then every envelope's header bytes, its nonce against every nonce of the query, the report
values' ranges, the accumulator and the node's own accumulator (for the robust combination).
Rate = nodes × n / time; best of ``--repeats``, each repeat a new collector (a new query) made
before the clock starts, as ``_collect`` makes it before it sends the query:
``Collector(q, expected_reports=nodes × n)`` (the registered quota: its nonce table sized and
touched then; ``collector_creation_ms``). ``no_reservation_reports_per_s`` times instead a
``Collector(q)`` made inside the clock, whose nonce table grows (rehashes) as replies arrive.
``one_thread_scan_reports_per_s`` times the collection with the nonce admission's scan of the
rows on one thread (``aggregate_kernels._SCAN_SPLIT`` raised past the batch), against its default
split over the cores. The numba kernels are loaded before timing, as the ServerApp does at start (``run_plan``);
``LDP_PLUGIN_KERNELS=numba`` unless set.

Also printed: ``per_reply_fixed_us``, a reply without reports into a collector that holds the
others' nonces (what one reply costs beyond its reports); ``per_report_ns`` = (collection time −
nodes × the fixed cost) / reports; and the two references measured on the same bytes in this
run: ``ingest_array`` (the columnar collector: the same envelope checks, one call per node's
blob into one reserved collector, no reply validation, no per-node accumulator) and ``memcpy``
(``np.copyto`` of every blob into a warm buffer). ``cpu_over_wall`` is the process CPU time over
the wall time of the collection runs (about 1 when the machine was quiet and the run single-threaded)."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE:
    sys.path.pop(0)  # this directory's coverage.py would shadow the package numba imports (a silent numpy run)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("LDP_PLUGIN_KERNELS", "numba")  # the compiled kernels or an ImportError, never a silent numpy run

import numpy as np  # noqa: E402
from flwr.app import ConfigRecord, Message, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.federated import Collector, Query  # noqa: E402
from ldp_plugin.federated.app import _record, reply_to_raw  # noqa: E402
from ldp_plugin.federated.envelope import seal  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire_each  # noqa: E402
from ldp_plugin.sampling import aggregate_kernels  # noqa: E402
from ldp_plugin.sampling.kernels import preload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    backend = preload(1 << 40)
    total = args.nodes * args.n
    out: dict = {}
    for mech in (ldp.KRR(epsilon=1.0, d=64), ldp.OUE(epsilon=1.0, d=64)):
        q = Query.for_mechanism("bench", mech, min_batch=1)
        ask = Message(content=RecordDict({"query": ConfigRecord({"json": q.to_json()})}), dst_node_id=7, message_type="query")
        msgs, blobs = [], []
        for node in range(args.nodes):
            envs = seal(to_wire_each(mech, mech.randomize_encoded(np.arange(args.n) % 64), tag=q.content_hash))
            msg = Message(content=_record({"devices": args.n, "reports": envs, "refused": {}, "retry": False}), reply_to=ask)
            del envs
            msgs.append(msg)
            blobs.append(np.frombuffer(msg.content["reply"]["blob"], dtype=np.uint8).reshape(args.n, -1))
        empty = Message(content=_record({"devices": 0, "reports": [], "refused": {}, "retry": False}), reply_to=ask)

        def collection(col: Collector) -> Collector:
            for nid, msg in enumerate(msgs):
                raw, err = reply_to_raw(msg)
                res = col.ingest_reply(raw, quota=args.n, node=nid)
                assert err is None and res["error"] is None and res["accepted"] == args.n
            return col

        def columnar() -> None:
            col = Collector(q, expected_reports=total)
            for b in blobs:
                assert col.ingest_array(b)["accepted"] == args.n

        walls, cpus, creations = [], [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            col = Collector(q, expected_reports=total)  # as _collect does before sending the query
            creations.append(time.perf_counter() - t)
            w, c = time.perf_counter(), time.process_time()
            collection(col)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        assert col.accepted == total
        t_grow = _best(lambda: collection(Collector(q)), args.repeats)
        split = aggregate_kernels._SCAN_SPLIT
        aggregate_kernels._SCAN_SPLIT = 1 << 62  # the nonce admission's scan of the rows on one thread
        t_one = _best(lambda: collection(Collector(q, expected_reports=total)), args.repeats)
        aggregate_kernels._SCAN_SPLIT = split
        t_fixed = _best(lambda: col.ingest_reply(reply_to_raw(empty)[0], quota=args.n, node=args.nodes), 20)
        t_col = _best(columnar, args.repeats)
        dst = [np.empty_like(b) for b in blobs]
        for d in dst:
            d.fill(0)
        t_cp = _best(lambda: [np.copyto(d, b) for d, b in zip(dst, blobs)], args.repeats)
        best = min(walls)
        out[f"{mech.name} d=64"] = {
            "envelope_bytes": int(col.size), "collection_reports_per_s": round(total / best),
            "per_reply_fixed_us": round(t_fixed * 1e6, 1), "per_report_ns": round((best - args.nodes * t_fixed) / total * 1e9, 2),
            "collector_creation_ms": round(min(creations) * 1e3, 1),
            "no_reservation_reports_per_s": round(total / t_grow),
            "one_thread_scan_reports_per_s": round(total / t_one),
            "ingest_array_reports_per_s": round(total / t_col), "collection_over_ingest_array": round(t_col / best, 3),
            "memcpy_reports_per_s": round(total / t_cp), "collection_over_memcpy": round(t_cp / best, 3),
            "cpu_over_wall": round(sum(cpus) / sum(walls), 2)}
        del msgs, blobs, dst, col
    print(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}", "kernels": backend,
                      "load_average_1min": round(os.getloadavg()[0], 2), "nodes": args.nodes, "n_per_reply": args.n, "results": out}, indent=1))


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


if __name__ == "__main__":
    main()
