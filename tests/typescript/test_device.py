"""The TypeScript device (policy + ledger in a file under Node) refuses exactly what the Python
device refuses, with the same reason codes, on the same sequence of queries; it charges a retried
query once and answers it with the kept envelope; its refusals never depend on its value; its
envelopes are accepted by the Python collector."""

from __future__ import annotations

import json
from fractions import Fraction

from ldp_plugin import KRR, OUE, HadamardResponse
from ldp_plugin.federated.collector import Collector
from ldp_plugin.federated.device import DeviceFleet, DevicePolicy
from ldp_plugin.federated.query import Query

from ._node import needs_node, run_node

pytestmark = needs_node


def _queries() -> list:
    q1 = Query.for_mechanism("q1", KRR(epsilon=1.0, d=4))
    relation = Query("q-rel", {"name": "krr", "params": {"epsilon": 1.0, "d": 4, "categories": None, "relation": "value"}}, "1.0")
    texts = [
        q1.to_json(),                                                    # charged 1
        q1.to_json(),                                                    # a retry: the kept envelope, charged once
        Query.for_mechanism("q-had", HadamardResponse(epsilon=1.0, d=4)).to_json(),  # mechanism_not_allowed
        Query.for_mechanism("q-big", KRR(epsilon=3.0, d=4)).to_json(),   # epsilon_above_policy
        Query.for_mechanism("q2", OUE(epsilon=2.0, d=4)).to_json(),      # charged 2 (3 of 3.5)
        Query.for_mechanism("q3", KRR(epsilon=0.5, d=4)).to_json(),      # charged 0.5: exactly the cap
        Query.for_mechanism("q4", KRR(epsilon=0.25, d=4)).to_json(),     # budget_exhausted
        json.dumps({**q1.to_dict(), "version": 2}),                      # unsupported_version
        json.dumps({**q1.to_dict(), "query_id": "q5", "seed": 1}),       # malformed_query (a field the query does not define)
        relation.to_json(),                                              # relation_not_allowed
        "{not json",                                                     # malformed_query
    ]
    return texts


def _python_reasons(tmp_path, texts: list, value, lifetime_cap="3.5", **policy) -> list:
    fleet = DeviceFleet(tmp_path / "py-ledger.db", [value], lifetime_cap=lifetime_cap,
                        policy=DevicePolicy(max_epsilon_per_query=Fraction(2), allowed_mechanisms=("krr", "oue")), **policy)
    out = []
    for t in texts:
        r = fleet.respond(t)
        out.append((next(iter(r["refused"])) if r["refused"] else None, bool(r["retry"]) if not r["refused"] else False))
    return out


