"""Weighted least-squares decoding of the cohort (hashed) mechanisms — O-RR, O-RAPPOR, CMS, HCMS
and the count sketch (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 20–22) — with exact fixed-population standard errors.
Re-exported by :mod:`ldp_plugin.estimation`; the streamed decoder for 10^5 candidates is
:mod:`ldp_plugin.estimation.sketch`."""

from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["least_squares_decode", "normal_inverse"]


def least_squares_decode(
    counts: np.ndarray,
    n_c: np.ndarray,
    p: float,
    q: float,
    positions: np.ndarray,
    *,
    covariance: str,
    uniform_weight: Optional[float] = None,
    noise: Optional[float] = None,
    signs: Optional[np.ndarray] = None,
    other_sum: bool = False,
    total: Optional[float] = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Weighted least-squares decoding for cohort/hash mechanisms (Kairouz, Bonawitz & Ramage (ICML 2016) eq. 20–22).

    Cohort ``c`` (``n_c`` reports) has output cells ``j ∈ [0, k)`` with ``counts[c, j]`` reports
    (O-RR: the reported value; O-RAPPOR: a set bit). Candidate ``s`` *covers* the cells
    ``positions[c, :, s]`` (``-1`` = unused), i.e. ``B_c[j, s] = 1`` iff ``j`` is one of them.
    With ``b_{c,j} = (counts[c,j]/n_c − q)/(p − q)`` we have ``E b_c = B_c θ``, and solve

        min_θ Σ_c n_c ‖b_c − B_c θ‖²   ⇔   M θ = r,  M = Σ_c n_c B_cᵀB_c,  r = Σ_c n_c B_cᵀ b_c

    by the pseudo-inverse of ``M`` (eigen-decomposition; the minimum-norm solution if some
    candidates are indistinguishable). Kairouz, Bonawitz & Ramage (ICML 2016) eq. 22 is the case of equal ``n_c``.

    Standard errors: ``θ̂ = M⁺ Σ_c n_c B_cᵀ b_c``, so
    ``Var θ̂_s = Σ_c n_c² g_{c,s}ᵀ Cov(b_c) g_{c,s}`` with ``g_{c,s} = B_c M⁺ e_s`` and the plug-in
    (model-implied ``π̂_c = q + (p−q) B_c clip(θ̂, 0, 1)``, never below ``q``)
    ``Cov(b_c) = (diag π̂_c − π̂_c π̂_cᵀ)/(n_c (p−q)²)`` (``covariance="multinomial"``: one cell per
    report, O-RR) or ``diag(π̂(1−π̂))`` (``"bernoulli"``: O-RAPPOR's bits, independent given the
    value), each *minus* the part due to the mix of values ``(p−q)² B_c Σ_θ B_cᵀ``
    (``Σ_θ = diag θ − θθᵀ``; for O-RAPPOR only its diagonal), all over ``n_c (p−q)²``: the users'
    values are fixed and only the randomization is random (Wang et al. (arXiv 2016) eq. 10). The cohorts are
    drawn at random, so their mixes of values vary (multivariate hypergeometric, conditional on
    the sizes): that adds ``(n/(n−1)) Σ_c n_c g_{c,s}ᵀ B_c Σ_θ B_cᵀ g_{c,s} − (P Σ_θ P)_{ss}/(n−1)``,
    ``P = M⁺M``. ``covariance="hadamard"`` (HCMS, ``p = 1, q = 0``: ``z`` estimates the cell counts
    from one ±1 Hadamard coefficient per report, the all-ones row replaced by the known total
    ``n_c``): each report of row ``l ≠ 0`` adds ``±H[:, l]/(2p_RR − 1)``, so per cohort
    ``Cov = [noise (I − J/k) − (diag c̄ − (c̄1ᵀ + 1c̄ᵀ)/k + J/k²)]/n_c`` exactly
    (``noise = 1/(2p_RR − 1)²``, ``J = 11ᵀ``; the rows of ``H`` are orthogonal). The two mix terms cancel when every cohort sees the same cells (no collisions),
    and only then is O-RAPPOR's per-cell ``q(1−q)`` exact; leaving both out overstated the error of
    a frequent item by 12% (θ = 0.45, O-RAPPOR ε = 2, k = 8), keeping only the first understated
    it under collisions (O-RR, k = 3, d = 6). Returns ``(θ̂, std_error, rank of M)``.

    ``uniform_weight=w`` adds one more unknown, the total mass of items *outside* the candidates
    (open alphabets): a seeded hash spreads such items evenly over the cells, so in expectation
    their cover is ``w`` in every cell (``w = h/k``). It is returned last. Without it that mass
    leaks into the candidates that share cells with it and biases them upward.

    ``signs`` (``(C, h, S)`` of ±1; the count sketch): signed covers ``B_c[j, s] = g_c(s)``, so
    ``E b_c = B_c θ`` plus the non-candidates' *signed* mass, whose mean over the sign hash is 0
    (no ``uniform_weight``; their spread over cells and signs enters the composition term as
    ``rest·(h/k)·‖g‖²``, ``rest = 1 − Σ clip(θ̂)``). ``covariance="hadamard-signed"``: one ±1
    coefficient of the signed one-hot per report and no known total, so per report
    ``Cov = noise·I − g² e_x e_xᵀ``, i.e. per cohort ``(noise·I − diag m)/n_c`` with ``m`` the
    cells' *unsigned* mass. ``other_sum=True`` appends ``1 − Σ_s θ̂_s`` (the mass outside the
    candidates) with its exact error (the column ``−Σ_s M⁺e_s`` in every quadratic form).
    ``total``: the known ``Σ_s θ_s`` (a closed alphabet's 1), imposed exactly — ``θ = total/S·1 + φ``,
    ``φ ⊥ 1`` solved with ``(ΠMΠ)⁺``, ``Π = I − 11ᵀ/S``, in place of ``M⁺`` everywhere. Signed covers
    need it: a closed alphabet's balanced signs cancel in every cell (``B_c 1 = 0``), so the cells
    alone cannot see the total; unsigned cells carry it already (``Σ_j`` counts ``= n_c``).
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_c = np.asarray(n_c, dtype=np.int64)
    C, k = counts.shape
    _, h, S = positions.shape
    active = np.flatnonzero(n_c > 0)
    delta = p - q
    sg = None if signs is None else np.asarray(signs, dtype=np.float64)
    if sg is not None and uniform_weight is not None:
        raise ValueError("signed covers have no uniform mass outside the candidates: use other_sum")
    b = np.zeros_like(counts)
    b[active] = (counts[active] / n_c[active, None] - q) / delta
    M = _normal_matrix(positions, sg, n_c, active, k)
    # r = Σ_c n_c B_cᵀ b_c: every (cohort, hash, candidate) with a cell adds n_c·g·b[c, cell]
    coh, t, col = np.nonzero(positions[active] >= 0)
    cc = active[coh]
    contrib = n_c[cc] * b[cc, positions[cc, t, col]] * (1.0 if sg is None else sg[cc, t, col])
    r = np.bincount(col, weights=contrib, minlength=S)
    if uniform_weight is not None:
        w = float(uniform_weight)
        Me = np.zeros((S + 1, S + 1))
        Me[:S, :S] = M
        valid = (positions[active] >= 0).sum(axis=1)  # (active, S): cells covered per candidate
        Me[:S, S] = Me[S, :S] = w * (n_c[active, None] * valid).sum(axis=0)
        Me[S, S] = w * w * k * float(n_c[active].sum())
        M = Me
        r = np.append(r, w * float((n_c[active] * b[active].sum(axis=1)).sum()))
    Mp, keep = normal_inverse(M, known_total=total is not None)
    if total is None:
        theta = Mp @ r
    else:  # θ = total/S·1 + φ with φ ⊥ 1: least squares over φ, M⁺ restricted to 1^⊥
        base = np.full(S, float(total) / S)
        theta = base + Mp @ (r - M @ base)
    P = Mp @ M  # the projection onto what the cells identify (cohort-composition term below)
    if other_sum:  # the mass outside the candidates, 1 − Σ θ̂: its column of M⁺ is −Σ_s M⁺[:, s]
        Mp = np.hstack([Mp, -Mp.sum(axis=1, keepdims=True)])
        P = np.vstack([P, -P.sum(axis=0)])
        theta = np.append(theta, 1.0 - theta.sum())
    S_out = theta.size
    var = np.zeros(S_out)
    spread_sum = np.zeros(S_out)
    plug = np.clip(theta, 0.0, 1.0)
    rest = max(1.0 - float(plug[:S].sum()), 0.0) if sg is not None else 0.0  # unsigned mass of non-candidates
    for c in active:
        nc = float(n_c[c])
        # the cells the candidates cover, plus one row standing for every uncovered cell (they
        # share one G row and one cover: only the mass outside the candidates reaches them), so
        # a cohort costs O(S·h) rows, not k
        G, cover, mass, mult, rows = _cohort_rows(positions[c], Mp, plug, uniform_weight, k, None if sg is None else sg[c], rest)
        pi = np.clip(q + delta * cover, 0.0, 1.0)  # model-implied cell probabilities (at least q)
        wG = G * mult[:, None]
        GG = wG * G  # g_j² per row, times its multiplicity: every term below is a weighted sum of it
        g2c = cover @ GG  # Σ_j g_j² c̄_j
        spread = _value_spread(G, GG, wG, rows, plug, cover, uniform_weight, k, None if sg is None else sg[c], rest)
        spread_sum += nc * spread
        if covariance == "hadamard":  # one ±1 coefficient per report, row 0 replaced by the known total
            g2, gs, gc = GG.sum(axis=0), wG.sum(axis=0), cover @ wG
            var += nc * (noise * (g2 - gs * gs / k) - (g2c - 2 * gc * gs / k + gs * gs / (k * k)))
        elif covariance == "hadamard-signed":  # the signed one-hot's coefficient, no known total
            var += nc * (noise * GG.sum(axis=0) - mass @ GG)
        elif covariance == "multinomial":
            var += nc * (pi @ GG - (pi @ wG) ** 2)
            var -= nc * delta * delta * spread
        else:  # bits are independent given the value: only the diagonal of the spread
            var += nc * ((pi * (1 - pi)) @ GG - delta * delta * (g2c - (cover * cover) @ GG))
    var /= delta * delta
    # random (data-independent) cohorts: the cohorts' mixes of values vary around the population's
    n = float(n_c[active].sum())
    if n > 1:
        pl = plug[: P.shape[1]]
        Pt = P @ pl
        var += (n / (n - 1)) * spread_sum - ((P * P) @ pl - Pt * Pt) / (n - 1)
    return theta, np.sqrt(np.maximum(var, 0.0)), int(keep.sum())


def _cohort_rows(pos: np.ndarray, Mp: np.ndarray, theta: np.ndarray, w: Optional[float], k: int, sg: Optional[np.ndarray] = None, rest: float = 0.0) -> tuple:
    """One cohort's rows of ``G = B_c M⁺`` (``pos``: ``(h, S)`` cells, −1 unused), compressed:
    one row per covered cell and, when some of the ``k`` cells are uncovered, one row standing
    for all of them (``mult``: how many cells each row stands for). Returns ``(G, cover, mass,
    mult, rows)``: ``cover`` the rows' (signed) expected cover, ``mass`` their unsigned mass (the
    same array when unsigned), ``rows[t, s]`` the row of candidate ``s``'s ``t``-th cell (−1 unused)."""
    h, S = pos.shape
    valid = pos >= 0
    cells = np.unique(pos[valid])
    n_cov = cells.size
    R = n_cov + (1 if n_cov < k else 0)
    mult = np.ones(R)
    if n_cov < k:
        mult[-1] = k - n_cov
    rows = np.full(pos.shape, -1, dtype=np.int64)
    rows[valid] = np.searchsorted(cells, pos[valid])
    G = np.zeros((R, Mp.shape[1]))
    cover = np.zeros(R)
    if w is not None:  # the mass outside the candidates: w on every cell
        G += w * Mp[S]
        cover += w * theta[S]
    mass = cover if sg is None else np.full(R, rest * h / k)  # unsigned cell mass (signed: differs)
    for t in range(h):
        ok = np.flatnonzero(valid[t])
        if ok.size == 0:
            continue
        g = 1.0 if sg is None else sg[t]
        cover += np.bincount(rows[t, ok], weights=(g * theta[:S])[ok], minlength=R)
        if sg is not None:
            mass += np.bincount(rows[t, ok], weights=theta[:S][ok], minlength=R)
        order = ok[np.argsort(rows[t, ok], kind="stable")]
        sr = rows[t, order]
        starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]])
        size = np.diff(np.r_[starts, sr.size])
        Mr = Mp[order]
        if sg is not None:  # signed covers: ±rows
            Mr *= sg[t][order, None]
        one = starts[size == 1]  # cells with one candidate: its row of M⁺ as it is
        G[sr[one]] += Mr[one]
        if one.size < starts.size:  # cells shared by candidates: the sum of their rows
            shared = np.repeat(size > 1, size)
            sub = np.flatnonzero(np.r_[True, sr[shared][1:] != sr[shared][:-1]])
            G[sr[shared][sub]] += np.add.reduceat(Mr[shared], sub, axis=0)
    return G, cover, mass, mult, rows

