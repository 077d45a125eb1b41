"""``ldp federated``: ``new`` (write a Flower app project), ``certs`` (TLS certificates and
SuperNode keys), ``device init`` (a node owner's explicit initialization of ledger + keystore),
``analyzer-keys`` / ``analyze`` (the analyzer of a shuffled collection) and ``simulate`` (the
same app through ``flwr run`` on a local simulation SuperLink). Exits 2 with a clear message on
any failure, including a run that fails inside Flower."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import threading
import string
import tempfile
import time
from fractions import Fraction
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from .._extras import extra_module
from .._errors import LDPParameterError
from ..mechanisms.charge import collection_charge
from ..progress import status
from .._boundary import read_small_file, writable_directory
from .._boundary.workload import check_work
from ..simulate import parse_params
from .certs import existing_credentials, make_node_keys, make_tls
from .deploy import Spawned, flower_tool, free_port, run_to_completion, tool_env, write_connection
from .plan import Plan
from .synthetic import zipf_frequencies, zipf_values
from .config import ENV_DEVICE_CONFIG, DeviceConfig
from .device import DeviceFleet, DeviceRefusal
from .analyzer import analyze_batch
from .sealed import generate_analyzer_keys
from .shuffler import BatchBelowMinimum
from .results import summary_path
from .secure_simulate import simulate_secure
from ..accountant import Accountant, Population, as_fraction
from ..mechanisms.protocol import InputKind

__all__ = ["add_parsers", "cmd_federated", "new_project"]


def _template(template: str, **subs: Any) -> str:
    text = files("ldp_plugin.federated").joinpath("template", template).read_text()
    return string.Template(text).substitute(**{k: str(v) for k, v in subs.items()})


def new_project(directory: str | Path, *, nodes: int = 2, force: bool = False, shuffled: bool = False, members: str | None = None) -> dict:
    """An app project in ``directory``: ``pyproject.toml`` (components, run config naming the
    plan), ``plan.toml`` (the queries), ``discovery.toml`` (a heavy-hitter discovery job), an
    example ``device.toml`` (a node owner's file) and a ``.gitignore`` that keeps the devices' state,
    keys, certificates and results out of the app bundle ``flwr run`` ships.
    ``shuffled``: the ServerApp is the shuffler (:mod:`~ldp_plugin.federated.shuffler_app`).
    ``members``: a directory (relative to the app) of the nodes' public keys ``node-<i>.pub``: the
    plans list them as ``members`` (only those nodes are asked)."""
    d = writable_directory(Path(directory).resolve(), "the project directory")
    targets = {n: d / n for n in ("pyproject.toml", "plan.toml", "discovery.toml", "device.toml")}
    existing = [n for n, p in targets.items() if p.exists()]
    if existing and not force:
        raise LDPParameterError(f"{existing} already exist in {d.name!r} (use --force to overwrite)")
    d.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in d.name.lower()).strip("-") or "ldp-app"
    pyproject = _template("pyproject.toml.tmpl", name=name, job=targets["plan.toml"])
    if shuffled:
        pyproject = pyproject.replace('serverapp = "ldp_plugin.federated.app:server_app"', 'serverapp = "ldp_plugin.federated.shuffler_app:server_app"')
    targets["pyproject.toml"].write_text(pyproject)
    listed = ("# members = [\"certs/nodes/node-0.pub\"]  # the nodes that may answer, by public key" if members is None else
              "members = [" + ", ".join(json.dumps(f"{members.rstrip('/')}/node-{i}.pub") for i in range(nodes)) + "]")
    targets["plan.toml"].write_text(_template("plan.toml.tmpl", nodes=nodes, members=listed))
    targets["discovery.toml"].write_text(_template("discovery.toml.tmpl", nodes=nodes, members=listed))
    (d / ".gitignore").write_text(_template("gitignore.tmpl"))  # Flower's FAB honours it: no keystore, key or ledger leaves the machine
    targets["device.toml"].write_text(_template("device.toml.tmpl", device_toml=targets["device.toml"]))
    return {k: str(v) for k, v in targets.items()}


def add_parsers(sub, parser_class, int_in, epsilon_type, seed_type, domain_type, positive_type, mechanism_help) -> None:
    fd = sub.add_parser("federated", help="federated analytics on Flower: devices randomize and enforce their own budget")
    fsub = fd.add_subparsers(dest="federated_command", required=True, parser_class=parser_class)
    nw = fsub.add_parser("new", help="write a Flower app project (pyproject with [tool.flwr.app], plan.toml, discovery.toml, an example device.toml)")
    nw.add_argument("directory")
    nw.add_argument("--nodes", type=int_in(1, 100_000, "an integer"), default=2, help="SuperNodes the plan waits for")
    nw.add_argument("--force", action="store_true", help="overwrite existing files")
    nw.add_argument("--shuffled", action="store_true", help="the ServerApp is the shuffler: devices seal to the analyzer key their owners pin")
    nw.add_argument("--members", default=None, metavar="DIR", help="list the nodes' public keys DIR/node-<i>.pub (relative to the app) as the plans' members")
    nw.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ct = fsub.add_parser("certs", help="generate a CA, a SuperLink TLS certificate and SuperNode auth keys (cryptography, locally)")
    ct.add_argument("directory")
    ct.add_argument("--host", action="append", default=None, help="a host name or IP address of the SuperLink (repeatable; default 127.0.0.1, localhost)")
    ct.add_argument("--nodes", type=int_in(0, 10_000, "an integer"), default=2, help="SuperNode key pairs to generate (node-0, node-1, ...)")
    ct.add_argument("--force", action="store_true", help="replace an existing CA, certificate and keys (deployed nodes must get the new ones)")
    ct.add_argument("--json", action="store_true", help="one JSON document on stdout (the output is JSON either way)")
    dv = fsub.add_parser("device", help="the node owner's commands")
    dsub = dv.add_subparsers(dest="device_command", required=True, parser_class=parser_class)
    di = dsub.add_parser("init", help="create the devices' ledger and keystore (once; --reset starts a new budget)")
    di.add_argument("config", help="the device TOML")
    di.add_argument("--node-config", default="", help="the SuperNode's node_config values used in the TOML, e.g. 'partition-id=0'")
    di.add_argument("--reset", action="store_true", help="move an existing ledger aside and start a new budget (the keystore is kept)")
    di.add_argument("--rekey", action="store_true", help="the keystore is lost: a new one for the existing ledger (series begun before stay refused)")
    dserve = dsub.add_parser("serve", help="the owner's ClientApp runtime: answer the SuperNode's tasks (started with --isolation process) "
                             "with the installed app, for pinned app bundles only")
    dserve.add_argument("config", help="the device TOML")
    dserve.add_argument("--node-config", default="", help="the node_config values used in the TOML, e.g. 'partition-id=0'")
    dserve.add_argument("--runtime-api", required=True, metavar="HOST:PORT", help="the SuperNode's Runtime API address (its --port)")
    dserve.add_argument("--root-certificates", default=None, help="CA of the Runtime API's TLS certificate (default: plain, loopback only)")
    dserve.add_argument("--json", action="store_true", help="errors as one JSON document on stdout (the runtime logs as text)")
    dpin = dsub.add_parser("pin", help="accept an app bundle: add the SHA-256 of APP (a Flower app directory or a .fab) to [trust] pins")
    dpin.add_argument("config", help="the device TOML")
    dpin.add_argument("app", help="the Flower app directory (built as `flwr run` builds it) or a .fab file")
    dpin.add_argument("--node-config", default="", help="the node_config values used in the TOML, e.g. 'partition-id=0'")
    dpin.add_argument("--json", action="store_true", help="one JSON document on stdout")
    dst = dsub.add_parser("status", help="the owner's view: devices, budget left (min/max over devices), spends, pinned apps, refused runs")
    dst.add_argument("config", help="the device TOML")
    dst.add_argument("--node-config", default="", help="the node_config values used in the TOML, e.g. 'partition-id=0'")
    dst.add_argument("--json", action="store_true", help="one JSON document on stdout")
    dref = dsub.add_parser("refusals", help="the runs this device refused to answer (apps not pinned), oldest first")
    dref.add_argument("config", help="the device TOML")
    dref.add_argument("--node-config", default="", help="the node_config values used in the TOML, e.g. 'partition-id=0'")
    dref.add_argument("--json", action="store_true", help="one JSON document on stdout")
    adg = fsub.add_parser("app-digest", help="the SHA-256 of the app bundle `flwr run APP` ships (what device owners pin)")
    adg.add_argument("app", help="the Flower app directory or a .fab file")
    adg.add_argument("--json", action="store_true", help="one JSON document on stdout")
    di.add_argument("--json", action="store_true", help="one JSON document on stdout (the output is JSON either way)")
    fs = fsub.add_parser("simulate", help="run the app through `flwr run` on a local simulation SuperLink, on generated data")
    fs.add_argument("--nodes", type=int_in(1, 1000, "an integer"), required=True, help="simulated SuperNodes, in [1, 1000]")
    fs.add_argument("--users-per-node", type=int_in(1, 10**6, "an integer"), required=True, help="devices hosted by each node")
    fs.add_argument("--mechanism", required=True, help=mechanism_help())
    fs.add_argument("--d", type=domain_type, default=None, help="domain size")
    fs.add_argument("--epsilon", type=epsilon_type, default=None, help="epsilon per report (longitudinal mechanisms: --param epsilon_perm/epsilon_1)")
    fs.add_argument("--rounds", type=int_in(1, 1000, "an integer"), default=1, help="collections of the query (one per round)")
    fs.add_argument("--device-cap", required=True, help="each device's lifetime epsilon cap (exact decimal text)")
    fs.add_argument("--max-epsilon", default="8", help="each device's largest epsilon per query (its policy)")
    fs.add_argument("--min-batch", type=positive_type, default=1, help="reports the collector needs before it releases an estimate")
    fs.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a mechanism parameter (repeatable)")
    fs.add_argument("--seed", type=seed_type, default=0, help="seed of the generated data (the randomization uses the OS CSPRNG)")
    fs.add_argument("--out", default=None, metavar="DIR", help="keep the app, devices and results here (default: a temporary directory)")
    fs.add_argument("--timeout", type=int_in(10, 86400, "seconds"), default=900, help="fail if the run has not finished by then")
    fs.add_argument("--shuffle", action="store_true", help="run the shuffler as the ServerApp: devices seal to a generated analyzer key, "
                    "the analyzer opens each forwarded batch and records its central (epsilon, delta); needs --delta")
    fs.add_argument("--delta", type=float, default=None, help="with --shuffle or --secure-sum: delta of the central (epsilon, delta), in (0, 1)")
    fs.add_argument("--secure-sum", action="store_true", help="the nodes' vectors are summed by Flower's SecAgg+: --mechanism skellam "
                    "(distributed noise, --epsilon central) or krr (summed local reports, --epsilon per report); needs --delta")
    fs.add_argument("--min-participants", type=int_in(2, 100_000, "an integer"), default=None,
                    help="with --secure-sum: the fewest nodes a released sum may hold (default: a majority of the shares)")
    fs.add_argument("--min-count", type=int_in(1, 10**9, "an integer"), default=None,
                    help="with --secure-sum: report bins whose released count is below this as suppressed (post-processing)")
    fs.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ak = fsub.add_parser("analyzer-keys", help="generate the analyzer's key pair (analyzer.key 0600, analyzer.pub for the device owners to pin)")
    ak.add_argument("directory")
    ak.add_argument("--force", action="store_true", help="replace an existing private key (reports sealed to it can no longer be opened)")
    ak.add_argument("--json", action="store_true", help="one JSON document on stdout (the output is JSON either way)")
    an = fsub.add_parser("analyze", help="open, validate and aggregate a shuffled batch; record its central (epsilon, delta) in a ledger")
    an.add_argument("batch", help="the batch file the shuffler forwarded")
    an.add_argument("--key", required=True, help="the analyzer's private key file (analyzer.key)")
    an.add_argument("--ledger", required=True, help="the analyzer's ledger (created once with `ldp budget init`)")
    an.add_argument("--delta", type=_unit_open, required=True, help="delta of the central (epsilon, delta) recorded, in (0, 1)")
    an.add_argument("--query-id", default=None, help="refuse a batch of any other query")
    an.add_argument("--out", default=None, metavar="DIR", help="also write the accepted reports as Parquet parts here")
    an.add_argument("--workers", type=int_in(1, 1024, "an integer"), default=None, help="threads opening the sealed boxes (default: every core)")
    an.add_argument("--json", action="store_true", help="one JSON document on stdout")
    fd.set_defaults(func=cmd_federated)


def _unit_open(text: str) -> float:
    """``--delta``: a finite number in (0, 1) (argparse type: a usage error names the option)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1) (got {text!r})") from None
    if not (math.isfinite(v) and 0 < v < 1):
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1) (got {text!r})")
    return v


