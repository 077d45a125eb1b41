"""Merging accumulators where one side has seen no report yet (a node whose reply held no accepted
report, a fresh per-node accumulator in the collector): the empty side is the sum's identity, for
the accumulators whose statistics start as ``None`` (the longitudinal ones) as for the others."""

from __future__ import annotations

import numpy as np
import pytest

import ldp_plugin as ldp

MECHANISMS = [
    ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=6),
    ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=6),
    ldp.KRR(epsilon=1.0, d=6),
    ldp.OUE(epsilon=1.0, d=6),
]


def _reports(mech, n, seed):
    values = np.arange(n) % 6
    if getattr(mech, "needs_user_keys", False):
        keys = [bytes([i % 256]) * 32 for i in range(n)]
        return mech.randomize(values, user_keys=keys, rng=seed)
    return mech.randomize(values, rng=seed)


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.name)
def test_an_empty_accumulator_is_the_identity_of_merge(mech):
    full = mech.accumulator()
    full.add(_reports(mech, 300, 1))
    empty = mech.accumulator()
    for merged in (empty.merge(full), full.merge(empty)):
        assert merged.n == full.n == 300
        np.testing.assert_array_equal(np.asarray(merged.counts), np.asarray(full.counts))
    both = mech.accumulator().merge(mech.accumulator())
    assert both.n == 0
    # and two filled sides still add up
    other = mech.accumulator()
    other.add(_reports(mech, 200, 2))
    total = full.merge(other)
    assert total.n == 500
    np.testing.assert_array_equal(np.asarray(total.counts), np.asarray(full.counts) + np.asarray(other.counts))
