"""The transcript layer: the **exact** privacy loss of repeated collections of a keyed (memoized)
mechanism, compared with what the ledger charges after ``T`` collections under each relation.

For a mechanism that declares its transcript law (``transcript_model()``: independent columns,
each a permanent table over the memoized units and an instantaneous channel; see
:class:`ldp_plugin.mechanisms.lifetime.TranscriptModel`), the probability of a transcript ``y``
of ``T`` collections given the unit sequence ``u`` of a history factorizes over the columns and,
within a column, over the blocks of ``u`` (the collections sharing a unit share one permanent
entry): ``P(y|u) = Π_c Π_{(v, S)} Σ_b perm[c][v][b] Π_{t∈S} inst[c][b][y_{c,t}]``. The layer
enumerates every transcript of every column (``O^T`` per column, a few tens of thousands at most),
so the worst transcript of a pair is ``Σ_c max_y ln ratio_c`` (columns are independent): the loss
``max(max_y ln P(y|u)/P(y|u'), max_y ln P(y|u')/P(y|u))``. Candidates are found in float64 and
every transcript within ``1e-9`` of the float maximum is recomputed with exact rationals from the
realized thresholds; the decision ``ratio <= e^{charge}`` is exact.

Pairs of histories, for every ``T`` up to ``T_max`` (8, less when ``O^T`` would exceed 2^16):
constant vs alternating, constant vs a late change, constant vs change-and-return, constant vs a
cycle through the most units allowed, and the value-level pairs constant vs another constant and
alternating vs its swap — plus **all** pairs of sequences over 3 units (2 when 3 would be too
many; up to ``2^25`` sequence-pair-transcripts per column, vectorized: every pair of 2-unit
histories of 8 collections).
User level: every pair; value level: the pairs with the same change pattern. The charge is
``Σ_{t <= T} collection_cost(t)`` of the mechanism rebuilt with that ``relation`` — the method the
ledger and the device call — so a mechanism that charges the papers' value-level bound while
calling it user level fails here (seeded bug ``ValueChargedAsUserLGRR``).
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

__all__ = ["transcript_layer", "exact_pair_loss", "float_pair_loss", "history_pairs", "named_pairs", "all_sequences"]

_MAX_OUTPUTS = 1 << 16


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


def named_pairs(T: int, units: int, unit_bound: int) -> list:
    """Named pairs ``(label, u, u')`` of unit sequences of length ``T`` (at most ``unit_bound``
    distinct units each): constant vs alternating / late change / change-and-return / cycle,
    and the value-level pairs constant vs other constant, alternating vs swapped."""
    n2 = min(units, unit_bound, 2)
    const = (0,) * T
    alt = tuple(t % n2 for t in range(T))
    named = [("constant vs alternating", const, alt),
             ("constant vs late change", const, (0,) * (T - 1) + (n2 - 1,)),
             ("constant vs change-and-return", const, tuple(1 if n2 > 1 and T // 3 <= t < 2 * T // 3 else 0 for t in range(T))),
             ("constant vs cycle", const, tuple(t % min(units, unit_bound, T) for t in range(T))),
             ("constant vs other constant", const, (min(1, units - 1),) * T),
             ("alternating vs swapped", alt, tuple((n2 - 1 - v) for v in alt))]
    return [(label, u, w) for label, u, w in named if len(set(u)) <= unit_bound and len(set(w)) <= unit_bound]


#: the all-pairs sweep's work per column: sequences² × transcripts
_ALL_PAIRS_WORK = 1 << 25


def all_sequences(T: int, units: int, unit_bound: int, outputs: int) -> list:
    """Every unit sequence over the most units (3, else 2) whose all-pairs sweep stays small."""
    for k in (3, 2):
        k = min(k, units)
        if (k ** T) ** 2 * outputs ** T <= _ALL_PAIRS_WORK:
            return [s for s in itertools.product(range(k), repeat=T) if len(set(s)) <= unit_bound]
    return []


def _all_pairs_matrix(cols: list, seqs: list) -> np.ndarray:
    """``M[i, j] = max_y ln P(y|seqs[i]) / P(y|seqs[j])`` (float), columns summed."""
    M = np.zeros((len(seqs), len(seqs)))
    for col in cols:
        P = np.stack([col.probs(s) for s in seqs])
        with np.errstate(divide="ignore"):
            L = np.log(P)
        for i in range(len(seqs)):
            with np.errstate(invalid="ignore"):
                D = L[i][None, :] - L
            D[(P[i][None, :] == 0) & (P == 0)] = -np.inf  # impossible under both
            D[(P[i][None, :] > 0) & (P == 0)] = np.inf
            M[i] += D.max(axis=1)
    return M


def history_pairs(T: int, units: int, unit_bound: int, outputs: int = 2) -> list:
    """The named pairs and every pair of :func:`all_sequences` (``(label, u, u')``)."""
    seqs = all_sequences(T, units, unit_bound, outputs)
    return named_pairs(T, units, unit_bound) + [("all pairs", u, w) for i, u in enumerate(seqs) for w in seqs[i + 1:]]


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
    """Exact transcript losses of the worst history pairs for ``T = 1 .. T_max`` against the
    ledger's charge under each relation; passes iff no pair's exact loss exceeds the charge."""
    if not has(mech, Keyed):
        return {"layer": "transcript", "applicable": False, "passed": True}
    t0 = time.perf_counter()
    model = mech.transcript_model()
    widest = max(len(c[0]) for c in model.inst)
    T_top = 1
    while T_top < (6 if quick else t_max) and widest ** (T_top + 1) <= _MAX_OUTPUTS:
        T_top += 1
    rows, passed = [], True
    for T in range(1, T_top + 1):
        cols = [_Column(p, i, T) for p, i in zip(model.perm, model.inst)]
        losses = [(float_pair_loss(cols, u, w), label, u, w) for label, u, w in named_pairs(T, model.units, model.unit_bound)]
        seqs = all_sequences(T, model.units, model.unit_bound, widest)
        M = _all_pairs_matrix(cols, seqs) if seqs else np.zeros((0, 0))
        M = np.maximum(M, M.T)
        same = np.array([[_pattern(u) == _pattern(w) for w in seqs] for u in seqs], dtype=bool).reshape(M.shape)
        np.fill_diagonal(M, -np.inf)
        for relation in ("user", "value"):
            sel = [x for x in losses if relation == "user" or _pattern(x[2]) == _pattern(x[3])]
            Mr = M if relation == "user" else np.where(same, M, -np.inf)
            if Mr.size and np.isfinite(Mr).any() or (Mr.size and np.isposinf(Mr).any()):
                i, j = np.unravel_index(int(np.argmax(Mr)), Mr.shape)
                sel.append((float(Mr[i, j]), "all pairs", seqs[i], seqs[j]))
            charge = _charged(mech, relation, T)
            loss_f, label, u, w = max(sel, key=lambda x: x[0])
            ratio = exact_pair_loss(cols, u, w)
            if charge is None:
                ok = True  # the ledger refuses this collection: nothing is released
            else:
                c = float(charge)
                above = loss_f > c + 1e-6 or (Mr.size and bool((Mr > c + 1e-6).any()))
                # near-ties decided exactly (the float losses are accurate to ~1e-12)
                ties = [(x[2], x[3]) for x in sel if abs(x[0] - c) <= 1e-6]
                ties += [(seqs[a], seqs[b]) for a, b in zip(*np.nonzero(np.abs(Mr - c) <= 1e-6))] if Mr.size else []
                ok = not above and all((r := exact_pair_loss(cols, a, b)) is not None and ratio_within_exp(r, _float_down(charge)) for a, b in ties)
            passed &= ok
            rows.append({"T": T, "relation": relation, "worst_pair": label, "histories": [list(u), list(w)],
                         "exact_loss": math.inf if ratio is None else epsilon_of_ratio(ratio),
                         "charged": None if charge is None else float(charge), "pairs": len(sel) - 1 + len(seqs) * (len(seqs) - 1) // 2,
                         "passed": bool(ok)})
    return {"layer": "transcript", "applicable": True, "T_max": T_top, "rows": rows,
            "seconds": round(time.perf_counter() - t0, 3), "passed": bool(passed)}