def _host_port(text: str) -> None:
    """``--runtime-api``: HOST:PORT with a port in [1, 65535] (checked before anything connects)."""
    host, sep, port = str(text).rpartition(":")
    ok = bool(sep) and bool(host.strip("[]")) and port.isdigit() and 1 <= int(port) <= 65535 and host.count("[") == host.count("]")
    if not ok or any(c.isspace() for c in host):
        raise LDPParameterError("--runtime-api must be HOST:PORT with a port in [1, 65535], e.g. 127.0.0.1:9094")


def _app_path(app: str) -> Path:
    """APP of ``pin`` / ``app-digest``: an existing Flower app directory or a regular ``.fab`` file."""
    p = Path(app)
    if p.is_dir():
        return p
    if not p.exists():
        raise LDPParameterError(f"the app {str(app)!r} does not exist (give the Flower app directory or a .fab file)")
    if not p.is_file() or p.suffix != ".fab":
        raise LDPParameterError(f"the app {str(app)!r} must be a Flower app directory or a .fab file")
    return p


def _node_config(text: str) -> dict:
    out = {}
    for item in text.split():
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise LDPParameterError("--node-config must be 'key=value' items separated by spaces")
        v = v.strip('"')
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    return out


def cmd_federated(args) -> int:
    cmd = args.federated_command
    if cmd == "new":
        paths = new_project(args.directory, nodes=args.nodes, force=args.force, shuffled=args.shuffled, members=args.members)
        if args.json:
            print(json.dumps({"written": {k: str(v) for k, v in paths.items()}}, indent=1))
            return 0
        print(f"wrote {paths['pyproject.toml']}, {paths['plan.toml']}, {paths['discovery.toml']} and {paths['device.toml']}")
        print("next: `ldp federated certs`, `ldp federated device init`, start the SuperLink and SuperNodes, `flwr run` (docs/federated.md)")
        return 0
    if cmd == "certs":
        writable_directory(args.directory, "the certificates directory")
        existing = existing_credentials(args.directory, args.nodes)
        if existing and not args.force:
            raise LDPParameterError(f"{args.directory!r} already holds {', '.join(existing[:4])}{' ...' if len(existing) > 4 else ''}: "
                                    "regenerating replaces the CA and every private key (deployed SuperLinks and SuperNodes stop "
                                    "trusting each other); pass --force to replace them")
        tls = make_tls(args.directory, tuple(args.host or ("127.0.0.1", "localhost")))
        keys = [make_node_keys(Path(args.directory) / "nodes", f"node-{i}") for i in range(args.nodes)]
        print(json.dumps({"tls": tls, "supernode_keys": keys}, indent=1))
        return 0
    if cmd == "device":
        return _device(args)
    if cmd == "app-digest":
        digest = _runtime().app_digest(_app_path(args.app))
        print(json.dumps({"app": str(args.app), "sha256": digest}) if args.json else digest)
        return 0
    if cmd == "analyzer-keys":
        writable_directory(args.directory, "the analyzer key directory")
        print(json.dumps(generate_analyzer_keys(args.directory, force=args.force), indent=1))
        return 0
    if cmd == "analyze":
        out = analyze_batch(args.batch, key=args.key, ledger=args.ledger, delta=args.delta, expect_query_id=args.query_id, out_dir=args.out,
                            workers=args.workers)
        if args.json:
            print(json.dumps(out, indent=1))
        else:
            print(f"batch {out['batch_id']} of {out['query_id']}: {out['reports_accepted']:,} of {out['reports_received']:,} reports accepted, "
                  f"{out['reports_rejected']:,} rejected {out['rejected_by_reason']}")
            print(f"recorded: local epsilon {out['epsilon_local']:g}, central ({out['epsilon_central']:.4g}, {out['delta']:g}) at n={out['n_amplified']:,}")
        return 0
    return _simulate(args)


