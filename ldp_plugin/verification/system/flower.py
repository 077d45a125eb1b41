"""The Flower apps as a deployment runs them, in process: the collecting ServerApp's body
(:func:`~ldp_plugin.federated.app.run_plan`) and the shuffler's
(:func:`~ldp_plugin.federated.shuffler_app.run_shuffled_plan`) drive a real Flower ``Grid``
(``InMemoryGrid``) over Flower's own SuperLink state (``InMemoryLinkState``, built as
``flwr.simulation`` builds it: a run with its primary task, nodes registered with heartbeats); each
SuperNode is a ``ClientApp`` — the real :data:`~ldp_plugin.federated.app.client_app` over a device
TOML, keystore and SQLite ledger, or a hostile one — called with Flower's ``Message`` and
``Context`` when the grid pushes to it, its reply stored in the LinkState as Flower's simulation
engine stores it (a ``ClientApp`` that raises answers Flower's error message, its text included).
Only the transport's threads and the processes of ``flwr run`` are left out (the deployment tests
run those). The in-process federation is :mod:`._flower_federation`, the hostile SuperNodes
:mod:`._hostile_nodes`.

Checked on the collecting app (plan read by ``Plan.from_run_config`` from a plan TOML, as the
ServerApp reads it):

* the estimate of the round equals, float for float, what the library computes from the reports
  the round wrote (``aggregate`` of its Parquet parts), and those are exactly the honest devices'
  reports: a node registering 10^6 devices and flooding is capped (``over_quota``), a malformed
  record and a crashing ``ClientApp`` are counted by reason, a device whose data source fails is
  refused ``device_misconfigured`` — none of them changes a count;
* each honest device's ledger is charged exactly the query's ε per collection, and a round past
  the lifetime cap is refused by every device (``budget_exhausted``, counted) and reported
  ``incomplete`` with no estimate;
* the summary echoes no text a node raised or a data source said (only fixed reasons).

Checked on the shuffler app: the forwarded batch holds exactly the ciphertexts the honest nodes
sealed (plaintext envelopes ``not_sealed``, a crash ``flower_error``), in the order a
:class:`~ldp_plugin.federated.shuffler.Shuffler` holding the same set gives under the same draws
(so the app's output law is the shuffler's, which the shuffler layer computes exactly), every
ciphertext opens with the analyzer's key; a batch below the minimum is not written; a memoized
series is refused before any node is asked (no message in the LinkState, no ledger charged).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import polars as pl
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.app import ConfigRecord, Message, RecordDict
from flwr.clientapp import ClientApp

from ..._errors import LDPParameterError
from ...accountant import Accountant
from ...federated.app import client_app, reply_to_raw, run_plan
from ...federated.collector import Collector
from ...federated.batch import iter_ciphertexts, read_batch
from ...federated.config import NODE_CONFIG_KEY, DeviceConfig
from ...federated.device import DeviceFleet
from ...federated.discovery import decode, level_queries
from ...federated.plan import Plan
from ...federated.query import Query
from ...federated.results import estimate_rows
from ...federated.sealed import generate_analyzer_keys, open_reports, private_key
from ...federated.shuffler import Shuffler
from ...mechanisms.charge import report_charge
from ...mechanisms.reports import frame_to_reports
from ...persist import mechanism_from_spec, read_report_spec
from ...robust.aggregation import combine_accumulators
from ...federated.shuffler_app import BATCH_FILE, run_shuffled_plan
from ._flower_federation import InProcessFederation
from ._hostile_nodes import SECRET, crash_app, extra_app, forger_app, legacy_app, malformed_app, negative_app, sybil_app

__all__ = ["flower_layer", "collecting_checks", "shuffled_checks", "membership_checks", "discovery_checks", "hostile_server_checks"]

_D = 4


# -- the fleet --------------------------------------------------------------------------------------
def broken_values(devices: int) -> np.ndarray:
    """A ``[data] source`` that fails with text about a user's value."""
    raise ValueError(f"cannot read the value {SECRET}")


