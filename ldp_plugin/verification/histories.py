"""The **exact** worst case of a keyed mechanism's repeated collections over *all* histories.

Setting: :class:`ldp_plugin.mechanisms.lifetime.TranscriptModel` — independent columns ``c``, a
permanent table ``perm[c][v][b]`` over the ``N`` memoized units and an instantaneous channel
``inst[c][b][o]``; a history is a unit sequence ``u`` of length ``T`` with at most ``U`` distinct
units, and ``P(y|u) = Π_c Π_v f_{c,v}(K_{c,v}(y, u))`` where ``K_{c,v}`` counts the outputs of
column ``c`` at the collections ``u`` maps to unit ``v`` and

    f_{c,v}(K) = Σ_b perm[c][v][b] Π_o inst[c][b][o]^{K_o}        (f_{c,v}(0) = 1).

The loss after ``T`` collections is ``max over pairs (u, w) of the relation, max_y ln P(y|u)/P(y|w)``.
Two exact reductions make the maximum over every history (not a list of named pairs) cheap:

* **Order does not matter.** Permuting the collections of ``u``, ``w`` and ``y`` together leaves
  both probabilities unchanged, so ``P(y|u)`` depends on ``(y, u)`` only through the counts
  ``K_{c,v}``.
* **User level** (any two histories): the maximum over pairs and transcripts is
  ``max_y [max_u P(y|u)] / [min_w P(y|w)]`` — ``u`` and ``w`` are chosen independently. With one
  column, ``y`` is a count vector ``R`` of outputs, and ``max_u`` / ``min_u`` is a split of ``R``
  into the units' counts (at most ``U`` non-empty): a dynamic programme over the units, one pass
  for every ``|R| <= T`` at once. With several columns ``u`` is shared by the columns, so the
  programme runs over **pair types** instead: the ``N×N`` counts ``n[a][b]`` of collections with
  ``(u_t, w_t) = (a, b)`` (every pair of histories up to order); given ``n`` the columns are
  independent, each maximized over the output counts of every cell (float first, then the near-ties
  — within ``1e-9`` — recomputed exactly).
* **Value level** (same change pattern, ``w = π∘u``): a pair is ``k <= U`` blocks ``(a_j, b_j, s_j)``
  with distinct ``a``'s, distinct ``b``'s and ``Σ s_j = T``, and the transcript splits into the
  blocks, so the loss is ``max Π_j H(a_j, b_j, s_j)`` with ``H(a, b, s) = Π_c max_{|K| = s}
  f_{c,a}(K)/f_{c,b}(K)`` — a programme over the units and the set of ``b``'s used.

All decisions are exact: the probabilities are scaled to integers (``f·D_perm·D_inst^{|K|}``, the
same scale for every history of ``T`` collections), compared as integers, and the worst ratio is a
:class:`fractions.Fraction` (``None``: infinite — a transcript possible under one history and not
under the other). The witness histories and transcript are returned with it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import numpy as np

__all__ = ["WorstCase", "worst_cases", "user_level_work"]


@dataclass(frozen=True)
class WorstCase:
    """The worst pair of histories after ``T`` collections under ``relation``: the exact worst
    ratio (``None``: infinite) and a witness ``(u, w)`` with the transcript ``y`` (one tuple per
    column) that attains it."""

    T: int
    relation: str
    ratio: Optional[Fraction]
    u: tuple
    w: tuple
    y: tuple


def _counts(s: int, parts: int) -> list:
    """Every count vector of ``parts`` non-negative entries summing to ``s``."""
    if parts == 1:
        return [(s,)]
    return [(k,) + rest for k in range(s, -1, -1) for rest in _counts(s - k, parts - 1)]


def _lcm_den(rows) -> int:
    den = 1
    for row in rows:
        for p in row:
            den = math.lcm(den, Fraction(p).denominator)
    return den


class _Scaled:
    """One column's block function on integers: ``F[v][K] = f_{c,v}(K)·Dp·Di^{|K|}``."""

    def __init__(self, perm: tuple, inst: tuple, T: int):
        self.N, self.S, self.O = len(perm), len(inst), len(inst[0])
        dp, di = _lcm_den(perm), _lcm_den(inst)
        P = [[int(Fraction(p) * dp) for p in row] for row in perm]
        I = [[int(Fraction(p) * di) for p in row] for row in inst]
        pw = [[[I[b][o] ** k for k in range(T + 1)] for o in range(self.O)] for b in range(self.S)]
        self.F: list = [{} for _ in range(self.N)]
        self.vecs = [K for s in range(T + 1) for K in _counts(s, self.O)]
        for K in self.vecs:
            inner = [math.prod(pw[b][o][K[o]] for o in range(self.O)) for b in range(self.S)]
            for v in range(self.N):
                self.F[v][K] = sum(P[v][b] * inner[b] for b in range(self.S))
        self.T = T
        self.base = (T + 1) ** np.arange(self.O)
        self.lnF = np.full((self.N, int((T + 1) ** self.O)), -np.inf)
        self.vec_of = {}
        for K in self.vecs:
            code = int(np.dot(K, self.base))
            self.vec_of[code] = K
            for v in range(self.N):
                f = self.F[v][K]
                # float of the exact ratio f / (Dp·Di^|K|): the same scale for every history of T collections
                self.lnF[v, code] = math.log(f) - math.log(dp) - sum(K) * math.log(di) if f > 0 else -np.inf