def _value_spread(
    G: np.ndarray, GG: np.ndarray, wG: np.ndarray, rows: np.ndarray, theta: np.ndarray, cover: np.ndarray, w: Optional[float], k: int,
    sg: Optional[np.ndarray] = None, rest: float = 0.0,
) -> np.ndarray:
    """``gᵀ (Σ_s θ_s c_s c_sᵀ − c̄ c̄ᵀ) g`` for each column ``g`` of ``G``: the covariance over
    values of a report's cell indicators, for one cohort, on the compressed rows of
    :func:`_cohort_rows` (``wG``: ``G`` times each row's multiplicity, ``GG = wG·G``; ``rows``: ``(h, S)``;
    ``θ`` clipped, with the mass outside the candidates last when ``w`` is given: a seeded hash
    puts it on each cell with probability ``w = h/k`` and on two given cells with
    ``h(h−1)/(k(k−1))``)."""
    h, S = rows.shape
    if h == 1:  # one cell per item: (gᵀ c_s)² = g_j² whatever the sign, so sum θ per row first
        ok = rows[0] >= 0
        quad = np.bincount(rows[0][ok], weights=theta[:S][ok], minlength=G.shape[0]) @ (G * G)
    else:
        A = np.zeros((S, G.shape[1]))
        for t in range(h):
            ok = rows[t] >= 0
            A[ok] += G[rows[t][ok]] if sg is None else G[rows[t][ok]] * sg[t][ok, None]
        quad = (theta[:S, None] * A * A).sum(axis=0)  # Σ_s θ_s (gᵀ c_s)²
    if w is not None:
        g2 = GG.sum(axis=0)
        gs = wG.sum(axis=0)
        w2 = h * (h - 1) / (k * (k - 1)) if k > 1 else 0.0
        quad += theta[S] * (w * g2 + w2 * (gs * gs - g2))
    elif sg is not None:  # signed non-candidates: a uniform cell and sign each, so only (g_j)² survives
        quad += rest * (h / k) * GG.sum(axis=0)
    return quad - (cover @ wG) ** 2


