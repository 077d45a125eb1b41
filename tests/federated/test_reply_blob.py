"""A node's reply as one blob (reply wire 2), through the Flower record, on both kernel backends:
every envelope check of the list path holds on the blob — a malformed or foreign header, an
out-of-range value, a nonce replayed inside the reply or across replies — counted by reason
exactly as the per-envelope list path counts them, never in the estimate; a blob of no whole
number of envelopes and a version-1 record are the node's error. The nonce table reserved for the
registered quota answers exactly as the grown one, and the one-pass gather of admitted payloads
is the rows' payload bytes in row order."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("flwr")

import ldp_plugin as ldp  # noqa: E402
from flwr.app import ConfigRecord, Message, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402
from ldp_plugin.federated import Collector, Query  # noqa: E402
from ldp_plugin.federated.app import _record, reply_to_raw  # noqa: E402
from ldp_plugin.federated.envelope import NONCE_BYTES, seal  # noqa: E402
from ldp_plugin.federated.nonces import NonceSet  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire_each  # noqa: E402

N = 400


@pytest.fixture(params=["numpy", "numba"])
def backend(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", request.param)
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    yield request.param
    TaskIdentity._run_id = TaskIdentity._task_id = TaskIdentity._node_id = None


@pytest.fixture(params=[ldp.KRR(epsilon=1.0, d=16), ldp.OUE(epsilon=1.0, d=12)], ids=["krr", "oue"])
def mech(request):
    return request.param


def _message(q: Query, envs: list, devices: int) -> Message:
    ask = Message(content=RecordDict({"query": ConfigRecord({"json": q.to_json()})}), dst_node_id=7, message_type="query")
    return Message(content=_record({"devices": devices, "reports": envs, "refused": {"below_policy": 1}, "retry": False}), reply_to=ask)


def _hostile_reply(q: Query, mech, honest: list, other: Query) -> tuple[list, dict]:
    """Envelopes of one reply: the honest ones with, spread among them, a wrong magic, a foreign
    query's envelope, an out-of-range value (or padding bits) and replays of earlier rows."""
    size = len(honest[0])
    out = list(honest)
    bad_magic = bytearray(honest[0])
    bad_magic[NONCE_BYTES] ^= 0xFF
    bad_magic[:NONCE_BYTES] = os.urandom(NONCE_BYTES)
    foreign = seal(to_wire_each(mech, mech.randomize_encoded(np.zeros(1, dtype=np.int64)), tag=other.content_hash))[0]
    out_of_range = bytearray(honest[1])
    out_of_range[:NONCE_BYTES] = os.urandom(NONCE_BYTES)
    out_of_range[-1] = 0xFF  # k-RR: a code far above d; OUE d = 12: padding bits set
    for i, e in ((5, bytes(bad_magic)), (50, foreign), (90, bytes(out_of_range)), (120, honest[3]), (300, honest[299])):
        out.insert(i, e)
    assert all(len(e) == size for e in out)
    reason = "out_of_range" if mech.name == "krr" else "padding_bits"
    return out, {"malformed": 1, "wrong_tag": 1, reason: 1, "duplicate": 2}


def test_a_hostile_blob_is_counted_like_the_list_and_never_estimated(backend, mech):
    q, other = Query.for_mechanism("blob", mech, min_batch=1), Query.for_mechanism("other", mech, min_batch=1)
    honest = [seal(to_wire_each(mech, mech.randomize_encoded(np.arange(N) % 10 + k), tag=q.content_hash)) for k in range(2)]
    envs, want = _hostile_reply(q, mech, honest[0], other)
    ref = Collector(q)  # the honest envelopes only, as a list
    for h in honest:
        assert ref.ingest(h)["accepted"] == N
    listed = Collector(q)  # the same hostile envelopes through the per-envelope list path
    assert listed.ingest(envs) == {"accepted": N, "rejected": want}
    for reserved in (0, 4 * N):
        col = Collector(q, expected_reports=reserved)
        raw, err = reply_to_raw(_message(q, envs, len(envs) + 1))
        assert err is None and isinstance(raw["reports"], bytes)
        res = col.ingest_reply(raw, quota=len(envs) + 1, node=1)
        assert res == {"accepted": N, "rejected": want, "refused": {"below_policy": 1}, "retry": False, "error": None}
        # the same envelopes resent by another node, beside its honest ones: replays, whatever node sends them
        res2 = col.ingest_reply(reply_to_raw(_message(q, honest[1] + honest[0][:7], N + 8))[0], quota=N + 8, node=2)
        assert res2["accepted"] == N and res2["rejected"] == {"duplicate": 7}
        assert col.accepted == ref.accepted == 2 * N and col.rejected == {k: v + (7 if k == "duplicate" else 0) for k, v in want.items()}
        assert np.array_equal(np.asarray(col.acc.counts), np.asarray(ref.acc.counts))
        assert np.array_equal(col.estimate().estimate, ref.estimate().estimate)
        assert {k: a.n for k, a in col.node_accumulators.items()} == {1: N, 2: N}


def test_a_blob_of_no_whole_envelopes_or_an_old_record_is_the_nodes_error(backend, mech):
    q = Query.for_mechanism("blob", mech, min_batch=1)
    envs = seal(to_wire_each(mech, mech.randomize_encoded(np.arange(20) % 10), tag=q.content_hash))
    col = Collector(q)
    for blob, reason in ((b"".join(envs)[:-1], "bad_field"), (b"".join(envs) + b"\0", "bad_field"), (b"".join(envs) * 3, "over_quota")):
        raw, err = reply_to_raw(Message(content=RecordDict({"reply": ConfigRecord({"wire": 2, "devices": 20, "blob": blob, "refused": "{}",
                                                                                   "retry": False})}), reply_to=_message(q, envs, 20)))
        assert err is None and col.ingest_reply(raw, quota=40)["error"] == reason
    old = Message(content=RecordDict({"reply": ConfigRecord({"devices": 20, "reports": envs, "refused": "{}", "retry": False})}),
                  reply_to=_message(q, envs, 20))
    assert reply_to_raw(old) == (None, "unsupported_version")
    assert col.accepted == 0 and col.rejected == {} and col.node_errors == {"bad_field": 2, "over_quota": 1}


def test_the_one_pass_gather_is_the_admitted_rows_payload(backend):
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 256, (3000, 40), dtype=np.uint8)
    rows[:, 16:24] = 7  # the pattern
    rows[::11, 20] = 8  # wrong pattern
    rows[2000:2300, :16] = rows[100:400, :16]  # replays of earlier rows' nonces
    s, ref = NonceSet(), NonceSet()
    s.reserve(10_000)
    for part in (rows[:1800], rows[1800:], rows[:50]):
        status, payload = s.admit_envelopes(np.ascontiguousarray(part), 16, bytes([7] * 8), 30)
        assert np.array_equal(status, ref.admit_matching(np.ascontiguousarray(part), 16, bytes([7] * 8)))
        assert np.array_equal(payload, part[status == 1, 30:])
    assert len(s) == len(ref) == int(np.unique(rows[rows[:, 20] == 7, :16], axis=0).shape[0])

