"""``IngestService.status`` releases the estimation result's generic rows (the rows a Flower round
releases), whatever the estimator returns: a scalar estimate (a mean) is one row, never an error."""

from __future__ import annotations

import hashlib

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.federated.envelope import seal
from ldp_plugin.federated.ingest import ClientToken, IngestService
from ldp_plugin.federated.query import Query
from ldp_plugin.federated.results import released_rows
from ldp_plugin.mechanisms.reports import to_wire_each


def _service(mech, min_batch):
    q = Query.for_mechanism("t/q/r1", mech, min_batch=min_batch)
    tokens = {hashlib.sha256(b"device-token").hexdigest(): ClientToken("phone", "device", 100),
              hashlib.sha256(b"analyst-token").hexdigest(): ClientToken("analyst", "analyst", 1)}
    return IngestService([q], tokens), q


def _post(svc, q, mech, values):
    body = b"".join(seal(to_wire_each(mech, mech.randomize(values), tag=q.content_hash)))
    return svc.post("Bearer device-token", q.content_hash.hex(), "application/octet-stream", body)


def test_a_mean_estimate_is_released_as_one_row():
    mech = ldp.Piecewise(epsilon=1.0)
    svc, q = _service(mech, 4)
    assert _post(svc, q, mech, np.linspace(0, 1, 3)) == (200, {"accepted": 3})
    code, body = svc.status("Bearer analyst-token", q.content_hash.hex())
    assert code == 200 and "estimate" not in body  # below the minimum batch: counts only
    assert _post(svc, q, mech, np.linspace(0, 1, 5))[0] == 200
    code, body = svc.status("Bearer analyst-token", q.content_hash.hex())
    col = svc.served[q.content_hash.hex()].collector
    est = col.estimate()
    assert code == 200 and body["accepted"] == 8
    assert body["estimate"] == [{"item": None, "estimate": float(est.mean), "ci_lower": float(est.ci_lower), "ci_upper": float(est.ci_upper)}]


def test_a_frequency_estimate_is_released_as_the_flower_rounds_rows():
    mech = ldp.KRR(epsilon=1.0, d=3)
    svc, q = _service(mech, 2)
    assert _post(svc, q, mech, np.array([0, 1, 2, 2]))[0] == 200
    code, body = svc.status("Bearer analyst-token", q.content_hash.hex())
    col = svc.served[q.content_hash.hex()].collector
    assert code == 200 and body["estimate"] == released_rows(col)
    assert [r["item"] for r in body["estimate"]] == [0, 1, 2]
    raw = col.estimate(postprocess="none")
    assert [r["estimate"] for r in body["estimate"]] == [float(v) for v in raw.estimate]  # the raw unbiased estimate, not a projection
