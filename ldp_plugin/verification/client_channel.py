"""The realized channel of the real client, rebuilt from the values it compares uniform words
against (issue 32, item 2) — not from the thresholds a mechanism documents.

:func:`client_channel_row` runs the real client (``sample_verification_outputs``) for **one**
user on input ``x`` with a :class:`ReplaySource`: a random source that, instead of drawing,
*follows a script* of outcomes for every exact sampler the client calls — a Bernoulli with
threshold ``T`` has the two outcomes of weights ``T/2**64`` and ``1 − T/2**64``, a uniform
integer on ``[0, r)`` has ``r`` outcomes of weight ``1/r``, an inverse-CDF search on boundaries
``B`` has one outcome per interval, of weight ``(B[j+1] − B[j])/2**64``, a uniform subset one
per subset. Replaying the client once per leaf of that tree of outcomes (depth first) and
adding each leaf's weight (the product of its outcomes' weights, exact rationals) to the output
the client returned gives the client's exact output distribution — the row of the channel it
realizes, built only from the integers it passed to the source and from what it did with the
outcomes. A threshold used in the wrong place (swapped, complemented, another layer's) changes
this row, whatever the thresholds the mechanism documents.

The sampler primitives themselves (that ``bernoulli(T)`` is ``W < T`` for a uniform word) are
checked bit for bit by the sampling layer's own tests. Clients that read raw words or bytes
(per-user seeds, secret keys of the longitudinal protocols) or sample by rejection (an
unbounded tree) cannot be enumerated: :class:`NotEnumerable` is raised and the caller reports the
family as such.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

import numpy as np

from ..exact import TWO64
from ..sampling.source import RandomSource

__all__ = ["ReplaySource", "NotEnumerable", "client_channel_row", "client_channel", "client_channel_check"]


_LAST_LEAVES = [0]  # replays of the last client_channel_row (the budget of client_channel)


class NotEnumerable(Exception):
    """The client drew raw words or bytes, or has too many outcomes to enumerate."""


class ReplaySource(RandomSource):
    """A source that follows ``script`` (outcome indices, then 0s) and records each call's
    number of outcomes (``branching``) and the probability of the outcomes taken (``weight``)."""

    def __init__(self, script: list, max_branch: int = 4096, max_calls: int = 256):
        self.script = script
        self.max_calls = max_calls
        self.pos = 0
        self.branching: list = []
        self.weight = Fraction(1)
        self.max_branch = max_branch

    def _choose(self, weights: list) -> int:
        if len(weights) > self.max_branch:
            raise NotEnumerable(f"a call with {len(weights)} outcomes")
        if self.pos >= self.max_calls:  # e.g. a rejection loop: an unbounded tree of outcomes
            raise NotEnumerable(f"more than {self.max_calls} sampler outcomes for one user (a rejection loop?)")
        i = self.script[self.pos] if self.pos < len(self.script) else 0
        self.pos += 1
        self.branching.append(len(weights))
        self.weight *= weights[i]
        return i

    def _bit(self, threshold: int) -> bool:
        t = int(threshold)
        return self._choose([Fraction(t, TWO64), Fraction(TWO64 - t, TWO64)]) == 0

    def _uniform(self, r: int) -> int:
        r = int(r)
        return self._choose([Fraction(1, r)] * r)

    # raw randomness: not enumerable
    def random_bytes(self, n: int) -> np.ndarray:
        raise NotEnumerable("the client reads raw random bytes")

    def words(self, n: int, bits: int = 64) -> np.ndarray:
        raise NotEnumerable("the client reads raw random words")

    # the exact samplers, one outcome per element
    def bernoulli(self, threshold: int, size: int) -> np.ndarray:
        return np.array([self._bit(threshold) for _ in range(size)], dtype=bool)

    def bernoulli_each(self, thresholds: np.ndarray) -> np.ndarray:
        return np.array([self._bit(t) for t in np.asarray(thresholds, dtype=np.uint64).tolist()], dtype=bool)

    def _rows(self, n_rows: int, n_bits: int, prob_of) -> np.ndarray:
        bits = np.array([[self._bit(prob_of(i, j)) for j in range(n_bits)] for i in range(n_rows)], dtype=np.uint8).reshape(n_rows, n_bits)
        return np.packbits(bits, axis=1, bitorder="little") if n_bits else np.zeros((n_rows, 0), np.uint8)

    def bernoulli_packed(self, threshold: int, n_rows: int, n_bits: int) -> np.ndarray:
        return self._rows(n_rows, n_bits, lambda i, j: threshold)

    def bernoulli_rows(self, q_threshold: int, n_rows: int, n_bits: int, positions, p_threshold: int) -> np.ndarray:
        pos = np.asarray(positions).reshape(n_rows, -1)
        own = [set(pos[i].tolist()) for i in range(n_rows)]
        return self._rows(n_rows, n_bits, lambda i, j: p_threshold if j in own[i] else q_threshold)

    def uniform_int(self, r: int, size: int) -> np.ndarray:
        return np.array([self._uniform(r) for _ in range(size)], dtype=np.int64)

    def uniform_int_each(self, r: np.ndarray) -> np.ndarray:
        return np.array([self._uniform(v) for v in np.asarray(r, dtype=np.uint64).tolist()], dtype=np.int64)

    def inverse_cdf(self, boundaries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        B = np.asarray(boundaries, dtype=np.uint64)
        out = []
        for r in np.asarray(rows, dtype=np.int64).tolist():
            b = [int(v) for v in B[r].tolist()]
            out.append(self._choose([Fraction(hi - lo, TWO64) for lo, hi in zip(b, b[1:] + [TWO64])]))
        return np.array(out, dtype=np.int64)

    def sorted_subsets(self, x: np.ndarray, include: np.ndarray, d: int, k: int) -> np.ndarray:
        rows = []
        for xi, inc in zip(np.asarray(x).tolist(), np.asarray(include, dtype=bool).tolist()):
            others = [v for v in range(d) if v != xi]
            combos = list(itertools.combinations(others, k - int(inc))) if math.comb(d - 1, k - int(inc)) <= self.max_branch else None
            if combos is None:
                raise NotEnumerable("too many subsets")
            c = combos[self._choose([Fraction(1, len(combos))] * len(combos))]
            rows.append(sorted(c + ((xi,) if inc else ())))
        return np.array(rows, dtype=np.uint16 if d <= 1 << 16 else np.uint32).reshape(len(rows), k)

    def partial_shuffle_prefix(self, n_rows: int, population: int, s: int) -> np.ndarray:
        if math.perm(population, s) > self.max_branch:
            raise NotEnumerable("too many ordered subsets")
        perms = list(itertools.permutations(range(population), s))
        rows = [perms[self._choose([Fraction(1, len(perms))] * len(perms))] for _ in range(n_rows)]
        return np.array(rows, dtype=np.uint16 if population <= 1 << 16 else np.uint32).reshape(n_rows, s)


def client_channel_row(mech: Any, x: int, *, max_leaves: int = 50_000) -> dict:
    """``{output column: probability}`` of the real client on input ``x``, by replaying it once per
    leaf of its tree of sampler outcomes (module docstring). Raises :class:`NotEnumerable`."""
    row: dict = defaultdict(Fraction)
    script: list = []
    for _leaf in range(max_leaves):
        src = ReplaySource(script)
        out = np.asarray(mech.sample_verification_outputs(x, 1, src)).ravel()
        if src.weight:
            row[int(out[0])] += src.weight
        b = src.branching
        taken = script + [0] * (len(b) - len(script))
        j = len(b) - 1
        while j >= 0 and taken[j] + 1 >= b[j]:
            j -= 1
        if j < 0:
            _LAST_LEAVES[0] = _leaf + 1
            return dict(row)
        script = taken[:j] + [taken[j] + 1]
    raise NotEnumerable(f"more than {max_leaves} outcome paths")


def client_channel(mech: Any, *, max_leaves: int = 50_000, total_leaves: int | None = None) -> list:
    """Every input's :func:`client_channel_row`, as dense rows over the declared channel's
    columns (an output outside the declared channel is appended, so the rows cannot match).
    ``total_leaves`` bounds the replays over all inputs (:class:`NotEnumerable` beyond)."""
    width = len(mech.channel().outputs)
    rows = []
    budget = total_leaves
    for x in range(mech.verification_input_count()):
        r = client_channel_row(mech, x, max_leaves=max_leaves if budget is None else min(max_leaves, budget))
        if budget is not None:
            budget -= _LAST_LEAVES[0]
            if budget <= 0:
                raise NotEnumerable(f"more than {total_leaves} outcome paths over all inputs")
        dense = [Fraction(0)] * width
        for j, p in r.items():
            if 0 <= j < width:
                dense[j] += p
            else:
                dense.append(p)  # an output outside the declared channel: the rows cannot match
        rows.append(dense)
    return rows


def client_channel_check(mech: Any, *, total_leaves: int = 20_000) -> dict:
    """The sampling-path layer's rebuild (``ldp verify``): ``client_channel`` is ``"equal"`` when the
    channel rebuilt from the client's sampler calls is the declared one, ``"differs"`` (failed)
    otherwise, or ``"not enumerable: …"`` (keyed clients, rejection loops, too many paths)."""
    try:
        rows = client_channel(mech, total_leaves=total_leaves)
    except NotEnumerable as e:
        return {"client_channel": f"not enumerable: {e}", "client_channel_passed": True}
    equal = rows == [list(r) for r in mech.channel().matrix]
    return {"client_channel": "equal" if equal else "differs", "client_channel_passed": bool(equal)}
