"""One estimator for every "pure" frequency oracle, and the post-processing steps.

A pure frequency oracle is a mechanism whose report *supports* a set of items such that

    P[report supports i | i is the user's item]     = p*
    P[report supports i | i is not the user's item] = q*

(k-RR, RAPPOR/SUE, OUE, k-subset; later OLH, Hadamard and the wheel). With ``c_i`` the number of
the ``n`` reports that support item ``i``, the estimator (paper 001 Alg. 2 line 8; paper 002
eq. 8 and 15 are special cases) is

    θ̂_i = (c_i / n − q*) / (p* − q*),                        unbiased,
    Var(θ̂_i) = [θ_i p*(1 − p*) + (1 − θ_i) q*(1 − q*)] / (n (p* − q*)²),

where θ is the empirical distribution of the ``n`` users (paper 001 §3.3). Standard errors plug the
clipped estimate into the variance; confidence intervals are normal-approximation intervals
around the raw estimate, intersected with [0, 1] (which can only raise coverage).

Post-processing never touches the privacy budget: ``none`` (raw, unbiased), ``normalize``
(clip negatives, rescale to the total), ``projection`` (Euclidean projection onto the scaled
simplex, Wang & Carreira-Perpiñán 2013; the default for distributions, paper 002 §4.4) and ``em``
(maximum likelihood by expectation–maximisation, for mechanisms whose report names one item,
i.e. k-RR; paper 002 §4.4).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional, Sequence

import numpy as np

from ._errors import LDPParameterError

__all__ = [
    "POSTPROCESS_CHOICES",
    "FrequencyEstimate",
    "debias",
    "pure_variance",
    "project_simplex",
    "clip_normalize",
    "em_single_item",
    "estimate_pure",
    "finalize_estimate",
    "check_postprocess",
    "least_squares_decode",
]

POSTPROCESS_CHOICES = ("none", "normalize", "projection", "em")


def debias(counts: np.ndarray, n: int, p_star: float, q_star: float) -> np.ndarray:
    """Raw unbiased estimate ``(c/n − q*)/(p* − q*)``."""
    counts = np.asarray(counts, dtype=np.float64)
    return (counts / n - q_star) / (p_star - q_star)


def pure_variance(theta: np.ndarray, n: int, p_star: float, q_star: float) -> np.ndarray:
    """Per-item variance of the raw estimator at true frequencies ``theta`` (fixed population)."""
    theta = np.asarray(theta, dtype=np.float64)
    num = theta * p_star * (1 - p_star) + (1 - theta) * q_star * (1 - q_star)
    return num / (n * (p_star - q_star) ** 2)


def project_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{x >= 0, sum(x) = total}`` (Wang & Carreira-Perpiñán).

    O(d log d): sort, find the largest ``ρ`` with ``u_ρ + (total − Σ_{j<=ρ} u_j)/ρ > 0``.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise LDPParameterError("projection needs a non-empty 1-d vector")
    if total <= 0:  # the simplex of total 0 is the single point 0 (e.g. a set total estimated at 0)
        return np.zeros(v.size)
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    ks = np.arange(1, v.size + 1)
    cond = u + (total - css) / ks > 0
    rho = int(np.nonzero(cond)[0][-1]) + 1
    lam = (total - css[rho - 1]) / rho
    return np.maximum(v + lam, 0.0)


def clip_normalize(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Clip negative entries to zero and rescale to sum to ``total`` (uniform if all clip)."""
    x = np.clip(np.asarray(v, dtype=np.float64), 0.0, None)
    s = x.sum()
    if s <= 0:
        return np.full(x.size, total / x.size)
    return x * (total / s)


