"""The three verification layers (DESIGN.md, "Verified likelihood-ratio bounds").

1. **Exact** (:func:`exact_layer`): the realized channel, enumerated from the sampler's exact
   probabilities (thresholds over 2**64; every cohort / verification seed): rows sum to one, equal
   supports, ``max_{x,x',y} Q(y|x)/Q(y|x') <= e^ε`` with zero tolerance (exact rationals).
2. **Goodness of fit** (:func:`gof_layer`): the real sampler's outputs, per input, against the
   declared channel (chi-square, bins with expected count < 5 pooled with the next smallest until
   the pool expects at least 5, level ``α``); a power check
   on the same counts: the channel of the same mechanism at ``1.3 ε`` must be rejected.
3. **Black-box audit** (:func:`audit_layer`): sample the real randomizer on input pairs ``(x, x')``;
   choose an event ``E`` on *pilot* samples (prefixes of the outputs sorted by their pilot ratio,
   plus the specification's max-ratio output), then on *fresh* samples reject "ε-LDP" iff
   ``ln(CP_lower(p̂₁) / CP_upper(p̂₂)) > ε`` (Clopper–Pearson bounds at ``α/2`` each, so a
   mechanism that is ε-LDP is rejected with probability ``<= α``). Each input's pilot and fresh
   samples are drawn once and shared by the pairs that involve it (:func:`audit_layer`).

Sample size of the audit (printed per mechanism): to detect a true ``ε' = 1.1 ε`` on an event with
probabilities ``p₁ = P(E|x)`` and ``p₂ = p₁ e^{−ε'}`` with power ``1 − β = 0.99``, using the delta
method ``sd(ln p̂) ≈ a/√n`` with ``a = √((1 − p)/p)``:

    n >= [ (z_{α/2} (a₁ + a₂) + z_β √(a₁² + a₂²)) / (ε' − ε) ]²

(each CP bound moves ``ln p̂`` by about ``z_{α/2} a/√n``; the test statistic has sd
``√(a₁² + a₂²)/√n``). ``α`` is the family-wise false-alarm rate (``10⁻⁶``) divided by the number of
tests (Bonferroni).
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist
from typing import Optional

import numpy as np

from .._extras import extra_module
from ..exact import epsilon_of_ratio, ratio_within_exp
from ..sampling import SeededRandomSource
from .channels import channel_floats, declared_channel

__all__ = [
    "FAMILY_ALPHA",
    "exact_layer",
    "gof_layer",
    "audit_layer",
    "audit_sample_size",
    "clopper_pearson",
    "sample_outputs",
]

FAMILY_ALPHA = 1e-6


def _stats():
    return extra_module("scipy.stats", "verify", "the goodness-of-fit and audit layers need SciPy")


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds at level ``alpha`` each: ``(lower, upper)``."""
    stats = _stats()
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))
    return lo, hi


def audit_sample_size(p1: float, epsilon: float, alpha: float, *, factor: float = 1.1, power: float = 0.99) -> int:
    """Samples per input to detect a true ``factor·ε`` on an event of probability ``p1`` under
    ``x`` (the formula in the module docstring)."""
    eps_alt = factor * epsilon
    p1 = min(max(p1, 1e-12), 1 - 1e-12)
    p2 = p1 * math.exp(-eps_alt)
    a1, a2 = math.sqrt((1 - p1) / p1), math.sqrt((1 - p2) / p2)
    nd = NormalDist()
    za, zb = nd.inv_cdf(1 - alpha / 2), nd.inv_cdf(power)
    return int(math.ceil(((za * (a1 + a2) + zb * math.sqrt(a1 * a1 + a2 * a2)) / (eps_alt - epsilon)) ** 2))


# -- the mechanism interface the layers need -------------------------------------------------------
def _inputs(mech) -> int:
    return mech.verification_input_count()


def sample_outputs(mech, x: int, n: int, source) -> np.ndarray:
    """``n`` outputs of the real randomizer on input code ``x``, as channel column indices."""
    return mech.sample_verification_outputs(x, n, source)


# -- layer 1 ------------------------------------------------------------------------------------------
def exact_layer(mech) -> dict:
    ch = declared_channel(mech)
    rows = ch.rows_sum_to_one()
    supports = ch.equal_supports()
    ratio = ch.max_ratio() if supports else None
    within = ratio is not None and ratio_within_exp(ratio, mech.epsilon)
    return {
        "layer": "exact",
        "rows_sum_to_one": rows,
        "equal_supports": supports,
        "realized_epsilon": epsilon_of_ratio(ratio) if ratio is not None else math.inf,
        "outputs": len(ch.outputs),
        "passed": bool(rows and supports and within),
    }


