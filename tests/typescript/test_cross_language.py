"""The TypeScript client against the Python client, both directions.

* Python → TypeScript: every cross-language vector (a report the Python client made from a
  recorded seeded stream) is reproduced byte for byte by the TypeScript client replaying the same
  bytes, which it must consume exactly.
* TypeScript → Python: envelopes the TypeScript client seals are accepted by the Python
  :class:`~ldp_plugin.federated.collector.Collector` (nothing rejected) and decoded by
  ``from_wire_many``; their estimate is within the analytic standard error of the truth, and the
  same counts decoded with a channel 30% off are rejected (power check).
* The committed compiled client (``dist/``) is what the TypeScript sources compile to.
"""

from __future__ import annotations

import filecmp
import json
import subprocess

import numpy as np
import pytest

from ldp_plugin import CMS, HCMS, Duchi, Hybrid, Piecewise, SquareWave, KRR, OLH, ORR, OUE, RAPPOR, HadamardMechanism, HadamardResponse, KSubset, WarnerRR
from ldp_plugin.federated.collector import Collector
from ldp_plugin.federated.envelope import NONCE_BYTES
from ldp_plugin.federated.query import Query
from ldp_plugin.mechanisms.reports import from_wire_many
from ldp_plugin.sampling import SeededRandomSource

from ._node import CLIENT, NODE, dev_tools, needs_node, run_node, run_node_json
from .vectors import VECTORS_PATH, make_vectors, vectors_text

pytestmark = needs_node


def test_committed_vectors_are_the_python_clients_output():
    assert VECTORS_PATH.read_text() == vectors_text(), "regenerate with: python -m tests.typescript.vectors"


def test_typescript_reproduces_every_python_vector_byte_for_byte(tmp_path):
    vectors = make_vectors()
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors))
    got = run_node_json("vectors/replay.mjs", str(path))
    assert len(got) == len(vectors)
    names = set()
    for v, g in zip(vectors, got):
        names.add(v["spec"].get("name") or v["spec"]["set"])
        assert g["wire"] == v["wire"], (v["spec"], v["value"])
        assert 2 * g["consumed"] == len(v["random"]), (v["spec"], v["value"])
    assert names == {"krr", "warner", "rappor", "oue", "olh", "hadamard", "hadamard-mechanism", "k-subset", "orr", "orappor", "cms", "hcms",
                     "duchi", "piecewise", "hybrid", "square-wave", "sample-one", "loloha"}


def test_a_changed_byte_changes_the_typescript_report(tmp_path):
    """Power check of the byte-identity test: replaying a perturbed stream must break identity."""
    vectors = [v for v in make_vectors(seeds_per_value=2) if v["spec"].get("name") in ("krr", "oue")][:40]
    for v in vectors:
        raw = bytearray.fromhex(v["random"])
        raw[0] ^= 0xF0  # the first (top) nibble decides keep / the own bit
        v["random"] = raw.hex()
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors))
    got = run_node_json("vectors/replay.mjs", str(path))
    assert sum(g["wire"] != v["wire"] for v, g in zip(vectors, got)) >= len(vectors) // 4


def _typescript_envelopes(tmp_path, mech, values, tag: bytes, seed=None) -> list:
    job = {"spec": mech.spec(), "values": values, "tag": tag.hex()}
    if seed is not None:  # a recorded seeded stream, long enough for every user
        stream = tmp_path / "stream.hex"
        stream.write_text(SeededRandomSource(seed).random_bytes(600 * len(values)).tobytes().hex())
        job["random"] = str(stream)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return [bytes.fromhex(line) for line in run_node("vectors/make_reports.mjs", str(path)).split()]


_CROSS = [KRR(epsilon=2.0, d=6), OUE(epsilon=2.0, d=6), RAPPOR(epsilon=2.0, d=6), OUE(epsilon=5.0, d=6), OLH(epsilon=2.0, d=6),
          HadamardResponse(epsilon=2.0, d=6), HadamardMechanism(epsilon=2.0, d=6), KSubset(epsilon=2.0, d=6, k=2)]


@pytest.mark.parametrize("mech", _CROSS, ids=["krr", "oue", "rappor", "oue-sparse", "olh", "hadamard", "hadamard-mechanism", "k-subset"])
def test_typescript_reports_are_accepted_and_estimated_by_the_python_collector(tmp_path, mech):
    theta = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    n = 12000
    values = np.repeat(np.arange(6), (theta * n).astype(int)).tolist()
    query = Query("ts-cross", mech.spec(), repr(mech.epsilon))
    envs = _typescript_envelopes(tmp_path, mech, values, query.content_hash, seed=20260)
    assert all(len(e) == Collector(query).size for e in envs[:3])
    col = Collector(query)
    res = col.ingest(envs)
    assert res == {"accepted": n, "rejected": {}}
    # the same blobs decode through from_wire_many (the device-facing codec) with nothing rejected
    reports, rejected = from_wire_many(mech, [e[NONCE_BYTES:] for e in envs], tag=query.content_hash)
    assert rejected == {} and mech.n_reports(reports) == n
    counts = mech.support_counts(reports)
    assert np.array_equal(counts, col.acc.counts)
    # unbiased estimate within 5 analytic standard errors of the truth (fixed stream: deterministic)
    est = mech.accumulator().add(reports).estimate(postprocess="none").raw
    p, q = mech.p_star, mech.q_star
    assert np.allclose(est, (counts / n - q) / (p - q))
    se = np.sqrt(mech.variance(theta, n))
    assert np.all(np.abs(est - theta) <= 5 * se), (est, theta)
    # power: decoded as if ε were 30% lower, the same counts are far off
    wrong = type(mech)(**{**mech.spec()["params"], "epsilon": mech.epsilon * 0.7})
    est_wrong = (counts / n - wrong.q_star) / (wrong.p_star - wrong.q_star)
    assert np.any(np.abs(est_wrong - theta) > 5 * se)
    # a replayed envelope is refused: nothing added
    again = col.ingest(envs[:5])
    assert again == {"accepted": 0, "rejected": {"duplicate": 5}}