def _runtime() -> Any:
    """The owner's ClientApp runtime module (it needs Flower: the ``flower`` extra)."""
    return extra_module(f"{__package__}.runtime", "flower", "this command needs Flower")


def _device(args) -> int:
    """The node owner's commands: init, serve, pin, refusals."""
    node_config = _node_config(args.node_config)
    sub = args.device_command
    certs = None
    if sub == "serve":  # the cheap checks of serve's own options, before the configuration is opened
        _host_port(args.runtime_api)
        if args.root_certificates is not None:
            certs = read_small_file(args.root_certificates, "--root-certificates", text=False)
            if b"-----BEGIN CERTIFICATE-----" not in certs:
                raise LDPParameterError(f"--root-certificates {args.root_certificates!r} is not a PEM certificate file")
    elif sub == "pin":
        _app_path(args.app)
    cfg = DeviceConfig.load(args.config, node_config)
    if sub == "init":
        print(json.dumps(DeviceFleet.init(cfg, reset=args.reset, rekey=args.rekey), indent=1))
        return 0
    if sub == "pin":
        digest = _runtime().app_digest(args.app)
        added = cfg.trust.pin(digest)
        print(json.dumps({"sha256": digest, "pinned": True, "added": added}) if args.json else f"{'pinned' if added else 'already pinned'}: {digest}")
        return 0
    if sub == "status":
        out = _device_status(cfg)
        if args.json:
            print(json.dumps(out, indent=1))
        else:
            print(f"{out['devices']:,} device(s); budget left per device: min {out['remaining_min']}, max {out['remaining_max']} "
                  f"(lifetime cap {out['lifetime_cap']}); {out['spends']} spend(s); ledger {out['ledger']}")
            print(f"{len(out['pinned_apps'])} pinned app(s); {out['refused_runs']} refused run(s) (ldp federated device refusals)")
        return 0
    if sub == "refusals":
        recs = cfg.trust.refusals()
        if args.json:
            print(json.dumps({"refusals": recs}, indent=1))
        else:
            for r in recs:
                print(f"{r.get('time')}  run {r.get('run_id')}  {r.get('reason')}  FAB {str(r.get('fab_hash'))[:16]}  {r.get('fab_id')} {r.get('fab_version')}")
            print(f"{len(recs)} refused run(s)")
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"answering the SuperNode at {args.runtime_api} for pinned apps only (refusals: {cfg.trust.refusal_log})", flush=True)
    _runtime().serve(args.config, node_config, args.runtime_api, root_certificates=certs, stop=stop)
    return 0


