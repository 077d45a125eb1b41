"""Every family's realized channel, rebuilt from the values its client passes to the random source
(issue 32, item 2): :mod:`ldp_plugin.verification.client_channel` runs the real client on one user
per combination of outcomes of its exact sampler calls (Bernoulli thresholds, uniform ranges,
inverse-CDF boundaries, subsets; the enumerating source of the positions layer) and adds up the
exact weights; the result must be the declared channel.
Unlike the sampling-path layer's membership check, a threshold used in the wrong place fails."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from ldp_plugin import KRR, LGRR, OUE
from ldp_plugin.exact import TWO64
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.registry import wrapper_instances
from ldp_plugin.verification.client_channel import NotEnumerable, client_channel, client_channel_row
from ldp_plugin.verification.draws import random_instances
from ldp_plugin.verification.positions import EnumeratingSource
from ldp_plugin.verification.sampling_path import sampling_path_layer
from ldp_plugin.verification.seeded_bugs import LastBitOUE, NoPredecessorSubset, RateLowOUE, StickyRAPPOR, ThresholdDriftKRR

#: families whose client cannot be enumerated, and why: a fresh secret key per user drawn as raw
#: bytes (the permanent layer is a keyed PRF), or rejection sampling (an unbounded tree)
NOT_ENUMERABLE = {"dbitflip", "l-grr", "l-osue", "l-oue", "l-sue", "loloha", "memoized-krr", "privset"}


def _instances(all_canonical: bool, draws: int = 0):
    out = []
    for name, decl in sorted(load_registry(kinds=KINDS).items()):
        cls = decl.mechanism_class()
        for inst in decl.canonical if all_canonical else decl.canonical[:1]:
            out.append((name, cls(**inst)))
        if draws:
            out += [(name, mech) for _inst, mech in random_instances(decl, seed=17, count=draws)]
    return out + list(wrapper_instances())


def _check_all(instances) -> set:
    skipped = set()
    for name, mech in instances:
        try:
            rows = client_channel(mech)
        except NotEnumerable:
            skipped.add(name)
            continue
        declared = [list(r) for r in mech.channel().matrix]
        assert rows == declared, (name, mech)
        assert all(sum(r) == 1 for r in rows)
    return skipped


def test_every_family_realizes_its_declared_channel():
    """One canonical instance of every registered family (all kinds) and every wrapper."""
    skipped = _check_all(_instances(all_canonical=False))
    assert skipped == NOT_ENUMERABLE


@pytest.mark.slow
def test_every_canonical_instance_and_random_draws_realize_their_declared_channel():
    skipped = _check_all(_instances(all_canonical=True, draws=2))
    assert skipped == NOT_ENUMERABLE


def test_not_enumerable_only_for_keyed_or_rejection_clients():
    for name, mech in _instances(all_canonical=False):
        if name in NOT_ENUMERABLE:
            assert getattr(mech, "needs_user_keys", False) or name == "privset", name


@dataclass(frozen=True, kw_only=True)
class ComplementedKRR(KRR):
    """Keeps the true item with probability 1 − p* (the complement of the declared threshold:
    the membership check of the sampling-path layer accepts complements)."""

    name = "test-complemented-krr"

    def _randomize_codes(self, codes, source):
        keep = source.bernoulli(TWO64 - self.keep_threshold, codes.size)
        other = source.uniform_int(self.d - 1, codes.size)
        other += other >= codes
        return np.where(keep, codes, other).astype(np.uint16)


@dataclass(frozen=True, kw_only=True)
class SwappedRowsOUE(OUE):
    """Draws the own bit with q* and the other bits with p* (both declared thresholds, swapped)."""

    name = "test-swapped-rows-oue"

    def _randomize_codes(self, codes, source):
        from ldp_plugin.mechanisms.unary import randomize_bit_rows

        return randomize_bit_rows(np.asarray(codes)[:, None], self.d, self.q_threshold, self.p_threshold, source)


def test_a_threshold_in_the_wrong_place_changes_the_rebuilt_channel():
    """Power check: client bugs, including two that every threshold-membership check accepts."""
    for bug in (ComplementedKRR(epsilon=1.0, d=4), SwappedRowsOUE(epsilon=1.0, d=4)):
        assert sampling_path_layer(bug)["passed"]  # the membership check cannot see these
        assert client_channel(bug) != [list(r) for r in bug.channel().matrix]
    for bug in (ThresholdDriftKRR(epsilon=20.0, d=2), RateLowOUE(epsilon=1.0, d=4), LastBitOUE(epsilon=1.0, d=4),
                NoPredecessorSubset(epsilon=1.0, d=5, k=2), StickyRAPPOR(epsilon=1.0, d=4)):
        assert client_channel(bug) != [list(r) for r in bug.channel().matrix], type(bug).__name__


def test_enumerated_weights_are_exact():
    krr = KRR(epsilon=1.0, d=3)
    row = client_channel_row(krr, 1)
    assert row == {0: krr.q_star_exact, 1: krr.p_star_exact, 2: krr.q_star_exact}
    probe = EnumeratingSource(1)
    probe.bernoulli(5, 1)
    src = EnumeratingSource(2, probe.calls)  # user 0: outcome 0 (false), user 1: outcome 1 (true)
    assert src.bernoulli(5, 2).tolist() == [False, True]
    assert [Fraction(w, src.weight_den) for w in src.weight_num.tolist()] == [1 - Fraction(5, TWO64), Fraction(5, TWO64)]
    probe = EnumeratingSource(1)
    probe.inverse_cdf(np.array([[0, 3, 1 << 63]], dtype=np.uint64), np.zeros(1, dtype=np.int64))
    src = EnumeratingSource(3, probe.calls)
    assert src.inverse_cdf(np.array([[0, 3, 1 << 63]], dtype=np.uint64), np.zeros(3, dtype=np.int64)).tolist() == [0, 1, 2]
    assert [w for w in src.weight_num.tolist()] == [3, (1 << 63) - 3, 1 << 63] and src.weight_den == TWO64
    with pytest.raises(NotEnumerable):  # a keyed client (raw bytes): never replicated here
        client_channel_row(LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), 0)