def member_key(directory: Path, name: str) -> str:
    """A SuperNode's EC member key: the OpenSSH private key in ``directory/name``, the public key
    (OpenSSH text) in ``directory/name.pub`` and returned."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    (directory / name).write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()))
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    (directory / f"{name}.pub").write_text(pub + "\n")
    return pub


def _device(directory: Path, name: str, *, devices: int, cap: str, analyzer_key: Optional[str] = None, broken: bool = False,
            member: Optional[Path] = None, words: bool = False) -> dict:
    d = directory / name
    d.mkdir(parents=True)
    lines = ["[device]", f'name = "{name}"', 'ledger = "ledger.sqlite"', 'keystore = "keys.json"']
    if analyzer_key is not None:
        lines.append(f'analyzer_key = "{analyzer_key}"')
    if member is not None:
        lines += ["", "[trust]", f'member_key = "{member}"']
    lines += ["", "[policy]", f'lifetime_cap = "{cap}"', 'max_epsilon_per_query = "2"', "", "[data]"]
    if broken:
        lines += [f'source = "{__name__}:broken_values"', "[data.args]", f"devices = {devices}"]
    elif words:
        lines += ['source = "ldp_plugin.federated.synthetic:zipf_words"', "[data.args]", f"devices = {devices}", f'seed = "7-{sum(name.encode())}"']
    else:
        lines += ['source = "ldp_plugin.federated.synthetic:zipf_values"', "[data.args]", f"devices = {devices}", f"d = {_D}", f'seed = "7-{sum(name.encode())}"']
    (d / "device.toml").write_text("\n".join(lines) + "\n")
    node_config = {NODE_CONFIG_KEY: str(d / "device.toml")}
    if not broken:
        DeviceFleet.init(DeviceConfig.load(d / "device.toml", node_config))
    return node_config


def _ledger(node_config: dict) -> list:
    acc = Accountant(DeviceConfig.load(Path(node_config[NODE_CONFIG_KEY]), node_config).ledger)
    try:
        return acc.remaining_by_cohort()
    finally:
        acc.close()


def _plan(directory: Path, name: str, *, rounds: int, min_batch: int, mechanism: str = "krr", params: Optional[dict] = None,
          nodes: int = 1, robust: bool = False, members: tuple = (), epsilon: Optional[str] = "1", node_wait: float = 0) -> Plan:
    p = directory / f"{name}.toml"
    params = params if params is not None else {"d": _D}
    listed = [f"members = {json.dumps([str(m) for m in members])}"] if members else []
    p.write_text("\n".join(["[plan]", f'name = "{name}"', f"rounds = {rounds}", f"min_batch = {min_batch}", 'out_dir = "out"', "round_timeout = 1",
                            f"expected_nodes = {nodes}", f"node_wait = {node_wait}", "max_devices_per_node = 20", *listed, "", "[[query]]", 'name = "q"',
                            f'mechanism = "{mechanism}"', *([f'epsilon = "{epsilon}"'] if epsilon is not None else []), "params = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items()) + "}",
                            *(['robust = {rule = "trimmed", f = 1}'] if robust else []), ""]))
    return Plan.from_run_config({"job": str(p)})  # as the ServerApp reads its plan


def _no_echo(summary: Any, what: str, failures: list) -> None:
    if SECRET in json.dumps(summary, default=str):
        failures.append(f"{what}: the summary echoes text a node raised or a data source said")


def collecting_checks(directory: Path, *, quick: bool, server: Callable = run_plan, app: ClientApp = client_app) -> tuple:
    """The collecting app's checks (module docstring): ``(failures, facts)``."""
    failures: list = []
    devices, h = (5, 2) if quick else (8, 3)  # h honest nodes: a robust rule with f = 1 needs 3
    fed = InProcessFederation()
    try:
        honest = [_device(directory, f"n{i}", devices=devices, cap="1.5") for i in range(h)]
        honest_ids = [fed.add_node(app, cfg) for cfg in honest]
        fed.add_node(app, _device(directory, "broken", devices=devices, cap="1.5", broken=True))
        fed.add_node(app, {NODE_CONFIG_KEY: str(directory / "missing.toml")})  # an owner's config that is not there
        for hostile in (sybil_app, malformed_app, crash_app, legacy_app, negative_app, extra_app):
            fed.add_node(hostile, {})
        if not quick:  # registers, then never answers: the round's deadline ends the wait
            fed.add_node(app, _device(directory, "dropout", devices=devices, cap="1.5"), queries=False)
        connected = len(fed.nodes)
        plan = _plan(directory, "collect", rounds=1 if quick else 2, min_batch=h * devices, nodes=connected + (0 if quick else 1), robust=True,
                     node_wait=0 if quick else 0.3)  # full: one expected node never connects (the wait ends at node_wait)
        summaries = server(fed.grid, plan, run_id=fed.run.run_id)
        _no_echo(summaries, "collecting app", failures)
        first = summaries[0]
        row = first["queries"][0]
        if first["registration_errors"] != {"malformed": 2, "unsupported_version": 1, "bad_field": 1} or first["nodes_connected"] != connected:
            failures.append(f"registration errors {first['registration_errors']} of {first['nodes_connected']} nodes, expected malformed twice, "
                            f"unsupported_version and bad_field once each of {connected}")
        expected = {"over_quota": 1, "flower_error": 1, **({} if quick else {"no_reply": 1})}
        if row["node_errors"] != expected:
            failures.append(f"node errors {row['node_errors']}, expected {expected}")
        failures += _robust_checks(fed, honest_ids, plan, row)
        if row["refused_by_reason"] != {"device_misconfigured": 2}:
            failures.append(f"refusals {row['refused_by_reason']}, expected device_misconfigured for the broken source and the missing config")
        parts = sorted(Path(row["parts"]).glob("*.parquet")) if row.get("parts") else []
        if row["reports_accepted"] != h * devices or row["status"] != "complete" or not parts:
            failures.append(f"{row['reports_accepted']} reports accepted ({row['status']}), expected the {h * devices} honest devices' reports")
        else:
            mech = mechanism_from_spec(read_report_spec(parts[0])[0])
            reports = frame_to_reports(mech, pl.concat([pl.read_parquet(p) for p in parts]))
            if mech.spec() != plan.queries[0].build().spec() or len(reports) != h * devices:
                failures.append("the round's parts do not hold the honest devices' reports of the query's mechanism")
            else:
                try:
                    lib = estimate_rows(mech.estimate(reports, postprocess="none"))
                except TypeError:  # an estimator without post-processing options
                    lib = estimate_rows(mech.estimate(reports))
                if row["estimate"] != lib:
                    failures.append("the round's estimate is not the library's estimate of the reports it accepted")
        charged = report_charge(plan.queries[0].build())  # round 1's query (what the mechanism realizes, rounded up); round 2 is refused whole
        for i, cfg in enumerate(honest):
            if _ledger(cfg) != [Fraction(3, 2) - charged] * devices:
                failures.append(f"node {i}: the ledger does not hold exactly one charge of the query's epsilon per device")
        if not quick:
            second = summaries[1]["queries"][0]
            if (second["refused_by_reason"] != {"budget_exhausted": h * devices, "device_misconfigured": 2} or second["status"] != "incomplete"
                    or second["estimate"] is not None or second["reports_accepted"] != 0):
                failures.append(f"a round past the lifetime cap: refusals {second['refused_by_reason']}, {second['status']}, "
                                f"{second['reports_accepted']} accepted")
        written = json.loads((plan.out_dir / plan.name / "round-0001.json").read_text())
        if written["queries"][0]["reports_accepted"] != row["reports_accepted"]:
            failures.append("the round's summary file differs from the round's result")
        _no_echo(written, "collecting app (summary file)", failures)
        failures += hostile_server_checks(fed, honest_ids[0], honest[0], devices)
        if not quick:
            failures += membership_checks(directory / "members", server)
            failures += discovery_checks(directory / "discovery", server)
    finally:
        fed.close()
    return failures, {"devices": h * devices, "rounds": len(summaries)}


