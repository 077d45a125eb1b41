"""A population of users of one data shape, as a mechanism's client takes it, and what is true of it.

:func:`population` draws ``n`` users of a shape (:mod:`.shapes`) for any input kind — a category, a set
of at most ``m`` categories, a number on ``[lower, upper]``, one category per attribute, a set of
(key, value) pairs with at most ``ℓ`` keys — and returns the client's input together with the
:class:`Truth` the server's estimates are compared with: the users' own frequencies (of an item, of an
attribute's item or of a pair of attributes), their mean, the fraction of them in a range and the set of
values that are a ``q``-quantile of them. The estimates these are compared with cover the users who
reported (``target="sample"``), so the truth is the users', not a population's.

Sets and key–value sets are at most as long as the mechanism takes (``m``, ``ℓ``) unless the mechanism
declares that it samples longer ones (``on_long="sample"``): then a third of the users hold up to two
more items, and the truth is still what they hold.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..mechanisms.protocol import ClosedDomain, InputKind, has
from .shapes import category_probabilities, category_shape, number_shape

__all__ = ["Truth", "population", "mechanism_parameter"]


@dataclass
class Truth:
    """What is true of the users: ``frequencies`` (one array per estimated attribute or pair; a single
    one for a category or a set), ``mean``, ``values`` (the numbers themselves, for ranges and
    quantiles), ``key_frequencies`` / ``key_means`` (key–value sets), and ``lower``/``upper``."""

    n: int
    frequencies: list = field(default_factory=list)
    mean: Optional[float] = None
    values: Optional[np.ndarray] = None
    key_frequencies: Optional[np.ndarray] = None
    key_means: Optional[np.ndarray] = None
    lower: float = 0.0
    upper: float = 1.0

    def fraction(self, lo: float, hi: float) -> float:
        """The fraction of the users with a value in ``[lo, hi)``."""
        v = self.values
        return float(np.mean((v >= lo) & (v < hi)))

    def quantile_covered(self, q: float, lo: float, hi: float) -> bool:
        """Whether ``[lo, hi]`` meets the set of ``q``-quantiles of the users' values
        (``{t : F(t−) <= q <= F(t)}``, an interval: on a point mass, the mass's value)."""
        v = self.values
        return bool(np.mean(v < lo) <= q <= np.mean(v <= hi))


def mechanism_parameter(mech: Any, key: str, default: Any = None) -> Any:
    """A parameter of the mechanism's spec (``spec()["params"][key]`` or a wrapper's ``spec()[key]``)."""
    spec = mech.spec()
    params = spec.get("params", spec)
    return params.get(key, spec.get(key, default))


def _sets(gen: np.random.Generator, n: int, d: int, shape: str, longest: int, over: int) -> list:
    """``n`` sets of distinct items in ``[0, d)`` (sizes 1..``longest``; a third up to ``longest + over``),
    drawn without replacement by the shape's weights (Gumbel top-k; the point mass puts item 0 in every
    set and the rest uniformly)."""
    w = category_probabilities(shape, d) + 1e-3
    sizes = gen.integers(1, longest + 1, n)
    if over:
        extra = gen.random(n) < 1 / 3
        sizes = np.where(extra, np.minimum(longest + gen.integers(1, over + 1, n), d), sizes)
    sizes = np.minimum(sizes, d)
    keys = np.log(w)[None, :] + gen.gumbel(size=(n, d))
    order = np.argsort(-keys, axis=1)
    return [order[u, : sizes[u]].tolist() for u in range(n)]


def population(mech: Any, shape: str, n: int, gen: np.random.Generator, *, number_shape_name: Optional[str] = None) -> tuple:
    """``(client input, Truth)`` for ``n`` users of ``shape`` (a number shape for numbers, a category
    shape otherwise; key–value values take ``number_shape_name``, default ``"smooth"``)."""
    kind = mech.input_kind
    if kind == InputKind.NUMBER:
        lo, hi = float(mech.lower), float(mech.upper)
        x = lo + (hi - lo) * number_shape(shape, n, gen)
        x = np.minimum(x, hi)
        return x, Truth(n, mean=float(x.mean()), values=x, lower=lo, upper=hi)
    if kind == InputKind.TUPLE:
        domains = tuple(int(k) for k in mech.domains)
        codes = np.stack([category_shape(shape, n, k, gen) for k in domains], axis=1)
        freqs = [np.bincount(codes[:, j], minlength=k) / n for j, k in enumerate(domains)]
        pairs = [np.bincount(codes[:, a] * domains[b] + codes[:, b], minlength=domains[a] * domains[b]) / n
                 for a, b in itertools.combinations(range(len(domains)), 2)]
        return codes, Truth(n, frequencies=[freqs, pairs])
    over = 2 if mechanism_parameter(mech, "on_long") == "sample" else 0
    if kind == InputKind.KEY_VALUE:
        d, ell = int(mech.d), int(mech.ell)
        sets = _sets(gen, n, d, shape, ell, over)
        empty = gen.random(n) < 0.1  # some users hold no key
        vals = 2.0 * number_shape(number_shape_name or "smooth", n * (ell + over + 1), gen) - 1.0
        users, held, sums, k = [], np.zeros(d), np.zeros(d), 0
        for u, s in enumerate(sets):
            pairs = [] if empty[u] else [(int(key), float(vals[k + i])) for i, key in enumerate(s)]
            k += len(s)
            users.append(pairs)
            for key, v in pairs:
                held[key] += 1
                sums[key] += v
        means = np.divide(sums, held, out=np.zeros(d), where=held > 0)
        return users, Truth(n, key_frequencies=held / n, key_means=means)
    d = int(mech.domain_size)
    items = list(mech.items) if has(mech, ClosedDomain) else list(range(d))
    if kind == InputKind.SET:
        sets = _sets(gen, n, d, shape, int(mech.m), over)
        held = np.zeros(d)
        for s in sets:
            held[s] += 1
        return [[items[i] for i in s] for s in sets], Truth(n, frequencies=[held / n])
    codes = category_shape(shape, n, d, gen)
    return np.asarray(items, dtype=object)[codes].tolist() if not isinstance(items[0], (int, np.integer)) else np.asarray(items)[codes], \
        Truth(n, frequencies=[np.bincount(codes, minlength=d) / n])