def _device_status(cfg: DeviceConfig) -> dict:
    """The owner's summary of one node's devices (opened as a query would: a tampered or missing
    ledger is reported by its refusal reason, nothing is changed)."""
    base = {"ledger": str(cfg.ledger), "pinned_apps": sorted(cfg.trust.pinned()), "refused_runs": len(cfg.trust.refusals()),
            "lifetime_cap": str(cfg.policy.lifetime_cap)}
    try:
        fleet = DeviceFleet.open(cfg)
    except DeviceRefusal as e:
        return {**base, "devices": 0, "state": e.reason, "remaining_min": None, "remaining_max": None, "spends": 0}
    try:
        left = fleet.ledger.remaining_by_cohort()
        return {**base, "devices": fleet.n_devices, "state": "ok", "remaining_min": str(min(left)), "remaining_max": str(max(left)),
                "spends": len(fleet.ledger.history())}
    finally:
        fleet.close()


def _plan_toml(args, nodes: int) -> str:
    params = dict(parse_params(args.param, options=SIMULATE_OPTIONS))
    if args.d is not None:
        params["d"] = args.d
    lines = ["[plan]", 'name = "sim"', f"rounds = {args.rounds}", f"min_batch = {args.min_batch}", 'out_dir = "results"',
             "round_timeout = 300", f"max_devices_per_node = {max(args.users_per_node, 1)}", f"expected_nodes = {nodes}", "node_wait = 120", "",
             "[[query]]", 'name = "q"', f"mechanism = {json.dumps(args.mechanism)}"]
    if args.epsilon is not None:
        lines.append(f"epsilon = {json.dumps(str(args.epsilon))}")
    lines.append("params = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items()) + "}")
    return "\n".join(lines) + "\n"


