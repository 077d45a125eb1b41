"""The collection plan a ServerApp runs: which queries, how many rounds, the minimum batch, the
per-round deadline, the per-node quota cap and the output directory.

It comes from the Flower app's run config (``[tool.flwr.app.config]`` of the app project, or
``flwr run … --run-config 'key=value'``) — flat keys for one query — or from a TOML job the run
config names (``job = "/path/plan.toml"``) for several::

    [plan]
    name = "demo"             # query ids are "<name>/<query>/r<round>": a rerun asks the same ids
    rounds = 2
    min_batch = 50
    out_dir = "/abs/results"  # relative paths are relative to the job file
    round_timeout = 60        # seconds: the round's deadline
    max_devices_per_node = 100000
    expected_nodes = 2        # wait (node_wait seconds) for this many SuperNodes
    node_wait = 60
    # the nodes that may answer, by their public keys (each node's SuperNode auth key .pub, OpenSSH
    # EC; paths relative to the job file, or the key text): a node outside the list is refused and
    # counted, and expected_nodes is the list's length. Without members, any connected node answers.
    members = ["certs/nodes/node-0.pub", "certs/nodes/node-1.pub"]

    [[query]]
    name = "apps"
    mechanism = "oue"
    epsilon = "1"
    params = {d = 8}

    [[query]]                 # with a robust combination of the nodes' estimates beside the pooled one
    name = "apps-robust"
    mechanism = "oue"
    epsilon = "1"
    params = {d = 8}
    robust = {rule = "trimmed", f = 1}   # or "median-of-means" (groups = G); alpha = 1e-3

    [[query]]                 # heavy-hitter discovery (PEM or TreeHist): one query per level
    name = "words"
    mechanism = "pem"
    epsilon = "2"
    params = {alphabet = "abcdefghijklmnopqrstuvwxyz", max_length = 8, top_k = 5}

A secure sum (``mode = "secure-sum"``, :mod:`~ldp_plugin.federated.secure_query`; the ServerApp is
``ldp_plugin.federated.secure_sum_server:server_app``): each query's ``mechanism`` is ``"skellam"``
(distributed noise, ``epsilon`` the central ε) or ``"krr"`` (summed local reports, ``epsilon`` each
report's ε₀), with ``params = {d = 64}`` and ``secure = {delta = 1e-6, min_participants = 3}``
(optional ``site_bound``: devices per node, ``shares``, ``min_count``: small-count thresholding).

The plan never carries anything a device enforces: devices take their policy from their owner.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from .._boundary import read_small_file
from .._errors import LDPParameterError
from ..discovery import METHODS as DISCOVERY_METHODS
from ..mechanisms.protocol import ClosedDomain, Keyed, Numeric, has
from ..registry import build
from ..robust.aggregation import RULES as ROBUST_RULES
from .discovery import level_queries
from .secure_query import planned_secure_query
from .shuffler import check_shufflable
from .trust import load_member_public_key

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Plan", "PlannedQuery"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PLAN_KEYS = {"name", "rounds", "min_batch", "out_dir", "round_timeout", "max_devices_per_node", "expected_nodes", "node_wait", "members", "mode"}
_QUERY_KEYS = {"name", "mechanism", "epsilon", "params", "robust", "secure"}
MODES = ("local", "secure-sum")
_ROBUST_KEYS = {"rule", "f", "groups", "alpha"}


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise LDPParameterError(f"{name} must be an integer in [{lo}, {hi}]")
    return int(v)


def _robust_spec(spec: Any, query: str) -> Optional[dict]:
    """A query's ``robust`` table, checked whole (the node count is checked at each round, where
    it is known: a round with too few answering nodes reports why, beside its pooled estimate)."""
    if spec is None:
        return None
    where = f"query {query!r}: robust"
    if not isinstance(spec, Mapping) or set(spec) - _ROBUST_KEYS or "rule" not in spec:
        raise LDPParameterError(f"{where} must be a table with a rule and optionally f, groups, alpha (allowed keys: {sorted(_ROBUST_KEYS)})")
    if spec["rule"] not in ROBUST_RULES:
        raise LDPParameterError(f"{where}.rule must be one of {list(ROBUST_RULES)}")
    out = {"rule": spec["rule"], "f": _int(spec.get("f", 1), f"{where}.f (the hostile nodes tolerated)", 0, 10_000)}
    if "groups" in spec:
        if spec["rule"] != "median-of-means":
            raise LDPParameterError(f"{where}.groups applies to rule = 'median-of-means' only")
        out["groups"] = _int(spec["groups"], f"{where}.groups", 2 * out["f"] + 1, 100_000)
    alpha = spec.get("alpha", 1e-3)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise LDPParameterError(f"{where}.alpha must be a number in (0, 1)")
    out["alpha"] = float(alpha)
    return out


def _members(raw: Any, base: Path) -> tuple:
    """The plan's member list: each entry a public key's text or the path of a ``.pub`` file
    (relative to the job file); canonical OpenSSH form, no duplicates."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(m, str) and m for m in raw):
        raise LDPParameterError("members must be a non-empty list of public keys (the nodes' .pub files or their text)")
    out: list = []
    for m in raw:
        text = m
        if not m.lstrip().startswith("ecdsa-"):
            try:
                text = (base / m).read_text()
            except OSError:
                raise LDPParameterError(f"the member key file {Path(m).name!r} cannot be read") from None
        key = load_member_public_key(text)
        if key in out:
            raise LDPParameterError("members lists the same public key twice")
        out.append(key)
    return tuple(out)


