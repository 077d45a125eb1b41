"""Detection of fake reports where the report space allows it, with an estimator corrected for the
honest reports the tests remove.

**Where a per-report test can work.** A unary encoding (OUE, SUE/RAPPOR) or OLH report supports a
*set* of items, and given the user's item those supports are independent: the own item with ``p*``,
every other one with ``q*`` (:class:`~ldp_plugin.mechanisms.protocol.SupportTestable`; exact for
unary encodings, the random-hash model of OLH's own estimator for OLH). So the number of items of
any fixed set ``U`` (``K`` items) an honest report supports is exactly

    [own ∈ U]·Bernoulli(p*) + Binomial(K − [own ∈ U], q*),

and a report supporting far more (or, for ``U`` = the whole domain, far fewer) items than this law
allows is flagged. Two tests, each at a stated false-alarm rate (the tails are computed in exact
integer arithmetic from the realized ``p*``, ``q*``; the threshold is the worst case over the two
laws, so **every** honest report is flagged with probability ``<= α``):

* ``support_size``: ``U`` = the whole domain, two-sided at ``alpha_size`` (a report with every bit
  set, or only the targets' bits, is implausible).
* ``suspect_set``: ``U = T``, a set of items that too many reports support *together* — the
  footprint of Cao et al.'s multi-target attack (their countermeasure section: detecting fake users by frequent itemsets). ``T``
  is mined from the aggregate: the items whose raw estimate is high (``z > z_candidate``) whose
  pairwise co-support exceeds its honest expectation ``n[(θ_i + θ_j)p*q* + (1 − θ_i − θ_j)q*²]``
  by more than a Bonferroni-corrected normal quantile; a report supporting at least ``t_T`` of
  ``T`` is flagged at ``alpha`` (conditionally on ``T``, which one report barely moves).

**Where it cannot.** Under ε-LDP every well-formed report has probability at least ``e^{−ε}`` times
its largest probability under *every* input, so a fake report that looks like an honest report
of the target (k-RR: the target's code; OUE/OLH with one target: the target's bit set, the other
ones at their usual count) is flagged by any per-report test with at most the probability that
the test flags an honest holder of the target — ``<= α``. k-RR has no other reports: **detection is
impossible for k-RR** (every report is one item, each plausible); a single mimicking target under
OUE/OLH is equally invisible. There the certified ``poison_shift`` of :mod:`.bounds` is the answer
(``DetectionResult.possible`` is False and ``reason`` says why).

**Correction.** Excluding flagged reports also removes some honest ones, and not uniformly: an
honest report is more likely rejected when its own item is in ``T``. With ``x`` the honest users'
item counts and ``N_T``, ``N_R`` the honest users with item in ``T`` / outside, the accepted
reports' support counts satisfy exactly

    E c_i = (P_c − R_c^c) x_i + R_c^T N_T + R_c^R N_R,     E n_acc = A^T N_T + A^R N_R,

(``c`` the class of item ``i``; ``P``, ``R``, ``A`` the exact probabilities that a report supports
``i`` *and* is accepted, given the own item's relation to ``i`` and ``T``). Solving these moment
equations (the sum over ``T`` and ``n_acc`` give ``N_T``, ``N_R``; then each ``x_i``) is linear in
the counts, so ``x̂`` is unbiased for the honest counts once the fakes are gone; the frequencies
are ``x̂/(N̂_T + N̂_R)``. Standard errors: the pure-oracle formula with the accepted reports'
conditional rates ``p' = P/A``, ``q' = R/A`` and ``n_acc`` (a plug-in).

Node consistency (:func:`node_consistency`) and duplicate nonces (:func:`duplicate_nonces`) are the
two report-space-free tests. Reference: Cao, Jia and Gong, "Data Poisoning Attacks to Local
Differential Privacy Protocols", USENIX Security 2021: the maximal-gain attack (MGA) and the countermeasures (detecting fake users).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..estimation import FrequencyEstimate, finalize_estimate, pure_variance
from ..mechanisms.protocol import SupportTestable, has

__all__ = ["DetectionResult", "detect", "count_thresholds", "node_consistency", "NodeTest", "duplicate_nonces",
           "IMPOSSIBLE_REASON", "BLIND_SPOT"]

IMPOSSIBLE_REASON = (
    "no per-report test can see fake reports here: every well-formed report of this mechanism is one an honest "
    "user sends with probability within e^epsilon of any other (k-RR: a report is one item, each plausible), so a "
    "test that flags a fake flags honest holders of the same item as often; the certified poison_shift "
    "(ldp_plugin.robust.bounds) bounds the fakes' effect instead"
)

BLIND_SPOT = (
    "not seen by any per-report test: a fake report that copies an honest report of a single target (the target "
    "supported, the other supports at their usual count) has the probability an honest holder of the target gives "
    "it, so a test flagging it flags that holder as often (at most alpha); the certified poison_shift "
    "(ldp_plugin.robust.bounds) bounds such fakes instead"
)


# -- exact laws of the support count ------------------------------------------------------------------------
def _binomial_numerators(k: int, a: int, b: int) -> list:
    """``C(k, j) a^j b^(k−j)`` for ``j = 0..k`` (exact integers; the pmf of Binomial(k, a/(a+b)) times (a+b)^k)."""
    pa, pb = [1] * (k + 1), [1] * (k + 1)
    for j in range(1, k + 1):
        pa[j] = pa[j - 1] * a
        pb[j] = pb[j - 1] * b
    return [math.comb(k, j) * pa[j] * pb[k - j] for j in range(k + 1)]


def _count_laws(K: int, p: Fraction, q: Fraction) -> tuple[list, list, int]:
    """Exact numerators (common denominator ``D^K``) of the support count over ``K`` items, with the own
    item outside (``Binomial(K, q)``) and inside (``Bernoulli(p) + Binomial(K − 1, q)``)."""
    D = math.lcm(p.denominator, q.denominator)
    a, P = q.numerator * (D // q.denominator), p.numerator * (D // p.denominator)
    out = _binomial_numerators(K, a, D - a)
    inner = _binomial_numerators(K - 1, a, D - a) if K >= 1 else [1]
    inside = [0] * (K + 1)
    for j in range(K):
        inside[j] += (D - P) * inner[j]
        inside[j + 1] += P * inner[j]
    return out, inside, D**K


def count_thresholds(K: int, p: Fraction, q: Fraction, alpha: float, *, two_sided: bool = False) -> tuple[int, int]:
    """``(lo, hi)``: an honest report's support count over ``K`` items is ``< lo`` or ``>= hi`` with
    probability ``<= alpha`` (``alpha/2`` per side when two-sided; ``lo = 0`` one-sided), whether or
    not its own item is among them — exact integer tails."""
    if not 0 < alpha < 1:
        raise LDPParameterError("alpha (the false-alarm rate) must be in (0, 1)")
    out, inside, den = _count_laws(K, p, q)
    side = Fraction(alpha) / (2 if two_sided else 1)
    limit = side * den
    hi, tail_o, tail_i = K + 1, 0, 0
    for j in range(K, -1, -1):  # the smallest hi with both upper tails P[count >= hi] <= side
        tail_o += out[j]
        tail_i += inside[j]
        if max(tail_o, tail_i) > limit:
            break
        hi = j
    lo = 0
    if two_sided:
        low_o, low_i = 0, 0
        for j in range(K + 1):  # the largest lo with P[count < lo] <= side
            low_o += out[j]
            low_i += inside[j]
            if max(low_o, low_i) > limit:
                break
            lo = j + 1
    return lo, hi


# -- results ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DetectionResult:
    """Per-report flags by reason (``flagged``: counts; ``mask``: True = accepted), the tests'
    thresholds and false-alarm rates, the suspect set ``T`` — or ``possible=False`` with ``reason``."""

    possible: bool
    reason: str
    n: int
    flagged: dict
    mask: np.ndarray
    alpha: float
    alpha_size: float
    size_range: tuple
    suspects: tuple
    suspect_threshold: int
    mechanism: Any = field(repr=False)
    counts_accepted: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def blind_spot(self) -> str:
        """What no per-report test can see (always stated; see the module docstring)."""
        return IMPOSSIBLE_REASON if not self.possible else BLIND_SPOT

    @property
    def n_accepted(self) -> int:
        return int(self.mask.sum())

    def to_dict(self) -> dict:
        return {"possible": self.possible, "reason": self.reason, "blind_spot": self.blind_spot, "n": self.n, "flagged": dict(self.flagged),
                "accepted": self.n_accepted, "alpha": self.alpha, "alpha_size": self.alpha_size,
                "size_range": list(self.size_range), "suspects": [int(s) for s in self.suspects],
                "suspect_threshold": self.suspect_threshold}

    def estimate(self, *, postprocess: str = "projection", confidence: float = 0.95) -> FrequencyEstimate:
        """The estimate of the accepted reports, corrected for the honest reports the tests removed
        (see the module docstring). Without a possible test: refused (use the plain estimate and its
        certified ``poison_shift``)."""
        if not self.possible:
            raise LDPParameterError("detection is impossible for this mechanism: " + self.reason)
        m = self.mechanism
        p, q = float(m.support_law()[0]), float(m.support_law()[1])
        d = int(m.d)
        inT = np.zeros(d, dtype=bool)
        inT[list(self.suspects)] = True
        rates = _acceptance_rates(d, int(inT.sum()), p, q, self.size_range, self.suspect_threshold)
        c = self.counts_accepted.astype(np.float64)
        n_acc = float(self.n_accepted)
        if n_acc == 0:
            raise LDPInputError("every report was flagged: nothing to estimate")
        KT = int(inT.sum())
        # N_T, N_R from n_acc and the sum over T (both exact in expectation)
        if KT:
            (PT, RTT, RTR), AT = rates["T"], rates["A_T"]
            AR = rates["A_R"]
            a11 = (PT - RTT) + KT * RTT
            a12 = KT * RTR
            sT = float(c[inT].sum())
            M = np.array([[a11, a12], [AT, AR]])
            NT, NR = np.linalg.solve(M, np.array([sT, n_acc]))
        else:
            NT, NR = 0.0, n_acc / rates["A_R"]
        x = np.empty(d)
        for cls, sel in (("T", inT), ("R", ~inT)):
            if not sel.any():
                continue
            P, RT, RR = rates[cls]
            own = RT if cls == "T" else RR
            x[sel] = (c[sel] - RT * NT - RR * NR) / (P - own)  # E c_i = (P − R_own) x_i + R^T N_T + R^R N_R
        total = NT + NR
        raw = x / total if total > 0 else np.zeros(d)
        pp, qq = rates["R"][0] / rates["A_R"], rates["R"][2] / rates["A_R"]
        se = np.sqrt(pure_variance(np.clip(raw, 0.0, 1.0), max(int(n_acc), 1), pp, qq))
        return finalize_estimate(raw, se, int(n_acc), postprocess=postprocess, confidence=confidence, items=m.items)


def _binom_pmf(k: int, q: float) -> np.ndarray:
    """Binomial(k, q) pmf on ``0..k`` in log space (floats: used for the correction, not the thresholds)."""
    j = np.arange(k + 1)
    lg = np.array([math.lgamma(v + 1) for v in range(k + 1)])
    return np.exp(lg[k] - lg - lg[::-1] + j * math.log(q) + (k - j) * math.log1p(-q))


def _pmf(k: int, q: float, own: bool, p: float, shift: int) -> np.ndarray:
    """pmf of ``shift + [own]Bernoulli(p) + Binomial(k, q)`` on ``0..k + 2 + shift``."""
    base = _binom_pmf(k, q) if k >= 0 else np.array([1.0])
    if own:
        base = np.convolve(base, [1 - p, p])
    out = np.zeros(k + 3 + shift)
    out[shift : shift + base.size] = base
    return out


def _acceptance_rates(d: int, KT: int, p: float, q: float, size_range: tuple, tT: int) -> dict:
    """``P[supports i ∧ accepted | own]`` per class of ``i`` and relation of the own item (see the
    module docstring), and the acceptance probabilities ``A_T``, ``A_R`` (floats; the thresholds
    themselves are exact)."""
    KR = d - KT
    lo, hi = size_range

    def acc(t_pmf, r_pmf):
        xt = np.arange(t_pmf.size)[:, None]
        xr = np.arange(r_pmf.size)[None, :]
        ok = (xt < tT if KT else True) & (xt + xr >= lo) & (xt + xr < hi)
        return float((t_pmf[:, None] * r_pmf[None, :] * ok).sum())

    T = lambda k, own=False, shift=0: _pmf(k, q, own, p, shift)  # noqa: E731
    out = {}
    if KT:
        out["T"] = (p * acc(T(KT - 1, shift=1), T(KR)),                         # own = i ∈ T
                    q * acc(T(KT - 2, own=True, shift=1), T(KR)),               # own ∈ T, ≠ i
                    q * acc(T(KT - 1, shift=1), T(KR - 1, own=True)))           # own ∈ R
        out["A_T"] = acc(T(KT - 1, own=True), T(KR))
    out["R"] = (p * acc(T(KT), T(KR - 1, shift=1)),                              # own = i ∈ R
                q * acc(T(KT - 1, own=True), T(KR - 1, shift=1)) if KT else 0.0,  # own ∈ T
                q * acc(T(KT), T(KR - 2, own=True, shift=1)))                   # own ∈ R, ≠ i
    out["A_R"] = acc(T(KT), T(KR - 1, own=True))
    return out


# -- the tests ---------------------------------------------------------------------------------------------------
def _suspects(mech: Any, reports: Any, counts: np.ndarray, n: int, *, alpha_pairs: float, z_candidate: float, max_candidates: int) -> tuple:
    p, q = (float(v) for v in mech.support_law())
    raw = (counts / n - q) / (p - q)
    theta = np.clip(raw, 0.0, 1.0)
    se = np.sqrt(pure_variance(theta, n, p, q))
    z = raw / np.maximum(se, 1e-300)
    cand = np.flatnonzero(z > z_candidate)
    if cand.size < 2:
        return ()
    cand = cand[np.argsort(-raw[cand])][:max_candidates]
    X = mech.support_matrix(reports, cand).astype(np.float64)
    C = X.T @ X
    th = theta[cand]
    E = n * ((th[:, None] + th[None, :]) * p * q + np.clip(1 - th[:, None] - th[None, :], 0, 1) * q * q)
    V = np.maximum(E * (1 - E / n), 1e-300)
    pairs = cand.size * (cand.size - 1) / 2
    zc = NormalDist().inv_cdf(1 - alpha_pairs / pairs)
    excess = (C - E) / np.sqrt(V) > zc
    np.fill_diagonal(excess, False)
    return tuple(int(v) for v in np.sort(cand[excess.any(axis=1)]))


def detect(mechanism: Any, reports: Any, *, alpha: float = 0.01, alpha_size: float = 1e-3, alpha_pairs: float = 1e-6,
           z_candidate: float = 4.0, max_candidates: int = 64, suspects: Any = None) -> DetectionResult:
    """Run the per-report tests (see the module docstring) on one batch of reports.

    ``alpha``: false-alarm rate of the suspect-set test per honest report; ``alpha_size``: of the
    support-size test (two-sided); ``alpha_pairs``: family-wise rate of mining a pair of honest
    items as suspects (Bonferroni over the candidate pairs). ``suspects``: a suspect set chosen by
    the caller (item codes; e.g. items an operator is told are targeted) instead of the mined one."""
    for name, a in (("alpha", alpha), ("alpha_size", alpha_size), ("alpha_pairs", alpha_pairs)):
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 < a < 1:
            raise LDPParameterError(f"{name} (a false-alarm rate) must be in (0, 1)")
    n = int(mechanism.accumulator().add(reports).n) if not has(mechanism, SupportTestable) else 0
    if not has(mechanism, SupportTestable):
        return DetectionResult(False, IMPOSSIBLE_REASON, n, {}, np.ones(n, dtype=bool), alpha, alpha_size, (0, 0), (), 0, mechanism)
    acc = mechanism.accumulator().add(reports)
    n, counts = int(acc.n), np.asarray(acc.counts)
    p, q = mechanism.support_law()
    d = int(mechanism.d)
    lo, hi = count_thresholds(d, p, q, alpha_size, two_sided=True)
    sizes = mechanism.support_sizes(reports)
    size_bad = (sizes < lo) | (sizes >= hi)
    if suspects is None:
        T = _suspects(mechanism, reports, counts, n, alpha_pairs=alpha_pairs, z_candidate=z_candidate, max_candidates=max_candidates)
    else:
        T = tuple(sorted({int(v) for v in np.asarray(suspects).ravel()}))
        if any(not 0 <= v < d for v in T):
            raise LDPParameterError(f"suspects must be item codes in [0, {d})")
    tT = 0
    set_bad = np.zeros(n, dtype=bool)
    if len(T) >= 2:
        tT = count_thresholds(len(T), p, q, alpha)[1]
        set_bad = mechanism.support_matrix(reports, list(T)).sum(axis=1) >= tT
    mask = ~(size_bad | set_bad)
    flagged = {"support_size": int(size_bad.sum()), "suspect_set": int((set_bad & ~size_bad).sum())}
    kept = mechanism.accumulator()
    sel = np.flatnonzero(mask)
    kept.add(_take(mechanism, reports, sel))
    reason = ("support-size test (two-sided, exact Binomial tails) and suspect-set test"
              + (f" on {len(T)} co-supported items" if len(T) >= 2 else " (no suspect set found)"))
    return DetectionResult(True, reason, n, flagged, mask, float(alpha), float(alpha_size), (lo, hi), T, tT, mechanism,
                           np.asarray(kept.counts))


def _take(mechanism: Any, reports: Any, idx: np.ndarray) -> Any:
    """The reports at ``idx`` (through the column hooks: any report container)."""
    cols = mechanism.to_columns(reports)
    return mechanism.from_columns({k: np.asarray(v)[idx] for k, v in cols.items()})


# -- node consistency ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeTest:
    """Per node: the statistic ``Σ_i (θ̂_node,i − θ̂_rest,i)² / (Var_node,i + Var_rest,i)``, its
    threshold (the χ²_d quantile at ``alpha/nodes``, Bonferroni) and whether it is flagged."""

    statistic: dict
    threshold: float
    flagged: tuple
    alpha: float


def node_consistency(estimates: dict, *, alpha: float = 1e-3) -> NodeTest:
    """Flag nodes whose report distribution is inconsistent with the other nodes' beyond sampling
    error: every node's users are assumed drawn from one population (i.i.d. across nodes), so
    ``θ̂_node − θ̂_rest`` has mean 0 and per-item variance ``Var_node + Var_rest`` (the estimates'
    ``population``-target standard errors). The sum of squared standardized differences over the
    ``d`` items is compared with the ``χ²_d`` quantile at ``alpha/nodes`` (items treated as
    independent: for a multinomial report space the sum is closer to ``χ²_{d−1}``, so the test is
    conservative there). ``estimates``: node → (raw estimate array, std error array, n)."""
    if not 0 < alpha < 1:
        raise LDPParameterError("alpha must be in (0, 1)")
    if len(estimates) < 3:
        raise LDPParameterError("node consistency needs at least 3 nodes")
    names = list(estimates)
    raws = np.array([np.asarray(estimates[k][0], dtype=np.float64) for k in names])
    ses = np.array([np.asarray(estimates[k][1], dtype=np.float64) for k in names])
    ns = np.array([float(estimates[k][2]) for k in names])
    d = raws.shape[1]
    from scipy.stats import chi2  # SciPy: the verify extra (optional, loaded on use)

    thr = float(chi2.ppf(1 - alpha / len(names), d))
    stat = {}
    for j, k in enumerate(names):
        w = np.delete(ns, j)
        rest = (np.delete(raws, j, axis=0) * w[:, None]).sum(axis=0) / w.sum()
        var_rest = ((np.delete(ses, j, axis=0) ** 2) * (w[:, None] ** 2)).sum(axis=0) / w.sum() ** 2
        stat[k] = float((((raws[j] - rest) ** 2) / np.maximum(ses[j] ** 2 + var_rest, 1e-300)).sum())
    return NodeTest(stat, thr, tuple(k for k in names if stat[k] > thr), float(alpha))


def duplicate_nonces(envelopes: Any, nonce_bytes: int = 16) -> np.ndarray:
    """True for every envelope whose nonce (its first ``nonce_bytes`` bytes: the report id of
    :mod:`ldp_plugin.federated.envelope`) was already seen — a replay; the first copy is kept."""
    seen: set = set()
    out = np.zeros(len(envelopes), dtype=bool)
    for i, env in enumerate(envelopes):
        nonce = bytes(env[:nonce_bytes])
        out[i] = nonce in seen
        seen.add(nonce)
    return out