#: the --param keys that are options of `ldp federated simulate` (others, e.g. epsilon_perm, go in --param)
SIMULATE_OPTIONS = ("epsilon", "d", "seed", "rng")
#: the largest --d a simulation accepts (it prints, and in --json returns, one estimate per item)
MAX_SIMULATED_D = 1 << 16
#: a conservative rate of devices answered per second by a simulated Flower run (startup excluded)
SIMULATED_DEVICES_PER_SECOND = 2e4


def _check_simulation(args, mech: Any, d: int) -> None:
    """The simulation's size, before any file, ledger or Flower process: ``--d`` (one estimate row
    per item) and the work of ``nodes × users-per-node × rounds`` devices answering."""
    if d > MAX_SIMULATED_D:
        raise LDPParameterError(f"--d must be at most {MAX_SIMULATED_D} for federated simulate (got {d}): the simulation generates, "
                                "estimates and prints one row per item; a real deployment (ldp federated new) takes any d")
    check_work(args.nodes * args.users_per_node * args.rounds, rate=SIMULATED_DEVICES_PER_SECOND,
               what=f"federated simulate ({args.nodes} nodes × {args.users_per_node} devices × {args.rounds} rounds)",
               options="--nodes, --users-per-node or --rounds")


def _check_policy(policy: Any, mech: Any) -> None:
    """Every simulated device would refuse the first collection: say so before Flower starts."""
    charge = collection_charge(mech, 1)
    if charge > policy.max_epsilon_per_query:
        raise LDPParameterError(f"--max-epsilon {float(policy.max_epsilon_per_query):g} is below the query's charge of "
                                f"{float(charge):.6g} per collection: every device would refuse it (raise --max-epsilon or lower the query's epsilon)")
    if charge > policy.lifetime_cap:
        raise LDPParameterError(f"--device-cap {float(policy.lifetime_cap):g} is below the query's charge of {float(charge):.6g}: "
                                "every device would refuse the first collection (raise --device-cap or lower the query's epsilon)")


