"""Issue 34, the collector no node can flood: each attack of the issue is rejected and counted
(counts bounded by what was received), and none changes an estimate; a malformed node reply —
through real Flower messages — is that node's error, counted by reason, never the run's end."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, DeviceFleet, Query
from ldp_plugin.federated.reply import validate_reply
from ldp_plugin.mechanisms.reports import to_wire, to_wire_each, wire_size

N = 60
MECH = ldp.OUE(epsilon=1.0, d=8)


@pytest.fixture()
def honest(tmp_path):
    q = Query.for_mechanism("attack", MECH, min_batch=10)
    fleets = [DeviceFleet(tmp_path / f"n{i}.sqlite", np.arange(N) % (3 + i), lifetime_cap="4") for i in range(2)]
    replies = [f.respond(q.to_json()) for f in fleets]
    ref = Collector(q)
    for r in replies:
        assert ref.ingest_reply(_raw(r), quota=N)["error"] is None
    assert ref.accepted == 2 * N
    return q, replies, ref


def _raw(reply: dict) -> dict:
    return {"devices": reply["devices"], "reports": list(reply["reports"]), "refused": json.dumps(reply["refused"]), "retry": reply["retry"]}


def _counts(col):
    return np.asarray(col.acc.counts).copy()


def _fresh(q, replies):
    col = Collector(q)
    for r in replies:
        col.ingest_reply(_raw(r), quota=N)
    return col


def test_a_batch_blob_under_one_id_is_one_rejected_element(honest):
    q, replies, ref = honest
    col = _fresh(q, replies)
    many = MECH.randomize_encoded(np.zeros(200_000, dtype=np.int64))  # the attack at 1/262 scale: one blob, many reports
    blob = os.urandom(16) + to_wire(MECH, many, tag=q.content_hash)
    huge = col.ingest_reply({"devices": N, "reports": [blob], "refused": "{}", "retry": False}, quota=N)
    assert huge["error"] == "oversize" and col.node_errors == {"oversize": 1}
    small = to_wire(MECH, MECH.randomize_encoded(np.zeros(3, dtype=np.int64)), tag=q.content_hash)
    res = col.ingest_reply({"devices": N, "reports": [os.urandom(16) + small], "refused": "{}", "retry": False}, quota=N)
    assert res["error"] is None and res["rejected"] == {"not_one_report": 1} and res["accepted"] == 0
    assert np.array_equal(_counts(col), _counts(ref)) and col.accepted == ref.accepted


def test_replayed_envelopes_are_duplicates_whatever_their_framing(honest):
    q, replies, ref = honest
    col = _fresh(q, replies)
    envs = replies[0]["reports"]
    over = col.ingest_reply({"devices": N, "reports": envs * 100, "refused": "{}", "retry": False}, quota=N)  # ×100: over quota, whole
    assert over["error"] == "over_quota"
    again = col.ingest_reply({"devices": N, "reports": envs, "refused": "{}", "retry": False}, quota=N)  # the same blobs resent by another node
    assert again["accepted"] == 0 and again["rejected"] == {"duplicate": N}
    inside = Collector(q)  # within one reply: 10 envelopes ×6 = 60 — 10 counted once
    r = inside.ingest_reply({"devices": N, "reports": envs[:10] * 6, "refused": "{}", "retry": False}, quota=N)
    assert r["accepted"] == 10 and r["rejected"] == {"duplicate": 50}
    assert np.array_equal(_counts(col), _counts(ref))


def test_a_sybil_node_claiming_100x_its_devices_is_rejected_whole(honest):
    q, replies, ref = honest
    col = _fresh(q, replies)
    target = MECH.randomize_encoded(np.full(100 * N, 7, dtype=np.int64))  # fresh, well-formed reports pushing item 7
    envs = [os.urandom(16) + b for b in to_wire_each(MECH, target, tag=q.content_hash)]
    res = col.ingest_reply({"devices": 100 * N, "reports": envs, "refused": "{}", "retry": False}, quota=N)
    assert res["error"] == "over_quota" and res["accepted"] == 0
    res = col.ingest_reply({"devices": N, "reports": envs[: N + 1], "refused": "{}", "retry": False}, quota=N)
    assert res["error"] == "over_quota"
    res = col.ingest_reply({"devices": N, "reports": envs[:N], "refused": json.dumps({"budget_exhausted": 1}), "retry": False}, quota=N)
    assert res["error"] == "over_quota"  # reports + refusals beyond the devices it registered
    assert np.array_equal(_counts(col), _counts(ref)) and col.node_errors == {"over_quota": 3}


def test_a_header_claiming_four_billion_reports_counts_one(honest):
    q, replies, ref = honest
    col = _fresh(q, replies)
    one = replies[0]["reports"][0]
    header = one[: len(one) - 4 - (len(one) - 16 - wire_size(MECH, 0, tag=q.content_hash))]
    forged = os.urandom(16) + header[16:] + struct.pack("<I", 4_294_967_295) + one[len(header) + 4:]
    wrong_tag = forged[:16 + 8] + bytes(16) + forged[16 + 24:]
    res = col.ingest_reply({"devices": N, "reports": [forged, wrong_tag], "refused": "{}", "retry": False}, quota=N)
    assert res["error"] is None and res["rejected"] == {"not_one_report": 1, "wrong_tag": 1}  # never 4,294,967,295
    assert sum(col.rejected.values()) <= col.bytes_received
    assert np.array_equal(_counts(col), _counts(ref))


@pytest.mark.parametrize("raw, reason", [
    ([1, 2, 3], "malformed"),
    ({"devices": 5}, "malformed"),
    ({"devices": 5, "reports": [], "refused": "[1, 2]", "retry": False}, "bad_field"),
    ({"devices": 5, "reports": [], "refused": "not json", "retry": False}, "bad_field"),
    ({"devices": 5, "reports": [], "refused": json.dumps({"budget_exhausted": -1e9}), "retry": False}, "bad_field"),
    ({"devices": 5, "reports": [], "refused": '{"budget_exhausted": NaN}', "retry": False}, "bad_field"),
    ({"devices": float("nan"), "reports": [], "refused": "{}", "retry": False}, "bad_field"),
    ({"devices": -1, "reports": [], "refused": "{}", "retry": False}, "bad_field"),
    ({"devices": 5, "reports": "abc", "refused": "{}", "retry": False}, "bad_field"),
    ({"devices": 5, "reports": [1, 2], "refused": "{}", "retry": False}, "bad_field"),
    ({"devices": 5, "reports": [], "refused": "{}", "retry": "yes"}, "bad_field"),
    ({"devices": 5, "reports": [], "refused": json.dumps({"Robert'); DROP": 1}), "retry": False}, "bad_field"),
    ({"devices": 10**12, "reports": [], "refused": "{}", "retry": False}, "over_quota"),
])
def test_every_field_of_a_reply_is_validated(raw, reason):
    reply, err = validate_reply(raw, quota=N, envelope_size=100)
    assert reply is None and err == reason


@pytest.fixture()
def flower_task():
    pytest.importorskip("flwr")
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    yield
    TaskIdentity._run_id = TaskIdentity._task_id = TaskIdentity._node_id = None


def test_hostile_flower_replies_are_node_errors_and_never_counted(honest, flower_task):
    from flwr.app import ConfigRecord, Error, Message, MetricRecord, RecordDict

    from ldp_plugin.federated.app import _record, reply_to_raw

    q, replies, ref = honest
    ask = Message(content=RecordDict({"query": ConfigRecord({"json": q.to_json()})}), dst_node_id=7, message_type="query")
    hostile = [
        Message(content=RecordDict({"other": ConfigRecord({"x": 1})}), reply_to=ask),                     # no `reply` record
        Message(content=RecordDict({"reply": MetricRecord({"devices": 3.0})}), reply_to=ask),              # the wrong record kind
        Message(content=RecordDict({"reply": ConfigRecord({"devices": 5, "refused": "[1]", "retry": False})}), reply_to=ask),  # a list
        Message(content=RecordDict({"reply": ConfigRecord({"devices": 5, "refused": json.dumps({"x": float("nan")}), "retry": False})}), reply_to=ask),
        Message(content=RecordDict({"reply": ConfigRecord({"devices": -1000000000, "refused": "{}", "retry": False})}), reply_to=ask),
        Message(content=RecordDict({"reply": ConfigRecord({"devices": 5, "refused": "{}", "retry": False, "extra": "x"})}), reply_to=ask),
        Message(Error(code=0, reason="boom"), reply_to=ask),
    ]
    col = Collector(q)
    for rep in hostile:
        raw, err = reply_to_raw(rep)
        if err is None:
            assert col.ingest_reply(raw, quota=N)["error"] is not None
        else:
            col.node_errors[err] = col.node_errors.get(err, 0) + 1
    assert sum(col.node_errors.values()) == len(hostile) and col.accepted == 0
    for r in replies:  # the honest nodes' replies, through the same Flower record path
        raw, err = reply_to_raw(Message(content=_record(r), reply_to=ask))
        assert err is None and col.ingest_reply(raw, quota=N)["error"] is None
    assert np.array_equal(_counts(col), _counts(ref))
    est, est_ref = col.estimate(), ref.estimate()
    assert np.array_equal(est.estimate, est_ref.estimate)


def test_the_reply_wire_is_one_blob_and_other_versions_are_refused(honest, flower_task):
    """Wire version 2: a reply's reports travel as one concatenated blob and are counted exactly as
    the list they were; a version-1 record (a list of reports), another version number, a blob of no
    whole number of envelopes or over the node's quota are that node's error, nothing counted."""
    from flwr.app import ConfigRecord, Message, RecordDict

    from ldp_plugin.federated.app import REPLY_WIRE, _record, reply_to_raw

    q, replies, ref = honest
    ask = Message(content=RecordDict({"query": ConfigRecord({"json": q.to_json()})}), dst_node_id=7, message_type="query")
    col = Collector(q)
    for r in replies:
        rec = _record(r)["reply"]
        assert "reports" not in rec and bytes(rec["blob"]) == b"".join(r["reports"]) and rec["wire"] == REPLY_WIRE == 2
        raw, err = reply_to_raw(Message(content=_record(r), reply_to=ask))
        assert err is None and isinstance(raw["reports"], bytes)
        assert col.ingest_reply(raw, quota=N)["error"] is None
    assert np.array_equal(_counts(col), _counts(ref)) and col.accepted == ref.accepted

    envs = list(replies[0]["reports"])
    size = len(envs[0])

    def rep(**rec):
        return Message(content=RecordDict({"reply": ConfigRecord({"devices": N, "refused": "{}", "retry": False, **rec})}), reply_to=ask)

    assert reply_to_raw(rep(reports=envs))[1] == "unsupported_version"  # the old list of reports
    assert reply_to_raw(rep(wire=1, blob=b"".join(envs)))[1] == "unsupported_version"
    assert reply_to_raw(rep(blob=b"".join(envs)))[1] == "malformed"  # no version at all
    bad = Collector(q)
    for blob, reason in ((b"".join(envs) + b"x", "bad_field"), (b"".join(envs * 2), "over_quota"), (b"".join(envs)[: size * 3 - 1], "bad_field")):
        raw, err = reply_to_raw(rep(wire=2, blob=blob))
        assert err is None and bad.ingest_reply(raw, quota=N)["error"] == reason
    assert bad.accepted == 0 and bad.node_errors == {"bad_field": 2, "over_quota": 1}
