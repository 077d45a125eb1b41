"""The Flower apps (needs the ``flower`` extra: ``pip install 'ldp-plugin[flower]'``).

* :func:`make_client_app`: a ``ClientApp`` whose ``@app.query()`` handler runs the device side
  (:class:`~ldp_plugin.federated.DeviceFleet`) on each SuperNode and replies with report ids,
  wire reports and refusal counts — never a raw value.
* :func:`make_server_app`: a ``ServerApp`` that publishes one :class:`~ldp_plugin.federated.Query`
  per round to every node through the ``Grid`` (``send_and_receive``), feeds the replies to a
  :class:`~ldp_plugin.federated.Collector`, and records per-round counts and the estimate.
* :func:`simulate`: both on Flower's simulation engine (Ray), on generated data; one SuperNode
  hosts many devices (each its own cohort of the node's device ledger).

On a real deployment the same apps run under ``flower-superlink`` / ``flower-supernode`` (see
``examples/federated_flower.py``): each SuperNode's device code reads its own value and ledger
path from its local configuration instead of the simulation record.
"""

from __future__ import annotations

import json
import os
import time
from fractions import Fraction
from typing import Any, Callable, Optional

import numpy as np

from .collector import Collector
from .device import DeviceFleet, DevicePolicy
from .query import Query

__all__ = ["make_client_app", "make_server_app", "simulate", "node_values"]


def node_values(seed: int, partition: int, users: int, theta: np.ndarray) -> np.ndarray:
    """The simulated devices' values on one node (generated on the node; never sent)."""
    gen = np.random.default_rng([int(seed), int(partition)])
    return gen.choice(theta.size, size=users, p=theta)


def _theta(seed: int, d: int) -> np.ndarray:
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    return w / w.sum()


_FLEETS: dict = {}


def _fleet(pid: int, sim: dict) -> DeviceFleet:
    key = (sim["ledger-dir"], pid)
    if key not in _FLEETS:
        values = node_values(int(sim["seed"]), pid, int(sim["users-per-node"]), _theta(int(sim["seed"]), int(sim["d"])))
        policy = DevicePolicy(max_epsilon_per_query=Fraction(str(sim["max-epsilon"])))
        _FLEETS[key] = DeviceFleet(os.path.join(sim["ledger-dir"], f"node-{pid}.sqlite"), values, lifetime_cap=str(sim["device-cap"]), policy=policy)
    return _FLEETS[key]


def _corrupt(reply: dict, pid: int) -> dict:
    """A hostile node (simulation): truncated bytes, a wrong query hash, a broken wire version,
    and replayed report ids — every report it forwards is malformed."""
    ids, reports = list(reply["ids"]), list(reply["reports"])
    out_ids, out = [], []
    for i, (rid, b) in enumerate(zip(ids, reports)):
        kind = i % 4
        if kind == 0:
            out.append(b[:-1])
        elif kind == 1:
            out.append(b[:8] + bytes(16) + b[24:])  # the tag (query hash) zeroed
        elif kind == 2:
            out.append(b[:4] + bytes([99]) + b[5:])  # an unknown wire version
        else:
            rid = ids[0] if ids else rid  # a replayed report id with a truncated body
            out.append(b[:-2])
        out_ids.append(rid)
    return {**reply, "ids": out_ids, "reports": out}


def make_client_app():
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.query()
    def query(msg: Message, context) -> Message:  # pragma: no cover - runs inside Flower's engine
        q_json = str(msg.content["query"]["json"])
        sim = dict(msg.content["sim"])
        pid = int(context.node_config["partition-id"])
        fleet = _fleet(pid, sim)
        reply = fleet.respond(q_json)
        if pid < int(sim["malformed-nodes"]):
            reply = _corrupt(reply, pid)
        rec = ConfigRecord({"ids": list(reply["ids"]) or [b""], "reports": list(reply["reports"]) or [b""], "empty": not reply["reports"],
                            "refused": json.dumps(reply["refused"]), "devices": fleet.n_devices})
        return Message(content=RecordDict({"reply": rec}), reply_to=msg)

    return app