def _nothing_released(rounds: list) -> str:
    """The error of a run in which no round released an estimate, naming what to change."""
    refused: dict = {}
    for row in rounds:
        for k, v in (row.get("refused_by_reason") or {}).items():
            refused[k] = refused.get(k, 0) + v
    accepted = sum(row.get("reports_accepted", 0) for row in rounds)
    hint = {"budget_exhausted": "--device-cap", "epsilon_above_policy": "--max-epsilon"}
    options = sorted({hint[k] for k in refused if k in hint}) or ["--min-batch"]
    return (f"the Flower run finished but no round released an estimate ({accepted} reports accepted; devices refused: "
            f"{refused or 'none'}); check {', '.join(options)}")


def _exact_option(text: str, option: str, hi: int) -> Fraction:
    """``--device-cap`` / ``--max-epsilon``: exact decimal text in ``(0, hi]`` (the device policy's
    fields), refused naming the option before any file or process is made."""
    try:
        v = as_fraction(str(text), option)  # bounded text first: '1e99999999' is refused, never expanded
    except LDPParameterError:
        raise LDPParameterError(f"{option} must be exact decimal text such as 2 or 0.5, in (0, {hi}]") from None
    if not 0 < v <= hi:
        raise LDPParameterError(f"{option} must be in (0, {hi}] (exact decimal text such as 2 or 0.5)")
    return v


