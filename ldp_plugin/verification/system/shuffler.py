"""The shuffler as a channel: its output batch as a function of the arrival order and of which
node sent which report, computed exactly.

:meth:`Shuffler.shuffled` draws its permutation with one call of ``uniform_int_each`` (exact
uniforms, verified by the sampling layer); replaying every outcome of that call
(:class:`ReplaySource`) gives the exact law of the output order, each outcome of probability
``Π 1/bound``. For every arrival order of ``n`` ciphertexts and every split of them over nodes
(one node, two nodes, one report per node) the law must be the same — uniform over the ``n!``
orders of the held set — so nothing of who sent what, or when, survives; and the batch must hold
each accepted ciphertext once (a byte-identical replay is ``duplicate_ciphertext``, a plaintext
envelope ``not_sealed`` (also inside a node's blob), any other length or type ``wrong_length``, none
of them forwarded), and a batch below the query's minimum is neither forwarded nor written.

Power: a shuffler whose permutation is the naive swap-with-any shuffle (``n^n`` equally likely
draws, not a multiple of ``n!``) has a non-uniform law that depends on the order it received
(the seeded bug ``naive-shuffle``)."""

from __future__ import annotations

import itertools
import math
import tempfile
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ...federated.query import Query
from ...federated.shuffler import BatchBelowMinimum, Shuffler
from ...mechanisms import KRR
from ...sampling import RandomSource

__all__ = ["shuffler_layer", "ReplaySource", "exact_output_law"]


class ReplaySource(RandomSource):
    """A source whose ``uniform_int_each`` calls return given draws in turn (any other draw is
    refused: the shuffler must take its permutation from those calls alone)."""

    def __init__(self, draws):
        self.draws = [int(x) for x in draws]

    def random_bytes(self, n):
        raise LookupError("the shuffler drew randomness outside its permutation call")

    def uniform_int_each(self, bounds):
        bounds = np.asarray(bounds, dtype=np.int64).tolist()
        if len(bounds) > len(self.draws) or not all(0 <= j < b for j, b in zip(self.draws, bounds)):
            raise LookupError("the shuffler asked for draws the replay does not hold")
        out, self.draws = self.draws[:len(bounds)], self.draws[len(bounds):]
        return np.asarray(out, dtype=np.int64)


def exact_output_law(sh: Any, bounds: list) -> dict:
    """``{output order: exact probability}`` of ``sh.shuffled``: every outcome of draws uniform on
    ``range(b)`` for each ``b`` of ``bounds``."""
    law: Counter = Counter()
    p = Fraction(1, math.prod(bounds)) if bounds else Fraction(1)
    for draws in itertools.product(*(range(b) for b in bounds)):
        law[tuple(sh.shuffled(rng=ReplaySource(draws)))] += p
    return dict(law)


def shuffler_layer(*, seed: int = 0, quick: bool = False, shuffler: Callable = Shuffler, n: int = 4, directory: Any = None) -> dict:
    """The module's checks on ``shuffler`` (a :class:`Shuffler` or a class with its interface) for
    ``n`` reports (``quick``: 3). ``seed`` changes nothing: every law is exact; ``directory`` is
    where the refused batch would have been written (default: a temporary directory)."""
    t0 = time.perf_counter()
    n = 3 if quick else n
    query = Query.for_mechanism("system/shuffle", KRR(epsilon=1.0, d=4), min_batch=2)
    base = shuffler(query)
    cts = [bytes([i + 1]) * base.ciphertext_size for i in range(n)]
    failures, laws = [], []
    for order in itertools.permutations(range(n)):
        for split in sorted({1, 2, n}):
            sh = shuffler(query)
            arrivals = [cts[i] for i in order]
            for node in range(split):
                sh.add(arrivals[node::split])
            law = exact_output_law(sh, _bounds_of(sh))
            laws.append(law)
            if not all(sorted(k) == sorted(cts) for k in law):
                failures.append(f"arrival order {order}, {split} node(s): a batch is not the set of accepted reports")
    uniform = {Fraction(1, math.factorial(n))}
    if any(law != laws[0] for law in laws):
        failures.append("the output law depends on the arrival order or the node split")
    if len(laws[0]) != math.factorial(n) or set(laws[0].values()) != uniform:
        failures.append(f"the output law is not uniform over the {math.factorial(n)} orders")
    sh = shuffler(query)
    sh.add(cts[:2] + [cts[0], bytes(base.plain_size), b"x" * 7, "not bytes"])
    plain = sh.add_reply({"devices": 2, "refused": "{}", "retry": False, "reports": bytes(2 * base.plain_size)}, quota=2)  # an owner who pinned no key
    expected = {"duplicate_ciphertext": 1, "not_sealed": 3, "wrong_length": 2}
    if sh.count != 2 or sh.rejected != expected or plain["accepted"] != 0:
        failures.append(f"rejections {sh.rejected} and {sh.count} held, expected {expected} and 2 held")
    with tempfile.TemporaryDirectory(prefix="ldp-system-shuffler-") as tmp:
        lone = shuffler(query)
        lone.add(cts[:1])
        target = Path(directory or tmp) / "below.ldpbatch"
        try:
            lone.forward(target)
            failures.append("a batch below the query's minimum was forwarded")
        except BatchBelowMinimum:
            if target.exists():
                failures.append("a batch below the query's minimum was written")
    return {"layer": "shuffler", "reports": n, "arrival_orders": math.factorial(n), "laws_compared": len(laws),
            "outputs": len(laws[0]), "failures": failures, "seconds": round(time.perf_counter() - t0, 2), "passed": not failures}


def _bounds_of(sh: Any) -> list:
    """The draws a permutation of the held set asks: recorded by a probe (a shuffler that asks
    other bounds — a biased shuffle — is replayed over its own)."""
    probe = _Probe()
    sh.shuffled(rng=probe)
    return probe.bounds


class _Probe(RandomSource):
    def __init__(self):
        self.bounds: list = []

    def random_bytes(self, n):
        raise LookupError("the shuffler drew randomness outside its permutation call")

    def uniform_int_each(self, bounds):
        b = np.asarray(bounds, dtype=np.int64)
        self.bounds += b.tolist()
        return np.zeros(b.size, dtype=np.int64)
