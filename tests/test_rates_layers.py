"""The rates layer on the longitudinal protocols' layers (issue 32): the permanent layer through
the real keyed PRF and the instantaneous layer through the real source sampler, each against its
own declared channel; an instantaneous keep rate 0.5% off is caught (power check)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ldp_plugin import LGRR, LOLOHA, LOUE, LSUE
from ldp_plugin.verification.rates import TARGET_RELATIVE_ERROR, rates_layer


@dataclass(frozen=True, kw_only=True)
class InstantRateLGRR(LGRR):
    """L-GRR whose instantaneous layer keeps the unit with a threshold 0.5% above T2 (compared by
    hand with raw words: no Bernoulli threshold to record)."""

    name = "test-instant-rate-lgrr"

    def _instantaneous(self, units, source):
        n, k = units.size, self._k()
        keep = source.words(n) < np.uint64(self.thresholds[1] * 1005 // 1000)
        other = source.uniform_int(k - 1, n)
        other += other >= units
        return np.where(keep, units, other)


def test_layers_of_every_longitudinal_family_are_tested_and_pass():
    for mech in (LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), LOLOHA(epsilon_perm=3.0, epsilon_1=1.0, d=5, g=3),
                 LOUE(epsilon_perm=2.0, epsilon_1=1.0, d=3), LSUE(epsilon_perm=1.0, epsilon_1=0.5, d=2)):
        r = rates_layer(mech, n=3_000, seed=4)
        assert set(r["layers"]) == {"permanent", "instantaneous"} and r["passed"], (mech.name, r)


@pytest.mark.slow
def test_instantaneous_rate_half_a_percent_off_is_caught_at_the_canonical_size():
    good = rates_layer(LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), seed=8)
    bad = rates_layer(InstantRateLGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), seed=8)
    assert good["passed"] and good["layers"]["instantaneous"]["detects_relative_error_first_input"] <= TARGET_RELATIVE_ERROR
    assert not bad["passed"] and not bad["layers"]["instantaneous"]["passed"]
    assert bad["layers"]["permanent"]["passed"]  # the permanent layer is the real one