@contextlib.contextmanager
def _terminate_as_exit():
    """SIGTERM or SIGHUP (``timeout``, a job scheduler, a closed terminal) end the command through
    its ``finally``, which stops the SuperLink and every process it started; without this the
    SuperLink would outlive a killed command."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _simulate(args) -> int:
    _exact_option(args.device_cap, "--device-cap", 10**6)  # every collection mode: checked before any file or process
    _exact_option(args.max_epsilon, "--max-epsilon", 700)
    _check_min_batch(args)
    with _terminate_as_exit():
        if getattr(args, "secure_sum", False):
            return simulate_secure(args)
        return _simulate_run(args)


def _check_min_batch(args) -> None:
    """--min-batch above the simulated devices: no round could release an estimate (every mode)."""
    devices = args.nodes * args.users_per_node
    if args.min_batch > devices:
        raise LDPParameterError(f"--min-batch must be at most the simulated devices, --nodes × --users-per-node = {devices:,} "
                                f"(got {args.min_batch:,}): no round could release an estimate")


def _check_options(args) -> None:
    """The options checked before any file: --min-batch against the simulated devices, and the
    shuffle options."""
    _check_min_batch(args)
    shuffle, delta = getattr(args, "shuffle", False), getattr(args, "delta", None)
    for opt in ("min_participants", "min_count"):
        if getattr(args, opt, None) is not None:
            raise LDPParameterError(f"--{opt.replace('_', '-')} goes with --secure-sum")
    if delta is not None and not shuffle:
        raise LDPParameterError("--delta is the delta of a shuffled collection's central (epsilon, delta): give it with --shuffle")
    if shuffle and delta is None:
        raise LDPParameterError("--shuffle needs --delta, the delta of the central (epsilon, delta) the analyzer records, in (0, 1)")
    if shuffle and not (math.isfinite(delta) and 0 < delta < 1):
        raise LDPParameterError("--delta must be in (0, 1)")


def _analyze_round(row: dict, keys: dict, ledger: Path, delta: float) -> dict:
    """The analyzer's side of one shuffled round: open the forwarded batch, charge and record
    (``analyze_batch``); the shuffler's counts are kept under ``shuffler``."""
    shuffler = {k: row[k] for k in ("nodes_asked", "nodes_answered", "node_errors", "ciphertexts_held", "ciphertexts_rejected",
                                    "rejected_by_reason", "devices_refused", "refused_by_reason", "status", "batch_id")}
    out = {"round": row["round"], "status": row["status"], "shuffler": shuffler, "nodes_asked": row["nodes_asked"],
           "nodes_answered": row["nodes_answered"], "node_errors": row["node_errors"], "devices_refused": row["devices_refused"],
           "refused_by_reason": row["refused_by_reason"], "reports_accepted": 0, "reports_rejected": 0, "rejected_by_reason": {},
           "estimate": None}
    if row["status"] != "forwarded":
        return out
    try:
        res = analyze_batch(row["batch"], key=keys["private_key"], ledger=ledger, delta=delta, expect_query_id=row["query_id"])
    except BatchBelowMinimum as e:
        out.update(status="below_minimum", analyzer_refused=str(e))
        return out
    out.update(status="analyzed", reports_accepted=res["reports_accepted"], reports_rejected=res["reports_rejected"],
               rejected_by_reason=res["rejected_by_reason"], estimate=res["estimate"],
               central={k: res[k] for k in ("epsilon_local", "epsilon_central", "epsilon_central_lower", "delta", "n_amplified", "method")})
    return out


def _round_reporter(plan: Plan, t0: float):
    """A poll hook that prints one status line (stderr, text mode on a terminal) per round summary
    the ServerApp has written, and a line when the run starts, so a long simulation is not silent."""
    seen: set = set()
    rounds = list(plan.round_numbers())

    def report() -> None:
        if not seen:
            seen.add(0)
            status(f"flwr run started on the simulation SuperLink ({len(rounds)} round(s); waiting for the nodes)")
        for r in rounds:
            path = summary_path(plan.out_dir, plan.name, r)
            if r not in seen and path.is_file():
                seen.add(r)
                status(f"round {r}/{len(rounds)} summary written ({time.perf_counter() - t0:.0f} s)")

    return report


