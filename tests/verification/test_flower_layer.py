"""The flower system layer (``ldp_plugin.verification.system.flower``): the real ServerApp bodies
over Flower's in-memory grid and LinkState, the real ClientApp answering in process. It passes on
the shipped apps and fails on each of its seeded bugs for the reason the bug plants."""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")
pytest.importorskip("nacl")

from ldp_plugin.federated.app import run_plan  # noqa: E402
from ldp_plugin.verification.system import flower  # noqa: E402
from ldp_plugin.verification.system.runtime_bugs import RUNTIME_BUGS  # noqa: E402
from ldp_plugin.verification.system.run import SYSTEM_LAYERS  # noqa: E402
from ldp_plugin.verification.system.seeded_bugs import SYSTEM_BUGS  # noqa: E402

BUGS = {bug: kw for bug, _, kw in RUNTIME_BUGS}


def test_the_layer_is_registered_with_its_bugs():
    assert SYSTEM_LAYERS["flower"] == "ldp_plugin.verification.system.flower:flower_layer"
    assert {b[0] for b in RUNTIME_BUGS} <= {b[0] for b in SYSTEM_BUGS}


def test_the_quick_layer_passes_on_the_shipped_apps(tmp_path):
    row = flower.flower_layer(quick=True, directory=tmp_path)
    assert row["passed"], row["failures"]
    assert row["devices_collected"] == 10 and row["devices_shuffled"] == 8


def test_membership_and_discovery_checks_pass_on_the_shipped_apps(tmp_path):
    assert flower.membership_checks(tmp_path / "m", run_plan) == []
    assert flower.discovery_checks(tmp_path / "d", run_plan) == []


def test_an_uncapped_registration_is_caught(tmp_path):
    failures, _ = flower.collecting_checks(tmp_path, quick=True, server=BUGS["uncapped-registration"]["run_plan_fn"])
    assert any("60 reports accepted" in f for f in failures)  # 10 honest + the sybil's 50


def test_a_client_app_echoing_its_failures_is_caught(tmp_path):
    failures, _ = flower.collecting_checks(tmp_path, quick=True, app=BUGS["echoing-client-app"]["app"])
    assert any("hostile server message is not the fixed refusal" in f for f in failures)
    assert any("bad_field" in f for f in failures)  # the server refuses a reason that is not a fixed word


def test_an_unshuffled_batch_is_caught(tmp_path):
    failures, _ = flower.shuffled_checks(tmp_path, quick=True, server=BUGS["unshuffled-batch"]["shuffled_fn"])
    assert failures == ["shuffler app: the batch is not the shuffler's permutation of the honest ciphertexts under the same draws"]


def test_each_seeded_bug_fails_the_layer_run_the_self_test_makes(tmp_path):
    for bug, kw in BUGS.items():
        if "only" in kw:  # the flower bugs: one group of checks each
            row = flower.flower_layer(directory=tmp_path / bug, **kw)
            assert not row["passed"], bug