def _robust_checks(fed: InProcessFederation, honest_ids: list, plan: Plan, row: dict) -> list:
    """The robust row (``trimmed``, f = 1): with two honest nodes it says why there is none; with
    three it is the library's combination (:func:`~ldp_plugin.robust.aggregation.combine_accumulators`)
    of each honest node's own reports, as each node sent them."""
    rob = row.get("robust") or {}
    if len(honest_ids) < 3:
        return [] if rob.get("nodes") == 2 and "f=1" in str(rob.get("error", "")) else [
            "a robust combination with too few nodes for its f does not say so beside the pooled estimate"]
    q = Query.for_mechanism(row["query_id"], plan.queries[0].build(), min_batch=plan.min_batch)
    accs = {}
    for nid in sorted(honest_ids):  # the server's order: its registered nodes, sorted (a tie between nodes is broken by that order)
        sent = [r for r in fed.sent[nid] if "reply" in r.content and "blob" in r.content["reply"]]
        raw, err = reply_to_raw(sent[0]) if sent else (None, "none")
        col = Collector(q)
        if err is None:
            col.ingest_reply(raw, quota=plan.max_devices_per_node, node=nid)
        accs[str(nid)] = col.acc
    spec = dict(plan.queries[0].robust)
    try:
        want = {**spec, "nodes": len(accs), **{k: v for k, v in combine_accumulators(q.mechanism(), accs, **spec).to_dict().items()
                                               if k not in ("rule", "f", "alpha", "nodes")}}
    except LDPParameterError as e:
        want = {**spec, "nodes": len(accs), "error": str(e)}
    return [] if rob == want and "error" not in rob else ["the robust combination is not the library's over each honest node's own reports"]


