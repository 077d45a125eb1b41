"""The entry-points layer is generated from the registry's input kinds: one driver per kind (an input
kind without one fails the layer), the key–value client (PCKV's padding-and-sampling) checked
against the mixture of code rows it must realize, ``randomize_one`` held to the batch path on the
same source, and every registered name's reports through the wire and back unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.registry import load_registry, wrapper_instances
from ldp_plugin.registry._loader import KINDS
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.entry_points import DRIVERS, NoDriver, entry_cases, entry_points_layer
from ldp_plugin.verification.seeded_bugs import HonestOneKRR

REG = load_registry(kinds=KINDS)


def test_every_registered_input_kind_has_a_driver():
    kinds = {getattr(d.mechanism_class()(**d.canonical[0]), "input_kind", "value") for d in REG.values()}
    kinds |= {m.input_kind for _, m in wrapper_instances()}
    assert kinds <= set(DRIVERS), kinds - set(DRIVERS)
    for name, decl in REG.items():
        assert entry_cases(decl.mechanism_class()(**decl.canonical[0])), name  # at least one case per name


def test_an_input_kind_without_a_driver_fails_the_layer():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class GraphKRR(ldp.KRR):
        input_kind = "graph"

    m = GraphKRR(epsilon=1.0, d=3)
    with pytest.raises(NoDriver):
        entry_cases(m)
    r = entry_points_layer(m, quick=True)
    assert not r["passed"] and "graph" in r["failures"][0]["case"]


def test_key_value_client_realizes_the_padding_and_sampling_mixture():
    for inst in REG["pckv"].canonical:
        m = REG["pckv"].mechanism_class()(**inst)
        cases = entry_cases(m)
        assert any("[]" in c[0] for c in cases) and len(cases) >= 1 + 3 * m.d
        for _label, _m, _make, _keyed, row, _x in cases:
            assert sum(row) == 1
        r = entry_points_layer(m, quick=True)
        assert r["passed"], r


def test_randomize_one_is_held_to_the_batch_path():
    r = entry_points_layer(HonestOneKRR(epsilon=1.0, d=4), quick=True)
    assert not r["passed"] and all("randomize_one" in f["reason"] for f in r["failures"])
    assert entry_points_layer(ldp.KRR(epsilon=1.0, d=4), quick=True)["passed"]


def test_dbitflip_randomize_one_returns_the_whole_report():
    """Found by the layer: a report of several columns (buckets, bits) lost all but the first."""
    m = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4, d_bits=2)
    key = bytes(32)
    one = m.randomize_one(1, rng=SeededRandomSource(3), user_key=key)
    buckets, bits = m.randomize(np.array([1]), user_keys=[key], rng=SeededRandomSource(3))
    assert isinstance(one, tuple) and len(one) == 2
    assert np.array_equal(one[0], buckets[0]) and np.array_equal(one[1], bits[0])