# -- layer 2 ------------------------------------------------------------------------------------------
def _pooled_chisquare(counts: np.ndarray, probs: np.ndarray) -> float:
    """Pearson's χ² of ``counts`` against the channel row ``probs``, with the sparse bins pooled.

    Outputs the channel gives probability 0 fail outright if they occur. The remaining bins are
    pooled smallest-expected first **until the pool's expected count reaches 5** (Cochran's rule
    applied to the pool itself): pooling only the bins below 5 can leave a pool whose expectation is
    far below 1 (OUE at ε = 8: the two-flip patterns, ≈ 0.01 over 32,768 draws), and a single
    legitimate draw there is a χ² of ≈ 90 — a false failure about once in ten production runs."""
    stats = _stats()
    counts = np.asarray(counts, dtype=np.float64)
    expected = np.asarray(probs, dtype=np.float64) * counts.sum()
    impossible = expected == 0
    if (counts[impossible] > 0).any():
        return 0.0  # outputs the channel says are impossible
    counts, expected = counts[~impossible], expected[~impossible]
    if (expected < 5).any():
        order = np.argsort(expected, kind="stable")
        cum = np.cumsum(expected[order])
        # every bin below 5, and then the next smallest until the pool's expectation is at least 5
        take = min(max(int((expected < 5).sum()), int(np.searchsorted(cum, 5.0)) + 1), expected.size)
        pooled = order[:take]
        keep = np.ones(expected.size, dtype=bool)
        keep[pooled] = False
        counts = np.r_[counts[keep], counts[pooled].sum()]
        expected = np.r_[expected[keep], expected[pooled].sum()]
    if counts.size < 2:
        return 1.0
    return float(stats.chisquare(counts, f_exp=expected * counts.sum() / expected.sum()).pvalue)


def gof_layer(mech, *, n_per_input: int = 20_000, alpha: float = FAMILY_ALPHA, seed: int = 0) -> dict:
    P = channel_floats(mech)
    try:
        wrong = dataclasses.replace(mech, epsilon=mech.epsilon * 1.3).channel()
        W = np.array([[float(p) for p in row] for row in wrong.matrix])
    except Exception:  # pragma: no cover - a mechanism that cannot be rebuilt at 1.3 ε
        W = None
    d = _inputs(mech)
    src = SeededRandomSource(seed)
    p_ok, p_wrong = [], []
    for x in range(d):
        counts = np.bincount(sample_outputs(mech, x, n_per_input, src), minlength=P.shape[1])
        if counts.size > P.shape[1]:
            p_ok.append(0.0)
            continue
        p_ok.append(_pooled_chisquare(counts, P[x]))
        if W is not None and W.shape == P.shape:
            p_wrong.append(_pooled_chisquare(counts, W[x]))
    level = alpha / d
    return {
        "layer": "goodness-of-fit",
        "samples_per_input": n_per_input,
        "min_p_value": min(p_ok),
        "power_check_rejects_1.3eps": bool(p_wrong) and min(p_wrong) < level,
        "passed": min(p_ok) > level,
    }


# -- layer 3 ------------------------------------------------------------------------------------------
def _pilot_event(c1: np.ndarray, c2: np.ndarray, spec: Optional[np.ndarray]) -> np.ndarray:
    """Event (a boolean mask over outputs) with the largest pilot log-ratio lower bound."""
    n1, n2 = c1.sum(), c2.sum()
    order = np.argsort(-((c1 + 0.5) / (c2 + 0.5)), kind="stable")
    k1, k2 = np.cumsum(c1[order]), np.cumsum(c2[order])
    # a smooth, conservative pilot score: ln of (k1 − 2√k1)/n1 over (k2 + 2√k2 + 1)/n2
    score = np.log(np.maximum(k1 - 2 * np.sqrt(k1), 1e-9) / n1) - np.log((k2 + 2 * np.sqrt(k2) + 1) / n2)
    best = int(np.argmax(score))
    event = np.zeros(c1.size, dtype=bool)
    event[order[: best + 1]] = True
    if spec is not None:
        s1, s2 = c1[spec].sum(), c2[spec].sum()
        sscore = math.log(max(s1 - 2 * math.sqrt(s1), 1e-9) / n1) - math.log((s2 + 2 * math.sqrt(s2) + 1) / n2)
        if sscore > score[best]:
            event = spec
    return event


#: reports drawn at a time by the audit (bounded memory: the counts are summed chunk by chunk)
AUDIT_CHUNK = 1 << 21