def make_server_app(*, mechanism: Any, rounds: int, sim: dict, results: list, query_prefix: str, min_batch: int,
                    truth: Optional[np.ndarray] = None, on_round: Optional[Callable[[dict], None]] = None, expected_nodes: int = 1):
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid, context) -> None:  # pragma: no cover - runs inside Flower's engine
        deadline = time.time() + 120
        nodes = sorted(grid.get_node_ids())
        while len(nodes) < expected_nodes and time.time() < deadline:  # SuperNodes connect asynchronously
            time.sleep(0.2)
            nodes = sorted(grid.get_node_ids())
        for r in range(1, rounds + 1):
            t0 = time.perf_counter()
            q = Query.for_mechanism(f"{query_prefix}-round-{r}", mechanism, min_batch=min_batch)
            content = RecordDict({"query": ConfigRecord({"json": q.to_json()}), "sim": ConfigRecord(dict(sim))})
            msgs = [Message(content=content, message_type="query", dst_node_id=nid, group_id=str(r)) for nid in nodes]
            replies = list(grid.send_and_receive(msgs))
            col = Collector(q)
            refused, errors = 0, 0
            for rep in replies:
                if rep.has_error():
                    errors += 1
                    continue
                rec = rep.content["reply"]
                if not bool(rec["empty"]):
                    col.ingest(list(rec["ids"]), list(rec["reports"]))
                refused += sum(json.loads(str(rec["refused"])).values())
            row = {"round": r, "query_id": q.query_id, "nodes_asked": len(nodes), "node_errors": errors,
                   "reports_accepted": col.accepted, "reports_rejected": int(sum(col.rejected.values())),
                   "rejected_by_reason": dict(col.rejected), "devices_refused": refused, "estimate": None,
                   "seconds": None}
            if col.accepted >= q.min_batch:
                est = col.estimate(postprocess="none")
                rows = []
                for i, item in enumerate(est.items):
                    rows.append({"item": item if isinstance(item, (int, str)) else str(item), "estimate": float(est.estimate[i]),
                                 "ci_lower": float(est.ci_lower[i]), "ci_upper": float(est.ci_upper[i]),
                                 "truth": None if truth is None else float(truth[i])})
                row["estimate"] = rows
            row["seconds"] = round(time.perf_counter() - t0, 3)
            results.append(row)
            if on_round is not None:
                on_round(row)

    return app


def simulate(*, nodes: int, users_per_node: int, mechanism: Any, rounds: int, device_cap: str, malformed_nodes: int = 0, seed: int = 0,
             ledger_dir: str, max_epsilon: str = "8", min_batch: int = 1, on_round: Optional[Callable[[dict], None]] = None) -> dict:
    """Run the apps on Flower's simulation engine (Ray, one CPU per node task) and return the
    per-round records. The truth (for the report only) is recomputed from the same generator."""
    import logging

    from flwr.simulation import run_simulation

    d = mechanism.domain_size
    theta = _theta(seed, d)
    truth = np.zeros(d)
    for pid in range(nodes):
        truth += np.bincount(node_values(seed, pid, users_per_node, theta), minlength=d)
    truth /= nodes * users_per_node
    sim = {"seed": int(seed), "d": int(d), "users-per-node": int(users_per_node), "malformed-nodes": int(malformed_nodes),
           "device-cap": str(device_cap), "max-epsilon": str(max_epsilon), "ledger-dir": str(ledger_dir)}
    results: list = []
    server = make_server_app(mechanism=mechanism, rounds=rounds, sim=sim, results=results, query_prefix=f"sim-{seed}",
                             min_batch=min_batch, truth=truth, on_round=on_round, expected_nodes=nodes)
    t0 = time.perf_counter()
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # Ray's FutureWarning about GPU env vars
    logging.getLogger("flwr").setLevel(logging.ERROR)
    run_simulation(server_app=server, client_app=make_client_app(), num_supernodes=nodes,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"logging_level": logging.ERROR, "log_to_driver": False, "include_dashboard": False}})
    return {"rounds": results, "nodes": nodes, "users_per_node": users_per_node, "seconds": round(time.perf_counter() - t0, 2)}