def _better(a: Optional[int], b: int, maximize: bool) -> bool:
    return a is None or (b > a if maximize else b < a)


def _split_programme(col: _Scaled, U: int, maximize: bool) -> tuple:
    """For every output count vector ``R`` (``|R| <= T``): the largest (smallest) integer-scaled
    ``Π_v F[v][B_v]`` over splits ``Σ_v B_v = R`` with at most ``U`` non-empty ``B_v``, and the
    choices that attain it (``value[(R, k)]``, ``arg[j][(R, k)]``; ``k`` = blocks still allowed)."""
    N, zero = col.N, (0,) * col.O
    limited = U < N
    ks = range(U + 1) if limited else (0,)
    subs = {R: list(itertools.product(*(range(r + 1) for r in R))) for R in col.vecs}
    nxt: dict = {(R, k): (1 if R == zero else None) for R in col.vecs for k in ks}
    args = []
    for j in reversed(range(N)):
        Fj = col.F[j]
        cur, arg = {}, {}
        for R in col.vecs:
            for k in ks:
                best, bestB = None, None
                for B in subs[R]:
                    used = limited and any(B)
                    if used and k == 0:
                        continue
                    rest = nxt[(tuple(r - b for r, b in zip(R, B)), k - used)]
                    if rest is None:
                        continue
                    val = Fj[B] * rest
                    if _better(best, val, maximize):
                        best, bestB = val, B
                cur[(R, k)], arg[(R, k)] = best, bestB
        args.append(arg)
        nxt = cur
    args.reverse()
    return nxt, args, (U if limited else 0)


def _split_of(args: list, R: tuple, k: int, limited: bool) -> list:
    out = []
    for arg in args:
        B = arg[(R, k)]
        out.append(B)
        R = tuple(r - b for r, b in zip(R, B))
        k -= limited and any(B)
    return out


def _user_one_column(col: _Scaled, U: int, T_top: int) -> dict:
    hi, hi_args, k0 = _split_programme(col, U, True)
    lo, lo_args, _ = _split_programme(col, U, False)
    limited = U < col.N
    out = {}
    for T in range(1, T_top + 1):
        best: tuple = (Fraction(-1), None)
        for R in _counts(T, col.O):
            a, b = hi[(R, k0)], lo[(R, k0)]
            if not a:  # impossible under every history: never the worst transcript
                continue
            r = None if b == 0 else Fraction(a, b)
            if best[1] is None or r is None or (best[0] is not None and r > best[0]):
                best = (r, R)
            if r is None:
                break
        ratio, R = best
        y = tuple(o for o in range(col.O) for _ in range(R[o]))
        u, w = (_history(_split_of(a, R, k0, limited), R) for a in (hi_args, lo_args))
        out[T] = WorstCase(T, "user", ratio, u, w, (y,))
    return out


def _history(split: list, R: tuple) -> tuple:
    """The unit sequence that gives unit ``v`` the counts ``split[v]`` of the sorted transcript."""
    left = [list(B) for B in split]
    u = []
    for o in range(len(R)):
        for _ in range(R[o]):
            v = next(v for v in range(len(left)) if left[v][o] > 0)
            left[v][o] -= 1
            u.append(v)
    return tuple(u)


def _compositions(T: int, parts: int) -> np.ndarray:
    """Every count vector of ``parts`` non-negative entries summing to ``T`` (rows of an array)."""
    table = {t: np.array([[t]], dtype=np.int8) for t in range(T + 1)}  # one part
    for _ in range(parts - 1):
        table = {t: np.vstack([np.hstack([np.full((table[t - f].shape[0], 1), f, dtype=np.int8), table[t - f]]) for f in range(t, -1, -1)])
                 for t in range(T + 1)}
    return table[T]


def user_level_work(model, T: int) -> int:
    """How many states the user-level programme visits after ``T`` collections: split pairs for
    one column; pair types × output counts (multisets of ``T`` symbols ``(a, b, o)``) for several."""
    if len(model.perm) == 1:
        O = len(model.inst[0][0])
        return math.comb(T + 2 * O, 2 * O) * model.units * (min(model.unit_bound, model.units) + 1)
    S = model.units ** 2 * max(len(i[0]) for i in model.inst)
    return math.comb(T + S - 1, S - 1)