def _check_robust_mechanism(pq: "PlannedQuery") -> None:
    """The robust combination needs per-node unbiased per-item estimates: a frequency oracle (or a
    set mechanism) over a closed domain, not a memoized series, a mean or a distribution."""
    if pq.mechanism in DISCOVERY_METHODS:
        raise LDPParameterError(f"query {pq.name!r}: robust applies to frequency queries, not to a heavy-hitter discovery")
    mech = pq.build()
    if not has(mech, ClosedDomain) or has(mech, Keyed) or has(mech, Numeric) or mech.domain_size is None:
        raise LDPParameterError(f"query {pq.name!r}: robust applies to frequency oracles and set mechanisms over a closed domain "
                                f"(d given), not to {pq.mechanism!r}")


@dataclass(frozen=True)
class PlannedQuery:
    name: str
    mechanism: str
    epsilon: Optional[str]  # None for a longitudinal mechanism (epsilon_perm / epsilon_1 in params)
    params: dict = field(default_factory=dict)
    #: ``{"rule", "f", "groups", "alpha"}`` of :func:`ldp_plugin.robust.aggregation.combine` (``None``: pooled only)
    robust: Optional[dict] = None
    #: the ``secure`` table of a secure-sum query (``None`` otherwise)
    secure: Optional[dict] = None

    def secure_query(self, query_id: str, nodes: int):
        """This query as a :class:`~ldp_plugin.federated.secure_query.SecureSumQuery` over ``nodes`` nodes."""
        return planned_secure_query(query_id, self.mechanism, self.epsilon, self.params, self.secure, nodes)

    def build(self):
        params = dict(self.params)
        d = params.pop("d", None)
        if self.epsilon is not None:
            params["epsilon"] = float(self.epsilon)  # the registry takes a number; the query carries its exact text
        return build(self.mechanism, d=d, **params)