def _typescript(tmp_path, texts: list, value, name="ts-ledger.json", lifetime_cap="3.5", **policy) -> dict:
    job = {"ledger": str(tmp_path / name), "value": value, "queries": texts,
           "policy": {"lifetimeCap": lifetime_cap, "maxEpsilonPerQuery": "2", "allowedMechanisms": ["krr", "oue"], **policy}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return json.loads(run_node("vectors/device_run.mjs", str(path)))


def test_typescript_device_refuses_exactly_what_the_python_device_refuses(tmp_path):
    texts = _queries()
    py = _python_reasons(tmp_path, texts, 2)
    ts = _typescript(tmp_path, texts, 2)
    got = [(a["refused"], a["retry"] if a["refused"] is None else False) for a in ts["answers"]]
    assert got == py
    assert [r for r, _ in py] == [None, None, "mechanism_not_allowed", "epsilon_above_policy", None, None, "budget_exhausted",
                                  "unsupported_version", "malformed_query", "relation_not_allowed", "malformed_query"]
    assert ts["remaining"] == {"lifetime": "0", "period": None}
    a = ts["answers"]
    assert a[1]["envelope"] == a[0]["envelope"]  # the retry is the kept envelope (same nonce): charged once
    # every envelope is accepted by the Python collector of its query (the retry as a duplicate)
    q1 = Query.from_json(texts[0])
    col = Collector(q1)
    assert col.ingest([bytes.fromhex(a[0]["envelope"]), bytes.fromhex(a[1]["envelope"])]) == {"accepted": 1, "rejected": {"duplicate": 1}}
    for i in (4, 5):
        assert Collector(Query.from_json(texts[i])).ingest([bytes.fromhex(a[i]["envelope"])])["accepted"] == 1


def test_typescript_device_refusals_do_not_depend_on_the_value(tmp_path):
    texts = _queries()
    first = _typescript(tmp_path, texts, 0, name="a.json")
    second = _typescript(tmp_path, texts, 3, name="b.json")
    assert [x["refused"] for x in first["answers"]] == [x["refused"] for x in second["answers"]]
    assert [x["envelope"] is None for x in first["answers"]] == [x["envelope"] is None for x in second["answers"]]


def test_typescript_device_period_cap_and_persisted_ledger(tmp_path):
    texts = [Query.for_mechanism(f"p{i}", KRR(epsilon=1.0, d=4)).to_json() for i in range(3)]
    policy = {"periodCap": "1", "period": "day"}
    first = _typescript(tmp_path, texts[:1], 1, name="p.json", lifetime_cap="5", **policy)
    assert [x["refused"] for x in first["answers"]] == [None]
    # a new process on the same file: the spend persisted, the day's cap is reached
    again = _typescript(tmp_path, texts, 1, name="p.json", lifetime_cap="5", **policy)
    assert [x["refused"] for x in again["answers"]] == [None, "budget_exhausted", "budget_exhausted"]
    assert again["answers"][0]["envelope"] == first["answers"][0]["envelope"]
    assert again["remaining"] == {"lifetime": "4", "period": "0"}
    py = _python_reasons(tmp_path, texts, 1, lifetime_cap="5", period_cap="1", period="day")
    assert [r for r, _ in py] == [None, "budget_exhausted", "budget_exhausted"]
    # the owner's caps are part of the ledger: opening it with other caps is refused
    other = _typescript(tmp_path, texts, 1, name="p.json", lifetime_cap="9", **policy)
    assert other == {"open_refused": "ledger_mismatch"}


def test_typescript_device_answers_a_set_query_with_pad_and_sample(tmp_path):
    from ldp_plugin import SampleOne

    mech = SampleOne(mechanism=KRR(epsilon=1.0, categories=["a", "b", "c"]), m=2)
    text = Query("sets", mech.spec(), "1.0").to_json()
    ts = _typescript(tmp_path, [text, text], ["c", "a"], name="s.json")
    assert [(a["refused"], a["retry"]) for a in ts["answers"]] == [(None, False), (None, True)]
    col = Collector(Query.from_json(text))
    assert col.ingest([bytes.fromhex(ts["answers"][0]["envelope"])]) == {"accepted": 1, "rejected": {}}
    py = _python_reasons(tmp_path, [text], "a")
    assert py == [(None, False)]


def test_typescript_device_charges_a_memoized_series_as_the_python_device(tmp_path):
    from ldp_plugin import LOLOHA

    mech = LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8, g=3)
    texts = [Query.for_mechanism(f"day{t}", mech).to_json() for t in range(1, 6)]
    value_level = Query.for_mechanism("value", LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8, g=3, relation="value")).to_json()
    texts.insert(2, value_level)  # the owner lists only "user": refused before any charge
    fleet = DeviceFleet(tmp_path / "series.db", [5], lifetime_cap="4",
                        policy=DevicePolicy(max_epsilon_per_query=Fraction(2), allowed_mechanisms=("loloha",)))
    py = [next(iter(r["refused"]), None) for r in (fleet.respond(t) for t in texts)]
    job = {"ledger": str(tmp_path / "series.json"), "value": 5, "queries": texts,
           "policy": {"lifetimeCap": "4", "maxEpsilonPerQuery": "2", "allowedMechanisms": ["loloha"]}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    ts = json.loads(run_node("vectors/device_run.mjs", str(tmp_path / "job.json")))
    assert [a["refused"] for a in ts["answers"]] == py == [None, None, "relation_not_allowed", None, "budget_exhausted", "budget_exhausted"]
    # charged: collection 1 costs ε₁, each later one the user-level increment (ε_inst here)
    spent = sum((mech.collection_cost(t) for t in (1, 2, 3)), Fraction(0))
    assert Fraction(ts["remaining"]["lifetime"]) == Fraction(4) - spent
    assert fleet.ledger.remaining_by_cohort()[0] == Fraction(4) - spent
    # the memoized reports: the same key gives the same seed every day; the collector accepts them
    seeds = set()
    for a, text in zip(ts["answers"], texts):
        if a["envelope"]:
            q = Query.from_json(text)
            col = Collector(q)
            assert col.ingest([bytes.fromhex(a["envelope"])])["accepted"] == 1
            seeds.add(bytes.fromhex(a["envelope"])[-12:-4])
    assert len(seeds) == 1
