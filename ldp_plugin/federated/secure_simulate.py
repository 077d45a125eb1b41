"""``ldp federated simulate --secure-sum``: a secure-sum plan through ``flwr run`` on a local
simulation SuperLink, with generated devices — the same installed components a deployment runs
(``ldp_plugin.federated.secure_sum_server:server_app`` and ``ldp_plugin.federated.secure_sum:client_app``).

``--mechanism skellam`` is the distributed-noise option (``--epsilon`` the central ε), ``--mechanism
krr`` the summed local reports (``--epsilon`` each report's ε₀); ``--delta`` the central δ;
``--min-participants`` the fewest nodes a released sum may hold (the devices' owner threshold is
set to it). ``--users-per-node 1`` is cross-device; more is cross-silo (the per-site bound is the
users per node). Everything the query implies is derived and checked before any file or process.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from .._errors import LDPParameterError
from .config import ENV_DEVICE_CONFIG, DeviceConfig
from .deploy import Spawned, flower_tool, free_port, run_to_completion, tool_env, write_connection
from .device import DeviceFleet
from .plan import Plan
from .results import summary_path
from .secure_query import PLAN_MECHANISMS
from .synthetic import zipf_values

__all__ = ["simulate_secure", "secure_plan_toml", "secure_device_toml", "run_secure_simulation", "SECURE_COMPONENTS"]

SECURE_COMPONENTS = {"serverapp": "ldp_plugin.federated.secure_sum_server:server_app", "clientapp": "ldp_plugin.federated.secure_sum:client_app"}


def secure_plan_toml(*, mechanism: str, epsilon: str, delta: float, d: int, nodes: int, min_participants: int, users_per_node: int,
                     rounds: int = 1, min_count: Optional[int] = None, timeout: int = 300) -> str:
    secure = [f"delta = {delta!r}", f"min_participants = {min_participants}", f"site_bound = {users_per_node}"]
    if min_count is not None:
        secure.append(f"min_count = {min_count}")
    return "\n".join(["[plan]", 'name = "sim"', 'mode = "secure-sum"', f"rounds = {rounds}", 'out_dir = "results"', f"round_timeout = {timeout}",
                      f"expected_nodes = {nodes}", "node_wait = 120", "", "[[query]]", 'name = "q"', f"mechanism = {json.dumps(mechanism)}",
                      f"epsilon = {json.dumps(str(epsilon))}", f"params = {{d = {d}}}", "secure = {" + ", ".join(secure) + "}", ""])


def secure_device_toml(*, users_per_node: int, d: int, seed: str, device_cap: str, max_epsilon: str, min_participants: int) -> str:
    return "\n".join([
        "[device]", 'name = "sim-{partition-id}"', 'ledger = "state/node-{partition-id}/ledger.sqlite"',
        'keystore = "state/node-{partition-id}/keystore.json"', "", "[policy]", f"lifetime_cap = {json.dumps(str(device_cap))}",
        f"max_epsilon_per_query = {json.dumps(str(max_epsilon))}", f"secure_sum_min_participants = {min_participants}",
        f"secure_sum_max_bins = {max(d, 1)}", "", "[data]", 'source = "ldp_plugin.federated.synthetic:zipf_values"', "[data.args]",
        f"devices = {users_per_node}", f"d = {d}", f'seed = "{seed}-{{partition-id}}"', ""])


def run_secure_simulation(work: Path, *, plan_toml: str, device_toml: str, nodes: int, timeout: float, components: Optional[dict] = None,
                          extra_files: Optional[dict] = None) -> tuple:
    """Write the app project in ``work/app`` (``components`` override the secure-sum ones;
    ``extra_files``: name → text, e.g. a test's ClientApp module), initialize every node's devices,
    run it on a simulation SuperLink and return ``(plan, [round summaries], run_id)``."""
    app = work / "app"
    app.mkdir(parents=True, exist_ok=True)
    comps = {**SECURE_COMPONENTS, **(components or {})}
    (app / "pyproject.toml").write_text("\n".join([
        "[build-system]", 'requires = ["hatchling"]', 'build-backend = "hatchling.build"', "", "[project]", 'name = "ldp-secure-sum"',
        'version = "1.0.0"', 'license = "Apache-2.0"', 'dependencies = ["ldp-plugin[flower]"]', "", "[tool.hatch.build.targets.wheel]",
        'packages = ["."]', "", "[tool.flwr.app]", 'publisher = "ldp-plugin"', "", "[tool.flwr.app.components]",
        f'serverapp = "{comps["serverapp"]}"', f'clientapp = "{comps["clientapp"]}"', "", "[tool.flwr.app.config]",
        f'job = "{app / "plan.toml"}"', ""]))
    (app / ".gitignore").write_text("state/\nresults/\n")
    (app / "plan.toml").write_text(plan_toml)
    for name, text in (extra_files or {}).items():
        (app / name).write_text(text)
    plan = Plan.from_toml(app / "plan.toml")  # derived for the nodes: refused here, before any process
    device = app / "device.toml"
    device.write_text(device_toml)
    for pid in range(nodes):
        DeviceFleet.init(DeviceConfig.load(device, {"partition-id": pid}))
    port = free_port()
    env = tool_env(FLWR_HOME=str(work / "flwr-home"), **{ENV_DEVICE_CONFIG: str(device)})
    write_connection(work / "flwr-home", "ldp-sim", f"127.0.0.1:{port}")
    superlink = Spawned([flower_tool("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1", "--port", str(port),
                         "--database", str(work / "superlink.db"), "--disable-runtime-dependency-installation"], env=env, log=work / "superlink.log")
    try:
        run_id = run_to_completion(app, "ldp-sim", env=env, federation_config={"num-supernodes": nodes}, timeout=timeout)
    finally:
        superlink.stop()
    summaries = []
    for r in plan.round_numbers():
        path = summary_path(plan.out_dir, plan.name, r)
        if not path.is_file():
            raise LDPParameterError(f"the run completed but round {r}'s summary is missing")
        summaries.append(json.loads(path.read_text()))
    return plan, summaries, run_id


def simulate_secure(args) -> int:
    """The ``--secure-sum`` branch of ``ldp federated simulate`` (module docstring)."""
    if args.mechanism not in PLAN_MECHANISMS:
        raise LDPParameterError(f"--secure-sum takes --mechanism {' or '.join(sorted(PLAN_MECHANISMS))} (skellam: distributed noise, "
                                "krr: summed local reports)")
    if args.param or getattr(args, "shuffle", False):
        raise LDPParameterError("--secure-sum takes neither --param nor --shuffle: the query is --mechanism, --epsilon, --d and --delta")
    if args.epsilon is None or args.d is None or args.delta is None:
        raise LDPParameterError("--secure-sum needs --epsilon, --d and --delta")
    if args.nodes < 3:
        raise LDPParameterError(f"--secure-sum needs --nodes >= 3 (SecAgg+; got {args.nodes})")
    min_p = args.min_participants if args.min_participants is not None else 2
    plan_toml = secure_plan_toml(mechanism=args.mechanism, epsilon=str(args.epsilon), delta=float(args.delta), d=int(args.d), nodes=args.nodes,
                                 min_participants=min_p, users_per_node=args.users_per_node, rounds=args.rounds, min_count=args.min_count)
    tmp = tempfile.TemporaryDirectory(prefix="ldp-secure-sum-") if args.out is None else None
    work = Path(tmp.name) if tmp is not None else Path(args.out).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        (work / "check-plan.toml").write_text(plan_toml)
        plan = Plan.from_toml(work / "check-plan.toml")  # the derivation's refusals, before any process or ledger
        t = plan.queries[0].secure_query("check", args.nodes).derive().threshold
        device_toml = secure_device_toml(users_per_node=args.users_per_node, d=int(args.d), seed=str(args.seed), device_cap=args.device_cap,
                                         max_epsilon=args.max_epsilon, min_participants=t)
        truth = np.zeros(int(args.d))
        for pid in range(args.nodes):
            truth += np.bincount(zipf_values(args.users_per_node, int(args.d), f"{args.seed}-{pid}"), minlength=int(args.d))
        t0 = time.perf_counter()
        plan, summaries, run_id = run_secure_simulation(work, plan_toml=plan_toml, device_toml=device_toml, nodes=args.nodes, timeout=args.timeout)
        seconds = round(time.perf_counter() - t0, 2)
    finally:
        if tmp is not None:
            tmp.cleanup()
    rounds = []
    for s in summaries:
        row = dict(s["queries"][0])
        for e in row.get("estimate") or []:
            e["truth"] = float(truth[e["item"]] / truth.sum())
        rounds.append({"round": s["round"], **row})
    out = {"rounds": rounds, "nodes": args.nodes, "users_per_node": args.users_per_node, "seconds": seconds, "run_id": str(run_id),
           "mechanism": args.mechanism, "secure_sum": True}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for row in rounds:
            print(f"round {row['round']}: secure sum ({'distributed noise' if row.get('option') == 'noise' else 'summed local reports'}) "
                  f"{row.get('nodes_summed')}/{row.get('nodes_sampled')} nodes summed: {row['status']}")
            c = row.get("central") or {}
            if c.get("epsilon") is not None:
                print(f"  central ({c['epsilon']:.4g}, {c['delta']:g})" + (f", each report {c['epsilon_local']:g}-LDP" if "epsilon_local" in c else ""))
            if row.get("estimate"):
                covered = sum(e["ci_lower"] <= e["truth"] <= e["ci_upper"] for e in row["estimate"] if e["ci_lower"] is not None)
                print(f"  {covered}/{len(row['estimate'])} true frequencies inside their 95% intervals")
        print(f"{seconds} s in all (flwr run on a simulation SuperLink, {args.nodes} SuperNodes)")
    if not any(row.get("estimate") for row in rounds):
        raise LDPParameterError(f"the Flower run finished but no round released a sum ({[row['status'] for row in rounds]})")
    return 0
