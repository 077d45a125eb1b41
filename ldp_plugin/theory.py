"""Theory helpers: mutual information of the k-subset mechanism, the optimal sizes k* and k#,
and the analytic MSE of each mechanism (with the *ideal* probabilities; a mechanism object's own
``mse`` uses its realized probabilities).

References: Wang, Huang, Wang, Nie, Xu, Yang, Li, Qiao, *Mutual Information Optimally Local Private
Discrete Distribution Estimation* (arXiv:1607.08025, 2016) Thm 2.1 (I_k, k*), §3.3 and Thm 3.1 (l2
error, k#); Kairouz, Bonawitz, Ramage, *Discrete Distribution Estimation under Local Privacy* (ICML
2016) Prop. 3 (k-RR) and Prop. 4 (k-RAPPOR).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ._errors import LDPParameterError

__all__ = [
    "golden_section_min",
    "subset_hit_rates",
    "mutual_information_k_subset",
    "k_star",
    "k_sharp",
    "beta_mi",
    "mse_pure",
    "mse_krr",
    "mse_rappor",
    "mse_oue",
    "mse_k_subset",
    "mutual_information",
    "mse_olh",
    "mse_hadamard",
    "mse_cohort",
    "choose_orr",
]


def golden_section_min(f, lo: float, hi: float, iterations: int = 100) -> float:
    """The minimiser of a unimodal ``f`` on ``[lo, hi]`` by golden-section search (the interval
    shrinks by 0.618 per iteration; used for the THE threshold and the wheel's coverage)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(iterations):
        if f(a) < f(b):
            hi, b = b, a
            a = hi - g * (hi - lo)
        else:
            lo, a = a, b
            b = lo + g * (hi - lo)
    return (lo + hi) / 2


def _check(d: int, epsilon: float) -> None:
    if not (isinstance(d, (int, np.integer)) and d >= 2):
        raise LDPParameterError("d must be an integer >= 2")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise LDPParameterError("epsilon must be a finite number > 0")


def subset_hit_rates(d: int, k: int, epsilon: float) -> tuple[float, float]:
    """``(g_k, h_k)`` of the k-subset mechanism (Wang et al. (arXiv 2016) §3.2): P[item in report | it is / is
    not the user's item]."""
    e = math.exp(epsilon)
    g = k * e / (k * e + d - k)
    h = g * (k - 1) / (d - 1) + (1 - g) * k / (d - 1)
    return g, h


def mutual_information_k_subset(d: int, k: float, epsilon: float) -> float:
    """``I_k`` (Wang et al. (arXiv 2016) Thm 2.1), nats: MI between a uniform input and the k-subset report."""
    e = math.exp(epsilon)
    den = k * e + d - k
    return (k * e * math.log(d * e / den) + (d - k) * math.log(d / den)) / den


def beta_mi(d: int, epsilon: float) -> float:
    """The real maximiser ``β = (ε e^ε − e^ε + 1) d / (e^ε − 1)²`` of ``I_k`` (Wang et al. (arXiv 2016) App. C)."""
    e = math.expm1(epsilon)
    return (epsilon * (e + 1) - e) * d / (e * e)


def k_star(d: int, epsilon: float) -> int:
    """MI-optimal subset size (Wang et al. (arXiv 2016) Thm 2.1): ``floor(β)`` or ``ceil(β)``, whichever has the
    larger ``I_k``, restricted to ``[1, d − 1]``."""
    _check(d, epsilon)
    b = beta_mi(d, epsilon)
    cands = {min(max(c, 1), d - 1) for c in (math.floor(b), math.ceil(b))}
    return max(sorted(cands), key=lambda k: mutual_information_k_subset(d, k, epsilon))


def _l2_k_subset(d: int, k: int, epsilon: float) -> float:
    g, h = subset_hit_rates(d, k, epsilon)
    if g <= h:  # ε below float resolution: no information
        return math.inf
    return mse_pure(d, 1, g, h)


def k_sharp(d: int, epsilon: float) -> int:
    """l2-optimal subset size (Wang et al. (arXiv 2016) Thm 3.1): ``floor`` or ``ceil`` of ``d/(1 + e^ε)``,
    whichever has the smaller l2 error, restricted to ``[1, d − 1]``."""
    _check(d, epsilon)
    x = d / (1 + math.exp(epsilon))
    cands = {min(max(c, 1), d - 1) for c in (math.floor(x), math.ceil(x))}
    return min(sorted(cands), key=lambda k: _l2_k_subset(d, k, epsilon))


def mse_pure(d: int, n: int, p: float, q: float, *, m: float = 1.0) -> float:
    """``E||θ̂ − θ||²`` of the pure estimator, fixed population of n users with Σθ = m."""
    return (m * p * (1 - p) + (d - m) * q * (1 - q)) / (n * (p - q) ** 2)


def mse_krr(d: int, epsilon: float, n: int) -> float:
    """k-RR: ``(d−1)(d + 2(e^ε−1)) / (n (e^ε−1)²)`` (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 3, second term)."""
    _check(d, epsilon)
    e = math.expm1(epsilon)
    return (d - 1) * (d + 2 * e) / (n * e * e)


def mse_rappor(d: int, epsilon: float, n: int) -> float:
    """k-RAPPOR: ``d e^{ε/2} / (n (e^{ε/2} − 1)²)`` (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 4, second term)."""
    _check(d, epsilon)
    e = math.exp(epsilon / 2)
    return d * e / (n * (e - 1) ** 2)


def mse_oue(d: int, epsilon: float, n: int) -> float:
    """OUE: ``p = 1/2``, ``q = 1/(e^ε+1)`` in :func:`mse_pure`."""
    _check(d, epsilon)
    return mse_pure(d, n, 0.5, 1 / (math.exp(epsilon) + 1))


def mse_k_subset(d: int, k: int, epsilon: float, n: int) -> float:
    """k-subset: ``[g(1−g) + (d−1) h(1−h)] / (n (g−h)²)`` (Wang et al. (arXiv 2016) §3.3)."""
    _check(d, epsilon)
    return _l2_k_subset(d, k, epsilon) / n


def mutual_information(channel: np.ndarray, prior: np.ndarray) -> float:
    """``I(X; Y)`` in nats for a row-stochastic channel ``Q[x, y]`` and a prior on x."""
    Q = np.asarray(channel, dtype=np.float64)
    P = np.asarray(prior, dtype=np.float64)
    joint = P[:, None] * Q
    marg = joint.sum(axis=0)
    mask = joint > 0
    ratio = np.where(mask, Q / np.where(marg > 0, marg, 1)[None, :], 1.0)
    return float(np.sum(joint[mask] * np.log(ratio[mask])))


def mse_olh(d: int, epsilon: float, n: int, g: int | None = None) -> float:
    """OLH (Wang et al. 2017 eq. for LH): the pure-oracle variance with ``p* = e^ε/(e^ε+g−1)``,
    ``q* = 1/g`` summed over ``d`` items (``g = round(e^ε + 1)`` by default)."""
    _check(d, epsilon)
    if g is None:
        g = max(2, math.floor(math.exp(epsilon) + 1.5))
    e = math.exp(epsilon)
    return mse_pure(d, n, e / (e + g - 1), 1.0 / g)


def mse_hadamard(d: int, epsilon: float, n: int) -> float:
    """Hadamard response: the pure-oracle variance with ``p* = e^ε/(e^ε+1)``, ``q* = 1/2``."""
    _check(d, epsilon)
    e = math.exp(epsilon)
    return mse_pure(d, n, e / (e + 1), 0.5)


def mse_cohort(S: int, n: int, k: int, C: int, p: float, q: float, *, h: int = 1, covariance: str = "multinomial", closed: bool = True, noise: Optional[float] = None) -> float:
    """Predicted ``E‖θ̂ − θ‖²`` of the least-squares decoder of O-RR / O-RAPPOR (Kairouz, Bonawitz & Ramage (ICML 2016) §5)
    over ``S`` candidates, at a uniform θ, equal cohorts of ``n/C`` users.

    Derivation (``θ̂ = M⁺ Σ_c n_c B_cᵀ b_c``, ``M = Σ_c n_c B_cᵀ B_c``): with every cell reported
    with probability ``π = 1/k``, ``tr Cov θ̂ = [π tr M⁺ − π² n ‖M⁺1‖²]/(p−q)²`` for users drawn
    i.i.d. (O-RR, multinomial) or ``π(1−π) tr M⁺/(p−q)²`` (O-RAPPOR, independent bits). Those
    are errors against the generating θ; against the users' own (empirical) frequencies — the
    fixed population used everywhere here — the estimator being unbiased given the population,
    the sampling term ``E‖θ_emp − θ‖² = (1 − 1/S)/n`` is subtracted (exact for ``C = 1``; with
    random cohorts each cohort's composition still varies, which the multinomial model keeps). For random balanced
    partitions ``E M = n[(1−ρ) I + ρ 11ᵀ]`` with ``ρ = (S/k − 1)/(S − 1)``, giving
    ``(S−1)²/(S (k−1) n (p−q)²)`` for O-RR; the spread of ``M`` around its mean with ``C``
    cohorts inflates the trace by ``N/(N − (S−1))``, ``N = C(k−1)`` (a Wishart approximation;
    infinite when ``N <= S − 1``: too few cells to identify ``S`` candidates). With ``k >= S``
    on a closed alphabet every cohort separates all items and the decoder is k-RR's:
    ``S π(1−π)/(n(p−q)²)``, ``π = q + (p−q)/S``. For ``h > 1`` (O-RAPPOR Bloom filters) this is
    an approximation with ``k`` replaced by ``k/h`` cells per item. HCMS (``covariance="hadamard"``,
    ``p = 1, q = 0``, per-report covariance ``noise·I − μμᵀ``): ``noise · tr M⁺ − 1/n``. The count
    sketch (``"hadamard-signed"``): signed covers make ``E M = n I`` (a shared cell adds ``±n_c``
    with mean 0), ``tr M⁺ ≈ (S/n)·N/(N − (S−1))`` with ``N = C·k`` cells (no all-ones direction to
    lose), so ``noise·S·N/(n(N − S + 1)) − 1/n``.
    """
    delta2 = (p - q) ** 2
    if covariance == "hadamard-signed":
        if closed and k >= S:
            return max(noise * S / n - 1 / n, 0.0)
        N = C * k
        return math.inf if N <= S - 1 else max(noise * S * N / (n * (N - S + 1)) - 1 / n, 0.0)
    if covariance == "hadamard" and closed and k >= S:
        return max(noise * S / n - 1 / n, 0.0)
    if closed and k >= S:  # every cohort separates all items: k-RR's fixed-population MSE
        return (p * (1 - p) + (S - 1) * q * (1 - q)) / (n * delta2)
    k_eff = max(2.0, k / h)
    N, D = C * (k_eff - 1), S - 1
    if N <= D:
        return math.inf
    infl = N / (N - D)
    sampling = (1 - 1 / S) / n  # E‖θ_emp − θ‖² of n i.i.d. users at the uniform θ
    if covariance == "multinomial":
        base = (S - 1) ** 2 / (S * (k_eff - 1))
        return max(base * infl / (n * delta2) - sampling, 0.0)
    trace = (k_eff * (S - 1) ** 2 / (S * (k_eff - 1)) * infl + k_eff / S) / n
    if covariance == "hadamard":
        return max(noise * trace - 1 / n, 0.0)
    pi = h / k
    return max(pi * (1 - pi) * trace / delta2 - sampling, 0.0)


def choose_orr(S: int, epsilon: float, n: int, *, closed: bool = True, max_cohorts: int = 1024, tolerance: float = 0.02) -> dict:
    """Pick ``(k, C)`` of O-RR for ``S`` candidates, ``ε`` and ``n`` users by minimising
    :func:`mse_cohort` (with k-RR's ideal probabilities); among choices within
    ``tolerance`` of the best, the smallest ``C`` (cheaper decoding). Every cohort keeps at least
    ``20·k`` expected users so the plug-in standard errors stay meaningful.

    >>> choose_orr(256, 2.0, 10**6)
    {'k': 9, 'cohorts': 1024, 'predicted_mse': 0.00018912685200560484}
    """
    _check(S, epsilon)
    e = math.exp(epsilon)
    best = []
    ks = sorted(set([*range(2, min(S, 64) + 1), *[1 << j for j in range(1, 25) if (1 << j) <= S], S]))
    Cs = [1 << j for j in range(0, 21) if (1 << j) <= max_cohorts]
    for k in ks:
        p, q = e / (e + k - 1), 1 / (e + k - 1)
        for C in Cs:
            if C > 1 and n / C < 20 * k:
                break
            mse = mse_cohort(S, n, k, C, p, q, closed=closed)
            best.append((mse, C, k))
    if not best:
        raise LDPParameterError("no (k, C) is feasible for this n")
    m0 = min(b[0] for b in best)
    if not math.isfinite(m0):
        raise LDPParameterError(f"n={n} users are too few to identify S={S} candidates with O-RR")
    ok = [b for b in best if b[0] <= m0 * (1 + tolerance)]
    mse, C, k = min(ok, key=lambda b: (b[1], b[0]))
    return {"k": k, "cohorts": C, "predicted_mse": mse}
