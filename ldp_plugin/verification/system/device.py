"""The device as a channel: a deployed device — its owner's policy, keystore and SQLite ledger —
answering a sequence of queries of every kind it accepts, through the node's reply path
(:func:`ldp_plugin.federated.app.device_answer`), compared with what its ledger charged.

The sequence (:func:`script`): one query of each input kind (categories, unary bits, sets, a
number, attribute tuples, key–value pairs), three collections of a memoized series (L-GRR, keyed by
the keystore), a series whose second collection's loss is unbounded (dBitFlipPM at the user
level: refused), and every refusal the device's checks make before a spend — a query that is not
JSON, of another version, with a field no query has, a spec its constructor refuses or a
discovery field that is not one, a mechanism the owner did not allow, ε above and below the owner's
limits, a charging relation the owner did not allow, a query whose planned memory exceeds the
owner's limit, a retried query (the kept reply), a query beyond the remaining budget, and one
beyond the owner's daily limit. It runs on two devices that differ **only in what their users
hold**: values inside every domain, and values outside every domain (the device's domain rule
replaces them). Two more sequences run on their own device pairs: a **secure sum**
(:func:`~ldp_plugin.federated.secure_device.contribute`, both options: summed local k-RR reports
and distributed Skellam noise, a retried round, and every governance refusal — a setup other than
the query's, too many bins, more devices than the site bound, a reconstruction threshold below the
owner's minimum, ε above the owner's limit, a query that is not JSON) and a **heavy-hitter
discovery** collection (one query per group, then a relabelled group query), and the device's
state as its owner keeps it (:mod:`.lifecycle`: missing, edited or replaced ledger and keystore).

The layer passes iff, at every step:

1. **answers are value-independent**: both devices give the same refusal codes and counts, retry
   flag, device count, number of reports and report lengths, and the expected outcome;
2. **a refusal or a retry changes no ledger**: the remaining budget of every device and the
   ledger's rows are unchanged (a retry returns the kept envelopes byte for byte);
3. **a charge is the exact charge**: every answering device's remaining budget drops by exactly
   the query's charge — ``report_charge`` (ε realized, rounded up) for one report,
   ``collection_cost(t)`` for collection ``t`` of a series;
4. **the charge covers the channel**: each charged mechanism's realized worst-case ratio (its exact
   channel) is at most ``e^charge``, and after the series' ``T`` collections the exact worst loss
   over **every** pair of histories and every transcript (:func:`..histories.worst_cases`, user
   level) is at most what the ledger charged for them.

For the secure sum, (1)–(3) hold with the vector's length and its count of devices summed in place
of the reports (``charge``: what :meth:`Accountant.release` charges each device — ``report_charge`` of
the summed k-RR, the Skellam release's ε for the noise). For the discovery collection, each device
answers in exactly one group, charged the group oracle's ``report_charge`` once; a relabelled group
query is answered by nobody (``already_answered`` / ``other_group``) and charges nothing.

Power: the seeded bugs of :mod:`.seeded_bugs` (a series charged only once; a device whose refusal
reads the values) each fail it.
"""

from __future__ import annotations

import functools
import json
import math
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from ...exact import epsilon_of_ratio, ratio_within_exp
from ...federated.app import device_answer
from ...federated.device import DeviceFleet
from ...federated.discovery import level_queries
from ...federated.query import Query
from ...federated.secure_device import SecureSumRefusal, contribute
from ...federated.secure_query import NOISE_MECHANISM, SecureSumQuery
from ...mechanisms.charge import report_charge
from ...registry import KINDS, load_registry
from ..histories import worst_cases
from ._fixture import DEVICES, Device, normalized, wire_payloads
from .lifecycle import lifecycle_sequence

__all__ = ["device_layer", "script", "SERIES_COLLECTIONS"]

#: collections of the memoized series the script makes
SERIES_COLLECTIONS = 3
#: the kinds the script asks (registry names at their first canonical instance, or given parameters)
_ANSWERED = (("krr", {"epsilon": 1.0, "d": 4}), ("oue", {"epsilon": 1.0, "d": 3}), ("wheel", None), ("privset", None),
             ("piecewise", None), ("spl", None), ("pckv", None))
