"""The transcript layer: the **exact** privacy loss of repeated collections of a keyed (memoized)
mechanism, maximized over every pair of histories, compared with what the ledger charges after
``T`` collections under each relation.

For a mechanism that declares its transcript law (``transcript_model()``: independent columns,
each a permanent table over the memoized units and an instantaneous channel; see
:class:`ldp_plugin.mechanisms.lifetime.TranscriptModel`), the probability of a transcript ``y``
of ``T`` collections given the unit sequence ``u`` of a history factorizes over the columns and,
within a column, over the blocks of ``u`` (the collections sharing a unit share one permanent
entry): ``P(y|u) = Π_c Π_{(v, S)} Σ_b perm[c][v][b] Π_{t∈S} inst[c][b][y_{c,t}]``.

The worst case over **all** histories (at most ``U`` distinct units each; value level: the same
change pattern) and all transcripts is computed exactly by :func:`.histories.worst_cases` (order
of the collections factored out, a programme over the units' output counts), for every ``T`` up to
``T_max`` (8; 6 in quick runs; less when the programme or the witness check would be too large).
Each worst case comes with a witness pair of histories; the layer recomputes the witness's loss
over every transcript with the block factorization below (:func:`exact_pair_loss`: float
candidates, near-ties in exact rationals) and requires it to equal the reported ratio — two
independent computations of one number. The charge is ``Σ_{t <= T} collection_cost(t)`` of the
mechanism rebuilt with that ``relation`` — the method the ledger and the device call — and the
decision ``ratio <= e^{charge}`` is exact, so a mechanism that charges the papers' value-level
bound while calling it user level fails here (seeded bug ``ValueChargedAsUserLGRR``), and so does
any charge between the worst named pair and the true worst case.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from fractions import Fraction
from typing import Optional

import numpy as np

from ..exact import epsilon_of_ratio, ratio_within_exp
from ..mechanisms.lifetime import UnboundedLossError
from ..mechanisms.protocol import Keyed, has
from .histories import user_level_work, worst_cases

__all__ = ["transcript_layer", "exact_pair_loss", "float_pair_loss", "history_pair_count"]

#: the witness check enumerates every transcript of a column (outputs ** T)
_MAX_OUTPUTS = 1 << 16
#: the exact worst-case programme's states (:func:`.histories.user_level_work`)
_MAX_WORK = 1 << 21


def history_pair_count(model, T: int, relation: str) -> int:
    """How many ordered pairs of histories of ``T`` collections the worst case ranges over (at most
    ``U`` distinct units each; value level: the same change pattern)."""
    N, U = model.units, min(model.unit_bound, model.units)
    # histories with exactly k distinct units: k-colourings of the pattern, S(T, k) patterns
    stirling = [[1]]
    for t in range(1, T + 1):
        stirling.append([0] * (t + 1))
        for k in range(1, t + 1):
            stirling[t][k] = k * (stirling[t - 1][k] if k < t else 0) + stirling[t - 1][k - 1]
    falling = [math.perm(N, k) for k in range(T + 1)]
    if relation == "user":
        return sum(stirling[T][k] * falling[k] for k in range(1, min(U, T) + 1)) ** 2
    return sum(stirling[T][k] * falling[k] ** 2 for k in range(1, min(U, T) + 1))


def _pattern(u: tuple) -> tuple:
    first: dict = {}
    return tuple(first.setdefault(v, len(first)) for v in u)


def _blocks(u: tuple) -> list:
    out: dict = {}
    for t, v in enumerate(u):
        out.setdefault(v, []).append(t)
    return list(out.items())


class _Column:
    """One column's transcript probabilities, cached per unit sequence."""

    def __init__(self, perm: tuple, inst: tuple, T: int):
        self.perm, self.inst = perm, inst
        self.states, self.outputs = len(inst), len(inst[0])
        self.permf = np.array([[float(p) for p in row] for row in perm])
        self.instf = np.array([[float(p) for p in row] for row in inst])
        self.ys = np.array(list(itertools.product(range(self.outputs), repeat=T)), dtype=np.int64).reshape(-1, T)
        self.cache: dict = {}

    def probs(self, u: tuple) -> np.ndarray:
        if u not in self.cache:
            res = np.ones(self.ys.shape[0])
            for v, S in _blocks(u):
                f = np.zeros(self.ys.shape[0])
                for b in range(self.states):
                    f += self.permf[v, b] * np.prod(self.instf[b][self.ys[:, S]], axis=1)
                res *= f
            self.cache[u] = res
        return self.cache[u]

    def exact(self, u: tuple, y: np.ndarray) -> Fraction:
        total = Fraction(1)
        for v, S in _blocks(u):
            f = Fraction(0)
            for b in range(self.states):
                term = self.perm[v][b]
                for t in S:
                    term *= self.inst[b][int(y[t])]
                f += term
            total *= f
        return total


