"""The mechanism-paths system layer (:mod:`ldp_plugin.verification.system.mechanism_paths`) and the
bugs it found: bytes labels that could not be tagged, float labels of a hashed oracle accepted at
construction and refused at the first report."""

import json

import numpy as np
import pytest

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.mechanisms import KRR, OLH, Wheel
from ldp_plugin.registry import from_spec


def test_bytes_labels_randomize_and_round_trip_their_spec():
    m = KRR(epsilon=1.0, categories=[b"a", b"b\x00", b"c"])
    reports = m.randomize([b"a", b"c", b"b\x00"], rng=3)  # was: "parameter of type bytes cannot be stored as data"
    assert reports.shape == (3,)
    spec = m.spec()
    json.dumps(spec)
    assert from_spec(json.dumps(spec)) == m
    assert np.array_equal(from_spec(spec).randomize([b"a", b"c", b"b\x00"], rng=3), reports)


@pytest.mark.parametrize("make", [lambda c: OLH(epsilon=1.0, categories=c), lambda c: Wheel(epsilon=1.0, categories=c)])
def test_hashed_oracles_refuse_float_labels_when_built(make):
    with pytest.raises(LDPParameterError, match="categories"):
        make([0.5, 1.5, 2.5])  # was: built, then every randomize raised
    assert make(["x", "y", "z"]).randomize(["y"], rng=1).shape[0] == 1
