"""The Flower apps of the federated runtime (needs ``pip install 'ldp-plugin[flower]'``), the
components of the app project ``ldp federated new`` writes::

    [tool.flwr.app.components]
    serverapp = "ldp_plugin.federated.app:server_app"
    clientapp = "ldp_plugin.federated.app:client_app"

* :data:`client_app` runs on each SuperNode. It opens the node's devices from the device TOML its
  owner named in the SuperNode's ``node_config`` (``device-config``) — data, ledger, keystore and
  policy — and answers a registration (how many devices it hosts) and each query
  (:meth:`DeviceFleet.respond`). It reads nothing from a server message but the query JSON.
* :data:`server_app` runs the plan (:class:`~ldp_plugin.federated.plan.Plan`, from the run
  config): it waits for the expected SuperNodes, registers them (each node's quota = the devices
  it registered, capped by ``max_devices_per_node``), then for every round and query sends the
  :class:`Query` to the registered nodes with the round's deadline, validates each reply whole
  (a malformed or over-quota reply is that node's error, counted by reason — it never ends the
  run nor enters a count), feeds the rest to a :class:`Collector`, and writes the accepted
  reports as Parquet parts plus one JSON summary per round. A round whose accepted reports stay
  below the minimum batch is reported ``incomplete`` (no estimate), never silently smaller.
  A heavy-hitter discovery (``mechanism = "pem"`` or ``"treehist"``) is one query per group — each
  prefix level, then the held-out group (:mod:`~ldp_plugin.federated.discovery`) — decoded once
  all have arrived: one row per group and the discovered strings with their intervals.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Optional

from flwr.app import ConfigRecord, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.supercore.app_utils import start_parent_process_monitor

from .._errors import LDPInputError, LDPParameterError
from ..discovery import METHODS as DISCOVERY_METHODS
from ..sampling.kernels import preload
from .collector import Collector
from .config import DeviceConfig, device_config_path
from .device import DeviceFleet, DeviceRefusal
from .discovery import decode, level_queries
from .plan import Plan
from .query import Query
from .results import released_rows, round_dir, write_summary
from .sealed import seal_reply
from .trust import TRUST_REFUSALS, sign_membership, verify_membership
from ..robust.aggregation import combine_accumulators

__all__ = ["client_app", "server_app", "reply_to_raw", "register_nodes", "run_plan"]

log = logging.getLogger("ldp_plugin.federated")
#: the reply record's version: 2 = the reports as one concatenated ``blob`` (1, a list of reports, is refused)
REPLY_WIRE = 2
_REPLY_KEYS = {"wire", "devices", "blob", "refused", "retry", "member", "signature"}
_CHALLENGE_BYTES = 32
_NOT_REFUSALS = ("other_group",)

client_app = ClientApp()


def _record(reply: dict) -> RecordDict:
    """A device reply as Flower's record, wire version :data:`REPLY_WIRE`: the reports (envelopes,
    or sealed boxes, all of one size) travel as ONE ``blob`` — their concatenation — so a reply of
    10^6 reports is one bytes field, never 10^6 protobuf entries; the server reads it as an
    ``(m, size)`` array (:meth:`~ldp_plugin.federated.collector.Collector.ingest_array`)."""
    rec: dict = {"wire": REPLY_WIRE, "devices": int(reply["devices"]), "refused": json.dumps(reply["refused"]), "retry": bool(reply["retry"])}
    for k in ("member", "signature"):  # a registration's membership proof
        if k in reply:
            rec[k] = str(reply[k])
    if reply["reports"]:  # absent means none
        rec["blob"] = b"".join(reply["reports"])  # bytes-like envelopes or sealed boxes, joined in C
    return RecordDict({"reply": ConfigRecord(rec)})


def device_answer(content: Any, node_config: Any, *, run_id: int = 0, node_id: int = 0) -> dict:
    """The device side of one message (registration or query), from the node's own config. A
    registration carrying a ``challenge`` is answered with the node's membership proof (its member
    key's signature of the run, its node id and the challenge) when the owner configured one.
    Nothing raised inside reaches the server as text: an unexpected failure is the fixed refusal
    ``device_error`` for every device."""
    n = 1
    try:
        cfg = DeviceConfig.load(device_config_path(node_config), node_config)
        fleet = DeviceFleet.open(cfg)
    except (LDPParameterError, LDPInputError) as e:
        log.error("device refuses: %s", e)
        return {"devices": 1, "reports": [], "refused": {"device_misconfigured": 1}, "retry": False}
    except DeviceRefusal as e:
        log.error("device refuses (%s): %s", e.reason, e)
        try:
            n = int(cfg.load_values().shape[0])
        except Exception:  # noqa: BLE001 - the refusal stands whatever the data source does
            pass
        return {"devices": n, "reports": [], "refused": {e.reason: n}, "retry": False}
    except Exception:  # noqa: BLE001 - no text of an unexpected failure leaves the device
        log.exception("device failed to open")
        return {"devices": 1, "reports": [], "refused": {"device_error": 1}, "retry": False}
    try:
        n = fleet.n_devices
        if "query" in content:
            return seal_reply(fleet.respond(str(content["query"]["json"])), cfg.analyzer_key)  # sealed if the owner pinned a key
        out = {"devices": n, "reports": [], "refused": {}, "retry": False}
        reg = content["register"] if "register" in content else {}
        challenge = reg.get("challenge") if hasattr(reg, "get") else None
        if isinstance(challenge, str) and cfg.trust.member_key is not None:
            out["member"], out["signature"] = sign_membership(cfg.trust.member_key, run_id, node_id, bytes.fromhex(challenge))
        return out
    except Exception:  # noqa: BLE001 - no text of an unexpected failure leaves the device
        log.exception("device failed to answer")
        return {"devices": n, "reports": [], "refused": {"device_error": n}, "retry": False}
    finally:
        fleet.close()


@client_app.query()
def _query(msg: Message, context) -> Message:
    return Message(content=_record(device_answer(msg.content, context.node_config, run_id=context.run_id, node_id=context.node_id)), reply_to=msg)


def reply_to_raw(rep: Any) -> tuple[Optional[dict], Optional[str]]:
    """A Flower reply message → the plain reply mapping :func:`validate_reply` checks (its
    ``reports`` the reply's one ``blob``, ``b""`` for none), or a node error reason; never raises,
    whatever the node sent. A record of another wire version (the old list of reports included)
    is ``unsupported_version``."""
    try:
        if rep.has_error():  # a device's owner runtime refusing the app says why, in a fixed word
            reason = str(rep.error.reason)
            return None, reason if reason in TRUST_REFUSALS or reason == "device_error" else "flower_error"
        content = rep.content
        if "reply" not in content:
            return None, "malformed"
        rec = content["reply"]
        keys = set(rec.keys())
        if "reports" in keys or ("wire" in keys and rec["wire"] != REPLY_WIRE):
            return None, "unsupported_version"
        if not keys <= _REPLY_KEYS or not {"wire", "devices", "refused", "retry"} <= keys:
            return None, "malformed"
        raw = {k: rec[k] for k in keys if k not in ("wire", "blob")}
        raw["reports"] = rec["blob"] if "blob" in keys else b""
        return raw, None
    except Exception:  # noqa: BLE001 - a hostile reply is that node's error, never the run's end
        return None, "malformed"


def _send(grid: Any, nodes: list, content: RecordDict, group: str, timeout: float) -> dict:
    """Push one message per node and pull the replies until all arrived or the round's deadline
    passed (polling every 0.25 s); ``{node id: first reply}`` — a node's extra replies are ignored."""
    msgs = [Message(content=content, message_type="query", dst_node_id=nid, group_id=group) for nid in nodes]
    pending = set(grid.push_messages(msgs)) if msgs else set()
    out: dict = {}
    deadline = time.time() + timeout
    while pending:  # at least one pull, even when pushing took the whole deadline: what arrived is counted
        try:
            replies = grid.pull_messages(list(pending))
        except Exception:  # noqa: BLE001 - a SuperLink hiccup: the round's deadline still ends the wait
            replies = []
        for rep in replies:
            try:
                pending.discard(rep.metadata.reply_to_message_id)
                nid = int(rep.metadata.src_node_id)
            except Exception:  # noqa: BLE001 - a reply without usable metadata is no reply
                continue
            if nid in nodes and nid not in out:
                out[nid] = rep
        if not pending or time.time() >= deadline:
            break
        time.sleep(0.25)
    return out


def _collect(grid: Any, registered: list, quota: dict, plan: Plan, q: Query, out: Any) -> tuple:
    """Send one query to the registered nodes, validate and collect their replies: ``(collector, row)``."""
    col = Collector(q, out_dir=out, expected_reports=sum(quota[nid] for nid in registered))  # its nonce table ready before the replies arrive
    replies = _send(grid, registered, RecordDict({"query": ConfigRecord({"json": q.to_json()})}), q.query_id, plan.round_timeout)
    refused: dict = {}
    retried = 0
    for nid in registered:
        if nid not in replies:
            col.node_errors["no_reply"] = col.node_errors.get("no_reply", 0) + 1
            continue
        raw, err = reply_to_raw(replies[nid])
        if err is not None:
            col.node_errors[err] = col.node_errors.get(err, 0) + 1
            continue
        res = col.ingest_reply(raw, quota=quota[nid], node=nid)
        if res["error"] is None:
            for k, v in res["refused"].items():
                refused[k] = refused.get(k, 0) + v
            retried += res["accepted"] if res["retry"] else 0
    other = {k: refused.pop(k) for k in _NOT_REFUSALS if k in refused}  # a discovery's other groups: not refusals
    row = {"query_id": q.query_id, "query_hash": q.content_hash.hex(), "epsilon": q.epsilon, "nodes_asked": len(registered),
           "nodes_answered": len(replies), "node_errors": dict(col.node_errors), "reports_accepted": col.accepted,
           "reports_rejected": int(sum(col.rejected.values())), "rejected_by_reason": dict(col.rejected),
           "devices_refused": int(sum(refused.values())), "refused_by_reason": refused, "reports_from_kept_replies": retried,
           "bytes_received": col.bytes_received, "status": "complete" if col.accepted >= q.min_batch else "incomplete",
           "estimate": None, "parts": None if out is None else str(out)}
    if other:
        row["devices_in_other_groups"] = other.get("other_group", 0)
    return col, row


def _discovery_row(grid: Any, registered: list, quota: dict, plan: Plan, pq: Any, r: int) -> dict:
    """A heavy-hitter discovery collection (:mod:`~ldp_plugin.federated.discovery`): one query per
    group, in order (levels, then the held-out group), then the decode; one row per group and the
    discovered strings with their intervals, or ``incomplete`` with the reason."""
    if pq.epsilon is None:
        raise LDPParameterError(f"the discovery query {pq.name!r} needs an epsilon")
    protocol, queries = level_queries(pq.mechanism, pq.epsilon, pq.params, f"{plan.name}/{pq.name}/r{r}")
    groups, accs = [], []
    for level, q in enumerate(queries):
        out = None if plan.out_dir is None else round_dir(plan.out_dir, plan.name, r, f"{pq.name}/group-{level}")
        col, g = _collect(grid, registered, quota, plan, q, out)
        g.pop("estimate")
        g.pop("status")
        held_out = level == protocol.holdout
        groups.append({"group": level, "held_out": held_out, "prefix_length": protocol.max_length if held_out else protocol.lengths[level], **g})
        accs.append(col.acc)
    status, found, reason = decode(protocol, accs, plan.min_batch)
    total = lambda k: sum(g[k] for g in groups)  # noqa: E731
    node_errors: dict = {}
    refused: dict = {}
    for g in groups:
        for k, v in g["node_errors"].items():
            node_errors[k] = node_errors.get(k, 0) + v
        for k, v in g["refused_by_reason"].items():
            refused[k] = refused.get(k, 0) + v
    return {"query": pq.name, "mechanism": pq.mechanism, "kind": "discovery", "epsilon": queries[0].epsilon,
            "collection": queries[0].discovery["collection"], "prefix_lengths": list(protocol.lengths), "nodes_asked": len(registered),
            "nodes_answered": min(g["nodes_answered"] for g in groups), "node_errors": node_errors, "reports_accepted": total("reports_accepted"),
            "reports_rejected": total("reports_rejected"), "devices_refused": total("devices_refused"), "refused_by_reason": refused,
            "reports_from_kept_replies": total("reports_from_kept_replies"), "bytes_received": total("bytes_received"),
            "status": status, "incomplete_reason": reason, "groups": groups, "discovered": found}


def register_nodes(grid: Any, plan: Plan, *, run_id: int = 0) -> tuple:
    """Wait for the plan's SuperNodes and register them: ``(asked node ids, {node id: quota},
    {registration error: count})``; each quota = the devices the node registered, capped by the
    plan's ``max_devices_per_node``. When the plan lists ``members``, each node must prove it holds
    one member key by signing a fresh challenge (with the run and its own node id); a node outside
    the list (``not_a_member``), with a bad proof (``bad_membership_proof``) or reusing a member key
    already admitted (``duplicate_member``) gets no query, and members that connect late (after a
    non-member filled the count) are waited for until ``node_wait``."""
    deadline = time.time() + plan.node_wait
    nodes = sorted(grid.get_node_ids())
    while len(nodes) < plan.expected_nodes and time.time() < deadline:  # SuperNodes connect asynchronously
        time.sleep(0.2)
        nodes = sorted(grid.get_node_ids())
    quota: dict = {}
    reg_errors: dict = {}
    admitted: set = set()
    asked: set = set()
    while True:
        new = [n for n in nodes if n not in asked]
        asked.update(new)
        _register(grid, plan, run_id, new, quota, reg_errors, admitted)
        if not plan.members or len(admitted) >= len(plan.members) or time.time() >= deadline:
            break
        time.sleep(0.2)
        nodes = sorted(grid.get_node_ids())
    missing = len(asked) - len(quota) - sum(reg_errors.values())
    if missing:
        reg_errors["no_reply"] = missing
    return sorted(asked), quota, reg_errors


def _register(grid: Any, plan: Plan, run_id: int, nodes: list, quota: dict, reg_errors: dict, admitted: set) -> None:
    """One registration message to ``nodes`` (with a fresh challenge when the plan lists members)."""
    if not nodes:
        return
    challenge = os.urandom(_CHALLENGE_BYTES)
    body: dict = {"version": 1}
    if plan.members:
        body["challenge"] = challenge.hex()
    replies = _send(grid, nodes, RecordDict({"register": ConfigRecord(body)}), "register", plan.round_timeout)
    for nid, rep in sorted(replies.items()):
        raw, err = reply_to_raw(rep)
        devices = raw.get("devices") if raw else None
        if err is None and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 0):
            err = "bad_field"
        if err is None and plan.members:
            member, sig = raw.get("member"), raw.get("signature")
            if not isinstance(member, str) or member not in plan.members:
                err = "not_a_member"
            elif not isinstance(sig, str) or not verify_membership(member, sig, run_id, nid, challenge):
                err = "bad_membership_proof"
            elif member in admitted:
                err = "duplicate_member"
            else:
                admitted.add(member)
        if err is not None:
            reg_errors[err] = reg_errors.get(err, 0) + 1
            continue
        quota[nid] = min(int(devices), plan.max_devices_per_node)