_SERIES = ("l-grr", None)
_MAX_QUERY_BYTES = 20 << 20  # the owner's memory limit: a unary query over 2**16 items on 6 devices plans more


def _build(name: str, params: Any = None, **over) -> Any:
    """The registered mechanism ``name`` at ``params`` (default: its first canonical instance)."""
    decl = load_registry(kinds=KINDS)[name]
    inst = dict(decl.canonical[0]) if params is None else dict(params)
    return decl.mechanism_class()(**{**inst, **over})


def _query(qid: str, mech: Any) -> str:
    return Query.for_mechanism(qid, mech).to_json()


def _series_cost(mech: Any, t: int) -> Fraction:
    return Fraction(mech.collection_cost(t))


def script() -> tuple:
    """``(steps, policy)``: each step ``(label, query JSON, mechanism or None, expected)`` with
    ``expected`` either ``("charge", ε, t)`` or ``("refused", reason)`` / ``("retry", label)``;
    the owner's policy is sized so that the budget and daily steps refuse exactly where listed."""
    steps: list = []
    charged: list = []
    for i, (name, params) in enumerate(_ANSWERED):
        m = _build(name, params)
        steps.append((f"{name}", _query(f"system/{name}", m), m, ("charge", report_charge(m), None)))
        charged.append(report_charge(m))
    series = _build(*_SERIES)
    for t in range(1, SERIES_COLLECTIONS + 1):
        steps.append((f"{series.name} collection {t}", _query(f"system/series/{t}", series), series, ("charge", _series_cost(series, t), t)))
        charged.append(_series_cost(series, t))
    unbounded = _build("dbitflip")  # its second collection's user-level loss is unbounded: refused
    steps.append(("dbitflip collection 1", _query("system/dbitflip/1", unbounded), unbounded, ("charge", _series_cost(unbounded, 1), None)))
    charged.append(_series_cost(unbounded, 1))
    steps.append(("dbitflip collection 2", _query("system/dbitflip/2", unbounded), None, ("refused", "budget_exhausted")))
    krr = steps[0]
    doc = json.loads(krr[1])
    refusals = [
        ("a field no query has", json.dumps({**doc, "seed": 7}), None, ("refused", "malformed_query")),
        ("a spec its constructor refuses", json.dumps({**doc, "spec": {"name": "krr", "params": {"epsilon": 1.0, "d": 1}}}), None,
         ("refused", "malformed_query")),
        ("a discovery field that is not one", json.dumps({**doc, "discovery": {"level": "x"}}), None, ("refused", "malformed_query")),
        ("not JSON", "{", None, ("refused", "malformed_query")),
        ("another version", json.dumps({**json.loads(krr[1]), "version": 99}), None, ("refused", "unsupported_version")),
        ("mechanism not allowed", _query("system/olh", _build("olh")), None, ("refused", "mechanism_not_allowed")),
        ("epsilon above policy", _query("system/big", _build("krr", {"epsilon": 8.0, "d": 4})), None, ("refused", "epsilon_above_policy")),
        ("epsilon below policy", _query("system/tiny", _build("krr", {"epsilon": 0.01, "d": 4})), None, ("refused", "epsilon_below_policy")),
        ("relation not allowed", _query("system/series/value", _build(*_SERIES, relation="value")), None, ("refused", "relation_not_allowed")),
        ("query too large", _query("system/wide", _build("oue", {"epsilon": 1.0, "d": 1 << 16})), None, ("refused", "query_too_large")),
        ("retried query", krr[1], None, ("retry", krr[0])),
    ]
    steps[1:1] = refusals  # the refusals between charges: they must not disturb the charges around them
    total = sum(charged, Fraction(0))
    last = _build("krr", {"epsilon": 0.5, "d": 4})
    cap = Fraction(math.ceil((total + report_charge(last) + Fraction(1, 4)) * 1000), 1000)  # the last charge fits, ε = 1 does not
    steps += [("budget exhausted", _query("system/over", _build("krr", {"epsilon": 1.0, "d": 4})), None, ("refused", "budget_exhausted")),
              ("last charge", _query("system/last", last), last, ("charge", report_charge(last), None)),
              ("daily limit", _query("system/daily", _build("krr", {"epsilon": 0.25, "d": 4})), None, ("refused", "daily_query_limit"))]
    names = sorted({n for n, _ in _ANSWERED} | {_SERIES[0], "dbitflip"})
    policy = {"lifetime_cap": f"{cap.numerator / cap.denominator:.3f}", "max_epsilon_per_query": "4", "min_epsilon_per_query": "0.05",
              "allowed_mechanisms": names, "max_queries_per_day": len(charged) + 1, "max_query_bytes": _MAX_QUERY_BYTES}
    return steps, policy