@pytest.mark.parametrize("mech,values", [
    (ORR(epsilon=2.0, k=8, cohorts=4, d=6), [0, 1, 2, 3, 4, 5] * 200),
    (HCMS(epsilon=2.0, k=8, cohorts=4, d=6), [0, 1, 2, 3, 4, 5] * 200),
    (CMS(epsilon=2.0, k=32, cohorts=8), ["maps", "mail", "chat"] * 400),
], ids=["orr", "hcms", "cms-open"])
def test_typescript_cohort_reports_are_collected_by_the_python_collector(tmp_path, mech, values):
    query = Query("ts-cohort", mech.spec(), repr(mech.epsilon))
    envs = _typescript_envelopes(tmp_path, mech, values, query.content_hash, seed=77)
    col = Collector(query)
    assert col.ingest(envs) == {"accepted": len(values), "rejected": {}}
    reports, rejected = from_wire_many(mech, [e[NONCE_BYTES:] for e in envs], tag=query.content_hash)
    assert rejected == {} and len(reports) == len(values)
    kw = {} if mech.closed else {"candidates": ["maps", "mail", "chat"]}
    est = col.estimate(**kw)
    truth = np.full(len(est.items), 1 / (6 if mech.closed else 3))
    if not mech.closed:
        truth[-1] = 0.0  # the "<other>" row
    assert np.all(np.abs(np.asarray(est.estimate) - truth) <= 5 * np.asarray(est.std_error) + 1e-9), (est.estimate, est.std_error)


@pytest.mark.parametrize("mech", [Duchi(epsilon=1.0, lower=-2.0, upper=6.0), Piecewise(epsilon=2.0, lower=-2.0, upper=6.0),
                                  Hybrid(epsilon=2.0, lower=-2.0, upper=6.0)], ids=["duchi", "piecewise", "hybrid"])
def test_typescript_numeric_reports_are_collected_by_the_python_collector(tmp_path, mech):
    values = [float(v) for v in np.linspace(-2.0, 6.0, 3001)]
    query = Query("ts-mean", mech.spec(), repr(mech.epsilon))
    envs = _typescript_envelopes(tmp_path, mech, values, query.content_hash, seed=5)
    col = Collector(query)
    assert col.ingest(envs) == {"accepted": len(values), "rejected": {}}
    est = col.estimate()
    assert abs(est.mean - 2.0) <= 5 * est.std_error
    assert est.std_error < 0.5  # power: a mean 2.5 off (a reversed range) is outside these bounds


def test_typescript_square_wave_reports_are_collected(tmp_path):
    mech = SquareWave(epsilon=2.0, lower=0.0, upper=10.0, grid=64)
    values = [float(v) for v in np.linspace(0.0, 10.0, 2001)]
    query = Query("ts-sw", mech.spec(), repr(mech.epsilon))
    envs = _typescript_envelopes(tmp_path, mech, values, query.content_hash, seed=6)
    assert Collector(query).ingest(envs) == {"accepted": len(values), "rejected": {}}


def test_typescript_csprng_reports_are_well_formed(tmp_path):
    """The default (CSPRNG) path: every envelope accepted, each nonce fresh."""
    for mech, values in ((WarnerRR(epsilon=1.0), [True, False] * 50), (OUE(epsilon=1.0, d=64), list(range(64)) * 2),
                         (KRR(epsilon=1.0, categories=["a", "b", "c"]), ["a", "c"] * 50)):
        query = Query("ts-secure", mech.spec(), repr(mech.epsilon))
        envs = _typescript_envelopes(tmp_path, mech, values, query.content_hash)
        assert len({e[:NONCE_BYTES] for e in envs}) == len(values)
        assert Collector(query).ingest(envs) == {"accepted": len(values), "rejected": {}}


@pytest.mark.slow
def test_committed_dist_is_the_compiled_source(tmp_path):
    tsc = dev_tools() / "typescript" / "bin" / "tsc"
    out = tmp_path / "dist"
    proc = subprocess.run([NODE, str(tsc), "-p", str(CLIENT / "tsconfig.json"), "--outDir", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cmp = filecmp.dircmp(out, CLIENT / "dist")
    stack, diffs = [cmp], []
    while stack:
        c = stack.pop()
        diffs += [str(c.left) + "/" + f for f in c.left_only + c.right_only + c.diff_files]
        stack += list(c.subdirs.values())
    assert not diffs, f"dist/ is stale (run `npm run build` in clients/typescript): {diffs}"
