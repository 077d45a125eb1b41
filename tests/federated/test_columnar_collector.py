"""Issue 39: the columnar collector path. ``Collector.ingest_array`` (one buffer of envelopes) and
``Collector.ingest`` (a list) accept, reject and count exactly alike, on both kernel backends;
the nonce set (``federated/nonces.py``) is an exact set — its hash table and its sorted arrays
answer like a Python set, also for forged nonces that share their first 8 bytes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.envelope import seal
from ldp_plugin.federated.nonces import NonceSet
from ldp_plugin.sampling import aggregate_kernels as ak
from ldp_plugin.sampling.aggregate_kernels import rows_match
from ldp_plugin.mechanisms.reports import to_wire_each


@pytest.fixture(params=["numpy", "numba"])
def backend(request, monkeypatch):
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", request.param)
    return request.param


def _reference_admit(seen: set, rows: np.ndarray) -> np.ndarray:
    out = []
    for r in rows:
        key = r.tobytes()
        out.append(key not in seen)
        seen.add(key)
    return np.array(out, dtype=bool)


def test_nonce_set_is_an_exact_set(backend):
    rng = np.random.default_rng(1)
    honest = rng.integers(0, 256, (5000, 16), dtype=np.uint8)
    forged = np.repeat(honest[:1], 300, axis=0).copy()  # one first word, 300 second words
    forged[:, 8:] = rng.integers(0, 256, (300, 8), dtype=np.uint8)
    forged[::7, 8:] = forged[0, 8:]  # and exact repeats among them
    batches = [honest[:3000], np.concatenate([honest[2000:], forged, honest[:10]]), forged[::-1], honest[::3]]
    s, ref = NonceSet(), set()
    for b in batches:
        assert np.array_equal(s.admit(b), _reference_admit(ref, b))
    assert len(s) == len(ref)


def test_nonce_set_survives_a_backend_change(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 256, (4000, 16), dtype=np.uint8)
    s, ref = NonceSet(), set()
    for i, env in enumerate(["numba", "numpy", "numba", "numpy"]):
        monkeypatch.setenv("LDP_PLUGIN_KERNELS", env)
        b = np.concatenate([rows[i * 1000:(i + 1) * 1000], rows[: 50 * i + 1]])
        assert np.array_equal(s.admit(b), _reference_admit(ref, b))
    assert len(s) == len(ref)


def test_rows_match_equals_the_bytewise_comparison(backend):
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 2, (2000, 61), dtype=np.uint8)
    pat = bytes(buf[5, 9:9 + 21])
    buf[::3, 9:9 + 21] = np.frombuffer(pat, dtype=np.uint8)
    buf[::9, 29] ^= 1  # the last byte of the band differs
    ref = (buf[:, 9:30] == np.frombuffer(pat, dtype=np.uint8)).all(axis=1)
    assert ref.sum() > 400 and np.array_equal(rows_match(buf, 9, pat), ref)


def _hostile_mix(mech, q):
    """Honest envelopes plus every kind of bad element the list path classifies, all of size."""
    honest = seal(to_wire_each(mech, mech.randomize_encoded(np.arange(600) % mech.d, rng=4), tag=q.content_hash))
    other = Query.for_mechanism("other", mech)
    wrong_tag = seal(to_wire_each(mech, mech.randomize_encoded(np.zeros(5, dtype=np.int64), rng=5), tag=other.content_hash))
    blob = bytearray(honest[0])
    blob[16:20] = b"XXXX"  # bad magic
    bad_range = bytearray(honest[1])
    bad_range[-1] = 0xFF  # padding bits set / value out of range
    return honest + honest[:40] + [x for x in wrong_tag if len(x) == len(honest[0])] + [bytes(blob), os.urandom(16) + bytes(bad_range)[16:]]


@pytest.mark.parametrize("make", [lambda: ldp.KRR(epsilon=1.0, d=1000), lambda: ldp.OUE(epsilon=1.0, d=13), lambda: ldp.OLH(epsilon=2.0, d=50)])
def test_ingest_array_counts_exactly_as_the_list_path(backend, make):
    mech = make()
    q = Query.for_mechanism("cols", mech)
    envs = _hostile_mix(mech, q)
    a, b = Collector(q), Collector(q)
    ra = a.ingest(envs + [b"\x00" * 7])  # a short element: the per-element list path
    assert a.ingest([12345, "x" * a.size]) == {"accepted": 0, "rejected": {"malformed": 2}}  # not bytes: never joined
    rb = b.ingest_array(b"".join(envs) + b"\x00" * 7)  # + a trailing partial envelope
    rb2 = b.ingest_array(np.frombuffer(b"".join(envs[:100]), dtype=np.uint8).reshape(100, -1))  # replayed as an array
    assert rb == ra and ra["rejected"]["malformed"] >= 2
    assert rb2 == {"accepted": 0, "rejected": {"duplicate": 100}}
    assert ra["accepted"] == 600 and ra["rejected"]["duplicate"] == 40 and ra["rejected"]["wrong_tag"] == 5
    assert np.array_equal(np.asarray(a.acc.counts), np.asarray(b.acc.counts)) and a.accepted == b.accepted
    assert sum(b.rejected.values()) + b.accepted <= b.bytes_received // 16  # bounded by the bytes received


def test_ingest_array_refuses_a_wrong_layout():
    mech = ldp.KRR(epsilon=1.0, d=10)
    col = Collector(Query.for_mechanism("x", mech))
    with pytest.raises(ldp.LDPParameterError, match="ingest_array"):
        col.ingest_array(np.zeros((3, col.size + 1), dtype=np.uint8))
    with pytest.raises(ldp.LDPParameterError, match="ingest_array"):
        col.ingest_array(12345)
    assert col.ingest_array(b"") == {"accepted": 0, "rejected": {}}


def test_nonce_set_reads_the_nonces_in_place_from_envelope_rows(backend):
    """admit() takes the envelopes themselves (the nonce = each row's first 16 bytes; the compiled
    kernel reads them without a copy), contiguous or not, with the same answers as the exact
    reference set — forged shared first words and replays inside and across batches included."""
    rng = np.random.default_rng(39)
    rows = rng.integers(0, 256, (6000, 61), dtype=np.uint8)
    rows[3000:3300, :8] = rows[0, :8]  # one first word, many second words
    rows[5000:5100, :16] = rows[100:200, :16]  # replays of earlier nonces, other payloads
    s, ref = NonceSet(), set()
    for b in (rows[:2500], rows[2500:], rows[::-2], np.asfortranarray(rows[:700])):
        assert np.array_equal(s.admit(b), _reference_admit(ref, b[:, :16]))
    assert len(s) == len(ref)
    with pytest.raises(ValueError):
        s.admit(rows[:, :15])


@pytest.mark.parametrize("make", [lambda: ldp.KRR(epsilon=1.0, d=1000), lambda: ldp.OUE(epsilon=1.0, d=13)])
def test_a_reply_of_exact_envelopes_takes_the_columnar_path_with_the_same_counts(backend, make, monkeypatch):
    """ingest_reply joins a reply of exact-size envelopes into one buffer for ingest_array (no
    per-report Python); a reply with one odd element takes the list path. Both count alike, per
    node too, and the quota and byte checks still run first."""
    mech = make()
    q = Query.for_mechanism("reply", mech)
    envs = _hostile_mix(mech, q)
    raw = lambda reports: {"devices": len(envs) + 1, "reports": reports, "refused": "{}", "retry": False}  # noqa: E731
    calls = []
    real = Collector.ingest_array
    monkeypatch.setattr(Collector, "ingest_array", lambda self, buf: calls.append(len(buf)) or real(self, buf))
    a, b = Collector(q), Collector(q)
    ra = a.ingest_reply(raw(envs), quota=len(envs) + 1, node=7)
    assert calls == [len(envs)]  # one buffer of rows, the whole reply
    rb = b.ingest_reply(raw(envs + [b"x"]), quota=len(envs) + 1, node=7)
    assert len(calls) == 1  # the odd element: the list path
    assert rb["rejected"].pop("malformed") == ra["rejected"].pop("malformed", 0) + 1 and rb == ra
    assert np.array_equal(np.asarray(a.node_accumulators[7].counts), np.asarray(b.node_accumulators[7].counts))
    assert np.array_equal(np.asarray(a.acc.counts), np.asarray(b.acc.counts)) and a.accepted == b.accepted == 600
    assert a.ingest_reply(raw(envs), quota=len(envs))["error"] == "over_quota" and len(calls) == 1


def test_admit_matching_is_rows_match_then_admit(backend):
    """The one-pass header check + nonce admission: status 2 for a row whose band differs (its
    nonce is NOT recorded: the same nonce under the right header later is new), else 1/0 exactly
    as the reference set answers; contiguous rows (the compiled kernel) and strided ones alike."""
    rng = np.random.default_rng(7)
    pat = bytes(rng.integers(0, 256, 11, dtype=np.uint8))
    rows = rng.integers(0, 256, (3000, 40), dtype=np.uint8)
    rows[:, 20:31] = np.frombuffer(pat, dtype=np.uint8)
    rows[::5, 30] ^= 1  # the band's last byte differs
    rows[::7, 20] ^= 2  # its first byte
    rows[1000:1200, :16] = rows[:200, :16]  # replays (some of whose first copies had a bad header)
    s, ref = NonceSet(), set()
    for b in (rows[:1500], rows[1500:], rows[::-3], rows[::2]):
        ok = (b[:, 20:31] == np.frombuffer(pat, dtype=np.uint8)).all(axis=1)
        want = np.full(b.shape[0], 2, dtype=np.uint8)
        want[ok] = _reference_admit(ref, b[ok, :16])
        assert np.array_equal(s.admit_matching(b, 20, pat), want)
    assert len(s) == len(ref) and 0 < (want == 2).sum() < want.size


def test_admission_with_the_scan_on_both_cores_equals_the_one_thread_kernel(monkeypatch):
    """100,001 envelope rows, the scan of the rows split over two threads (from 2^14 rows a share
    here, 2^18 in use): header mismatches in
    the first share (a gap to close), replays within and across the shares and of nonces already
    in the set, forged nonces sharing their first word. The split admission gives exactly the
    statuses, the payloads and the set of the one-thread kernel, and the numpy twin's answers."""
    pytest.importorskip("numba")
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numba")
    rng = np.random.default_rng(11)
    pat = bytes(rng.integers(0, 256, 9, dtype=np.uint8))
    m, w, poff = 100_001, 40, 25
    rows = rng.integers(0, 256, (m, w), dtype=np.uint8)
    rows[:, 16:25] = np.frombuffer(pat, dtype=np.uint8)
    rows[3:40_000:97, 20] ^= 4  # header mismatches, most in the first share
    rows[75_000:75_300, :16] = rows[100:400, :16]  # replays of the first share in the second
    rows[10:20, :16] = rows[0, :16]  # and within the first
    rows[80_000:80_500, 8:16] = rows[80_000, 8:16]  # forged: one second word, many first words
    earlier = rows[99_000:99_100, :16].copy()
    runs = []
    for split in (True, False):
        monkeypatch.setattr(ak, "_SCAN_SPLIT", 1 << 14)
        s = NonceSet()
        s.admit(earlier)  # in the set before the batch
        if not split:  # the one-thread kernel, called as the collector called it before the split
            monkeypatch.setattr(ak, "_SCAN_SPLIT", m + 1)
        status, payload = s.admit_envelopes(rows, 16, pat, poff)
        keys, used = s._table  # each set hashes with its own secret salt: its keys, not their slots
        taken = keys[used != 0]
        runs.append((status.copy(), payload.copy(), taken[np.lexsort((taken[:, 1], taken[:, 0]))], len(s)))
        assert ak._workers(m, ak._SCAN_SPLIT) == (2 if split and (os.cpu_count() or 1) > 1 else 1)
    for a, b in zip(runs[0], runs[1]):
        assert np.array_equal(a, b)
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numpy")  # the sorted-array twin: an independent reference
    ref = NonceSet()
    ref.admit(earlier)
    want = ref.admit_matching(rows, 16, pat)
    assert np.array_equal(runs[0][0], want) and 0 < (want == 2).sum() and 0 < (want == 0).sum()
    assert np.array_equal(runs[0][1], rows[want == 1, poff:])
