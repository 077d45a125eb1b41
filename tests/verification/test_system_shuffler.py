"""The shuffler as a channel: its output batch as a function of the arrival order and of which node
sent which report, computed exactly. ``Shuffler.shuffled`` draws its permutation with one call of
``uniform_int_each`` (exact, verified by the sampling layer); replaying every outcome of that call
gives the exact distribution of the output order. For every arrival order and every split of the
reports over nodes it must be the same — uniform over the n! orders — so nothing of who sent what,
or when, survives. Power: a shuffler whose permutation is the naive (biased) swap-with-any shuffle
is told apart, because its output then depends on the order it received."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.federated import Query
from ldp_plugin.federated import shuffler as shuffler_mod
from ldp_plugin.federated.shuffler import Shuffler
from ldp_plugin.sampling import RandomSource


class _Replay(RandomSource):
    """A source whose one ``uniform_int_each`` call returns a given tuple of draws (any other
    draw is refused: the shuffler must take its permutation from that call alone)."""

    def __init__(self, draws):
        self.draws = list(draws)

    def random_bytes(self, n):
        raise AssertionError("the shuffler drew randomness outside its one permutation call")

    def uniform_int_each(self, bounds):
        bounds = np.asarray(bounds)
        assert len(bounds) == len(self.draws) and all(0 <= j < b for j, b in zip(self.draws, bounds.tolist()))
        return np.asarray(self.draws, dtype=np.int64)


def _exact_output_law(sh: Shuffler) -> dict:
    """The exact distribution of ``sh.shuffled()``: every outcome of its draws, each of probability
    Π 1/bound (the draws are exact uniforms on their ranges)."""
    n = sh.count
    bounds = list(range(n, 1, -1))
    law: Counter = Counter()
    for draws in itertools.product(*(range(b) for b in bounds)):
        law[tuple(sh.shuffled(rng=_Replay(draws)))] += Fraction(1, math.prod(bounds))
    return dict(law)


def _query():
    return Query.for_mechanism("shuffle-channel", ldp.KRR(epsilon=1.0, d=4))


def _ciphertexts(sh: Shuffler, n: int) -> list:
    return [bytes([i]) * sh.ciphertext_size for i in range(n)]


def test_the_output_does_not_depend_on_arrival_order_or_node():
    q = _query()
    n = 4
    laws = []
    base = Shuffler(q)
    cts = _ciphertexts(base, n)
    for order in itertools.permutations(range(n)):
        for split in (1, 2, n):  # one node, two nodes, one report per node
            sh = Shuffler(q)
            arrivals = [cts[i] for i in order]
            for node in range(split):
                sh.add(arrivals[node::split])
            laws.append(_exact_output_law(sh))
    first = laws[0]
    assert all(law == first for law in laws)
    assert len(first) == math.factorial(n) and set(first.values()) == {Fraction(1, math.factorial(n))}
    assert {frozenset(k) for k in first} == {frozenset(cts)}  # every report forwarded, none added


def test_power_a_biased_permutation_reveals_the_arrival_order(monkeypatch):
    def naive(n, rng=None):  # swap each position with any position: n^n outcomes, not uniform
        a = list(range(n))
        js = rng.uniform_int_each(np.full(n - 1, n, dtype=np.int64)).tolist() if n > 1 else []
        for i, j in zip(range(n - 1, 0, -1), js):
            a[i], a[j] = a[j], a[i]
        return a

    q = _query()
    sh = Shuffler(q)
    cts = _ciphertexts(sh, 3)
    sh.add(cts)
    monkeypatch.setattr(shuffler_mod, "permutation", naive)
    law: Counter = Counter()
    for draws in itertools.product(range(3), repeat=2):
        law[tuple(sh.shuffled(rng=_Replay(draws)))] += Fraction(1, 9)
    assert len(set(law.values())) > 1  # the exact law is not uniform: this check has power
