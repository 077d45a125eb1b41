"""The surfaces layer: the Polars namespace and the OpenDP measurements give the batch path's reports
on the same stream, and every refusal a client and a server owe is made with the library's error and
without repeating the value; the bugs it found stay fixed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPArgumentError, LDPInputError
from ldp_plugin.mechanisms import reports as reports_mod
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.entry_points import _keys
from ldp_plugin.verification.surfaces import SENTINEL_CODE, refusal_cases, surfaces_layer

REG = load_registry(kinds=KINDS)


@pytest.fixture(autouse=True, scope="module")
def _features():
    ldp.enable_ldp_features()  # the caller's explicit opt-in (ldp verify makes it too)


@pytest.mark.parametrize("name", ["krr", "wheel", "duchi", "rsfd", "pckv", "l-grr", "orr"])
def test_the_layer_passes_on_every_input_kind(name):
    mech = REG[name].mechanism_class()(**REG[name].canonical[0])
    r = surfaces_layer(mech, quick=True)
    assert r["passed"], r
    assert r["refusal_cases"] >= 6


@dataclasses.dataclass(frozen=True, kw_only=True)
class EchoingKRR(ldp.KRR):
    """Seeded bug: a code outside the domain is refused with the value in the message."""

    def encode(self, values):
        arr = np.asarray(values)
        if arr.dtype.kind in "iu" and arr.size and int(arr.max()) >= self.d:
            raise LDPInputError(f"value {int(arr.max())} is not an item code")
        return super().encode(values)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClippingKRR(ldp.KRR):
    """Seeded bug: a code outside the domain is clipped into it (accepted) instead of refused."""

    def encode(self, values):
        arr = np.asarray(values)
        if arr.dtype.kind in "iu":
            return super().encode(np.clip(arr, 0, self.d - 1))
        return super().encode(values)


def test_seeded_refusal_bugs_are_caught():
    echo = surfaces_layer(EchoingKRR(epsilon=1.0, d=4), quick=True)
    assert not echo["passed"] and any("repeats the value" in f for f in echo["failures"])
    clip = surfaces_layer(ClippingKRR(epsilon=1.0, d=4), quick=True)
    assert not clip["passed"] and any("past the domain: accepted" in f for f in clip["failures"])
    labels = [c[0] for c in refusal_cases(ldp.KRR(epsilon=1.0, d=4))]
    assert "an item code past the domain" in labels and "an unknown keyword" in labels


def test_regression_longitudinal_accumulator_refuses_a_report_out_of_range():
    """Found by the layer: a keyed mechanism's accumulator counted reports unchecked, so one report of
    2**32 - 1 sized a count array of 32 GiB (a hostile device could stop the collector)."""
    m = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)
    rep = m.randomize(np.zeros(3, dtype=np.int64), user_keys=_keys(3, SeededRandomSource(1)), rng=SeededRandomSource(2))
    cols = {k: np.array(v, copy=True) for k, v in m.base._to_columns(rep).items()}
    cols["report"][-1] = np.iinfo(cols["report"].dtype).max
    bad = m.base._from_columns(cols)
    with pytest.raises(LDPInputError):
        m.accumulator().add(bad)
    tag = bytes(16)
    _ok, rejected = reports_mod.from_wire_many(m, reports_mod.to_wire_each(m, bad, tag=tag), tag=tag)
    assert sum(rejected.values()) == 1


def test_regression_randomize_refuses_an_unknown_keyword_with_the_library_error():
    """Found by the layer: randomize(..., bogus=1) raised a bare TypeError (estimate raised LDPArgumentError)."""
    m = ldp.KRR(epsilon=1.0, d=4)
    with pytest.raises(LDPArgumentError, match="bogus"):
        m.randomize(np.zeros(3, dtype=np.int64), rng=1, bogus=1)
    with pytest.raises(TypeError):  # still the TypeError Python raises for a bad call
        m.randomize(np.zeros(3, dtype=np.int64), rng=1, bogus=1)
    assert SENTINEL_CODE > 1 << 20
