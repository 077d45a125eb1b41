"""The system layers (``ldp_plugin.verification.system``): each passes on the real deployment
component and fails on each of its seeded bugs, for the reason the bug plants; a run without the
federated extra fails them (it did not verify the deployment)."""

from __future__ import annotations

import math

import pytest

import ldp_plugin.cli.verify as verify
from ldp_plugin.cli import main
from ldp_plugin.verification.system import run
from ldp_plugin.verification.system.analyzer import analyzer_layer
from ldp_plugin.verification.system.device import SERIES_COLLECTIONS, device_layer
from ldp_plugin.verification.system.seeded_bugs import SYSTEM_BUGS
from ldp_plugin.verification.system.shuffler import shuffler_layer
from ldp_plugin.verification.system.wire import wire_layer

pytest.importorskip("flwr")
pytest.importorskip("nacl")

BUGS = {bug: (layer, kw) for bug, layer, kw in SYSTEM_BUGS}


def _bug(name):
    return BUGS[name][1]


def test_every_seeded_bug_names_a_registered_layer():
    assert {layer for layer, _ in BUGS.values()} == set(run.SYSTEM_LAYERS)


def test_the_device_layer_checks_every_kind_and_refusal_and_catches_its_bugs(tmp_path):
    ok = device_layer(directory=tmp_path / "ok", sequences=False)
    assert ok["passed"], ok["failures"]
    expected = {s["expected"] for s in ok["steps"]}
    assert {"charge", "retry", "malformed_query", "unsupported_version", "mechanism_not_allowed", "epsilon_above_policy",
            "epsilon_below_policy", "relation_not_allowed", "query_too_large", "budget_exhausted", "daily_query_limit"} <= expected
    tr = ok["transcript"]
    assert tr["T"] == SERIES_COLLECTIONS and 0 < tr["exact_loss"] <= tr["charged"]["in"] == tr["charged"]["out"]
    once = device_layer(directory=tmp_path / "once", sequences=False, **_bug("series-charged-once"))
    assert not once["passed"] and any("collection 2" in f and "charged [0.0]" in f for f in once["failures"])
    assert any("exceeds the" in f for f in once["failures"])  # the exact worst loss over histories is above what was charged
    telling = device_layer(directory=tmp_path / "telling", sequences=False, **_bug("value-dependent-refusal"))
    assert not telling["passed"] and any("depends on the values held" in f for f in telling["failures"])


@pytest.mark.slow
def test_the_device_layers_secure_sum_discovery_and_owner_state_sequences(tmp_path):
    ok = device_layer(directory=tmp_path / "ok")
    assert ok["passed"], ok["failures"]
    expected = {s["expected"] for s in ok["steps"]}
    assert {"setup_mismatch", "too_many_bins", "above_site_bound", "epsilon_above_policy", "each device once", "not_initialized",
            "ledger_tampered", "keystore_missing", "ledger_missing", "device_misconfigured"} <= expected


def test_the_shuffler_layer_computes_the_exact_law_and_catches_a_biased_permutation():
    ok = shuffler_layer()
    assert ok["passed"] and ok["outputs"] == math.factorial(4) and ok["laws_compared"] == math.factorial(4) * 3
    bad = shuffler_layer(**_bug("naive-shuffle"))
    assert not bad["passed"] and any("not uniform" in f for f in bad["failures"])


def test_the_analyzer_layer_checks_the_recorded_epsilon_against_the_batch_opened(tmp_path):
    ok = analyzer_layer(directory=tmp_path / "ok", quick=True)
    assert ok["passed"], ok["failures"]
    assert ok["accepted"] == ok["reports_sent"] == 12 and ok["epsilon_central"] == ok["expected_epsilon_central"] <= ok["epsilon_local"]
    loose = analyzer_layer(directory=tmp_path / "loose", quick=True, **_bug("loose-delta-analyzer"))
    assert not loose["passed"] and any("recorded as" in f for f in loose["failures"])
    blind = analyzer_layer(directory=tmp_path / "blind", quick=True, **_bug("replay-blind-analyzer"))
    assert not blind["passed"] and blind["accepted"] == 13


def test_the_wire_layer_round_trips_through_the_reply_path(tmp_path):
    ok = wire_layer(directory=tmp_path / "ok", names=("krr", "l-grr", "pckv", "wheel"))
    assert ok["passed"] and ok["names"] == 4, ok["failures"]
    bad = wire_layer(directory=tmp_path / "bad", **_bug("shared-nonce-reply"))
    assert not bad["passed"] and any("the collector accepted 1" in f for f in bad["failures"])


def test_without_the_federated_extra_the_system_layers_fail(monkeypatch):
    monkeypatch.setattr(run, "missing_extras", lambda: ["flwr"])
    rows = run.system_rows(quick=True)
    assert [r["system_layer"] for r in rows] == list(run.SYSTEM_LAYERS) and not any(r["passed"] for r in rows)
    assert all(r["result"]["failures"][0].startswith("not run") for r in rows)
    assert not any(b["caught"] for b in run.system_self_test(quick=True))


def test_ldp_verify_prints_and_reports_the_system_rows(tmp_path, monkeypatch, capsys):
    def shuffler_only(names, *, seed, quick, wrappers):
        r = run._run("shuffler", seed=seed, quick=quick)
        return [{"name": "system", "system_layer": "shuffler", "passed": r["passed"], "result": r}]

    def naive_only(*, seed, quick):
        r = run._run("shuffler", seed=seed, quick=quick, **_bug("naive-shuffle"))
        return [{"name": "naive-shuffle", "system_layer": "shuffler", "seeded_bug": True, "caught": not r["passed"], "caught_by": ["shuffler"], "result": r}]

    monkeypatch.setenv("LDP_PLUGIN_STATE", str(tmp_path / "state"))
    monkeypatch.setattr(verify, "verification_rows", shuffler_only)
    monkeypatch.setattr(verify, "self_test", lambda **kw: [])
    monkeypatch.setattr(verify, "system_self_test", naive_only)
    monkeypatch.setattr(verify, "user_path_self_test", lambda **kw: [])  # its own test: tests/verification/test_user_paths.py
    assert main(["verify", "--quick", "--self-test", "--report", str(tmp_path / "v.md")]) == 0
    out = capsys.readouterr().out
    assert "system shuffler" in out and "PASS" in out and "CAUGHT" in out
    text = (tmp_path / "v.md").read_text()
    assert "## System layers" in text and "| shuffler | naive-shuffle |" in text and "CAUGHT (seeded bug)" in text
