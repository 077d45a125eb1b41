"""The public surfaces at drawn parameters: every edge of a declared domain goes through the surfaces
layer in the full run, and a property-based sweep (hypothesis, fixed seed) over each whole declared
space — any instance the constructor accepts passes the layer (namespace = batch path, measurements,
refusals); the counterexamples found are pinned below."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.registry import KINDS, edge_rows, load_registry, verify
from ldp_plugin.verification.surfaces import surfaces_layer
from tests._helpers import sweep_declared_space

REG = load_registry(kinds=KINDS)


@pytest.fixture(autouse=True, scope="module")
def _features():
    ldp.enable_ldp_features()


def test_the_full_run_drives_the_surfaces_at_every_edge():
    rows = edge_rows(REG["krr"], layers=("exact", "surfaces"))
    inside = [r for r in rows if "refusal" not in r]
    assert inside and all("surfaces" in r and r["passed"] for r in inside)
    assert {r["edge"]["parameter"] for r in inside} == {"epsilon", "d"}
    quick = [r for r in verify(REG["krr"], quick=True, layers=("exact", "surfaces"), draws=1) if "edge" in r and "refusal" not in r]
    assert quick and not any("surfaces" in r for r in quick)  # the quick run: the exact layer only


@pytest.mark.parametrize("name", ["krr", "pckv", "spl", "piecewise"])
def test_property_any_accepted_instance_passes_the_surfaces(name):
    _sweep(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REG))
def test_property_every_registered_name_passes_the_surfaces(name):
    _sweep(name)


def _sweep(name):
    def check(m, inst):
        r = surfaces_layer(m, quick=True)
        assert r["passed"], (inst, r["failures"])

    sweep_declared_space(REG[name], check, at=20261128, examples=3)


def test_pinned_counterexample_a_full_byte_of_packed_bits_is_not_out_of_range():
    """Pinned from the edge sweep (l-sue at d = 8): with no padding bits every byte is a valid
    report, so the refusal drive must not count it as out of range (it corrupts at a field's bound,
    and a packed-bit field only when it has padding bits); at d = 5 the padding bits are refused."""
    for d in (8, 5):
        r = surfaces_layer(ldp.LSUE(epsilon_perm=2.0, epsilon_1=1.0, d=d), quick=True)
        assert r["passed"], (d, r)
    assert np.iinfo(np.uint8).max == 255


def test_pinned_counterexample_olh_at_a_large_epsilon_is_driven_without_its_channel():
    """Pinned from the sweep: OLH at d = 2, ε = 7 (hash range ≈ e^7 + 1: 4·g outputs, too many to
    enumerate) — the layer crashed building the channel for its inputs; it now drives the ends and
    the middle of the input domain."""
    r = surfaces_layer(ldp.OLH(epsilon=7.0, d=2), quick=True)
    assert r["passed"], r