def _log_ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(p) - np.log(q)
    r[(p == 0) & (q == 0)] = -np.inf  # impossible under both: never the worst transcript
    return r


def _float_direction(cols: list, u: tuple, w: tuple) -> float:
    return float(sum(_log_ratio(col.probs(u), col.probs(w)).max() for col in cols))


def _exact_direction(cols: list, u: tuple, w: tuple) -> Optional[Fraction]:
    """The exact ``max_y P(y|u)/P(y|w)`` (``None``: infinite), columns independent."""
    exact = Fraction(1)
    for col in cols:
        r = _log_ratio(col.probs(u), col.probs(w))
        m = float(r.max())
        if math.isinf(m):
            return None
        best = None
        for i in np.flatnonzero(r >= m - 1e-9):
            num, den = col.exact(u, col.ys[i]), col.exact(w, col.ys[i])
            if den == 0:
                return None
            best = num / den if best is None or num / den > best else best
        exact *= best
    return exact


def float_pair_loss(cols: list, u: tuple, w: tuple) -> float:
    return max(_float_direction(cols, u, w), _float_direction(cols, w, u))


def exact_pair_loss(cols: list, u: tuple, w: tuple) -> Optional[Fraction]:
    """The exact worst ratio ``max_y max(P(y|u)/P(y|w), P(y|w)/P(y|u))`` (``None``: infinite)."""
    a, b = _exact_direction(cols, u, w), _exact_direction(cols, w, u)
    return None if a is None or b is None else max(a, b)


def _float_down(x: Fraction) -> float:
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def _charged(mech, relation: str, T: int) -> Optional[Fraction]:
    """What the ledger charges after ``T`` collections under ``relation`` (``None``: refused)."""
    m = dataclasses.replace(mech, relation=relation)
    try:
        return sum((m.collection_cost(t) for t in range(1, T + 1)), Fraction(0))
    except UnboundedLossError:
        return None


def transcript_layer(mech, *, quick: bool = False, t_max: int = 8) -> dict:
    """The exact worst loss over **every** pair of histories of ``T = 1 .. T_max`` collections
    (:func:`.histories.worst_cases`) against the ledger's charge under each relation; passes iff no
    worst case exceeds the charge (exactly) and each witness pair, recomputed by the block
    factorization over every transcript (:func:`exact_pair_loss`), attains the reported ratio."""
    if not has(mech, Keyed):
        return {"layer": "transcript", "applicable": False, "passed": True}
    t0 = time.perf_counter()
    model = mech.transcript_model()
    widest = max(len(c[0]) for c in model.inst)
    T_top = 1
    while (T_top < (6 if quick else t_max) and widest ** (T_top + 1) <= _MAX_OUTPUTS
           and user_level_work(model, T_top + 1) <= _MAX_WORK):
        T_top += 1
    worst = worst_cases(model, T_top)
    rows, passed = [], True
    for T in range(1, T_top + 1):
        cols = [_Column(p, i, T) for p, i in zip(model.perm, model.inst)]
        for relation in ("user", "value"):
            wc = worst[(relation, T)]
            charge = _charged(mech, relation, T)
            # the witness, recomputed over every transcript by the independent block factorization
            witnessed = exact_pair_loss(cols, wc.u, wc.w) == wc.ratio
            if charge is None:
                ok = witnessed  # the ledger refuses this collection: nothing is released
            else:
                ok = witnessed and wc.ratio is not None and ratio_within_exp(wc.ratio, _float_down(charge))
            passed &= ok
            rows.append({"T": T, "relation": relation, "worst_pair": "every pair of histories (exact)", "histories": [list(wc.u), list(wc.w)],
                         "transcript": [list(y) for y in wc.y], "exact_loss": math.inf if wc.ratio is None else epsilon_of_ratio(wc.ratio),
                         "charged": None if charge is None else float(charge), "pairs": history_pair_count(model, T, relation),
                         "witness_checked": bool(witnessed), "passed": bool(ok)})
    return {"layer": "transcript", "applicable": True, "T_max": T_top, "rows": rows,
            "seconds": round(time.perf_counter() - t0, 3), "passed": bool(passed)}