def hostile_server_checks(fed: InProcessFederation, nid: int, node_config: dict, devices: int) -> list:
    """What the real ClientApp answers a hostile server's messages: a fixed refusal for every
    device, no text, no charge (a discovery group's query carrying another group's oracle, text
    that is not JSON, a record without the query); a challenge to a node without a member key
    gets no proof."""
    failures = []
    before = _ledger(node_config)
    _, groups = level_queries("pem", "1", {"alphabet": "abc", "max_length": 2}, "hostile/forged")
    forged = dataclasses.replace(groups[0], discovery={**groups[0].discovery, "level": len(groups) - 1})  # group 0's oracle, the last group's level
    cases = [({"query": ConfigRecord({"json": forged.to_json()})}, {"malformed_query": devices}),
             ({"query": ConfigRecord({"json": "{" + SECRET})}, {"malformed_query": devices}),
             ({"query": ConfigRecord({"text": SECRET})}, {"device_error": devices}),
             ({"register": ConfigRecord({"version": 1, "challenge": "00" * 32})}, {})]
    for content, refused in cases:
        msg = Message(content=RecordDict(content), message_type="query", dst_node_id=nid, group_id="hostile")
        ids = list(fed.grid.push_messages([msg]))
        replies = list(fed.grid.pull_messages(ids))
        rec = dict(replies[0].content["reply"]) if len(replies) == 1 and "reply" in replies[0].content else {}
        if json.loads(str(rec.get("refused", "null"))) != refused or rec.get("devices") != devices or "blob" in rec or "member" in rec:
            failures.append(f"the ClientApp's answer to a hostile server message is not the fixed refusal {refused} of its {devices} devices")
        if SECRET in json.dumps(rec, default=str):
            failures.append("the ClientApp echoes a hostile server's text")
    if _ledger(node_config) != before:
        failures.append("a hostile server message charged a device")
    return failures


def membership_checks(directory: Path, server: Callable) -> list:
    """A plan listing its members: only nodes proving a listed key (signing the run, their node id
    and a fresh challenge) are asked; a non-member, a forged proof and a second node holding an
    admitted key are counted by reason and never asked (their ledgers stay untouched); a listed
    member that never connects is waited for until ``node_wait``, and the round goes on with the
    members that proved themselves (its robust rule then says it has too few nodes)."""
    failures = []
    devices = 3
    keys = directory / "keys"
    members = [member_key(keys, f"node-{i}") for i in range(3)]  # node-2 never connects
    member_key(keys, "outsider")
    fed = InProcessFederation()
    try:
        cfgs = {name: _device(directory, name, devices=devices, cap="2", member=keys / key)
                for name, key in (("m0", "node-0"), ("m1", "node-1"), ("outsider", "outsider"), ("twin", "node-0"))}
        for cfg in cfgs.values():
            fed.add_node(client_app, cfg)
        fed.add_node(forger_app, {"member-key": members[1]})
        plan = _plan(directory, "members", rounds=1, min_batch=1, nodes=3, members=tuple(keys / f"node-{i}.pub" for i in range(3)), robust=True,
                     node_wait=0.5)
        (summary,) = server(fed.grid, plan, run_id=fed.run.run_id)
        row = summary["queries"][0]
        if summary["registration_errors"] != {"not_a_member": 1, "bad_membership_proof": 1, "duplicate_member": 1} or summary["nodes_registered"] != 2:
            failures.append(f"membership: registration errors {summary['registration_errors']}, {summary['nodes_registered']} registered")
        if row.get("robust", {}).get("nodes") != 2 or "f=1" not in str(row.get("robust", {}).get("error", "")):
            failures.append("membership: a robust rule over two admitted members does not say it has too few nodes")
        charged = {name for name, cfg in cfgs.items() if _ledger(cfg) != [Fraction(2)] * devices}
        if row["reports_accepted"] != 2 * devices or "outsider" in charged or len(charged) != 2 or "m1" not in charged:
            failures.append(f"membership: {row['reports_accepted']} reports accepted, devices charged on {sorted(charged)}")
    finally:
        fed.close()
    return failures


