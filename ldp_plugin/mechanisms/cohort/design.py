"""Identifiability of a cohort (hashed) design: can the cells of ``C`` cohorts of ``k`` cells tell
``S`` items apart? (Kairouz, Bonawitz & Ramage (ICML 2016) §5, eq. 20–22: the least-squares decoder solves ``M θ = r`` with
``M = Σ_c n_c B_cᵀB_c``; when ``rank M`` is below the number of unknowns, some direction of ``θ``
is not seen by any cell and the minimum-norm solution replaces it by 0 — the estimates are biased
by an unknown amount and their intervals do not cover, e.g. CMS with ``k = 3`` over ``d = 8``
items returned ``0.173 ± 0.002`` for a true ``0.5``.)

The counting bound: one cohort of an unsigned one-hash design (O-RR, CMS, HCMS) has ``k`` cells
whose indicator rows sum to the all-ones row, so the stacked design has rank at most
``C·(k − 1) + 1``; signed covers (the count sketch) and ``h > 1`` hashes (O-RAPPOR) have at most
``C·k`` rows. The exact rank (the decoder's own eigen-decomposition) is checked where it is cheap.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._errors import LDPParameterError
from ...estimation.least_squares import _normal_matrix
from ...estimation.sketch import MIN_COHORTS

__all__ = ["DENSE_LIMIT", "rank_bound", "needed_rank", "smallest_usable", "check_closed_design", "rank_deficient_error"]

#: the exact rank of a closed alphabet is computed at construction up to this many items and
#: about this many candidate pairs (beyond it the counting bound is checked; the estimate checks
#: the decoder's own rank again)
EXACT_D = 256
EXACT_PAIRS = 1 << 21
#: ``decoder="auto"`` solves least squares up to this many candidates, then streams (sketch decoder).
DENSE_LIMIT = 1024


def rank_bound(k: int, cohorts: int, hashes: int, signed: bool) -> int:
    """The largest rank the stacked cell design can have (see the module docstring)."""
    if hashes == 1 and not signed:
        return cohorts * (k - 1) + 1
    return cohorts * k


def needed_rank(unknowns: int, known_total: bool) -> int:
    """The rank that identifies ``unknowns`` frequencies (one fewer when their total is imposed)."""
    return unknowns - 1 if known_total else unknowns


def smallest_usable(k: int, cohorts: int, hashes: int, signed: bool, need: int, power_of_two: bool = False) -> tuple[int, int]:
    """``(cohorts, k)``: the smallest cohorts at this ``k`` and the smallest ``k`` at these cohorts
    whose counting bound reaches ``need`` (necessary, not always sufficient: hash collisions can
    lower the rank further)."""
    if hashes == 1 and not signed:
        c_min = max(1, math.ceil((need - 1) / (k - 1)))
        k_min = max(2, math.ceil((need - 1) / cohorts) + 1)
    else:
        c_min = max(1, math.ceil(need / k))
        k_min = max(2, math.ceil(need / cohorts))
    if power_of_two:
        k_min = 1 << (k_min - 1).bit_length()
    return c_min, k_min


def rank_deficient_error(mech: Any, unknowns: int, rank: int, what: str, active: int | None = None) -> LDPParameterError:
    """The error for a design of ``rank`` below what ``unknowns`` frequencies need."""
    need = needed_rank(unknowns, bool(getattr(mech, "known_total", False)))
    h, signed = mech.hashes_per_item, mech.signed
    power = mech.name in ("hcms", "count-sketch")
    c_eff = mech.cohorts if active is None else active
    bound = rank_bound(mech.k, c_eff, h, signed)
    c_min, k_min = smallest_usable(mech.k, mech.cohorts, h, signed, need, power)
    if bound >= need:  # the counting bound holds; collisions (or empty cohorts) lost the rank
        hint = (
            f"the cohorts' hash partitions collide; use more cohorts (cohorts > {mech.cohorts}) or a larger k"
            if active is None or active == mech.cohorts
            else f"only {active} of the {mech.cohorts} cohorts have reports; collect more reports or use fewer items"
        )
    else:
        hint = f"use at least cohorts={c_min} for k={mech.k}, or at least k={k_min} for cohorts={mech.cohorts}"
    if mech.cohorts >= MIN_COHORTS:
        hint += "; or decode with decoder='sketch' (streamed: collisions averaged over the cohorts)"
    return LDPParameterError(
        f"{mech.name} with k={mech.k}, cohorts={mech.cohorts} cannot tell {what} apart: the design's rank is "
        f"{rank} < {need} (the decoder would return estimates whose intervals do not cover the truth); {hint}"
    )


def check_closed_design(mech: Any) -> None:
    """Refuse a closed-alphabet cohort design whose cells cannot identify its ``d`` items: the
    counting bound always, the exact rank of ``Σ_c B_cᵀB_c`` (as the decoder computes it) when
    ``d <= EXACT_D`` and the candidate pairs are few."""
    d, k, C, h = mech.d, mech.k, mech.cohorts, mech.hashes_per_item
    if d > DENSE_LIMIT and C >= MIN_COHORTS:  # decoded by the streamed sketch decoder (no rank needed)
        return
    need = needed_rank(d, mech.known_total)
    bound = min(rank_bound(k, C, h, mech.signed), d)
    if bound < need:
        raise rank_deficient_error(mech, d, bound, f"its d={d} items")
    if d > EXACT_D or C * h * d * (1 + h * d / k) > EXACT_PAIRS:
        return
    rank = _closed_rank(mech)
    if rank < need:
        raise rank_deficient_error(mech, d, rank, f"its d={d} items")


def _rank(M: np.ndarray, known_total: bool) -> int:
    """``rank`` of the PSD normal matrix with :func:`normal_inverse`'s tolerance (eigenvalues only)."""
    if known_total:
        M = M - M.mean(axis=0, keepdims=True)
        M = M - M.mean(axis=1, keepdims=True)
    lam = np.linalg.eigvalsh(M)
    tol = lam.max() * M.shape[0] * np.finfo(np.float64).eps if lam.size and lam.max() > 0 else 0.0
    return int((lam > tol).sum())