def _pair_codes(cnt: np.ndarray, N: int, O: int, T: int, base: int) -> tuple:
    """For multisets of symbols ``(a, b, o)`` (columns of ``cnt``): the pair type's code and each
    unit's output-count code (digits base ``base``) under ``u`` (rows ``a``) and ``w`` (columns ``b``)."""
    M = cnt.shape[0]
    ncode = np.zeros(M, dtype=np.int64)
    rows = np.zeros((M, N), dtype=np.int64)
    cols = np.zeros((M, N), dtype=np.int64)
    s = 0
    for a in range(N):
        for b in range(N):
            for o in range(O):
                x = cnt[:, s].astype(np.int64)
                ncode += x * (T + 1) ** (a * N + b)
                rows[:, a] += x * base ** o
                cols[:, b] += x * base ** o
                s += 1
    return ncode, rows, cols


def _user_columns(cols: list, N: int, U: int, T_top: int) -> dict:
    """Several columns: every multiset of ``T`` symbols ``(a, b, o)`` is a pair type ``n[a][b]``
    with a split of each cell over the outputs; per column the split is maximized within each
    pair type (a segment maximum), the columns' maxima summed, the pair types maximized — in
    float, then the near-ties recomputed exactly."""
    O = cols[0].O
    if any(col.O != O for col in cols):
        raise ValueError("the columns of a transcript model must have one output alphabet size")
    out = {}
    for T in range(1, T_top + 1):
        cnt = _compositions(T, N * N * O)
        ncode, rows, cs = _pair_codes(cnt, N, O, T, cols[0].T + 1)
        if U < N:  # at most U distinct units in each history
            keep = np.flatnonzero(((rows > 0).sum(axis=1) <= U) & ((cs > 0).sum(axis=1) <= U))
            order = keep[np.argsort(ncode[keep], kind="stable")]
        else:
            order = np.argsort(ncode, kind="stable")
        cnt, ncode, rows, cs = cnt[order], ncode[order], rows[order], cs[order]
        starts = np.flatnonzero(np.r_[True, ncode[1:] != ncode[:-1]])
        ends = np.r_[starts[1:], len(ncode)]
        objs, best = [], []
        for col in cols:
            num, den = col.lnF[0, rows[:, 0]], col.lnF[0, cs[:, 0]]
            for a in range(1, N):
                num = num + col.lnF[a, rows[:, a]]
                den = den + col.lnF[a, cs[:, a]]
            with np.errstate(invalid="ignore"):
                obj = num - den
            obj[np.isneginf(num)] = -np.inf
            objs.append(obj)
            best.append(np.maximum.reduceat(obj, starts))
        total = np.sum(best, axis=0)
        top = float(total.max())
        cand = np.flatnonzero(total == top) if math.isinf(top) else np.flatnonzero(total >= top - 1e-9 * max(1.0, abs(top)))
        best_all: Optional[tuple] = None
        for g in cand:
            ratio: Optional[Fraction] = Fraction(1)
            ys = []
            for c, col in enumerate(cols):
                lo, hi = starts[g], ends[g]
                obj, m = objs[c][lo:hi], best[c][g]
                near = lo + (np.flatnonzero(obj == m) if math.isinf(m) else np.flatnonzero(obj >= m - 1e-9 * max(1.0, abs(m))))
                colbest, arg = Fraction(-1), None
                for i in near:
                    r = _exact_column(col, rows[i], cs[i])
                    if r is None or (colbest is not None and r > colbest):
                        colbest, arg = r, i
                    if r is None:
                        break
                ys.append(cnt[arg].reshape(N, N, O))
                ratio = None if ratio is None or colbest is None else ratio * colbest
            if best_all is None or ratio is None or (best_all[0] is not None and ratio > best_all[0]):
                best_all = (ratio, ys)
            if ratio is None:
                break
        ratio, ys = best_all
        u, w, y = _pair_witness(ys)
        out[T] = WorstCase(T, "user", ratio, u, w, y)
        if ratio is None:  # infinite from here on (worst_cases extends the witness)
            break
    return out


def _exact_column(col: _Scaled, rows: np.ndarray, cols: np.ndarray) -> Optional[Fraction]:
    """The exact ``Π_a f_a / Π_b f_b`` of one option (codes of each unit's output counts)."""
    num = math.prod(col.F[a][col.vec_of[int(rows[a])]] for a in range(col.N))
    den = math.prod(col.F[b][col.vec_of[int(cols[b])]] for b in range(col.N))
    if num == 0:
        return Fraction(0)
    return None if den == 0 else Fraction(num, den)


