"""Candidate decoding at scale for cohort (hashed) mechanisms: O-RR, O-RAPPOR and the sketches.

The least-squares decoder (:func:`ldp_plugin.estimation.least_squares_decode`) forms the
``S × S`` normal matrix: exact and with model standard errors, but ``O(S²)`` memory and
``O(C·S²)`` time, so 10^5 candidates would need an 80 GB matrix. This decoder streams the
candidates in chunks and never holds more than ``C × chunk`` cells (memory ``O(C·(k + chunk))``,
time ``O(C·h·S)``):

1. **Cell estimates.** Cohort ``c`` (``n_c`` reports) gives ``b_{c,j} = (counts_{c,j}/n_c − q)/(p − q)``
   with ``E b_{c,j} = Σ_v θ_v [j ∈ cells_c(v)]`` (the unbiased cell frequency of Kairouz, Bonawitz & Ramage (ICML 2016) eq. 20).
2. **Sketch estimate** (the count-mean-sketch read-out of Apple's "Learning with Privacy at
   Scale", 2017, generalized to ``h`` cells): candidate ``s`` reads ``z_c(s)``, the mean of ``b`` over
   its distinct cells in cohort ``c``. Over the data-independent hash,
   ``E z_c(s) = θ_s + (R − θ_s)·h/k`` where ``R`` is the total mass (1), so
   ``θ̂_s = (Σ_c w_c z_c(s) − R·h/k)/(1 − h/k)`` with ``w_c = n_c/n``.
   The count sketch (signed covers, ``g_c(s) = ±1``) reads ``g_c(s)·b`` instead: collisions enter
   with random signs, so ``E z_c(s) = θ_s`` and no ``R·h/k`` correction is made (``u = 0`` below).
3. **Heavy collisions removed.** Collisions with a few heavy items dominate the error of the
   read-out on skewed data. The (at most ``heavy``) candidates whose read-out is at least
   :data:`HEAVY_Z` standard errors above zero are re-estimated
   twice after subtracting the other heavy items' estimated mass from the cells they share
   (``b' = b − Σ_{t ∈ H} θ̂_t [j ∈ cells_c(t)]``), and every candidate is then read from ``b'`` with
   the remaining mass ``R' = 1 − Σ_H θ̂_t`` as the uniform collision term: a heavy item's own cell
   keeps its mass (``θ̂_s = z'_c(s) + θ̂_s^{prev} − R'h/k``), a light item's
   ``θ̂_s = (z'_c(s) − R'h/k)/(1 − h/k)``.
4. **Standard errors** from the spread of the per-cohort estimates: cohorts have independent hash
   functions and disjoint users, so ``θ̂_s = Σ_c w_c θ̂_{c,s}`` is a weighted mean of independent
   terms and ``Var θ̂_s`` is estimated by ``C/(C−1)·Σ_c w_c² (θ̂_{c,s} − θ̂_s)²``. This includes the
   randomization noise *and* the residual hash collisions (which a model-based error would miss);
   it also includes the cohorts' composition noise, so it is conservative by at most
   ``θ(1−θ)/n`` for the users' own frequencies. It needs enough cohorts: at least
   :data:`MIN_COHORTS` active cohorts are required.

``OTHER`` (the mass outside the candidates) is ``1 − Σ_s θ̂_s`` with the same per-cohort error.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..theory import mse_cohort

__all__ = ["sketch_decode", "choose_decoder", "predicted_variances", "MIN_COHORTS", "CELLS_PER_CHUNK"]

#: Fewest active cohorts for the cohort-spread standard errors of the streamed decoder.
MIN_COHORTS = 32
#: Candidate cells held at once (``C · h · chunk``): bounds the decoder's working memory (~32 MB).
CELLS_PER_CHUNK = 1 << 22
#: A candidate is treated as heavy (its collisions removed from the others) above this z-score.
HEAVY_Z = 5.0


def predicted_variances(mechanism: Any, n: int, S: int, active_cohorts: int) -> tuple[float, float]:
    """Predicted variance of one light candidate's estimate from ``n`` reports over ``S``
    candidates, ``(least squares, streamed sketch)``, before decoding.

    Least squares: ``E‖θ̂ − θ‖²/S`` of :func:`ldp_plugin.theory.mse_cohort` (random partitions over
    the ``active_cohorts``; it grows as ``N/(N − S + 1)``, ``N = C(k − 1)`` cells, when the
    candidates crowd the cells). Sketch: the read-out ``(z − u)/(1 − u)`` of ``h`` cells,
    ``cell_variance / (n·h·(1 − u)²)`` with ``u = h/k`` (``0`` for a signed sketch) — the
    randomization's share; collisions with heavy candidates are removed by the decoder and those with
    light ones add ``Σ θ²/(C(k−1))`` at most (not predicted: small next to the noise whenever the
    light items' ``Σ θ²`` is below ``n⁻¹``·C·cell_variance)."""
    p, q, cov, noise = mechanism.decoder_model()
    h, k = int(mechanism.hashes_per_item), int(mechanism.k)
    closed = bool(mechanism.closed)
    ls = mse_cohort(S, max(n, 1), k, max(active_cohorts, 1), p, q, h=h, covariance=cov, closed=closed, noise=noise) / S
    u = 0.0 if mechanism.signed else h / k
    sketch = mechanism.cell_variance() / (max(n, 1) * h * (1.0 - u) ** 2)
    return float(ls), float(sketch)


def choose_decoder(mechanism: Any, n_c: np.ndarray, S: int, dense_limit: int) -> str:
    """``decoder="auto"``: least squares with fewer than :data:`MIN_COHORTS` active cohorts (the
    sketch's errors need them), the sketch above ``dense_limit`` candidates (least squares' ``S × S``
    matrix), least squares for a closed alphabet, else (open-alphabet candidates) the decoder of
    smaller predicted error (:func:`predicted_variances`). For O-RR
    (``k = 8``, 256 cohorts) the switch is near ``S ≈ √(C(k−1)) ≈ 42``: at 840 candidates least
    squares is ~35% noisier."""
    active = int((np.asarray(n_c) > 0).sum())
    if active < MIN_COHORTS:
        return "least-squares"
    if S > dense_limit:
        return "sketch"
    if mechanism.closed:  # a closed alphabet's own partitions: least squares is exact there
        return "least-squares"
    ls, sk = predicted_variances(mechanism, int(np.asarray(n_c).sum()), S, active)
    return "least-squares" if ls <= sk else "sketch"


def _read(b: np.ndarray, cover: tuple) -> np.ndarray:
    """``(C, s)`` mean of ``g·b[c, ·]`` over each candidate's distinct cells (``cover``: ``(pos, signs)``,
    ``pos`` ``(C, h, s)`` with -1 unused, ``signs`` the same shape of ±1 or ``None`` for all +1)."""
    pos, sg = cover
    C, h, s = pos.shape
    rows = np.arange(C)[:, None]
    if h == 1:  # one cell per item: never a duplicate, so a plain gather
        v = np.take_along_axis(b, pos[:, 0, :], axis=1)
        return v if sg is None else v * sg[:, 0, :]
    total = np.zeros((C, s))
    used = np.zeros((C, s))
    for t in range(h):
        p = pos[:, t, :]
        ok = p >= 0
        v = np.where(ok, b[rows, np.where(ok, p, 0)], 0.0)
        total += v if sg is None else v * sg[:, t, :]
        used += ok
    return total / np.maximum(used, 1.0)


def _moments(z: np.ndarray, w: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``z`` (``(C, s)``): the weighted mean ``z̄ = wᵀz`` (``Σ w = 1``) and
    ``Σ_c w_c² (z_c − z̄)² = w²ᵀz² − 2 z̄ w²ᵀz + z̄² Σ w²`` (three matrix-vector products)."""
    zbar = w @ z
    spread = w2 @ (z * z) - 2 * zbar * (w2 @ z) + zbar * zbar * w2.sum()
    return zbar, np.maximum(spread, 0.0)


def _add_mass(out: np.ndarray, cover: tuple, mass: np.ndarray) -> None:
    """``out[c, j] += g·mass[s]`` for every distinct cell ``j`` of candidate ``s`` in cohort ``c``."""
    pos, sg = cover
    C, h, s = pos.shape
    k = out.shape[1]
    for t in range(h):
        p = pos[:, t, :]
        ok = p >= 0
        flat = (np.arange(C)[:, None] * k + p)[ok]
        m = np.broadcast_to(mass, (C, s)) if sg is None else mass * sg[:, t, :]
        np.add.at(out.reshape(-1), flat, m[ok])


def _covers(positions_of: Any, idx: np.ndarray) -> tuple:
    got = positions_of(idx)
    return got if isinstance(got, tuple) else (got, None)


def sketch_decode(
    mechanism: Any, counts: np.ndarray, n_c: np.ndarray, positions_of: Any, S: int, *, heavy: int = 256,
    p: Optional[float] = None, q: Optional[float] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Streamed decoding of ``S`` candidates (module docstring) → ``(θ̂, se)`` of length ``S + 1``
    (the last entry is ``OTHER``). ``positions_of(idx)`` returns the ``(C, h, len(idx))`` cells of
    the candidates ``idx`` (``-1`` for a duplicate cell of one item), or ``(cells, signs)`` for a
    signed sketch (:meth:`~ldp_plugin.mechanisms.cohort.base._CohortMechanism.covers_of`): then the
    read-out is unbiased as it is (collisions enter with random signs) and ``u = 0`` below."""
    counts = np.asarray(counts, dtype=np.float64)
    n_c = np.asarray(n_c, dtype=np.int64)
    C, k = counts.shape
    h = int(mechanism.hashes_per_item)
    active = n_c > 0
    n_active = int(active.sum())
    if n_active < MIN_COHORTS:
        raise LDPParameterError(
            f"decoding {S} candidates streams them and takes its errors from the spread over cohorts: it needs reports "
            f"from at least {MIN_COHORTS} cohorts (got {n_active}); use a mechanism with more cohorts or fewer candidates"
        )
    p = mechanism.p if p is None else p  # the cell statistic's (p, q): Mechanism.cell_statistic
    q = mechanism.q if q is None else q
    delta = p - q
    b = np.zeros((C, k))
    b[active] = (counts[active] / n_c[active, None] - q) / delta
    w = n_c / float(n_c.sum())
    u = 0.0 if mechanism.signed else h / k  # the collision term of an unsigned read-out
    chunk = max(1, CELLS_PER_CHUNK // (C * h))
    spans = [(lo, min(S, lo + chunk)) for lo in range(0, S, chunk)]

    corr = n_active / (n_active - 1)
    # pass 1: the plain read-out and its cohort-spread error, to pick the heavy candidates
    first = np.empty(S)
    zscore = np.empty(S)
    w2 = w * w
    for lo, hi in spans:  # est = (read − u)/(1 − u) is linear in the read-out: moments by matrix-vector products
        z = _read(b, _covers(positions_of, np.arange(lo, hi)))
        zbar, spread = _moments(z, w, w2)
        first[lo:hi] = t = (zbar - u) / (1 - u)
        zscore[lo:hi] = t / np.sqrt(np.maximum(corr * spread / (1 - u) ** 2, 1e-300))
    # heavy: significant at HEAVY_Z standard errors (not merely the largest: the largest read-outs of
    # many light candidates are noise, and subtracting noise as mass would bias everything else)
    order = np.argsort(-zscore, kind="stable")[: min(int(heavy), S)]
    H = np.sort(order[zscore[order] >= HEAVY_Z])
    heavy_pos = _covers(positions_of, H)
    theta_h = first[H]
    for _ in range(2):  # re-estimate the heavy items without each other's collisions
        mass = np.zeros((C, k))
        _add_mass(mass, heavy_pos, theta_h)
        rest = min(max(1.0 - float(theta_h.sum()), 0.0), 1.0)
        per = _read(b - mass, heavy_pos) + theta_h - rest * u
        theta_h = w @ per
    mass = np.zeros((C, k))
    _add_mass(mass, heavy_pos, theta_h)
    rest = min(max(1.0 - float(theta_h.sum()), 0.0), 1.0)
    resid = b - mass
    is_heavy = np.zeros(S, dtype=bool)
    is_heavy[H] = True
    own = np.zeros(S)
    own[H] = theta_h

    theta = np.empty(S + 1)
    var = np.empty(S + 1)
    per_cohort_total = np.zeros(C)
    act = active.astype(np.float64)
    for lo, hi in spans:  # per candidate est_c = a·z_c + c (a = 1 for a heavy one, 1/(1 − u) else): linear again
        z = _read(resid, _covers(positions_of, np.arange(lo, hi)))
        hv = is_heavy[lo:hi]
        a = np.where(hv, 1.0, 1.0 / (1 - u))
        c = np.where(hv, own[lo:hi] - rest * u, -rest * u / (1 - u))
        zbar, spread = _moments(z, w, w2)
        theta[lo:hi] = a * zbar + c
        var[lo:hi] = corr * a * a * spread
        per_cohort_total += act * (z @ a + c.sum())
    other_c = np.where(active, 1.0 - per_cohort_total, 0.0)
    theta[S] = float(w @ other_c)
    var[S] = corr * float((w**2) @ ((other_c - theta[S]) ** 2))
    return theta, np.sqrt(np.maximum(var, 0.0))

