"""One row-check path, for EVERY registered name (and the wrappers): a malformed report among valid
ones is refused alone — counted by its reason, the others accepted, nothing raised — through the
wire decoders (``from_wire_many``, ``from_wire``) and the federated collector (``Collector.ingest``,
``Collector.ingest_array``).

Two kinds of malformed report are built from the mechanism's own ``report_fields()``, never from a
list of names: a field value outside its declared range (the field checks), and rows whose every
field is in range but that break a family's own rule (a tree report's other levels, an attribute's
own range: the family hook ``_row_problems``). For the second kind, random in-range rows are drawn;
whatever the one path accepts, the accumulator must add without raising, and for every family that
declares a hook the draw must find a row the hook refuses (so the test cannot pass on nothing)."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp

from ldp_plugin.federated import Collector, Query
from ldp_plugin.federated.envelope import seal
from ldp_plugin.mechanisms.base import MechanismBase
from ldp_plugin.mechanisms.reports import (
    check_reports, from_wire, from_wire_many, report_count, rows_to_reports, to_wire, to_wire_each, wire_size,
)

from ._helpers import registry_instances, valid_reports

N = 100
CASES = registry_instances()


@pytest.fixture(params=[f for _, f in CASES], ids=[i for i, _ in CASES])
def mech(request):
    return request.param()


def _payload_bytes(m) -> int:
    return sum(np.dtype(f.dtype).itemsize * max(f.width, 1) for f in m.base.report_fields())


def _out_of_range_row(m, row: bytes) -> tuple:
    """``row`` (one report's payload bytes) with one field set outside its declared range, and the
    reason the checks must give; the first field that can be broken on the wire is used."""
    row, pos = bytearray(row), 0
    for f in m.base.report_fields():
        size = np.dtype(f.dtype).itemsize
        width = size * max(f.width, 1)
        if f.kind in ("int", "sorted") and f.bound is not None and f.bound < 1 << (8 * size):
            row[pos:pos + size] = int(f.bound).to_bytes(size, "little")
            return bytes(row), "out_of_range"
        if f.kind == "bits" and f.bound % 8:
            row[pos + width - 1] |= 1 << (f.bound % 8)
            return bytes(row), "padding_bits"
        if f.kind == "bool":
            row[pos] = 2
            return bytes(row), "out_of_range"
        pos += width
    raise AssertionError(f"{m.name}: no report field can be broken on the wire")  # pragma: no cover


def _in_range_rows(m, n: int, seed: int) -> np.ndarray:
    """``n`` random payload rows whose every field is within its declared range (bits: padding
    zero; sorted: strictly increasing; bool: 0 or 1) — rows only a family's own rule can refuse."""
    gen = np.random.default_rng(seed)
    parts = []
    for f in m.base.report_fields():
        dt = np.dtype(f.dtype)
        w = max(f.width, 1)
        if f.kind == "bool":
            a = gen.integers(0, 2, (n, w)).astype(np.uint8)
        elif f.kind == "bits":
            a = gen.integers(0, 256, (n, w)).astype(np.uint8)
            if f.bound % 8:
                a[:, -1] &= (1 << (f.bound % 8)) - 1
        elif f.kind == "sorted":
            a = np.sort(np.stack([gen.choice(f.bound, size=w, replace=False) for _ in range(n)]), axis=1).astype(dt)
        elif f.bound is None:
            a = gen.integers(0, np.iinfo(dt).max, (n, w), dtype=np.uint64, endpoint=True).astype(dt)
        else:
            a = gen.integers(0, f.bound, (n, w)).astype(dt)
        parts.append(np.ascontiguousarray(a.astype(dt.newbyteorder("<"))).view(np.uint8).reshape(n, -1))
    return np.hstack(parts)


def _query(m) -> Query:
    return Query(query_id="rows", spec=m.spec(), epsilon=repr(float(m.epsilon)))


def _one_report_header(m, tag: bytes) -> bytes:
    blob = to_wire_each(m, valid_reports(m, 1), tag=tag)[0]
    return blob[: len(blob) - _payload_bytes(m)]


def _refused_alone(m, bad_row: bytes, reason: str) -> None:
    q = _query(m)
    tag = q.content_hash
    blobs = to_wire_each(m, valid_reports(m, N, seed=7), tag=tag)
    bad = _one_report_header(m, tag) + bad_row
    assert len(bad) == len(blobs[0])
    blobs.insert(N // 2, bad)
    # the wire decoders: one report per blob, and one batch blob
    ok, rejected = from_wire_many(m, blobs, tag=tag)
    assert (report_count(m, ok), rejected) == (N, {reason: 1})
    rows = np.frombuffer(b"".join(b[len(b) - len(bad_row):] for b in blobs), dtype=np.uint8).reshape(N + 1, -1)
    one_blob = to_wire(m, rows_to_reports(m, rows), tag=tag)  # the wire batch is columnar: fields one after another
    assert len(one_blob) == wire_size(m, N + 1, tag=tag)
    ok, rejected = from_wire(m, one_blob, tag=tag)
    assert (report_count(m, ok), rejected) == (N, {reason: 1})
    # the collector: a list of envelopes, and the columnar path
    envelopes = seal(blobs)
    assert Collector(q).ingest(envelopes) == {"accepted": N, "rejected": {reason: 1}}
    col = Collector(q)
    assert col.ingest_array(b"".join(envelopes)) == {"accepted": N, "rejected": {reason: 1}}
    assert (col.accepted, col.rejected) == (N, {reason: 1})


def test_a_report_out_of_a_fields_range_is_refused_alone(mech):
    tag = _query(mech).content_hash
    row = to_wire_each(mech, valid_reports(mech, 1), tag=tag)[0][-_payload_bytes(mech):]
    bad_row, reason = _out_of_range_row(mech, row)
    _refused_alone(mech, bad_row, reason)


def test_rows_in_every_fields_range_pass_one_path_and_the_accumulator(mech):
    """In-range random rows: the one path (``check_reports``) decides; what it accepts the
    accumulator adds without raising, and a row the family's hook refuses is refused alone
    through the decoders and the collector."""
    rows = _in_range_rows(mech, 400, seed=11)
    accepted, rejected = check_reports(mech, rows_to_reports(mech, rows))
    n_ok = report_count(mech, accepted)
    assert n_ok + sum(rejected.values()) == rows.shape[0]
    mech.accumulator().add(accepted)  # never raises on what the one path accepted
    if not _hooked(mech):
        assert rejected == {}, "rows in every field's range are refused only by a family hook"
        return
    if rejected:  # the hook bit on this instance: a refused row is refused alone
        _hook_refuses_alone(mech, rows, rejected)


def _hooked(m) -> bool:
    return type(m.base)._row_problems is not MechanismBase._row_problems


def _hook_refuses_alone(m, rows, rejected) -> None:
    reason = next(iter(rejected))
    refused = [i for i in range(rows.shape[0]) if check_reports(m, rows_to_reports(m, rows[i:i + 1]))[1]]
    _refused_alone(m, rows[refused[0]].tobytes(), reason)
    # and the whole draw through the collector: counted, never raised
    q = _query(m)
    envelopes = seal([_one_report_header(m, q.content_hash) + r.tobytes() for r in rows])
    n_ok = rows.shape[0] - sum(rejected.values())
    assert Collector(q).ingest(envelopes) == {"accepted": n_ok, "rejected": rejected}


#: for every family with a row hook, an instance on which its rule is stricter than its fields'
#: ranges (a canonical instance may have none: SMP-pairs over equal pair sizes)
HOOK_POWER = [
    pytest.param(lambda: ldp.HierarchicalHistogram(epsilon=1.0, lower=0.0, upper=1.0, buckets=16), id="hierarchical-histogram"),
    pytest.param(lambda: ldp.HaarHRR(epsilon=1.0, lower=0.0, upper=1.0, buckets=16), id="haar-hrr"),
    pytest.param(lambda: ldp.SPL(epsilon=1.0, domains=(2, 5)), id="spl"),
    pytest.param(lambda: ldp.RSFD(epsilon=1.0, domains=(2, 5)), id="rsfd"),
    pytest.param(lambda: ldp.SMP(epsilon=1.0, domains=(2, 5)), id="smp"),
    pytest.param(lambda: ldp.SMPPairs(epsilon=1.0, domains=(2, 3, 4)), id="smp-pairs"),
]


def test_every_family_hook_has_a_power_instance():
    hooked = {type(f().base) for _, f in CASES if _hooked(f())}
    assert hooked == {type(p.values[0]()) for p in HOOK_POWER}


@pytest.mark.parametrize("make", HOOK_POWER)
def test_a_family_hook_refuses_rows_its_fields_accept(make):
    m = make()
    rows = _in_range_rows(m, 400, seed=11)
    accepted, rejected = check_reports(m, rows_to_reports(m, rows))
    assert rejected, f"{m.name}: none of 400 in-range rows broke the family's rule (power)"
    m.accumulator().add(accepted)
    _hook_refuses_alone(m, rows, rejected)