def em_single_item(
    counts: np.ndarray, n: int, p_star: float, q_star: float, *, tol: float = 1e-12, max_iter: int = 100_000
) -> np.ndarray:
    """Maximum-likelihood frequencies for a mechanism whose report is one item (k-RR), by EM.

    Channel: ``P(y | x) = p*`` if ``y = x`` else ``q*``. With ``D_y = θ_y (p* − q*) + q*``, the EM
    update is ``θ_i ← θ_i / n · [c_i (p* − q*)/D_i + q* Σ_y c_y / D_y]``: O(d) per iteration.
    Starts from the projected unbiased estimate mixed with uniform (interior start).
    """
    c = np.asarray(counts, dtype=np.float64)
    d = c.size
    theta = 0.5 * project_simplex(debias(c, n, p_star, q_star)) + 0.5 / d
    delta = p_star - q_star
    for _ in range(max_iter):
        D = theta * delta + q_star
        s = float(np.sum(c / D))
        new = theta / n * (c * delta / D + q_star * s)
        new /= new.sum()
        if np.max(np.abs(new - theta)) < tol:
            return new
        theta = new
    return theta


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated frequencies with per-item standard errors and confidence intervals.

    ``estimate`` is the post-processed estimate; ``raw`` the unbiased one. ``std_error`` is the
    plug-in analytic standard error of the raw estimator; ``ci_lower``/``ci_upper`` the two-sided
    normal interval at ``confidence`` around ``raw``, intersected with ``[0, 1]``.

    ``target`` says what the intervals cover: ``"sample"`` (default) the frequencies of the users
    who reported (paper 001's θ: the randomization is the only noise); ``"population"`` the
    frequencies of a population the users are an i.i.d. sample of (the multinomial sampling
    variance ``θ(1−θ)/n`` is added; see :func:`retarget`).
    """

    estimate: np.ndarray
    raw: np.ndarray
    std_error: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    n: int
    postprocess: str
    confidence: float
    items: tuple
    target: str = "sample"

    def to_polars(self, truth: Optional[Sequence[float]] = None):
        """A tidy Polars frame ``item, estimate, std_error, ci_lower, ci_upper`` (``truth`` optional)."""
        import polars as pl

        cols = {
            "item": list(self.items),
            "estimate": self.estimate,
            "std_error": self.std_error,
            "ci_lower": self.ci_lower,
            "ci_upper": self.ci_upper,
        }
        if truth is not None:
            cols["truth"] = np.asarray(truth, dtype=np.float64)
        return pl.DataFrame(cols)

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "target": self.target,
            "postprocess": self.postprocess,
            "confidence": self.confidence,
            "items": [i if isinstance(i, (int, str, float, bool)) else str(i) for i in self.items],
            "estimate": self.estimate.tolist(),
            "raw": self.raw.tolist(),
            "std_error": self.std_error.tolist(),
            "ci_lower": self.ci_lower.tolist(),
            "ci_upper": self.ci_upper.tolist(),
        }


def estimate_pure(
    counts: np.ndarray,
    n: int,
    p_star: float,
    q_star: float,
    *,
    total: float = 1.0,
    postprocess: str = "projection",
    confidence: float = 0.95,
    items: Optional[Sequence] = None,
    em_allowed: bool = False,
) -> FrequencyEstimate:
    """The shared estimator: support counts + (p*, q*) → :class:`FrequencyEstimate`."""
    check_postprocess(postprocess, confidence, em_allowed=em_allowed)
    if not isinstance(n, (int, np.integer)) or n <= 0:
        raise LDPParameterError("an estimate needs at least one report (n >= 1)")
    counts = np.asarray(counts, dtype=np.int64)
    raw = debias(counts, int(n), p_star, q_star)
    se = np.sqrt(pure_variance(np.clip(raw, 0.0, 1.0), int(n), p_star, q_star))
    em = (lambda: em_single_item(counts, int(n), p_star, q_star)) if postprocess == "em" else None
    return finalize_estimate(raw, se, int(n), postprocess=postprocess, confidence=confidence, items=items, total=total, em=em)


def check_postprocess(postprocess: str, confidence: float, *, em_allowed: bool = False) -> None:
    if postprocess not in POSTPROCESS_CHOICES:
        raise LDPParameterError(f"postprocess must be one of {POSTPROCESS_CHOICES} (got {postprocess!r})")
    if postprocess == "em" and not em_allowed:
        raise LDPParameterError("postprocess='em' is available only for mechanisms whose report names one item (krr)")
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise LDPParameterError("confidence must be a float in (0, 1)")


def finalize_estimate(
    raw: np.ndarray,
    std_error: np.ndarray,
    n: int,
    *,
    postprocess: str = "projection",
    confidence: float = 0.95,
    items: Optional[Sequence] = None,
    total: float = 1.0,
    em=None,
) -> FrequencyEstimate:
    """Confidence intervals and post-processing shared by every decoder (pure and least squares).

    ``raw`` is an unbiased estimate and ``std_error`` its per-item standard error; intervals are
    normal around ``raw``, intersected with ``[0, 1]``; ``em`` computes the EM estimate if asked.
    """
    check_postprocess(postprocess, confidence, em_allowed=em is not None or postprocess != "em")
    raw = np.asarray(raw, dtype=np.float64)
    se = np.asarray(std_error, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    lo = np.clip(raw - z * se, 0.0, 1.0)
    hi = np.clip(raw + z * se, 0.0, 1.0)
    if postprocess == "none":
        est = raw.copy()
    elif postprocess == "normalize":
        est = clip_normalize(raw, total)
    elif postprocess == "projection":
        est = project_simplex(raw, total)
    else:
        est = em()
    items_t = tuple(items) if items is not None else tuple(range(raw.size))
    for arr in (est, raw, se, lo, hi):
        arr.setflags(write=False)
    return FrequencyEstimate(est, raw, se, lo, hi, int(n), postprocess, confidence, items_t)


TARGETS = ("sample", "population")


def retarget(est: "FrequencyEstimate", target: str) -> "FrequencyEstimate":
    """The same estimate with intervals for ``target`` (see :class:`FrequencyEstimate`).

    ``"population"``: users are i.i.d. draws from θ, so ``Var(θ̂_i − θ_i) = Var(θ̂_i − θ̂ᵉᵐᵖ_i) +
    θ_i(1−θ_i)/n`` (the two parts are uncorrelated: the randomization is unbiased given the
    users); the plug-in uses ``clip(raw, 0, 1)``. For set-valued data ``θ_i`` is the fraction of
    users holding ``i`` and the same formula holds per item."""
    if target not in TARGETS:
        raise LDPParameterError(f"target must be one of {TARGETS} (got {target!r})")
    if target == est.target:
        return est
    if est.target != "sample":
        raise LDPParameterError("retarget starts from a sample-target estimate")
    f = np.clip(np.asarray(est.raw), 0.0, 1.0)
    se = np.sqrt(np.asarray(est.std_error) ** 2 + f * (1 - f) / est.n)
    z = NormalDist().inv_cdf(0.5 + est.confidence / 2)
    lo = np.clip(est.raw - z * se, 0.0, 1.0)
    hi = np.clip(est.raw + z * se, 0.0, 1.0)
    for arr in (se, lo, hi):
        arr.setflags(write=False)
    return dataclasses.replace(est, std_error=se, ci_lower=lo, ci_upper=hi, target=target)


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
) -> tuple[np.ndarray, np.ndarray, int]:
    """Weighted least-squares decoding for cohort/hash mechanisms (paper 002 eq. 20–22).

    Cohort ``c`` (``n_c`` reports) has output cells ``j ∈ [0, k)`` with ``counts[c, j]`` reports
    (O-RR: the reported value; O-RAPPOR: a set bit). Candidate ``s`` *covers* the cells
    ``positions[c, :, s]`` (``-1`` = unused), i.e. ``B_c[j, s] = 1`` iff ``j`` is one of them.
    With ``b_{c,j} = (counts[c,j]/n_c − q)/(p − q)`` we have ``E b_c = B_c θ``, and solve

        min_θ Σ_c n_c ‖b_c − B_c θ‖²   ⇔   M θ = r,  M = Σ_c n_c B_cᵀB_c,  r = Σ_c n_c B_cᵀ b_c

    by the pseudo-inverse of ``M`` (eigen-decomposition; the minimum-norm solution if some
    candidates are indistinguishable). Paper 002 eq. 22 is the case of equal ``n_c``.

    Standard errors: ``θ̂ = M⁺ Σ_c n_c B_cᵀ b_c``, so
    ``Var θ̂_s = Σ_c n_c² g_{c,s}ᵀ Cov(b_c) g_{c,s}`` with ``g_{c,s} = B_c M⁺ e_s`` and the plug-in
    (model-implied ``π̂_c = q + (p−q) B_c clip(θ̂, 0, 1)``, never below ``q``)
    ``Cov(b_c) = (diag π̂_c − π̂_c π̂_cᵀ)/(n_c (p−q)²)`` (``covariance="multinomial"``: one cell per
    report, O-RR) or ``diag(π̂(1−π̂))`` (``"bernoulli"``: O-RAPPOR's bits, independent given the
    value), each *minus* the part due to the mix of values ``(p−q)² B_c Σ_θ B_cᵀ``
    (``Σ_θ = diag θ − θθᵀ``; for O-RAPPOR only its diagonal), all over ``n_c (p−q)²``: the users'
    values are fixed and only the randomization is random (paper 001 eq. 10). The cohorts are
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
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_c = np.asarray(n_c, dtype=np.int64)
    C, k = counts.shape
    _, h, S = positions.shape
    active = np.flatnonzero(n_c > 0)
    delta = p - q
    M = np.zeros((S, S))
    r = np.zeros(S)
    b = np.zeros_like(counts)
    b[active] = (counts[active] / n_c[active, None] - q) / delta
    # M: Σ_c n_c |B_c(s) ∩ B_c(s')|, a batch of cohorts at a time
    batch = max(1, (1 << 23) // (S * S))
    for i in range(0, active.size, batch):
        cs = active[i : i + batch]
        w = n_c[cs].astype(np.float64)
        for t in range(h):
            pt = positions[cs, t, :]
            for t2 in range(h):
                p2 = positions[cs, t2, :]
                eq = (pt[:, :, None] == p2[:, None, :]) & (pt[:, :, None] >= 0)
                M += np.einsum("c,cij->ij", w, eq, optimize=False)
    for c in active:
        for t in range(h):
            pos = positions[c, t]
            ok = pos >= 0
            r[ok] += n_c[c] * b[c, pos[ok]]
    if uniform_weight is not None:
        w = float(uniform_weight)
        Me = np.zeros((S + 1, S + 1))
        Me[:S, :S] = M
        valid = (positions[active] >= 0).sum(axis=1)  # (active, S): cells covered per candidate
        Me[:S, S] = Me[S, :S] = w * (n_c[active, None] * valid).sum(axis=0)
        Me[S, S] = w * w * k * float(n_c[active].sum())
        M = Me
        r = np.append(r, w * float((n_c[active] * b[active].sum(axis=1)).sum()))
    lam, V = np.linalg.eigh(M)
    tol = lam.max() * S * np.finfo(np.float64).eps if lam.size and lam.max() > 0 else 0.0
    keep = lam > tol
    Mp = (V[:, keep] / lam[keep]) @ V[:, keep].T
    theta = Mp @ r
    S_out = theta.size
    var = np.zeros(S_out)
    spread_sum = np.zeros(S_out)
    plug = np.clip(theta, 0.0, 1.0)
    for c in active:
        nc = float(n_c[c])
        # the cells the candidates cover, plus one row standing for every uncovered cell (they
        # share one G row and one cover: only the mass outside the candidates reaches them), so
        # a cohort costs O(S·h) rows, not k
        G, cover, mult, rows = _cohort_rows(positions[c], Mp, plug, uniform_weight, k)
        pi = np.clip(q + delta * cover, 0.0, 1.0)  # model-implied cell probabilities (at least q)
        wG = G * mult[:, None]
        g2c = (wG * G * cover[:, None]).sum(axis=0)  # Σ_j g_j² c̄_j
        spread = _value_spread(G, wG, rows, plug, cover, uniform_weight, k)
        spread_sum += nc * spread
        if covariance == "hadamard":  # one ±1 coefficient per report, row 0 replaced by the known total
            g2, gs, gc = (wG * G).sum(axis=0), wG.sum(axis=0), (wG * cover[:, None]).sum(axis=0)
            var += nc * (noise * (g2 - gs * gs / k) - (g2c - 2 * gc * gs / k + gs * gs / (k * k)))
        elif covariance == "multinomial":
            var += nc * ((wG * G * pi[:, None]).sum(axis=0) - (wG * pi[:, None]).sum(axis=0) ** 2)
            var -= nc * delta * delta * spread
        else:  # bits are independent given the value: only the diagonal of the spread
            var += nc * ((wG * G * (pi * (1 - pi))[:, None]).sum(axis=0) - delta * delta * (g2c - (wG * G * (cover * cover)[:, None]).sum(axis=0)))
    var /= delta * delta
    # random (data-independent) cohorts: the cohorts' mixes of values vary around the population's
    n = float(n_c[active].sum())
    if n > 1:
        P = Mp @ M
        Pt = P @ plug
        var += (n / (n - 1)) * spread_sum - ((P * P) @ plug - Pt * Pt) / (n - 1)
    return theta, np.sqrt(np.maximum(var, 0.0)), int(keep.sum())




def _cohort_rows(pos: np.ndarray, Mp: np.ndarray, theta: np.ndarray, w: Optional[float], k: int) -> tuple:
    """One cohort's rows of ``G = B_c M⁺`` (``pos``: ``(h, S)`` cells, −1 unused), compressed:
    one row per covered cell and, when some of the ``k`` cells are uncovered, one row standing
    for all of them (``mult``: how many cells each row stands for). Returns ``(G, cover, mult,
    rows)`` with ``rows[t, s]`` the row of candidate ``s``'s ``t``-th cell (−1 unused)."""
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
    for t in range(h):
        ok = np.flatnonzero(valid[t])
        if ok.size == 0:
            continue
        cover += np.bincount(rows[t, ok], weights=theta[:S][ok], minlength=R)
        order = ok[np.argsort(rows[t, ok], kind="stable")]
        sr = rows[t, order]
        starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]])
        size = np.diff(np.r_[starts, sr.size])
        one = starts[size == 1]  # cells with one candidate: its row of M⁺ as it is
        G[sr[one]] += Mp[order[one]]
        if one.size < starts.size:  # cells shared by candidates: the sum of their rows
            shared = np.repeat(size > 1, size)
            sub = np.flatnonzero(np.r_[True, sr[shared][1:] != sr[shared][:-1]])
            G[sr[shared][sub]] += np.add.reduceat(Mp[order[shared]], sub, axis=0)
    return G, cover, mult, rows