def _robust_row(col: Collector, spec: dict) -> dict:
    """The robust combination of the nodes' estimates (:func:`~ldp_plugin.robust.aggregation.combine_accumulators`
    over the collector's per-node accumulators), or why this round cannot give one (too few nodes
    answered for the rule's ``f``): per item the combined estimate and its influence bound, beside
    the pooled estimate of ``estimate``."""
    nodes = {str(k): a for k, a in col.node_accumulators.items() if a.n > 0}
    try:
        rob = combine_accumulators(col.mechanism, nodes, **spec)
    except LDPParameterError as e:
        return {**spec, "nodes": len(nodes), "error": str(e)}
    return {**spec, "nodes": len(nodes), **{k: v for k, v in rob.to_dict().items() if k not in ("rule", "f", "alpha", "nodes")}}


def run_plan(grid: Any, plan: Plan, *, run_id: int = 0) -> list:
    """The ServerApp's body (see the module docstring); returns the round summaries."""
    preload(1 << 40)  # a server process: the compiled kernels (if installed) loaded once, before the first reply
    nodes, quota, reg_errors = register_nodes(grid, plan, run_id=run_id)
    registered = sorted(n for n, q in quota.items() if q > 0)
    summaries = []
    for r in plan.round_numbers():
        summary = {"plan": plan.name, "round": r, "nodes_connected": len(nodes), "nodes_registered": len(registered),
                   "registration_errors": reg_errors, "queries": []}
        for pq in plan.queries:
            t0 = time.perf_counter()
            if pq.mechanism in DISCOVERY_METHODS:
                row = _discovery_row(grid, registered, quota, plan, pq, r)
            else:
                q = Query.for_mechanism(f"{plan.name}/{pq.name}/r{r}", pq.build(), min_batch=plan.min_batch)
                col, row = _collect(grid, registered, quota, plan, q, None if plan.out_dir is None else round_dir(plan.out_dir, plan.name, r, pq.name))
                row = {"query": pq.name, "mechanism": pq.mechanism, **row}
                if row["status"] == "complete":
                    row["estimate"] = released_rows(col)
                    if pq.robust is not None:
                        row["robust"] = _robust_row(col, pq.robust)
            row["seconds"] = round(time.perf_counter() - t0, 3)
            summary["queries"].append(row)
            log.info("round %d %s: %d accepted, %d rejected, %d refused, node errors %s, %s", r, pq.name, row["reports_accepted"],
                     row["reports_rejected"], row["devices_refused"], row["node_errors"], row["status"])
        if plan.out_dir is not None:
            write_summary(plan.out_dir, plan.name, r, summary)
        summaries.append(summary)
    return summaries


def watch_parent() -> None:
    """End this ServerApp process when the process that started it (Flower's executor, itself tied
    to the SuperLink) is gone: a SuperLink killed mid-run leaves no orphaned ServerApp polling for
    replies (nor a run that a restarted SuperLink keeps seeing as running). Flower's own monitor."""
    start_parent_process_monitor(os.getppid())


server_app = ServerApp()


@server_app.main()
def _main(grid, context) -> None:  # pragma: no cover - runs inside Flower's engine
    if not log.handlers:  # our round lines in the run's log (Flower's own loggers untouched)
        log.addHandler(logging.StreamHandler())
        log.setLevel(logging.INFO)
    watch_parent()
    run_plan(grid, Plan.from_run_config(context.run_config), run_id=context.run_id)
