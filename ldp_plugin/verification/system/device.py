"""The device as a channel: a deployed device — its owner's policy, keystore and SQLite ledger —
answering a sequence of queries of every kind it accepts, through the node's reply path
(:func:`ldp_plugin.federated.app.device_answer`), compared with what its ledger charged.

The sequence (:func:`script`): one query of each input kind (categories, unary bits, sets, a
number, attribute tuples, key–value pairs), three collections of a memoized series (L-GRR, keyed by
the keystore), and every refusal the device's checks make before a spend — a query that is not
JSON or of another version, a mechanism the owner did not allow, ε above and below the owner's
limits, a charging relation the owner did not allow, a query whose planned memory exceeds the
owner's limit, a retried query (the kept reply), a query beyond the remaining budget, and one
beyond the owner's daily limit. It runs on two devices that differ **only in what their users
hold**: values inside every domain, and values outside every domain (the device's domain rule
replaces them).

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

Power: the seeded bugs of :mod:`.seeded_bugs` (a series charged only once; a device whose refusal
reads the values) each fail it.
"""

from __future__ import annotations

import json
import math
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from ...exact import epsilon_of_ratio, ratio_within_exp
from ...federated.app import device_answer
from ...federated.query import Query
from ...mechanisms.charge import report_charge
from ...registry import KINDS, load_registry
from ..histories import worst_cases
from ._fixture import DEVICES, Device, normalized, wire_payloads

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
    krr = steps[0]
    refusals = [
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
    names = sorted({n for n, _ in _ANSWERED} | {_SERIES[0]})
    policy = {"lifetime_cap": f"{cap.numerator / cap.denominator:.3f}", "max_epsilon_per_query": "4", "min_epsilon_per_query": "0.05",
              "allowed_mechanisms": names, "max_queries_per_day": len(charged) + 1, "max_query_bytes": _MAX_QUERY_BYTES}
    return steps, policy


def _realized_ok(mech: Any, charge: Fraction) -> tuple:
    ratio = mech.channel().max_ratio()
    return epsilon_of_ratio(ratio), ratio_within_exp(ratio, _float_down(charge))


def _float_down(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def device_layer(*, seed: int = 0, quick: bool = False, answer: Callable = device_answer, directory: str | Path) -> dict:
    """Run :func:`script` on two devices (values inside / outside every domain) answering through
    ``answer`` (default: the node's real reply path) in ``directory`` (a fresh temporary
    directory) and check the module's four properties. ``seed`` and ``quick`` change nothing (the
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


