"""The shuffler as a Flower ServerApp (needs ``pip install 'ldp-plugin[flower]'``): the server side
of a shuffled collection. An app project selects it instead of the collecting ServerApp::

    [tool.flwr.app.components]
    serverapp = "ldp_plugin.federated.shuffler_app:server_app"
    clientapp = "ldp_plugin.federated.app:client_app"

The SuperNodes run the same ClientApp; each device seals its report to the analyzer key its
owner pinned (``[device] analyzer_key``). The ServerApp sees what Flower shows it — node ids,
arrival — and never a report: it registers the nodes (quotas as in
:func:`~ldp_plugin.federated.app.run_plan`), sends each query, feeds every validated reply to a
:class:`~ldp_plugin.federated.shuffler.Shuffler`, and after the round's deadline forwards one
shuffled batch per query as ``<out_dir>/<plan>/round-NNNN/<query>/batch.ldpbatch`` — or, below the
query's minimum batch, writes no batch at all (status ``below_minimum``). Its own round summary
(counts by reason, the batch id; no report) is ``<out_dir>/<plan>/round-NNNN.json``. The analyzer
(``ldp federated analyze``, another party with the private key) reads only the batch file.

The plan is checked before any node is asked (no device spends for a query the shuffler would not
forward): it needs an ``out_dir``, and a memoized series is refused (its permanent reports link a
device across batches).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from flwr.app import ConfigRecord, RecordDict
from flwr.serverapp import ServerApp

from .app import _send, register_nodes, reply_to_raw, watch_parent
from .plan import Plan
from .query import Query
from .results import round_dir, write_summary
from .shuffler import Shuffler

__all__ = ["server_app", "run_shuffled_plan", "BATCH_FILE"]

log = logging.getLogger("ldp_plugin.federated")
BATCH_FILE = "batch.ldpbatch"


def run_shuffled_plan(grid: Any, plan: Plan, *, rng: Any = None, run_id: int = 0) -> list:
    """The shuffler ServerApp's body (see the module docstring); returns its round summaries.
    ``rng``: ``None`` (the OS CSPRNG) or a seed, for tests only."""
    plan.check_shuffled()
    nodes, quota, reg_errors = register_nodes(grid, plan, run_id=run_id)
    registered = sorted(n for n, q in quota.items() if q > 0)
    summaries = []
    for r in plan.round_numbers():
        summary = {"plan": plan.name, "round": r, "role": "shuffler", "nodes_connected": len(nodes), "nodes_registered": len(registered),
                   "registration_errors": reg_errors, "queries": []}
        for pq in plan.queries:
            t0 = time.perf_counter()
            q = Query.for_mechanism(f"{plan.name}/{pq.name}/r{r}", pq.build(), min_batch=plan.min_batch)
            out = round_dir(plan.out_dir, plan.name, r, pq.name)  # a rerun's old batch is removed first
            sh = Shuffler(q)
            replies = _send(grid, registered, RecordDict({"query": ConfigRecord({"json": q.to_json()})}), q.query_id, plan.round_timeout)
            refused: dict = {}
            for nid in registered:
                if nid not in replies:
                    sh.node_errors["no_reply"] = sh.node_errors.get("no_reply", 0) + 1
                    continue
                raw, err = reply_to_raw(replies[nid])
                if err is not None:
                    sh.node_errors[err] = sh.node_errors.get(err, 0) + 1
                    continue
                res = sh.add_reply(raw, quota=quota[nid])
                for k, v in res["refused"].items():
                    refused[k] = refused.get(k, 0) + v
            row = {"query": pq.name, "query_id": q.query_id, "query_hash": q.content_hash.hex(), "mechanism": pq.mechanism, "epsilon": q.epsilon,
                   "min_batch": q.min_batch, "nodes_asked": len(registered), "nodes_answered": len(replies), "node_errors": dict(sh.node_errors),
                   "ciphertexts_held": sh.count, "ciphertexts_rejected": int(sum(sh.rejected.values())), "rejected_by_reason": dict(sh.rejected),
                   "devices_refused": int(sum(refused.values())), "refused_by_reason": refused, "bytes_received": sh.bytes_received,
                   "status": "below_minimum", "batch": None, "batch_id": None}
            if sh.count >= q.min_batch:
                fwd = sh.forward(out / BATCH_FILE, rng=rng)
                row.update(status="forwarded", batch=fwd["path"], batch_id=fwd["batch_id"])
            row["seconds"] = round(time.perf_counter() - t0, 3)
            summary["queries"].append(row)
            log.info("round %d %s: %d ciphertexts held, %d rejected, node errors %s, %s", r, pq.name, row["ciphertexts_held"],
                     row["ciphertexts_rejected"], row["node_errors"], row["status"])
        write_summary(plan.out_dir, plan.name, r, summary)
        summaries.append(summary)
    return summaries


server_app = ServerApp()


@server_app.main()
def _main(grid, context) -> None:  # pragma: no cover - runs inside Flower's engine
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
        log.setLevel(logging.INFO)
    watch_parent()
    run_shuffled_plan(grid, Plan.from_run_config(context.run_config), run_id=context.run_id)