def _untimed(x: Any) -> Any:
    """``x`` without its ``seconds`` entries (how long a decode took is not part of its answer)."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, (list, tuple)):
        return [_untimed(v) for v in x]
    return x


def discovery_checks(directory: Path, server: Callable) -> list:
    """A heavy-hitter discovery (PEM): each device answers exactly one group (the others count it
    ``devices_in_other_groups``, never a refusal), and the round's decode is the library's
    (:func:`~ldp_plugin.federated.discovery.decode`) of the reports each group wrote."""
    failures = []
    devices = 12
    fed = InProcessFederation()
    try:
        for i in range(2):
            fed.add_node(client_app, _device(directory, f"w{i}", devices=devices, cap="1.5", words=True))
        plan = _plan(directory, "discover", rounds=2, min_batch=1, nodes=2, mechanism="pem",
                     params={"alphabet": "abcmnps", "max_length": 2, "top_k": 2})
        summary, again = server(fed.grid, plan, run_id=fed.run.run_id)
        row = summary["queries"][0]
        late = again["queries"][0]  # a second collection at ε = 1 under a lifetime cap of 1.5: every device is out of budget
        others = sum(g.get("devices_in_other_groups", 0) for g in late.get("groups", []))
        if (late["reports_accepted"] != 0 or late["status"] != "incomplete" or late["refused_by_reason"] != {"budget_exhausted": 2 * devices}
                or others != (len(late.get("groups", [])) - 1) * 2 * devices):
            failures.append(f"discovery past the lifetime cap: {late['reports_accepted']} accepted, refusals {late['refused_by_reason']}, "
                            f"{others} in other groups")
        pq = plan.queries[0]
        protocol, queries = level_queries(pq.mechanism, pq.epsilon, pq.params, f"{plan.name}/{pq.name}/r1")
        accs = []
        for g, q in zip(row.get("groups", []), queries):
            mech = q.mechanism()
            acc = mech.accumulator()
            parts = sorted(Path(g["parts"]).glob("*.parquet")) if g.get("parts") else []
            if parts:
                acc.add(frame_to_reports(mech, pl.concat([pl.read_parquet(p) for p in parts])))
            accs.append(acc)
            if g["reports_accepted"] + g.get("devices_in_other_groups", 0) != 2 * devices or g["devices_refused"]:
                failures.append(f"discovery group {g['group']}: {g['reports_accepted']} accepted and {g.get('devices_in_other_groups')} "
                                f"in other groups of {2 * devices} devices")
        if len(accs) != len(queries) or row["reports_accepted"] != 2 * devices:
            failures.append(f"discovery: {row['reports_accepted']} reports over {len(accs)} groups, expected {2 * devices} over {len(queries)}")
        elif _untimed((row["status"], row["discovered"], row["incomplete_reason"])) != _untimed(decode(protocol, accs, plan.min_batch)):
            failures.append("discovery: the round's decode is not the library's decode of the reports its groups wrote")
    finally:
        fed.close()
    return failures


def shuffled_checks(directory: Path, *, quick: bool, server: Callable = run_shuffled_plan, app: ClientApp = client_app) -> tuple:
    """The shuffler app's checks (module docstring): ``(failures, facts)``."""
    failures: list = []
    devices = 4 if quick else 6
    keys = generate_analyzer_keys(directory / "analyzer")
    fed = InProcessFederation()
    try:
        sealed = [fed.add_node(app, _device(directory, f"s{i}", devices=devices, cap="3", analyzer_key=keys["public_key_hex"])) for i in range(2)]
        plain_cfg = _device(directory, "plain", devices=devices, cap="3")
        fed.add_node(app, plain_cfg)
        fed.add_node(crash_app, {})
        fed.add_node(app, _device(directory, "broken", devices=devices, cap="3", broken=True))
        seed = 12345
        if not quick:
            low = _plan(directory, "low", rounds=1, min_batch=3 * devices, nodes=len(fed.nodes))
            (below,) = server(fed.grid, low, rng=seed, run_id=fed.run.run_id)
            if below["queries"][0]["status"] != "below_minimum" or (low.out_dir / "low" / "round-0001" / "q" / BATCH_FILE).exists():
                failures.append("shuffler app: a batch below the minimum was forwarded")
            fed.add_node(app, _device(directory, "dropout", devices=devices, cap="3", analyzer_key=keys["public_key_hex"]), queries=False)
        plan = _plan(directory, "shuffle", rounds=1, min_batch=2 * devices, nodes=len(fed.nodes))
        start = {nid: len(fed.sent[nid]) for nid in sealed}
        (summary,) = server(fed.grid, plan, rng=seed, run_id=fed.run.run_id)
        _no_echo(summary, "shuffler app", failures)
        row = summary["queries"][0]
        q = Query.for_mechanism(row["query_id"], plan.queries[0].build(), min_batch=plan.min_batch)
        ref = Shuffler(q)
        sent = [bytes(r.content["reply"]["blob"]) for nid in sealed for r in fed.sent[nid][start[nid]:] if "blob" in r.content["reply"]]
        size = ref.ciphertext_size
        cts = [b[i:i + size] for b in sent for i in range(0, len(b), size)]
        ref.add(list(reversed(cts)))
        if row["status"] != "forwarded" or row["ciphertexts_held"] != 2 * devices:
            failures.append(f"shuffler app: {row['status']} with {row['ciphertexts_held']} held, expected {2 * devices} forwarded")
        elif (row["rejected_by_reason"] != {"not_sealed": devices} or row["node_errors"] != {"flower_error": 1, **({} if quick else {"no_reply": 1})}
              or row["refused_by_reason"] != {"device_misconfigured": 1}):
            failures.append(f"shuffler app: rejections {row['rejected_by_reason']}, node errors {row['node_errors']}, refusals {row['refused_by_reason']}")
        else:
            header, body = read_batch(row["batch"])
            batch = list(iter_ciphertexts(header, body))
            if batch != ref.shuffled(rng=seed):
                failures.append("shuffler app: the batch is not the shuffler's permutation of the honest ciphertexts under the same draws")
            opened, bad = open_reports(batch, private_key(keys["private_key"]))
            if bad or len(opened) != 2 * devices:
                failures.append("shuffler app: the batch does not open whole with the analyzer's key")
        before, n_before = _ledger(plain_cfg), sum(len(v) for v in fed.sent.values())
        series = _plan(directory, "series", rounds=1, min_batch=1, mechanism="l-grr", params={"d": _D, "epsilon_perm": 2, "epsilon_1": 1},
                       nodes=len(fed.nodes), epsilon=None)
        try:
            server(fed.grid, series, rng=seed, run_id=fed.run.run_id)
            failures.append("shuffler app: a memoized series was run")
        except LDPParameterError as e:
            if "memoized series" not in str(e):
                failures.append("shuffler app: a memoized series was refused for another reason than its linkage")
            if sum(len(v) for v in fed.sent.values()) != n_before or _ledger(plain_cfg) != before:
                failures.append("shuffler app: a node was asked before the memoized series was refused")
    finally:
        fed.close()
    return failures, {"devices": 2 * devices}