def _pair_witness(ys: list) -> tuple:
    """Histories and per-column transcripts of per-column cell counts ``cnt[a, b, o]`` (one pair
    type: every column's counts sum over ``o`` to the same ``n[a][b]``)."""
    n = ys[0].sum(axis=2)
    N = n.shape[0]
    u = tuple(a for a in range(N) for b in range(N) for _ in range(int(n[a, b])))
    w = tuple(b for a in range(N) for b in range(N) for _ in range(int(n[a, b])))
    y = tuple(tuple(o for a in range(N) for b in range(N) for o in range(cnt.shape[2]) for _ in range(int(cnt[a, b, o]))) for cnt in ys)
    return u, w, y


def _block_ratio(col: _Scaled, a: int, b: int, s: int) -> tuple:
    """``max_{|K| = s} f_a(K)/f_b(K)`` exactly (``None``: infinite) and the ``K`` attaining it."""
    best, arg = Fraction(-1), None
    for K in _counts(s, col.O):
        num, den = col.F[a][K], col.F[b][K]
        if num == 0:
            continue
        if den == 0:
            return None, K
        r = Fraction(num, den)
        if r > best:
            best, arg = r, K
    return best, arg


def _value_level(cols: list, N: int, U: int, T_top: int) -> dict:
    """The same-change-pattern worst case: a programme over the units ``a`` (in order), the set of
    ``b``'s already matched and the collections used (blocks used = matched ``b``'s)."""
    H: dict = {}
    for a in range(N):
        for b in range(N):
            for s in range(1, T_top + 1):
                if a == b:
                    H[(a, b, s)] = (Fraction(1), [(0,) * 0 for _ in cols])
                    continue
                r: Optional[Fraction] = Fraction(1)
                Ks = []
                for col in cols:
                    x, K = _block_ratio(col, a, b, s)
                    Ks.append(K)
                    r = None if r is None or x is None else r * x
                H[(a, b, s)] = (r, Ks)
    INF = "inf"

    def mul(x, y):
        return INF if x is INF or y is INF else x * y

    def gt(x, y):
        return y is None or (x is INF and y is not INF) or (x is not INF and y is not INF and x > y)

    state: dict = {(0, 0): (Fraction(1), ())}  # (mask of b's, collections) -> (ratio, blocks)
    for a in range(N):
        nxt = dict(state)
        for (mask, t), (val, blocks) in state.items():
            if bin(mask).count("1") >= U:
                continue
            for b in range(N):
                if mask >> b & 1:
                    continue
                for s in range(1, T_top - t + 1):
                    r, _ = H[(a, b, s)]
                    cand = mul(val, INF if r is None else r)
                    key = (mask | 1 << b, t + s)
                    if gt(cand, nxt.get(key, (None,))[0]):
                        nxt[key] = (cand, blocks + ((a, b, s),))
        state = nxt
    out = {}
    for T in range(1, T_top + 1):
        best = None
        for (mask, t), (val, blocks) in state.items():
            if t == T and (best is None or gt(val, best[0])):
                best = (val, blocks)
        val, blocks = best
        u, w, ys = [], [], [[] for _ in cols]
        for a, b, s in blocks:
            u += [a] * s
            w += [b] * s
            Ks = H[(a, b, s)][1]
            for c, col in enumerate(cols):
                K = Ks[c] if a != b else (s,) + (0,) * (col.O - 1)
                ys[c] += [o for o in range(col.O) for _ in range(K[o])]
        out[T] = WorstCase(T, "value", None if val is INF else val, tuple(u), tuple(w), tuple(tuple(y) for y in ys))
    return out


def worst_cases(model, T_top: int) -> dict:
    """``{(relation, T): WorstCase}`` for ``T = 1 .. T_top`` under both relations: the exact
    maximum over **every** pair of histories of the relation and every transcript."""
    cols = [_Scaled(p, i, T_top) for p, i in zip(model.perm, model.inst)]
    N, U = model.units, min(model.unit_bound, model.units)
    user = _user_one_column(cols[0], U, T_top) if len(cols) == 1 else _user_columns(cols, N, U, T_top)
    # an infinite loss stays infinite: if P(y|w) = 0 < P(y|u), every extension y y' has P(y y'|w v) = 0
    # while some has P(y y'|u v) > 0 — the witness is extended by one shared collection
    for T in range(2, T_top + 1):
        if T not in user or user[T - 1].ratio is None:
            x = user[T - 1]
            user[T] = WorstCase(T, "user", None, x.u + x.u[-1:], x.w + x.w[-1:], tuple(y + y[-1:] for y in x.y))
    value = _value_level(cols, N, U, T_top)
    return {**{("user", T): x for T, x in user.items()}, **{("value", T): x for T, x in value.items()}}
