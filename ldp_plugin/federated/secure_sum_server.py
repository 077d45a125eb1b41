"""The secure-sum ServerApp (``ldp_plugin.federated.secure_sum_server:server_app``; needs
``pip install 'ldp-plugin[flower]'``): each query of a ``mode = "secure-sum"`` plan is one run of
Flower's own ``SecAggPlusWorkflow`` (inside Flower's ``DefaultWorkflow``, the strategy path: SecAgg+
speaks only TRAIN messages in Flower 1.41), so the server sees the sum and nothing else.

For every round and query it waits for the plan's nodes, derives the query's configuration for
the nodes connected (:meth:`SecureSumQuery.derive`: a configuration that would clip, wrap or zero
is refused **before any message is sent** — the row says why, nothing is spent anywhere), then runs
SecAgg+ with that configuration and a strategy that:

* samples exactly the derived number of nodes (all connected) and sends each the query JSON in the
  fit config (``num_examples``/weights are fixed by the devices: 1);
* in ``aggregate_fit`` receives the results of the nodes whose masked vectors were summed and
  SecAgg+'s aggregate (their mean), recovers the exact integer sum
  (:func:`~ldp_plugin.federated.secure_config.exact_sum`) and records the summed node ids;
* never evaluates and never sends a parameter update back.

The release (:func:`~ldp_plugin.federated.secure_release.release_sum`) is accounted for the nodes
actually summed and written as the round's summary (the server's record of what was released).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

import numpy as np
from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server import LegacyContext, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.serverapp import ServerApp

from .._errors import LDPParameterError
from .plan import Plan
from .results import write_summary
from .secure_config import SecureSumConfigError, exact_sum
from .secure_query import SecureSumQuery
from .secure_release import release_sum
from .secure_sum import QUERY_KEY

__all__ = ["server_app", "SecureSumStrategy", "run_secure_query", "run_secure_plan"]

log = logging.getLogger("ldp_plugin.federated.secure_sum")


class SecureSumStrategy(FedAvg):
    """The strategy SecAgg+ calls (module docstring); ``total`` and ``summed`` after the round."""

    def __init__(self, query: SecureSumQuery, wait: float = 60.0):
        self.query = query
        self.wait = float(wait)
        self.total: Optional[np.ndarray] = None
        self.summed: list = []
        self.sampled: list = []
        self.failures = 0
        self.error: Optional[str] = None
        super().__init__(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=query.nodes, min_evaluate_clients=0,
                         min_available_clients=query.nodes, initial_parameters=ndarrays_to_parameters([np.zeros(1)]))

    def configure_fit(self, server_round: int, parameters: Any, client_manager: Any) -> list:
        client_manager.wait_for(self.query.nodes, timeout=int(max(1, self.wait)))
        clients = sorted(client_manager.all().values(), key=lambda c: c.node_id)
        if len(clients) != self.query.nodes:  # the configuration was derived for this many nodes
            self.error = f"{len(clients)} nodes available, the configuration was derived for {self.query.nodes}"
            return []
        self.sampled = [int(c.node_id) for c in clients]
        ins = FitIns(parameters, {QUERY_KEY: self.query.to_json()})
        return [(c, ins) for c in clients]

    def aggregate_fit(self, server_round: int, results: list, failures: list) -> tuple:
        self.failures = len(failures)
        if not results:
            return None, {}
        self.summed = sorted(int(proxy.node_id) for proxy, _ in results)
        mean = parameters_to_ndarrays(results[0][1].parameters)[0]
        try:
            self.total = exact_sum(mean, len(results))
        except SecureSumConfigError as e:
            self.error = str(e)
        return None, {}

    def configure_evaluate(self, server_round: int, parameters: Any, client_manager: Any) -> list:
        return []

    def evaluate(self, server_round: int, parameters: Any) -> None:
        return None


def run_secure_query(grid: Any, context: Any, q: SecureSumQuery, *, timeout: float, wait: float, min_count: Optional[int] = None) -> dict:
    """One SecAgg+ round of ``q`` (derived already); the release row."""
    dv = q.derive()
    strategy = SecureSumStrategy(q, wait=wait)
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=1), strategy=strategy)
    DefaultWorkflow(fit_workflow=SecAggPlusWorkflow(**dv.config.workflow_kwargs(), timeout=timeout))(grid, legacy)
    if strategy.total is None:
        return {"query_id": q.query_id, "option": q.option, "status": "no_sum", "nodes_sampled": len(strategy.sampled),
                "node_failures": strategy.failures, "error": strategy.error, "estimate": None, "central": None}
    row = release_sum(q, strategy.total, strategy.summed, min_count=min_count)
    row["node_failures"] = strategy.failures
    return row


def run_secure_plan(grid: Any, context: Any, plan: Plan) -> list:
    """The ServerApp's body: every round and query of a secure-sum plan; returns the summaries."""
    if plan.mode != "secure-sum":
        raise LDPParameterError('the secure-sum ServerApp runs plans with mode = "secure-sum"')
    summaries = []
    for r in plan.round_numbers():
        summary: dict = {"plan": plan.name, "round": r, "mode": plan.mode, "queries": []}
        for pq in plan.queries:
            t0 = time.perf_counter()
            deadline = time.time() + plan.node_wait
            nodes = list(grid.get_node_ids())
            while len(nodes) < plan.expected_nodes and time.time() < deadline:
                time.sleep(0.2)
                nodes = list(grid.get_node_ids())
            summary["nodes_connected"] = len(nodes)
            try:  # derived for the nodes connected: refused here, before any message
                q = pq.secure_query(f"{plan.name}/{pq.name}/r{r}", len(nodes))
            except (LDPParameterError, SecureSumConfigError) as e:
                row = {"status": "refused", "reason": str(e), "estimate": None, "central": None}
            else:
                row = run_secure_query(grid, context, q, timeout=plan.round_timeout, wait=plan.node_wait,
                                       min_count=(pq.secure or {}).get("min_count"))
            row = {"query": pq.name, "mechanism": pq.mechanism, **row, "seconds": round(time.perf_counter() - t0, 3)}
            summary["queries"].append(row)
            log.info("round %d %s: %s, %s of %s nodes summed", r, pq.name, row["status"], row.get("nodes_summed"), row.get("nodes_sampled"))
        if plan.out_dir is not None:
            write_summary(plan.out_dir, plan.name, r, summary)
        summaries.append(summary)
    return summaries


server_app = ServerApp()


@server_app.main()
def _main(grid, context) -> None:  # pragma: no cover - runs inside Flower's engine
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
        log.setLevel(logging.INFO)
    run_secure_plan(grid, context, Plan.from_run_config(context.run_config))
