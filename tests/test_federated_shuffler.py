"""Issue 35, item 4: encode–shuffle–analyze. Devices seal each report (nonce + wire report) to the
analyzer key their owner pinned (libsodium sealed boxes); the shuffler (a ServerApp: node ids and
arrival, no report) forwards a byte-sorted, CSPRNG-permuted batch of at least the minimum size and
nothing else; the analyzer opens, validates and aggregates it and records the central (ε, δ) at
the size it accepted. Checked: the permutation is exactly uniform (a chi-square test that rejects
the classic biased swap), the output order depends on the set of ciphertexts only (not on nodes or
arrival; a position test that rejects an unshuffled variant), a batch below the minimum is never
written, every bad ciphertext / key / batch / query is refused or counted by reason, and a
shuffled round over Flower messages (the real device side) reaches a ledger record while the
analyzer's only input, the batch file, holds no node id."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nacl")

import ldp_plugin as ldp  # noqa: E402
from ldp_plugin.amplification import amplify  # noqa: E402
from ldp_plugin.federated import Query  # noqa: E402
from ldp_plugin.federated.analyzer import analyze_batch  # noqa: E402
from ldp_plugin.federated.batch import HEADER_KEYS, read_batch, write_batch  # noqa: E402
from ldp_plugin.federated.envelope import seal  # noqa: E402
import ldp_plugin.federated.sealed as sealed_mod  # noqa: E402
from ldp_plugin.federated.sealed import SEAL_OVERHEAD, generate_analyzer_keys, open_boxes, open_reports, private_key, public_key, seal_reports  # noqa: E402,E501
from ldp_plugin.federated.shuffler import BatchBelowMinimum, Shuffler, permutation  # noqa: E402
from ldp_plugin.registry import build  # noqa: E402
from ldp_plugin.sampling import SeededRandomSource  # noqa: E402
from ldp_plugin.mechanisms.reports import to_wire_each

MECH = ldp.KRR(epsilon=2.0, d=8)
DELTA = 1e-6


def _query(min_batch: int, qid: str = "p/q/r1", mech=MECH) -> Query:
    return Query.for_mechanism(qid, mech, min_batch=min_batch)


def _envelopes(q: Query, values) -> list:
    mech = q.mechanism()
    return seal(to_wire_each(mech, mech.randomize_encoded(np.asarray(values)), tag=q.content_hash))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    return generate_analyzer_keys(tmp_path_factory.mktemp("keys"))


def _ledger(tmp_path, cap="10"):
    path = tmp_path / "analyzer.sqlite"
    ldp.Accountant.create(path, ldp.Population(name="analyzer", lifetime_cap=cap)).close()
    return path


# -- the permutation ----------------------------------------------------------------------------------
def _chi2(perms: list, n: int) -> float:
    counts: dict = {}
    for p in perms:
        counts[tuple(p)] = counts.get(tuple(p), 0) + 1
    k = int(np.prod(range(1, n + 1)))
    e = len(perms) / k
    return sum((counts.get(p, 0) - e) ** 2 / e for p in _all_perms(n))


def _all_perms(n):
    import itertools

    return list(itertools.permutations(range(n)))


def _naive(n: int, src) -> list:  # the classic bug: j uniform on [0, n) at every step (n^n outcomes onto n! permutations)
    a = list(range(n))
    for i, j in zip(range(n - 1, -1, -1), src.uniform_int(n, n).tolist()):
        a[i], a[j] = a[j], a[i]
    return a


def test_the_permutation_is_uniform_and_the_test_rejects_a_biased_swap():
    n, draws = 4, 12_000
    critical = 49.73  # chi-square, 23 degrees of freedom, upper 0.1% point
    src = SeededRandomSource(2035)
    assert _chi2([permutation(n, src) for _ in range(draws)], n) < critical
    src = SeededRandomSource(2035)
    assert _chi2([_naive(n, src) for _ in range(draws)], n) > critical  # power: the same test sees the biased variant
    assert sorted(permutation(1000)) == list(range(1000)) and permutation(1) == [0] and permutation(0) == []
    with pytest.raises(ldp.LDPParameterError, match="n must be"):
        permutation(-1)


# -- the shuffler -------------------------------------------------------------------------------------
def test_the_output_order_depends_on_the_set_of_ciphertexts_only(keys):
    q = _query(min_batch=10)
    pk = public_key(keys["public_key"])
    node_a = seal_reports(_envelopes(q, [0] * 300), pk)  # node A's devices all hold item 0 and answer first
    node_b = seal_reports(_envelopes(q, [7] * 300), pk)
    first, second = Shuffler(q), Shuffler(q)
    first.add(node_a)
    first.add(node_b)
    second.add(node_b[::-1])
    second.add(node_a[::-1])
    out = first.shuffled(rng=11)
    assert out == second.shuffled(rng=11)  # other node order, other arrival order: the same batch
    assert sorted(out) == sorted(node_a + node_b) and out != node_a + node_b

    # node A's positions in the output: under a uniform permutation their sum has mean m(N-1)/2 and
    # variance m(N-m)(N+1)/12 (m of N positions drawn without replacement)
    def z(order):
        a = set(node_a)
        pos = [i for i, c in enumerate(order) if c in a]
        m, N = len(pos), len(order)
        return (sum(pos) - m * (N - 1) / 2) / np.sqrt(m * (N - m) * (N + 1) / 12)

    assert abs(z(first.shuffled(rng=12))) < 4
    assert abs(z(first.shuffled())) < 5  # the OS CSPRNG (no seed): a 5-sigma bound
    assert z(node_a + node_b) < -20  # power: forwarding in arrival order puts node A first


def test_a_batch_below_its_minimum_is_never_written_and_bad_ciphertexts_are_counted(tmp_path, keys):
    q = _query(min_batch=50)
    pk = public_key(keys["public_key"])
    envs = _envelopes(q, np.arange(52) % 8)
    cts = seal_reports(envs[:49], pk)
    sh = Shuffler(q)
    assert sh.ciphertext_size == len(envs[0]) + SEAL_OVERHEAD == len(cts[0])
    res = sh.add_reply({"devices": 52, "reports": cts + [envs[49], cts[0], envs[50][:-1] + b"\0\0"], "refused": "{}", "retry": False}, quota=52)
    assert res["error"] is None and res["accepted"] == 49
    assert sh.rejected == {"not_sealed": 1, "duplicate_ciphertext": 1, "wrong_length": 1} and sh.count == 49
    over = sh.add_reply({"devices": 3, "reports": cts[:3], "refused": "{}", "retry": False}, quota=2)
    assert over["error"] == "over_quota" and sh.node_errors == {"over_quota": 1} and sh.count == 49  # nothing of that reply counted
    with pytest.raises(BatchBelowMinimum, match="min_batch=50"):
        sh.forward(tmp_path / "b.ldpbatch")
    assert not (tmp_path / "b.ldpbatch").exists() and list(tmp_path.iterdir()) == []  # not even a temporary file
    sh.add([seal_reports([envs[51]], pk)[0]])
    fwd = sh.forward(tmp_path / "b.ldpbatch")
    header, body = read_batch(tmp_path / "b.ldpbatch")
    assert set(header) == HEADER_KEYS and header["n"] == 50 == fwd["n"] and header["query"] == q.to_json()
    assert len(body) == 50 * sh.ciphertext_size and sh.count == 0  # forwarded and forgotten


# -- keys and the analyzer ----------------------------------------------------------------------------
def test_analyzer_keys_are_private_atomic_and_never_replaced_silently(tmp_path):
    out = generate_analyzer_keys(tmp_path / "k")
    assert stat.S_IMODE(os.stat(out["private_key"]).st_mode) == 0o600
    assert public_key(out["public_key"]).encode().hex() == out["public_key_hex"] == (tmp_path / "k" / "analyzer.pub").read_text().strip()
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["analyzer.key", "analyzer.pub"]
    with pytest.raises(ldp.LDPParameterError, match="already exists"):
        generate_analyzer_keys(tmp_path / "k")
    for bad in ("00" * 31, "not-a-key", str(tmp_path / "missing.pub")):
        with pytest.raises(ldp.LDPParameterError, match="analyzer_key"):
            public_key(bad)


def _batch(tmp_path, q, values, pk, extra=()):
    sh = Shuffler(q)
    sh.add(seal_reports(_envelopes(q, values), pk))
    sh.add(list(extra))
    return sh.forward(tmp_path / "batch.ldpbatch")


def test_the_analyzer_records_the_central_epsilon_at_the_size_it_accepted(tmp_path, keys):
    q = _query(min_batch=100)
    pk = public_key(keys["public_key"])
    envs = _envelopes(q, np.arange(120) % 8)
    other_key = public_key(generate_analyzer_keys(tmp_path / "other")["public_key"])
    other_query = _envelopes(_query(min_batch=100, qid="p/q/r2"), [3])  # same mechanism, another query: same length
    bad = seal_reports([envs[0]], pk) + seal_reports([envs[1]], other_key) + seal_reports(other_query, pk)
    sh = Shuffler(q)  # the batch again, now with a replayed envelope (resealed), one sealed to another key and one of another query
    sh.add(seal_reports(envs, pk) + bad)
    fwd = sh.forward(tmp_path / "batch.ldpbatch")
    ledger = _ledger(tmp_path)
    out = analyze_batch(tmp_path / "batch.ldpbatch", key=keys["private_key"], ledger=ledger, delta=DELTA)
    assert out["reports_received"] == 123 and out["reports_accepted"] == 120 and out["batch_id"] == fwd["batch_id"]
    assert out["rejected_by_reason"] == {"duplicate": 1, "undecryptable": 1, "wrong_tag": 1}
    expected = amplify(MECH, 120, DELTA)["epsilon"]  # at the size accepted, not the 123 the shuffler announced
    assert out["epsilon_central"] == expected < 2.0 and out["n_amplified"] == 120
    assert len(out["estimate"]) == 8 and sum(e["estimate"] for e in out["estimate"]) == pytest.approx(1.0)
    with ldp.Accountant(ledger) as acc:
        (rec,) = acc.shuffle_records()
        assert (rec.query_id, rec.batch_id, rec.n_min, rec.epsilon_central) == (q.query_id, fwd["batch_id"], 120, expected)
        assert float(acc.spent()) == 2.0  # the local epsilon, charged once
        assert acc.central_epsilon(2 * DELTA)["epsilon"] == pytest.approx(expected, rel=1e-3)
    again = analyze_batch(tmp_path / "batch.ldpbatch", key=keys["private_key"], ledger=ledger, delta=DELTA)  # a rerun: charged once
    assert again["epsilon_central"] == expected
    with ldp.Accountant(ledger) as acc:
        assert float(acc.spent()) == 2.0 and len(acc.shuffle_records()) == 1


def test_the_analyzer_refuses_before_it_charges(tmp_path, keys):
    q = _query(min_batch=60)
    pk = public_key(keys["public_key"])
    ledger = _ledger(tmp_path)
    batch = tmp_path / "batch.ldpbatch"
    # 62 ciphertexts forwarded, but 3 of them replay one envelope: 60 accepted is not below the minimum ...
    envs = _envelopes(q, np.arange(61) % 8)
    sh = Shuffler(q)
    sh.add(seal_reports(envs[:59] + [envs[0], envs[0]], pk))
    sh.forward(batch)
    with pytest.raises(BatchBelowMinimum, match="59 of the batch's 61 reports were accepted"):  # ... 59 are: refused, nothing recorded
        analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=DELTA, out_dir=tmp_path / "parts")
    assert list((tmp_path / "parts").iterdir()) == []  # and no report written
    with ldp.Accountant(ledger) as acc:
        assert acc.history() == [] and acc.shuffle_records() == []
    _batch(tmp_path, q, np.arange(70) % 8, pk)
    with pytest.raises(ldp.LDPParameterError, match="not the expected"):
        analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=DELTA, expect_query_id="p/other/r1")
    with pytest.raises(ldp.LDPParameterError, match="delta"):
        analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=0.0)
    with pytest.raises(ldp.LDPParameterError, match="does not exist"):
        analyze_batch(batch, key=keys["private_key"], ledger=tmp_path / "none.sqlite", delta=DELTA)
    loose = tmp_path / "loose.key"
    loose.write_text(Path(keys["private_key"]).read_text())
    loose.chmod(0o644)
    with pytest.raises(ldp.LDPParameterError, match="readable by other users"):
        analyze_batch(batch, key=loose, ledger=ledger, delta=DELTA)
    loose.chmod(0o600)
    loose.write_text("{}")
    with pytest.raises(ldp.LDPParameterError, match="not an analyzer private key"):
        analyze_batch(batch, key=loose, ledger=ledger, delta=DELTA)
    wrong = generate_analyzer_keys(tmp_path / "wrong")["private_key"]  # a well-formed key that opens nothing
    with pytest.raises(BatchBelowMinimum, match="0 of the batch's 70"):
        analyze_batch(batch, key=wrong, ledger=ledger, delta=DELTA)
    raw = batch.read_bytes()
    batch.write_bytes(raw[:-1])
    with pytest.raises(ldp.LDPInputError, match="not a shuffled batch"):
        analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=DELTA)
    with ldp.Accountant(ledger) as acc:
        assert acc.history() == [] and acc.shuffle_records() == []  # no refusal charged or recorded anything
    _batch(tmp_path, q, np.arange(70) % 8, pk)
    poor = tmp_path / "poor.sqlite"
    ldp.Accountant.create(poor, ldp.Population(name="analyzer", lifetime_cap="1")).close()
    with pytest.raises(ldp.BudgetExceededError):  # the ledger's cap (1) below the query's epsilon (2): refused before decryption
        analyze_batch(batch, key=keys["private_key"], ledger=poor, delta=DELTA, out_dir=tmp_path / "parts")
    series = _query(2, mech=build("loloha", d=8, epsilon_perm=2.0, epsilon_1=1.0))
    size = Shuffler(series).ciphertext_size
    write_batch(batch, query_json=series.to_json(), batch_id="b", ciphertexts=[b"\0" * size] * 2, ciphertext_size=size)
    with pytest.raises(ldp.LDPParameterError, match="memoized series"):
        analyze_batch(batch, key=keys["private_key"], ledger=ledger, delta=DELTA)


def test_cli_analyzer_keys_and_analyze(tmp_path, keys, cli):
    out = cli("federated", "analyzer-keys", str(tmp_path / "k"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fingerprint"]
    again = cli("federated", "analyzer-keys", str(tmp_path / "k"))
    assert again.returncode == 2 and "--force" in again.stderr
    q = _query(min_batch=40)
    _batch(tmp_path, q, np.arange(40) % 8, public_key(keys["public_key"]))
    ledger = _ledger(tmp_path)
    res = cli("federated", "analyze", str(tmp_path / "batch.ldpbatch"), "--key", keys["private_key"], "--ledger", str(ledger), "--delta", "1e-6", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["reports_accepted"] == 40 and doc["epsilon_central"] < 2.0
    res = cli("federated", "analyze", str(tmp_path / "batch.ldpbatch"), "--key", keys["private_key"], "--ledger", str(ledger), "--delta", "1e-6",
              "--out", str(tmp_path / "parts"))  # a rerun on the same batch: charged once, the parts written
    assert res.returncode == 0 and "central (" in res.stdout, res.stderr
    import polars as pl

    assert sum(pl.read_parquet(p).height for p in (tmp_path / "parts").glob("part-*.parquet")) == 40
    bad = cli("federated", "analyze", str(tmp_path / "batch.ldpbatch"), "--key", keys["private_key"], "--ledger", str(tmp_path / "no.sqlite"),
              "--delta", "1e-6")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "ldp budget init" in bad.stderr


def test_the_analyzer_opens_on_every_core_exactly_what_one_core_opens(tmp_path, keys, monkeypatch):
    """``open_boxes`` on several threads: the same envelopes, byte for byte and in batch order, as
    one core and as PyNaCl's ``SealedBox``; an altered box, one sealed to another key and a
    truncated one are refused alone (their rows zeros), whichever task they fall in."""
    monkeypatch.setattr(sealed_mod, "_TASK", 16)  # many tasks over few boxes: every thread gets work
    pub = public_key(keys["public_key"])
    envs = [os.urandom(24) for _ in range(300)]
    boxes = seal_reports(envs, pub)
    boxes[7] = boxes[7][:-1] + bytes([boxes[7][-1] ^ 1])  # altered
    boxes[150] = seal_reports([b"x" * 24], public_key(generate_analyzer_keys(tmp_path / "other")["public_key"]))[0]  # another key
    boxes[299] = bytes(boxes[299][:40]) + bytes(len(boxes[299]) - 40)  # truncated, zero-padded to the size
    sk = private_key(keys["private_key"])
    body, size = b"".join(boxes), len(boxes[0])
    one = open_boxes(body, size, sk, workers=1)
    bad = {7, 150, 299}
    assert np.array_equal(one[1], [i not in bad for i in range(300)])
    assert [one[0][i].tobytes() for i in range(300) if i not in bad] == [e for i, e in enumerate(envs) if i not in bad]
    assert not one[0][sorted(bad)].any()
    for workers in (2, 3, 8):
        many = open_boxes(bytearray(body), size, sk, workers=workers)
        assert np.array_equal(many[0], one[0]) and np.array_equal(many[1], one[1])
    opened, n_bad = open_reports(boxes, sk)
    assert opened == [one[0][i].tobytes() for i in range(300) if one[1][i]] and n_bad == 3
    assert open_boxes(b"", size, sk)[0].shape == (0, 24)
    for args, word in (((body + b"x", size), "whole boxes"), ((body, 48), "above 48")):
        with pytest.raises(ldp.LDPParameterError, match=word):
            open_boxes(*args, sk)