def flower_layer(*, seed: int = 0, quick: bool = False, directory: Any = None, run_plan_fn: Callable = run_plan,
                 shuffled_fn: Callable = run_shuffled_plan, app: ClientApp = client_app, only: Optional[str] = None) -> dict:
    """The layer's row (module docstring). ``seed`` changes nothing (each check is exact);
    ``run_plan_fn`` / ``shuffled_fn`` / ``app``: the ServerApp bodies and the ClientApp under test;
    ``only``: ``"collect"`` or ``"shuffle"`` runs that group of checks alone, in its quick form (a
    seeded bug's run: the group its defect is in)."""
    t0 = time.perf_counter()
    directory = Path(directory)
    quiet = logging.NullHandler()
    log = logging.getLogger("ldp_plugin.federated")
    flwr_log = logging.getLogger("flwr")
    level = flwr_log.level
    log.addHandler(quiet)
    log.propagate, propagate = False, log.propagate
    flwr_log.setLevel(logging.CRITICAL)
    quick = quick or only is not None
    f1, c, f2, s = [], {"devices": 0, "rounds": 0}, [], {"devices": 0}
    try:
        if only in (None, "collect"):
            f1, c = collecting_checks(directory / "collect", quick=quick, server=run_plan_fn, app=app)
        if only in (None, "shuffle"):
            f2, s = shuffled_checks(directory / "shuffle", quick=quick, server=shuffled_fn, app=app)
    finally:
        log.removeHandler(quiet)
        log.propagate = propagate
        flwr_log.setLevel(level)
    failures = f1 + f2
    return {"layer": "flower", "devices_collected": c["devices"], "rounds": c["rounds"], "devices_shuffled": s["devices"],
            "failures": failures, "seconds": round(time.perf_counter() - t0, 2), "passed": not failures}