def _output_counts(mech, x: int, n: int, src) -> np.ndarray:
    """How often each output (column index) occurs among ``n`` outputs on input ``x``, drawn in
    chunks; an output outside ``[0, ∞)`` is in no event and is not counted."""
    counts = np.zeros(0, dtype=np.int64)
    for start in range(0, n, AUDIT_CHUNK):
        out = np.asarray(sample_outputs(mech, x, min(AUDIT_CHUNK, n - start), src), dtype=np.int64)
        c = np.bincount(out[out >= 0])
        if c.size > counts.size:
            counts = np.r_[counts, np.zeros(c.size - counts.size, dtype=np.int64)]
        counts[: c.size] += c
    return counts


def _in_event(counts: np.ndarray, event: np.ndarray) -> int:
    """The number of outputs counted in ``counts`` that fall in ``event`` (a mask over outputs)."""
    m = min(counts.size, event.size)
    return int(counts[:m][event[:m]].sum())


def audit_layer(
    mech,
    *,
    alpha: float = FAMILY_ALPHA,
    seed: int = 0,
    n_pilot: int = 20_000,
    max_samples: int = 20_000_000,
    pairs: Optional[list] = None,
    declared_channel: bool = True,
) -> dict:
    """Black-box audit of ``mech`` (its randomizer only; the declared channel, if used, only to
    propose one candidate event). ``alpha`` is this mechanism's share of the family-wise rate.

    Each input's pilot samples and fresh samples are drawn once and shared by every pair that
    involves it (``x = 0`` is in all four pairs): a pair's event and sample size depend on the
    pilot samples only, so they are independent of the fresh samples, and the Bonferroni split
    over the pairs needs no independence between the tests. An input's fresh sample size is the
    largest its pairs require (:func:`audit_sample_size`), so every test has at least the stated
    power; the Clopper–Pearson bounds use each side's own sample size."""
    d = _inputs(mech)
    eps = float(mech.epsilon)
    pairs = pairs or [(0, 1), (1, 0)] + ([(d - 1, 0), (0, d - 1)] if d > 2 else [])
    pairs = list(dict.fromkeys(pairs))
    a_test = alpha / len(pairs)
    src = SeededRandomSource(seed)
    P = None
    if declared_channel:
        try:
            P = channel_floats(mech)
        except Exception:
            P = None
    width = None if P is None else P.shape[1]
    inputs = list(dict.fromkeys(x for pair in pairs for x in pair))
    pilot = {x: sample_outputs(mech, x, n_pilot, src) for x in inputs}
    plans = []  # (x, x2, event) with the fresh sample size each pair requires
    n_required = 0
    n_input = dict.fromkeys(inputs, 0)
    for x, x2 in pairs:
        o1, o2 = pilot[x], pilot[x2]
        w = int(max(o1.max(), o2.max()) + 1) if width is None else max(width, int(max(o1.max(), o2.max()) + 1))
        c1, c2 = np.bincount(o1, minlength=w), np.bincount(o2, minlength=w)
        spec = None
        if P is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(P[x2] > 0, P[x] / P[x2], np.where(P[x] > 0, np.inf, 0))
            spec = np.zeros(w, dtype=bool)
            spec[: P.shape[1]] = r >= r.max() * (1 - 1e-12)
        event = _pilot_event(c1, c2, spec)
        p1 = max(c1[event].sum() / n_pilot, 1 / n_pilot)
        n_req = audit_sample_size(p1, eps, a_test)
        n = int(min(max(n_req, 10_000), max_samples))
        n_required = max(n_required, n_req)
        n_input[x], n_input[x2] = max(n_input[x], n), max(n_input[x2], n)
        plans.append((x, x2, event))
    fresh = {x: _output_counts(mech, x, n_input[x], src) for x in inputs}
    worst = -math.inf
    for x, x2, event in plans:
        lo, _ = clopper_pearson(_in_event(fresh[x], event), n_input[x], a_test / 2)
        _, hi = clopper_pearson(_in_event(fresh[x2], event), n_input[x2], a_test / 2)
        stat = math.inf if hi == 0 else (-math.inf if lo == 0 else math.log(lo / hi))
        worst = max(worst, stat)
    total = len(inputs) * n_pilot + sum(n_input.values())
    return {
        "layer": "black-box audit",
        "audit_epsilon_lower_bound": worst,
        "audit_samples": total,
        "samples_required_per_input": n_required,
        "power_guaranteed": n_required <= max_samples,
        "passed": not worst > eps,
    }