def normal_inverse(M: np.ndarray, *, known_total: bool = False) -> tuple:
    """``(M⁺, kept)`` of the symmetric PSD normal matrix by eigen-decomposition (eigenvalues below
    ``λ_max·S·eps`` are treated as 0: the minimum-norm solution in unidentified directions); with
    ``known_total`` the pseudo-inverse of ``ΠMΠ``, ``Π = I − 11ᵀ/S`` (``M`` on the directions
    orthogonal to the total, which is imposed instead of estimated)."""
    if known_total:
        M = M - M.mean(axis=0, keepdims=True)
        M = M - M.mean(axis=1, keepdims=True)
    lam, V = np.linalg.eigh(M)
    tol = lam.max() * M.shape[0] * np.finfo(np.float64).eps if lam.size and lam.max() > 0 else 0.0
    keep = lam > tol
    return (V[:, keep] / lam[keep]) @ V[:, keep].T, keep


#: Candidate pairs sharing a cell handled at once by :func:`_normal_matrix` (bounds its memory).
PAIRS_PER_BATCH = 1 << 20


def _normal_matrix(positions: np.ndarray, sg: Optional[np.ndarray], n_c: np.ndarray, active: np.ndarray, k: int) -> np.ndarray:
    """``M = Σ_c n_c B_cᵀB_c`` (``B_c[j, s]`` = 1, or the sign ``g_c(s)``, when ``j`` is one of
    ``s``'s cells) from the pairs of candidates that share a cell: ``O(Σ_{c,j} m_{c,j}²)`` for
    ``m_{c,j}`` candidates in cell ``j`` of cohort ``c`` — about ``C·h·S·(1 + h·S/k)`` instead of the
    ``C·h²·S²`` of comparing every pair in every cohort."""
    _, h, S = positions.shape
    M = np.zeros(S * S)
    pos = positions[active]  # (A, h, S)
    ok = pos >= 0
    coh, t, col = np.nonzero(ok)
    key = coh.astype(np.int64) * k + pos[coh, t, col]
    val = n_c[active][coh].astype(np.float64)
    sgn = np.ones(col.size) if sg is None else sg[active][coh, t, col]
    order = np.argsort(key, kind="stable")
    key, col, val, sgn, coh = key[order], col[order], val[order], sgn[order], coh[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    size = np.diff(np.r_[starts, key.size])
    g = np.repeat(size, size)  # each entry's cell population
    first = np.repeat(starts, size)
    # cohorts are contiguous after the sort: cut between cohorts so each batch has ≤ PAIRS_PER_BATCH pairs
    per_cohort = np.bincount(coh, weights=g, minlength=pos.shape[0])
    bounds = np.r_[0, np.cumsum(np.bincount(coh, minlength=pos.shape[0]))]
    lo = 0
    while lo < pos.shape[0]:
        hi, pairs = lo + 1, per_cohort[lo]
        while hi < pos.shape[0] and pairs + per_cohort[hi] <= PAIRS_PER_BATCH:
            pairs += per_cohort[hi]
            hi += 1
        e = np.arange(bounds[lo], bounds[hi])
        ge = g[e]
        i = np.repeat(e, ge)
        j = np.repeat(first[e], ge) + np.arange(i.size) - np.repeat(np.cumsum(ge) - ge, ge)
        M += np.bincount(col[i] * S + col[j], weights=val[i] * sgn[i] * sgn[j], minlength=S * S)
        lo = hi
    return M.reshape(S, S)
