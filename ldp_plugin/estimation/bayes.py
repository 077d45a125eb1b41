"""Iterative Bayesian update (IBU): maximum-likelihood frequencies from support counts, with
parametric-bootstrap intervals.

The channel is the pure frequency oracle's: a report supports the user's own item with
probability ``p*`` and any other item with ``q*``, so ``π_i(θ) = q* + (p* − q*) θ_i`` is the
probability that one report supports item ``i`` when users are drawn from ``θ``.

Two likelihoods, chosen by what the counts are:

* ``"multinomial"`` — the report names one item (k-RR). The counts ``c`` are the multinomial
  sufficient statistic of the reports and ``Σ_i π_i = 1``; IBU maximizes the **exact** likelihood
  ``ℓ(θ) = Σ_i c_i log π_i(θ)``. The update is Agrawal & Aggarwal's (PODS 2001) EM reconstruction, i.e.
  EM for the channel: ``θ_x ← θ_x / n · Σ_y c_y P(y|x) / π_y``.
* ``"binomial"`` — every other support-count oracle (OUE, RAPPOR/SUE, OLH, Hadamard, k-subset).
  The counts are *not* sufficient for the per-report likelihood (a report's likelihood depends on
  the whole set it supports). IBU maximizes the **composite marginal likelihood**
  ``ℓ_C(θ) = Σ_i [c_i log π_i + (n − c_i) log(1 − π_i)]`` (Lindsay 1988; Varin, Reid & Firth,
  Statistica Sinica 21 (2011) §2.2, the independence likelihood): each factor is the exact
  marginal law ``c_i ~ Binomial(n, π_i)`` of i.i.d. users; the product ignores the dependence
  between items' counts. It is the exact likelihood of a fictitious experiment where every item's
  count comes from its own ``n`` users, and IBU is that experiment's EM: with
  ``A_i = c_i p*/π_i + (n − c_i)(1 − p*)/(1 − π_i)`` and ``B_i = c_i q*/π_i + (n − c_i)(1 − q*)/(1 − π_i)``,
  ``θ_x ← θ_x (A_x − B_x + Σ_i B_i) / (n d)``. Every step increases ``ℓ_C`` (EM), and the fixed
  point is its maximizer on the simplex (``ℓ_C`` is concave). (multi-freq-ldpy's UE IBU maximizes
  the Poisson approximation ``Σ_i c_i log π_i``; the binomial marginals are exact.)

Both start at the uniform distribution mixed half and half with the clipped, renormalized unbiased
estimate, are accelerated by SQUAREM (monotone: a rejected extrapolation falls back to EM), and stop when
the Frank–Wolfe gap ``max_x g_x − Σ_x θ_x g_x`` (``g = ∇ℓ``), an upper bound on ``ℓ* − ℓ(θ)`` for
a concave ``ℓ``, falls below ``tol`` log-likelihood units, when no entry moves by more than 1e-10
(entries creeping to 0 on the boundary), or at ``max_iter``.

Intervals (:func:`ibu_bootstrap`): the IBU estimate is biased toward the interior of the simplex,
so the normal interval of the raw estimator does not describe it. The parametric bootstrap draws
count vectors from a population with the fitted frequencies (``n_x`` users per item, rounded to
``n``) through the channel and refits: k-RR ``Σ_x Multinomial(n_x, P(·|x))`` (the exact law of
the counts); support oracles ``c_i = Bin(n_i, p*) + Bin(n − n_i, q*)`` independently per item —
the exact joint law for unary encodings (independent bits), the exact per-item marginals for
OLH, Hadamard and k-subset (their between-item dependence is not reproduced). The interval is the
basic bootstrap interval ``[2θ̂ − Q(1 − α/2), 2θ̂ − Q(α/2)]`` of the replicates ``Q`` (it removes
the bias measured at ``θ̂``) joined with the raw estimator's normal interval (Wang et al., USENIX
Security 2017, §3.3 variance), intersected with ``[0, 1]``. The bias at ``θ̂`` is not the bias at
``θ`` for small items (a Zipf tail: the basic interval alone covered 0.79 for k-RR), so the
interval is **conservative**: it covers at least as often as the raw interval, and is at least as
wide. ``std_error`` is the replicates' sd (the IBU estimate's spread, not the interval's width, and
without the bias: its square is below the MSE, 1.5× below for k-subset at ε = 0.5, d = 3, n = 1,000), so
the estimate says ``interval_kind="bound"``: the intervals claim their coverage only.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError

__all__ = ["LIKELIHOODS", "ibu", "ibu_bootstrap"]

LIKELIHOODS = ("multinomial", "binomial")


def _gradient(theta: np.ndarray, c: np.ndarray, n: np.ndarray, p: float, q: float, likelihood: str) -> np.ndarray:
    pi = q + (p - q) * theta
    if likelihood == "multinomial":
        return (p - q) * c / pi
    return (p - q) * (c / pi - (n - c) / (1.0 - pi))


def _loglik(theta: np.ndarray, c: np.ndarray, n: np.ndarray, p: float, q: float, likelihood: str) -> np.ndarray:
    pi = q + (p - q) * theta
    if likelihood == "multinomial":
        return np.sum(c * np.log(pi), axis=-1)
    return np.sum(c * np.log(pi) + (n - c) * np.log1p(-pi), axis=-1)


def _step(theta: np.ndarray, c: np.ndarray, n: np.ndarray, p: float, q: float, likelihood: str) -> np.ndarray:
    pi = q + (p - q) * theta
    if likelihood == "multinomial":
        s = np.sum(c / pi, axis=-1, keepdims=True)
        new = theta * (c * (p - q) / pi + q * s) / n
    else:
        a = c * p / pi + (n - c) * (1 - p) / (1 - pi)
        b = c * q / pi + (n - c) * (1 - q) / (1 - pi)
        new = theta * (a - b + np.sum(b, axis=-1, keepdims=True))
    return new / np.sum(new, axis=-1, keepdims=True)


def _start(c: np.ndarray, n: np.ndarray, p: float, q: float) -> np.ndarray:
    raw = np.clip((c / n - q) / (p - q), 0.0, None)
    s = raw.sum(axis=-1, keepdims=True)
    d = c.shape[-1]
    proj = np.where(s > 0, raw / np.where(s > 0, s, 1.0), 1.0 / d)
    return 0.5 * proj + 0.5 / d


def ibu(
    counts: Any, n: Any, p_star: float, q_star: float, *, likelihood: str = "multinomial",
    tol: float = 1e-3, max_iter: int = 2_000,
) -> np.ndarray:
    """Maximum-(composite-)likelihood frequencies by iterative Bayesian update (see the module).

    ``counts`` is a vector of support counts (or a ``(B, d)`` stack of them, fitted together;
    ``n`` then a scalar or a length-``B`` vector). Stops when every row's Frank–Wolfe gap is below
    ``tol`` (log-likelihood units), no entry moves by 1e-10, or after ``max_iter`` updates. O(d) per update and row.
    """
    if likelihood not in LIKELIHOODS:
        raise LDPParameterError(f"likelihood must be one of {LIKELIHOODS} (got {likelihood!r})")
    if not (0.0 <= q_star < p_star <= 1.0):
        raise LDPParameterError("ibu needs support rates with 0 <= q* < p* <= 1")
    c = np.asarray(counts, dtype=np.float64)
    one = c.ndim == 1
    c = np.atleast_2d(c)
    nn = np.asarray(n, dtype=np.float64).reshape(-1, 1) * np.ones((c.shape[0], 1))
    if np.any(nn <= 0):
        raise LDPParameterError("an estimate needs at least one report (n >= 1)")
    theta = _start(c, nn, p_star, q_star)
    step = lambda t: _step(t, c, nn, p_star, q_star, likelihood)  # noqa: E731
    for _ in range(max_iter):
        # SQUAREM (Varadhan & Roland, Scand. J. Stat. 35 (2008), scheme S3): two EM steps, an
        # extrapolation along them, one EM step from there; rows where the extrapolation leaves
        # the simplex or lowers the likelihood keep the plain two-step point (monotone).
        t1 = step(theta)
        t2 = step(t1)
        r, v = t1 - theta, t2 - 2 * t1 + theta
        nr = np.sqrt(np.sum(r * r, axis=-1, keepdims=True))
        nv = np.sqrt(np.sum(v * v, axis=-1, keepdims=True))
        alpha = np.minimum(-nr / np.where(nv > 0, nv, 1.0), -1.0)
        ext = theta - 2 * alpha * r + alpha**2 * v
        ok = np.all(ext > 0, axis=-1, keepdims=True)
        ext = np.where(ok, ext, t2)
        ext = ext / np.sum(ext, axis=-1, keepdims=True)
        better = _loglik(ext, c, nn, p_star, q_star, likelihood) >= _loglik(t2, c, nn, p_star, q_star, likelihood)
        new = step(np.where(better[:, None], ext, t2))
        moved = float(np.max(np.abs(new - theta)))
        theta = new
        if moved < 1e-10:  # stalled on the boundary: the remaining gap is in vanishing entries
            break
        g = _gradient(theta, c, nn, p_star, q_star, likelihood)
        gap = g.max(axis=-1) - np.sum(theta * g, axis=-1)
        if np.all(gap < tol):
            break
    return theta[0] if one else theta


def _simulate_counts(theta: np.ndarray, n: int, p: float, q: float, likelihood: str, replicates: int, gen) -> np.ndarray:
    """``(replicates, d)`` count vectors from the population ``round(n θ)`` through the channel."""
    d = theta.size
    pop = np.floor(theta * n).astype(np.int64)
    short = n - int(pop.sum())
    if short > 0:  # largest remainders get the users the floor dropped
        pop[np.argsort(-(theta * n - pop), kind="stable")[:short]] += 1
    if likelihood == "binomial":
        return gen.binomial(pop, p, size=(replicates, d)) + gen.binomial(n - pop, q, size=(replicates, d))
    out = np.zeros((replicates, d), dtype=np.int64)
    for x in np.flatnonzero(pop):
        row = np.full(d, q)
        row[x] = p
        out += gen.multinomial(int(pop[x]), row / row.sum(), size=replicates)
    return out


def ibu_bootstrap(
    counts: Any, n: int, p_star: float, q_star: float, *, likelihood: str = "multinomial",
    confidence: float = 0.95, replicates: int = 200, rng: Optional[int] = None,
    tol: float = 1e-3, max_iter: int = 2_000,
) -> tuple:
    """``(estimate, std_error, ci_lower, ci_upper)``: the IBU estimate and its parametric
    bootstrap (see the module): ``replicates`` count vectors drawn at the fitted frequencies
    through the channel, refitted; basic intervals at ``confidence`` intersected with ``[0, 1]``.
    The interval is conservative (the hull with the raw normal interval; see the module).
    ``rng`` an integer seeds the bootstrap (reproducible); ``None`` draws from OS entropy.
    The bootstrap is post-processing: it never touches the privacy budget."""
    if not isinstance(replicates, (int, np.integer)) or isinstance(replicates, bool) or not 20 <= replicates <= 100_000:
        raise LDPParameterError("replicates must be an integer in [20, 100000]")
    if not isinstance(confidence, float) or not 0 < confidence < 1:
        raise LDPParameterError("confidence must be a float in (0, 1)")
    if rng is not None and (not isinstance(rng, (int, np.integer)) or isinstance(rng, bool)):
        raise LDPParameterError("rng must be an integer seed or None")
    est = ibu(counts, n, p_star, q_star, likelihood=likelihood, tol=tol, max_iter=max_iter)
    gen = np.random.default_rng(rng)
    sims = _simulate_counts(est, int(n), p_star, q_star, likelihood, int(replicates), gen)
    reps = ibu(sims, n, p_star, q_star, likelihood=likelihood, tol=tol, max_iter=max_iter)
    alpha = 1.0 - confidence
    lo_q, hi_q = np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=0)
    # the hull with the raw estimator's normal interval (unbiased, analytic variance at the
    # clipped raw estimate): the bootstrap alone misses the bias of small items (Zipf tails)
    c = np.asarray(counts, dtype=np.float64)
    raw = (c / n - q_star) / (p_star - q_star)
    f = np.clip(raw, 0.0, 1.0)
    raw_se = np.sqrt((f * p_star * (1 - p_star) + (1 - f) * q_star * (1 - q_star)) / (n * (p_star - q_star) ** 2))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    lo = np.clip(np.minimum(2 * est - hi_q, raw - z * raw_se), 0.0, 1.0)
    hi = np.clip(np.maximum(2 * est - lo_q, raw + z * raw_se), 0.0, 1.0)
    se = reps.std(axis=0, ddof=1)
    return est, se, lo, hi

