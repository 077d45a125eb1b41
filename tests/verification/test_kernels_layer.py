"""The kernels layer (every numba kernel against its numpy twin and a reference, identical consumed
randomness; the secure source's splits; the samplers' refusals) and the executors layer (partitioned
release and aggregation against the serial path): both pass on the library and fail on their
seeded bugs; the explicit backends they rely on run both implementations in one process."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ldp_plugin import LDPInputError, LDPParameterError
from ldp_plugin.sampling import SeededRandomSource, kernels
from ldp_plugin.sampling.bernoulli import _decode_runs_numpy, run_table
from ldp_plugin.sampling.subsets import sorted_subsets
from ldp_plugin.verification import executors as executors_mod, twins
from ldp_plugin.verification.executors import executors_layer
from ldp_plugin.verification.system.run import SYSTEM_LAYERS
from ldp_plugin.verification.twins import FAMILIES, RecordedSource, kernels_layer, reference_dense

NUMBA = importlib.util.find_spec("numba") is not None


def test_the_layers_are_system_layers():
    assert SYSTEM_LAYERS["kernels"].endswith("twins:kernels_layer") and SYSTEM_LAYERS["executors"].endswith("executors:executors_layer")


def test_kernels_layer_passes_on_the_library():
    r = kernels_layer(seed=0, quick=True)
    assert r["passed"], r["failures"]
    assert r["backends"] == (["numpy", "numba"] if NUMBA else ["numpy"])
    assert set(r["cases"]) == set(FAMILIES) - {"plain"} and min(r["cases"].values()) >= 2  # plain: the full run's
    assert r["secure"]["split_workers"] >= 1


def _bugs() -> dict:
    pytest.importorskip("flwr")
    pytest.importorskip("nacl")
    from ldp_plugin.verification.system.seeded_bugs import SYSTEM_BUGS

    return {bug: (layer, kw) for bug, layer, kw in SYSTEM_BUGS}


@pytest.mark.parametrize("bug,family", [("lookup-step-boundary", "lookup"), ("list-lookup-width-blind", "lookup"), ("dense-extra-draw", "samplers"), ("column-chunk-edge", "aggregation")])
def test_kernels_layer_catches_its_seeded_bugs(bug, family):
    if not NUMBA and bug == "dense-extra-draw":
        pytest.skip("the consumed-randomness check compares two backends")
    layer, kw = _bugs()[bug]
    assert layer == "kernels" and kw["only"] == (family,)  # the self-test runs the family that holds the bug
    r = kernels_layer(seed=0, quick=True, **kw)
    assert not r["passed"] and all(f.startswith(family) for f in r["failures"])  # (without the bug the layer passes: above)


def test_executors_layer_passes_and_catches_its_seeded_bug(tmp_path):
    r = executors_layer(seed=0, quick=True, directory=tmp_path)
    assert r["passed"], r["failures"]
    layer, kw = _bugs()["one-stream-executor"]
    bad = executors_layer(seed=0, quick=True, directory=tmp_path, **kw)
    assert layer == "executors" and not bad["passed"] and any("serial release" in f for f in bad["failures"])


def test_without_the_fast_extra_the_numpy_twins_give_the_same_release():
    r = kernels_layer(seed=0, quick=False, only=("plain",))  # a fresh interpreter where numba and cryptography cannot load
    assert r["passed"], r["failures"]
    assert r["cases"] == {"plain": 1}


def test_explicit_backends_run_both_implementations(monkeypatch):
    assert kernels.select("decode_runs", 1, "numpy") is None
    with pytest.raises(LDPParameterError, match="backend"):
        kernels.select("decode_runs", 1, "fortran")
    if not NUMBA:
        with pytest.raises(ImportError, match="ldp-plugin\\[fast\\]"):
            kernels.select("decode_runs", 1, "numba")
        return
    monkeypatch.setenv("LDP_PLUGIN_KERNELS", "numpy")  # the environment's rule says numpy; an explicit backend overrides it
    assert kernels.compiled("decode_runs", 1) is None and callable(kernels.select("decode_runs", 1, "numba"))
    assert kernels.select_table("_numba_lookup", 1, "numpy") is None and "lookup_fixed" in kernels.select_table("_numba_lookup", 1, "numba")
    x, inc = np.array([0, 63, 64, 5]), np.array([True, False, True, False])
    a, b = RecordedSource(1), RecordedSource(1)
    assert np.array_equal(sorted_subsets(a, x, inc, 65, 40, "numpy"), sorted_subsets(b, x, inc, 65, 40, "numba"))
    assert a.requests == b.requests


def test_reference_dense_is_the_definition():
    T = (1 << 63) | (1 << 61)  # top bits 1, 0, 1
    stream = np.array([0b0000_0101, 0b1000_0000], dtype=np.uint8)  # LSB first: 1 | 0 1 | 0000000 0000000 1
    # runs of 0, 1 and 14 zeros: bits 0, 1 and 14 of T from the top
    assert reference_dense(stream, T, 3).tolist() == [1, 0, 0]
    assert reference_dense(stream, T, 4) is None
    v = SeededRandomSource(3).random_bytes(256)
    bits, count, _ = _decode_runs_numpy(v, 0, run_table(T), 500)
    assert count == 500 and np.array_equal(np.unpackbits(bits, bitorder="little")[:500], reference_dense(v, T, 500))


def _raises(exc):
    def call(*_):
        raise exc
    return call


def test_the_samplers_refusal_check_catches_a_draw_an_echo_and_a_vague_message():
    """The kernels layer's refusals go through the one refusal check: a refusal after a draw, one
    repeating the value and one naming no parameter each fail; a clean one passes."""
    run = twins._Run(("numpy",), {})

    def draws_then_refuses(src):
        src.random_bytes(8)
        raise LDPParameterError("threshold must be in [0, 2**64]")

    twins._refused(run, "clean", _raises(LDPParameterError("threshold must be in [0, 2**64]")), "threshold", 81234)
    assert run.failures == []
    twins._refused(run, "draws", draws_then_refuses, "threshold")
    twins._refused(run, "echo", _raises(LDPParameterError("threshold 81234 is past 2**64")), "threshold", 81234)
    twins._refused(run, "vague", _raises(LDPParameterError("bad argument")), "threshold")
    assert run.failures == ["refusals: draws: the refused call changed the randomness drawn", "refusals: echo: the message repeats the value",
                            "refusals: vague: the message names none of ['threshold']"]


def test_the_executors_refusal_check_catches_an_echo_a_vague_message_and_a_counted_state():
    class State:
        n, counts = 3, np.array([1, 2])

    state = State()

    def counts_then_refuses():
        state.n += 1
        raise LDPInputError("the file holds reports of another mechanism")

    failures: list = []
    executors_mod._refused(failures, "clean", _raises(LDPInputError("the file holds reports of another mechanism")), ("another mechanism",), state)
    assert failures == []
    executors_mod._refused(failures, "counted", counts_then_refuses, ("another mechanism",), state)
    executors_mod._refused(failures, "echo", _raises(LDPInputError(f"{executors_mod.LABELS[0]} is no report")), ("report",))
    executors_mod._refused(failures, "vague", _raises(LDPInputError("bad input")), ("another mechanism",))
    assert failures == ["counted: the refused call changed the saved state", "echo: the message repeats the value",
                        "vague: the message names none of ['another mechanism']"]
