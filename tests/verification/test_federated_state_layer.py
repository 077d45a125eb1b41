"""The federated-state system layer (``ldp_plugin.verification.system.federated_state``): it passes
on the runtime's replay guard, keystore, atomic writes, ingest service, secure-sum queries and work
limits, and its replay-guard check catches a guard that compares half of each nonce."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("nacl")

from ldp_plugin.verification.system import federated_state as state  # noqa: E402
from ldp_plugin.verification.system.run import SYSTEM_LAYERS  # noqa: E402
from ldp_plugin.verification.system.runtime_bugs import FirstWordNonceSet  # noqa: E402


def test_the_layer_passes_on_the_runtime(tmp_path):
    assert SYSTEM_LAYERS["federated-state"] == "ldp_plugin.verification.system.federated_state:state_layer"
    row = state.state_layer(quick=True, directory=tmp_path)
    assert row["passed"], row["failures"]


def test_a_replay_guard_comparing_the_first_word_only_is_caught():
    failures = state.nonce_checks(nonce_set=FirstWordNonceSet)
    assert failures[0] == "replay guard (numpy, admit, batch 0): its answer differs from a set of nonces"  # the forged pair of the first batch


def test_a_refusal_that_echoes_a_file_is_caught(tmp_path):
    failures: list = []
    state._refused(lambda: (_ for _ in ()).throw(ValueError(f"bad {state.SECRET}")), ValueError, "bad", failures, "probe")
    state._refused(lambda: (_ for _ in ()).throw(ValueError("a vague refusal")), ValueError, "bad", failures, "vague")
    assert failures == ["probe: the message repeats the value", "vague: the message names none of ['bad']"]


def test_the_two_core_admission_is_held_to_the_set_of_nonces():
    # a batch past the split (both threads scan, the shares are closed up in row order): equal to the set
    assert state._split_scan_check(np.random.default_rng(1), state.NonceSet) == []
    # a guard that keys on the first word only is caught there too
    assert state._split_scan_check(np.random.default_rng(1), FirstWordNonceSet)