def _realized_ok(mech: Any, charge: Fraction) -> tuple:
    ratio = mech.channel().max_ratio()
    return epsilon_of_ratio(ratio), ratio_within_exp(ratio, _float_down(charge))


def _float_down(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


_SECURE_POLICY = {"lifetime_cap": "1000", "max_epsilon_per_query": "8", "allowed_mechanisms": ["krr", NOISE_MECHANISM],
                  "secure_sum_min_participants": 3, "secure_sum_max_bins": 64}


def _setup(q: SecureSumQuery, **over) -> dict:
    """The parameters Flower's SecAgg+ setup stage gives a node for ``q`` (``over``: a server that
    sets up something else)."""
    c = q.derive().config
    return {**{"sample_num": c.nodes, "share_num": c.shares, "threshold": c.threshold, "clipping_range": float(c.clipping_range),
               "target_range": c.quantization_range, "mod_range": c.modulus, "max_weight": c.max_weight}, **over}


def secure_script() -> list:
    """``(label, query JSON, setup, expected)`` of the secure-sum sequence; ``expected`` is
    ``("charge", ε)``, ``("retry", label)`` or ``("refused", reason)``."""
    def q(qid, **kw):
        base = {"option": "local", "d": 4, "epsilon": "1", "delta": 1e-6, "nodes": 5, "min_participants": 3, "site_bound": DEVICES}
        return SecureSumQuery(query_id=f"system/secure/{qid}", **{**base, **kw})

    local, noise = q("local"), q("noise", option="noise")
    low = q("low", nodes=3, min_participants=2)
    steps = [("secure sum, local reports", local.to_json(), _setup(local), ("charge", report_charge(local.derive().mechanism))),
             ("secure sum, retried", local.to_json(), _setup(local), ("retry", "secure sum, local reports")),
             ("secure sum, Skellam noise", noise.to_json(), _setup(noise), ("charge", noise.derive().charge.epsilon)),
             ("secure sum, another setup", q("setup").to_json(), _setup(q("setup"), threshold=q("setup").derive().config.threshold + 1),
              ("refused", "setup_mismatch")),
             ("secure sum, too many bins", q("bins", d=100).to_json(), _setup(q("bins", d=100)), ("refused", "too_many_bins")),
             ("secure sum, above the site bound", q("site", site_bound=2).to_json(), _setup(q("site", site_bound=2)), ("refused", "above_site_bound")),
             ("secure sum, epsilon above policy", q("eps", epsilon="16").to_json(), _setup(q("eps", epsilon="16")), ("refused", "epsilon_above_policy")),
             ("secure sum, not JSON", "{", _setup(local), ("refused", "malformed_query")),
             ("secure sum, a field out of range", json.dumps({**local.to_dict(), "d": 1}), _setup(local), ("refused", "malformed_query")),
             ("secure sum, another version", json.dumps({**local.to_dict(), "version": 99}), _setup(local), ("refused", "malformed_query"))]
    if low.derive().threshold < _SECURE_POLICY["secure_sum_min_participants"]:
        steps.append(("secure sum, threshold below the owner's minimum", low.to_json(), _setup(low), ("refused", "below_min_participants")))
    return steps


def _contribute(device: Device, query_json: str, setup: dict) -> dict:
    """One secure-sum round on ``device`` as the secure-sum ClientApp runs it: what leaves it."""
    fleet = DeviceFleet.open(device.config)
    try:
        vec = contribute(fleet, query_json, setup)
        return {"refused": None, "entries": len(vec), "summed": int(vec[-1]), "vector": [int(x) for x in vec]}
    except SecureSumRefusal as e:
        return {"refused": e.reason}
    finally:
        fleet.close()


def _secure_sequence(directory: Path) -> tuple:
    devices = {v: Device(directory / f"secure-{v}", policy=_SECURE_POLICY, variant=f"codes-{v}") for v in ("in", "out")}
    rows, failures, kept = [], [], {}
    for label, qjson, setup, expected in secure_script():
        before = {v: d.ledger_state() for v, d in devices.items()}
        got = {v: _contribute(d, qjson, setup) for v, d in devices.items()}
        after = {v: d.ledger_state() for v, d in devices.items()}
        seen = {v: {k: x for k, x in g.items() if k != "vector"} for v, g in got.items()}
        problems = [] if seen["in"] == seen["out"] else ["the answer depends on the values held"]
        for v in devices:
            (rem0, hist0), (rem1, hist1), g = before[v], after[v], got[v]
            if expected[0] == "charge":
                drops = {a - b for a, b in zip(rem0, rem1)}
                if g["refused"] is not None or g["summed"] != DEVICES or g["entries"] != 5:
                    problems.append(f"{v}: expected the {DEVICES} devices summed, got {g}")
                elif drops != {expected[1]}:
                    problems.append(f"{v}: charged {sorted(float(x) for x in drops)}, the round's charge is {float(expected[1])!r}")
                kept[(v, label)] = g.get("vector")
            else:
                if rem0 != rem1 or len(hist0) != len(hist1):
                    problems.append(f"{v}: a {expected[0]} changed the ledger")
                if expected[0] == "refused" and g["refused"] != expected[1]:
                    problems.append(f"{v}: expected refusal {expected[1]!r}, got {g['refused']!r}")
                if expected[0] == "retry" and g.get("vector") != kept.get((v, expected[1])):
                    problems.append(f"{v}: a retried round did not return the kept vector")
        rows.append({"step": label, "expected": expected[0] if expected[0] != "refused" else expected[1], "answer": seen["in"],
                     "passed": not problems})
        failures += [f"{label}: {p}" for p in problems]
    return rows, failures


def _discovery_sequence(directory: Path) -> tuple:
    """A heavy-hitter discovery collection on one device (group membership follows the device's
    keys, not its values, so it is checked per device: each device answers once, charged once)."""
    policy = {"lifetime_cap": "1000", "max_epsilon_per_query": "8", "allowed_mechanisms": ["pem"]}
    dev = Device(directory / "discovery", policy=policy)
    _, queries = level_queries("pem", "2", {"alphabet": "abcdefghijklmnopqrstuvwxyz", "max_length": 4, "top_k": 2}, "system/discovery")
    failures, answered = [], 0
    rem_start, _ = dev.ledger_state()
    for q in queries:
        rem0, _ = dev.ledger_state()
        reply = dev.answer(q.to_json())
        rem1, _ = dev.ledger_state()
        got = normalized(reply)
        answered += got["reports"]
        drops = [a - b for a, b in zip(rem0, rem1)]
        charge = report_charge(q.mechanism())
        if sorted(set(drops) - {0}) not in ([charge], []) or sum(1 for x in drops if x) != got["reports"]:
            failures.append(f"discovery group {q.discovery['level']}: {got['reports']} reports but charges {sorted(float(x) for x in set(drops))}")
        if got["reports"] + sum(got["refused"].values()) != DEVICES:
            failures.append(f"discovery group {q.discovery['level']}: the reply accounts for {got['reports'] + sum(got['refused'].values())} devices")
    rem_end, hist_end = dev.ledger_state()
    if answered != DEVICES or any(a - b != report_charge(queries[0].mechanism()) for a, b in zip(rem_start, rem_end)):
        failures.append(f"discovery: {answered} reports over the groups, expected each of the {DEVICES} devices once, charged once")
    again = Query.for_mechanism(queries[0].query_id + "-again", queries[0].mechanism(), discovery=queries[0].discovery)
    reply = normalized(dev.answer(again.to_json()))
    rem_again, hist_again = dev.ledger_state()
    if reply["reports"] or set(reply["refused"]) - {"already_answered", "other_group"} or rem_again != rem_end or len(hist_again) != len(hist_end):
        failures.append(f"discovery: a relabelled group query was answered {reply}")
    return [{"step": "discovery collection", "expected": "each device once", "groups": len(queries), "reports": answered, "passed": not failures}], failures


def device_layer(*, seed: int = 0, quick: bool = False, answer: Callable = device_answer, directory: str | Path, sequences: bool = True) -> dict:
    """Run :func:`script` on two devices (values inside / outside every domain) answering through
    ``answer`` (default: the node's real reply path) in ``directory`` (a fresh temporary
    directory) and check the module's four properties; ``sequences``: also the secure-sum, discovery
    and owner's-state sequences. ``seed`` and ``quick`` change nothing (the
    device draws from the OS CSPRNG; every check is exact)."""
    t0 = time.perf_counter()
    steps, policy = script()
    failures: list = []
    rows: list = []
    devices = {v: Device(Path(directory) / v, policy=policy, variant=v, answer=answer) for v in ("in", "out")}
    kept: dict = {}
    series_charged: dict = {v: Fraction(0) for v in devices}
    for label, qjson, mech, expected in steps:
        before = {v: d.ledger_state() for v, d in devices.items()}
        replies = {v: d.answer(qjson) for v, d in devices.items()}
        after = {v: d.ledger_state() for v, d in devices.items()}
        seen = {v: normalized(r) for v, r in replies.items()}
        problems = []
        if seen["in"] != seen["out"]:
            problems.append("the answer depends on the values held")
        for v in devices:
            (rem0, hist0), (rem1, hist1), got = before[v], after[v], seen[v]
            if expected[0] == "charge":
                eps = expected[1]
                if got["refused"] or got["reports"] != DEVICES:
                    problems.append(f"{v}: expected {DEVICES} reports, got {got['reports']} (refused {got['refused']})")
                drops = {a - b for a, b in zip(rem0, rem1)}
                if drops != {eps} or len(hist1) != len(hist0) + 1:
                    problems.append(f"{v}: charged {sorted(float(x) for x in drops)}, the query's charge is {float(eps)!r}")
                if expected[2] is not None:
                    series_charged[v] += min(drops) if drops else Fraction(0)
                kept[(v, label)] = wire_payloads(replies[v])
            else:
                if rem0 != rem1 or len(hist0) != len(hist1):
                    problems.append(f"{v}: a {expected[0]} changed the ledger")
                if expected[0] == "refused" and got["refused"] != {expected[1]: DEVICES}:
                    problems.append(f"{v}: expected refusal {expected[1]!r} from every device, got {got['refused']}")
                if expected[0] == "retry" and (not got["retry"] or wire_payloads(replies[v]) != kept.get((v, expected[1]))):
                    problems.append(f"{v}: a retry did not return the kept envelopes")
        row = {"step": label, "expected": expected[0] if expected[0] != "refused" else expected[1], "answer": seen["in"],
               "passed": not problems}
        if expected[0] == "charge" and mech is not None and expected[2] is None:
            realized, within = _realized_ok(mech, expected[1])
            row.update({"charged": float(expected[1]), "realized_epsilon": realized})
            if not within:
                problems.append(f"the realized ε {realized!r} exceeds the charge {float(expected[1])!r}")
        row["passed"] = not problems
        if problems:
            failures += [f"{label}: {p}" for p in problems]
        rows.append(row)
    for extra in (_secure_sequence, _discovery_sequence, functools.partial(lifecycle_sequence, answer=answer)) if sequences else ():
        more_rows, more_failures = extra(Path(directory))
        rows += more_rows
        failures += more_failures
    series = _build(*_SERIES)
    worst = worst_cases(series.transcript_model(), SERIES_COLLECTIONS)[("user", SERIES_COLLECTIONS)]
    transcript = {"mechanism": series.name, "T": SERIES_COLLECTIONS,
                  "exact_loss": math.inf if worst.ratio is None else epsilon_of_ratio(worst.ratio),
                  "charged": {v: float(c) for v, c in series_charged.items()}}
    for v, c in series_charged.items():
        if worst.ratio is None or not ratio_within_exp(worst.ratio, _float_down(c)):
            failures.append(f"{v}: the series' exact loss over every pair of histories ({transcript['exact_loss']:.6g}) "
                            f"exceeds the {float(c):.6g} its ledger charged for {SERIES_COLLECTIONS} collections")
    return {"layer": "device", "steps": rows, "transcript": transcript, "failures": failures,
            "seconds": round(time.perf_counter() - t0, 2), "passed": not failures}