def _simulate_run(args) -> int:
    _exact_option(args.device_cap, "--device-cap", 10**6)
    _exact_option(args.max_epsilon, "--max-epsilon", 700)
    _check_options(args)
    shuffle = bool(getattr(args, "shuffle", False))
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="ldp-federated-")
        work = Path(tmp.name)
    else:
        work = writable_directory(Path(args.out).resolve(), "--out")
        work.mkdir(parents=True, exist_ok=True)
    superlink = None
    try:
        new_project(work / "app", nodes=args.nodes, force=True, shuffled=shuffle)
        (work / "app" / "plan.toml").write_text(_plan_toml(args, args.nodes))
        plan = Plan.from_toml(work / "app" / "plan.toml")
        q0 = plan.queries[0].build()  # a bad mechanism or parameter fails here, before Flower starts
        if shuffle:
            plan.check_shuffled()  # a memoized series cannot be shuffled: refused before Flower starts
        d = q0.domain_size
        if q0.input_kind not in (InputKind.VALUE, InputKind.SET):  # the generated data are one category per device
            raise LDPParameterError(f"--mechanism {args.mechanism}: federated simulate generates one categorical value per device; "
                                    f"{args.mechanism} takes {q0.input_kind} inputs (use it from Python, or a frequency oracle here)")
        if d is None:
            raise LDPParameterError("federated simulate generates categorical values: give a closed-alphabet mechanism (--d)")
        _check_simulation(args, q0, d)
        device = work / "app" / "device.toml"
        keys = generate_analyzer_keys(work / "analyzer", force=True) if shuffle else None
        pinned = [f'analyzer_key = "{keys["public_key_hex"]}"'] if shuffle else []
        device.write_text("\n".join([
            "[device]", 'name = "sim-{partition-id}"', 'ledger = "state/node-{partition-id}/ledger.sqlite"',
            'keystore = "state/node-{partition-id}/keystore.json"', *pinned, "", "[policy]", f"lifetime_cap = {json.dumps(str(args.device_cap))}",
            f"max_epsilon_per_query = {json.dumps(str(args.max_epsilon))}", "", "[data]", 'source = "ldp_plugin.federated.synthetic:zipf_values"',
            "[data.args]", f"devices = {args.users_per_node}", f"d = {d}", f'seed = "{args.seed}-{{partition-id}}"', ""]))
        _check_policy(DeviceConfig.load(device, {"partition-id": 0}).policy, q0)
        truth = np.zeros(d)
        for pid in range(args.nodes):
            DeviceFleet.init(DeviceConfig.load(device, {"partition-id": pid}))
            truth += np.bincount(zipf_values(args.users_per_node, d, f"{args.seed}-{pid}"), minlength=d)
        truth /= args.nodes * args.users_per_node
        port = free_port()
        env = tool_env(FLWR_HOME=str(work / "flwr-home"), **{ENV_DEVICE_CONFIG: str(device)})
        write_connection(work / "flwr-home", "ldp-sim", f"127.0.0.1:{port}")
        t0 = time.perf_counter()
        superlink = Spawned([flower_tool("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1", "--port", str(port),
                             "--database", str(work / "superlink.db"), "--disable-runtime-dependency-installation"], env=env, log=work / "superlink.log")
        run_id = run_to_completion(work / "app", "ldp-sim", env=env, federation_config={"num-supernodes": args.nodes}, timeout=args.timeout,
                                   on_poll=_round_reporter(plan, t0))
        seconds = round(time.perf_counter() - t0, 2)
        rounds = []
        ledger = work / "analyzer.sqlite"
        if shuffle:  # the analyzer's ledger: the same population and lifetime cap as the devices'
            Accountant.create(ledger, Population(name="analyzer", lifetime_cap=str(args.device_cap))).close()
        for r in plan.round_numbers():
            path = summary_path(plan.out_dir, plan.name, r)
            if not path.is_file():
                raise LDPParameterError(f"the run completed but round {r}'s summary is missing")
            summary = json.loads(path.read_text())
            row = summary["queries"][0]
            if shuffle:
                row = _analyze_round({"round": r, **row}, keys, ledger, args.delta)
            if row["estimate"]:
                for e in row["estimate"]:
                    e["truth"] = float(truth[int(e["item"])]) if isinstance(e["item"], int) and 0 <= e["item"] < d else None
            rounds.append({"round": r, **{k: v for k, v in row.items() if k not in ("query", "round")}})
    finally:
        if superlink is not None:
            superlink.stop()
        if tmp is not None:
            tmp.cleanup()
    if not any(row["estimate"] for row in rounds):
        raise LDPParameterError(_nothing_released(rounds))
    out = {"rounds": rounds, "nodes": args.nodes, "users_per_node": args.users_per_node, "seconds": seconds, "run_id": str(run_id),
           "mechanism": q0.params(), "zipf_truth": [float(x) for x in zipf_frequencies(d)], "shuffled": shuffle}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for row in rounds:
            print(f"round {row['round']}: {row['nodes_answered']}/{row['nodes_asked']} nodes, {row['reports_accepted']:,} reports accepted, "
                  f"{row['reports_rejected']:,} rejected {row['rejected_by_reason']}, {row['devices_refused']:,} devices refused "
                  f"{row['refused_by_reason']}, node errors {row['node_errors']}: {row['status']}")
            if row.get("central"):
                c = row["central"]
                print(f"  shuffled: {row['shuffler']['ciphertexts_held']:,} sealed reports forwarded without node ids; the analyzer recorded "
                      f"local epsilon {c['epsilon_local']:g}, central ({c['epsilon_central']:.4g}, {c['delta']:g}) at n={c['n_amplified']:,}")
            if row["estimate"]:
                covered = sum(e["ci_lower"] <= e["truth"] <= e["ci_upper"] for e in row["estimate"] if e["truth"] is not None)
                print(f"  {covered}/{len(row['estimate'])} true frequencies inside their 95% intervals")
        print(f"{seconds} s in all (flwr run on a simulation SuperLink, {args.nodes} SuperNodes)")
    return 0