def _closed_rank(mech: Any) -> int:
    """The exact rank of a closed alphabet's design, remembered per design (a mechanism is rebuilt
    from its spec by every collector and device: the table is a pure function of these values)."""
    key = (type(mech).__name__, mech.k, mech.cohorts, mech.hashes_per_item, mech.hash_seed, mech.d, mech.categories)
    if key not in _RANKS:
        C, k = mech.cohorts, mech.k
        pos, signs = mech.covers_of(None, np.arange(mech.d))
        M = _normal_matrix(pos, None if signs is None else signs.astype(np.float64), np.ones(C, dtype=np.int64), np.arange(C), k)
        if len(_RANKS) >= 256:
            _RANKS.pop(next(iter(_RANKS)))
        _RANKS[key] = _rank(M, mech.known_total)
    return _RANKS[key]


_RANKS: dict = {}


def design_rank(mech: Any, positions: np.ndarray, signs: Any, uniform_weight: Any) -> int:
    """The rank the decoder's normal matrix would have with a report in *every* cohort: the
    design's own identifiability, apart from cohorts that happen to be empty in a small batch
    (``uniform_weight``: an unsigned open alphabet's outside-mass column, as in the decoder)."""
    C, k = mech.cohorts, mech.k
    h, S0 = positions.shape[1], positions.shape[2]
    if C * h * S0 * (1 + h * S0 / k) > 1 << 26:  # too large to recheck here: the counting bound held
        return S0 + (1 if uniform_weight is not None else 0)
    ones = np.ones(C, dtype=np.int64)
    M = _normal_matrix(positions, None if signs is None else np.asarray(signs, dtype=np.float64), ones, np.arange(C), k)
    if uniform_weight is not None:
        S = M.shape[0]
        w = float(uniform_weight)
        Me = np.zeros((S + 1, S + 1))
        Me[:S, :S] = M
        valid = (positions >= 0).sum(axis=1)  # (C, S): cells covered per candidate
        Me[:S, S] = Me[S, :S] = w * valid.sum(axis=0)
        Me[S, S] = w * w * k * C
        M = Me
    return _rank(M, mech.known_total)