def _value_spread(G: np.ndarray, wG: np.ndarray, rows: np.ndarray, theta: np.ndarray, cover: np.ndarray, w: Optional[float], k: int) -> np.ndarray:
    """``gᵀ (Σ_s θ_s c_s c_sᵀ − c̄ c̄ᵀ) g`` for each column ``g`` of ``G``: the covariance over
    values of a report's cell indicators, for one cohort, on the compressed rows of
    :func:`_cohort_rows` (``wG``: ``G`` times each row's multiplicity; ``rows``: ``(h, S)``;
    ``θ`` clipped, with the mass outside the candidates last when ``w`` is given: a seeded hash
    puts it on each cell with probability ``w = h/k`` and on two given cells with
    ``h(h−1)/(k(k−1))``)."""
    h, S = rows.shape
    A = np.zeros((S, G.shape[1]))
    for t in range(h):
        ok = rows[t] >= 0
        A[ok] += G[rows[t][ok]]
    quad = (theta[:S, None] * A * A).sum(axis=0)  # Σ_s θ_s (gᵀ c_s)²
    if w is not None:
        g2 = (wG * G).sum(axis=0)
        gs = wG.sum(axis=0)
        w2 = h * (h - 1) / (k * (k - 1)) if k > 1 else 0.0
        quad += theta[S] * (w * g2 + w2 * (gs * gs - g2))
    return quad - (wG * cover[:, None]).sum(axis=0) ** 2