@dataclass(frozen=True)
class Plan:
    name: str
    queries: tuple
    rounds: int = 1
    min_batch: int = 1
    out_dir: Optional[Path] = None
    round_timeout: float = 60.0
    max_devices_per_node: int = 100_000
    expected_nodes: int = 1
    node_wait: float = 60.0
    mode: str = "local"  # "secure-sum": every query is summed by SecAgg+ (secure_sum_server)
    first_round: int = 1  # rounds first_round .. first_round + rounds - 1 (a later day of a series: new query ids)
    members: tuple = ()  # the member nodes' public keys (canonical OpenSSH); empty: any connected node

    def round_numbers(self) -> range:
        return range(self.first_round, self.first_round + self.rounds)

    @classmethod
    def from_dict(cls, plan: Mapping[str, Any], queries: list, base: Path) -> "Plan":
        extra = sorted(set(plan) - _PLAN_KEYS)
        if extra:
            raise LDPParameterError(f"unknown plan key(s) {extra}; allowed: {sorted(_PLAN_KEYS)}")
        name = plan.get("name", "ldp")
        if not isinstance(name, str) or not _NAME.match(name):
            raise LDPParameterError("the plan name must be 1-64 letters, digits, '_', '.' or '-'")
        if not queries:
            raise LDPParameterError("the plan needs at least one query")
        mode = plan.get("mode", "local")
        if mode not in MODES:
            raise LDPParameterError(f"mode must be one of {list(MODES)}")
        expected = _int(plan.get("expected_nodes", 1), "expected_nodes", 1, 100_000)
        qs, seen = [], set()
        for q in queries:
            if not isinstance(q, Mapping) or set(q) - _QUERY_KEYS or not {"name", "mechanism"} <= set(q):
                raise LDPParameterError(f"each query needs a name and a mechanism (allowed keys: {sorted(_QUERY_KEYS)})")
            if not isinstance(q["name"], str) or not _NAME.match(q["name"]) or q["name"] in seen:
                raise LDPParameterError("query names must be unique, 1-64 letters, digits, '_', '.' or '-'")
            seen.add(q["name"])
            params = q.get("params", {})
            if not isinstance(params, Mapping):
                raise LDPParameterError("a query's params must be a table")
            pq = PlannedQuery(q["name"], str(q["mechanism"]), None if q.get("epsilon") is None else str(q["epsilon"]), dict(params),
                              _robust_spec(q.get("robust"), q["name"]), q.get("secure"))
            if (mode == "secure-sum") != (pq.secure is not None):
                raise LDPParameterError(f"query {pq.name!r}: a secure table goes with mode = \"secure-sum\", and every secure-sum query needs one")
            if mode == "secure-sum":  # derived now: a configuration that would clip, wrap or zero is refused before any round
                if pq.robust is not None:
                    raise LDPParameterError(f"query {pq.name!r}: robust does not apply to a secure sum (the server sees no node's part)")
                pq.secure_query(f"{name}/{pq.name}/r1", expected)
                qs.append(pq)
                continue
            if pq.robust is not None:
                _check_robust_mechanism(pq)
            if pq.mechanism in DISCOVERY_METHODS:  # a heavy-hitter discovery: checked whole before anything is sent
                if pq.epsilon is None:
                    raise LDPParameterError(f"the discovery query {pq.name!r} needs an epsilon")
                level_queries(pq.mechanism, pq.epsilon, pq.params, f"{name}/{pq.name}/r1")
            qs.append(pq)
        out = plan.get("out_dir")
        if out is not None and (not isinstance(out, str) or not out):
            raise LDPParameterError("out_dir must be a path")
        timeout = plan.get("round_timeout", 60)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 86400:
            raise LDPParameterError("round_timeout must be a number of seconds in [1, 86400]")
        wait = plan.get("node_wait", 60)
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait <= 86400:
            raise LDPParameterError("node_wait must be a number of seconds in [0, 86400]")
        members = _members(plan.get("members"), base)
        expected = _int(plan.get("expected_nodes", len(members) or 1), "expected_nodes", 1, 100_000)
        if members and expected != len(members):
            raise LDPParameterError(f"expected_nodes ({expected}) must equal the number of members ({len(members)}) when the plan lists them")
        return cls(name=name, queries=tuple(qs), rounds=_int(plan.get("rounds", 1), "rounds", 1, 10_000), members=members,
                   min_batch=_int(plan.get("min_batch", 1), "min_batch", 1, 10**9),
                   out_dir=None if out is None else (base / out).resolve(), round_timeout=float(timeout),
                   max_devices_per_node=_int(plan.get("max_devices_per_node", 100_000), "max_devices_per_node", 1, 1 << 20),
                   expected_nodes=expected, node_wait=float(wait), mode=mode)

    def check_shuffled(self) -> None:
        """Refuse a plan the shuffler cannot run: no ``out_dir`` (the batches are forwarded there),
        or a memoized series (its permanent reports link a device across batches, which the
        shuffle amplification bound does not cover)."""
        if self.out_dir is None:
            raise LDPParameterError("a shuffled collection needs the plan's out_dir: the batches are forwarded there")
        for pq in self.queries:
            check_shufflable(pq.build(), f"query {pq.name!r}")

    @classmethod
    def from_toml(cls, path: str | Path) -> "Plan":
        p = Path(path)
        text = read_small_file(p, "the plan file")
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise LDPParameterError(f"the plan file {p.name!r} is not readable TOML") from None
        extra = sorted(set(doc) - {"plan", "query"})
        if extra:
            raise LDPParameterError(f"unknown section(s) {extra} in the plan file; allowed: plan, query")
        return cls.from_dict(doc.get("plan", {}), list(doc.get("query", [])), p.resolve().parent)

    @classmethod
    def from_run_config(cls, run_config: Mapping[str, Any]) -> "Plan":
        """From a Flower run config: ``job`` names a plan TOML; otherwise the flat keys
        ``plan-name``, ``rounds``, ``min-batch``, ``out-dir``, ``round-timeout``,
        ``max-devices-per-node``, ``expected-nodes``, ``node-wait`` and one query
        (``query-name``, ``mechanism``, ``epsilon``, ``params`` as ``"d=8 k=2"``). ``first-round``
        (either way) numbers the rounds from there: the next collections of a series."""
        cfg = dict(run_config)
        first = _int(cfg.get("first-round", 1), "first-round", 1, 10**9)
        job = cfg.get("job")
        if isinstance(job, str) and job:
            plan = dataclasses.replace(cls.from_toml(job), first_round=first)
            out = cfg.get("out-dir")
            if isinstance(out, str) and out:  # `flwr run ... --run-config 'out-dir="..."'` redirects a job's results
                plan = dataclasses.replace(plan, out_dir=Path(out).resolve())
            return plan
        plan = {k.replace("-", "_"): cfg[k] for k in ("rounds", "min-batch", "out-dir", "round-timeout", "max-devices-per-node", "expected-nodes", "node-wait")
                if k in cfg and cfg[k] != ""}
        if "plan-name" in cfg:
            plan["name"] = cfg["plan-name"]
        if "mechanism" not in cfg:
            raise LDPParameterError("the run config needs job = \"plan.toml\", or a mechanism (and its epsilon)")
        params = {}
        for item in str(cfg.get("params", "")).split():
            k, sep, v = item.partition("=")
            if not sep:
                raise LDPParameterError("params must be 'key=value' items separated by spaces")
            params[k] = int(v) if re.fullmatch(r"-?\d+", v) else float(v) if re.fullmatch(r"-?\d+\.\d*", v) else v
        q = {"name": cfg.get("query-name", "q"), "mechanism": cfg["mechanism"], "epsilon": cfg.get("epsilon"), "params": params}
        return dataclasses.replace(cls.from_dict(plan, [q], Path.cwd()), first_round=first)
