"""Choosing the mechanism: rank every applicable registered frequency oracle (and its parameter
choices) by predicted error, with client cost and report size beside it (``ldp choose``).

Prediction: the per-item variance of each mechanism's raw estimator for ``n`` users at a uniform
θ (``θ_i = 1/d``; sets: every user holds ``m`` items, ``f_i = m/d``), from the formulas the
estimators themselves use — the pure-oracle variance ``[θp*(1−p*) + (1−θ)q*(1−q*)]/(n(p*−q*)²)``
with each mechanism's *realized* ``(p*, q*)``, ``m²·`` that of the padded mechanism for
pad-and-sample, and :func:`ldp_plugin.theory.mse_cohort` for O-RR. Metrics: ``l2`` =
``E‖θ̂−θ‖²`` (sum of variances), ``l1`` = ``Σ √(2v_i/π)`` (normal errors), ``linf`` ≈
``√(2 v_max ln(2d))``. ``benchmarks/choose_grid.py`` checks the pick against simulation.

Choosing a mean or a longitudinal mechanism (``ldp choose --family mean|longitudinal``).

* Means: every mean mechanism ranked by the variance of its mean estimate for ``n`` users, from
  its exact grid channel: the average over inputs spread uniformly on ``[lower, upper]`` and the
  worst input (``second_moments() − t²``, scaled).
* Longitudinal: every protocol ranked by its per-round squared l2 error at a uniform
  distribution (``analytic_mse``), shown beside the **lifetime cost** over ``rounds``
  collections: the **user-level** charge (any two histories of one user; the same for every user
  and every ``change_prob``; ``None`` = unbounded, dBitFlipPM) in ``lifetime_expected`` /
  ``lifetime_worst``, and beside it the papers' **value-level** figures (same change pattern) when
  a user's value is redrawn with probability ``change_prob`` before each round: the expected
  ``E[min(#memoized units, bound)]·ε∞`` (value redraws uniform over ``d``; LOLOHA's units are
  hashed values, uniform over ``g``; dBitFlipPM's are patterns) and the worst case
  ``min(min(rounds, bound)·ε∞, user level)`` (``lifetime_value_expected`` / ``lifetime_value_worst``).

Choosing how to estimate a numeric distribution (``ldp choose --family distribution``) and the
bucketed oracle's bucket rule: :mod:`ldp_plugin.choose.distribution`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from .._validation import check_choice, check_int, check_real
from ..exact import float_up
from ..mechanisms.domain import check_epsilon
from ..mechanisms import SampleOne
from ..mechanisms.protocol import InputKind, PoisonBounded, SupportRates, Verifiable, has
from ..mechanisms.reports import report_bits
from ..simulate import LONGITUDINAL_NAMES, MEAN_NAMES, build_longitudinal, build_mean
from ..amplification import amplify
from ..registry import load_registry
from ..robust.bounds import worst_case_gain

__all__ = ["Candidate", "rank_mechanisms", "make_auto", "METRICS", "rank_mean_mechanisms", "rank_longitudinal_mechanisms", "SeriesCandidate"]

METRICS = ("l2", "l1", "linf")


@dataclass(frozen=True)
class Candidate:
    label: str
    params: dict
    predicted_error: float
    predicted_l2: float
    report_bits: int
    client_cost: str
    server_cost: str
    build: Callable[[], Any]
    #: the central ε of n shuffled reports (``rank_mechanisms(..., delta=...)``), else None
    central_epsilon: Optional[float] = None
    #: one report's Bayes attacker success under a uniform prior (``Mechanism.bayes_success``)
    attacker_success: Optional[float] = None
    #: the largest standard error of one item's frequency over *every* distribution (pure
    #: oracles, one item per user: the variance is linear in the item's frequency, so the worst
    #: case is at frequency 0 or 1); None where not derived
    worst_item_se: Optional[float] = None
    #: the largest expected gain of a fraction ``poison_fraction`` of fake reports on one item
    #: (Cao, Jia, Gong, USENIX Security 2021, MGA at f = 0: :func:`ldp_plugin.robust.worst_case_gain`);
    #: None where the estimator declares no per-report influence range
    worst_case_gain: Optional[float] = None
    poison_fraction: Optional[float] = None

    def to_dict(self) -> dict:
        return {
            "worst_case_gain": self.worst_case_gain,
            "poison_fraction": self.poison_fraction,
            "central_epsilon": self.central_epsilon,
            "attacker_success": self.attacker_success,
            "worst_item_se": self.worst_item_se,
            "mechanism": self.label,
            "params": self.params,
            "predicted_error": self.predicted_error,
            "predicted_l2": self.predicted_l2,
            "report_bits": self.report_bits,
            "client_cost": self.client_cost,
            "server_cost": self.server_cost,
        }


def _bits(x: int) -> int:
    return max(1, math.ceil(math.log2(max(x, 2))))


def _pure_item_variances(mech, d_pad: int, n: int, m: int) -> np.ndarray:
    """Per-item variances of the (set) frequencies over the d real items at the uniform θ.

    Sets (every user holds m items, ``f = m/d``): the sampled item is itself random, so a user
    holding ``i`` supports it with probability ``π₁ = q* + (p*−q*)/m`` (not ``p*``):
    ``Var f̂_i = m² [f π₁(1−π₁) + (1−f) q*(1−q*)] / (n (p*−q*)²)``."""
    if m == 1:
        return mech.variance(np.full(d_pad, 1.0 / d_pad), n)
    d = d_pad - 1
    p, q = mech.p_star, mech.q_star
    delta = p - q
    f = m / d
    pi1 = q + delta / m
    return np.full(d, m * m * (f * pi1 * (1 - pi1) + (1 - f) * q * (1 - q)) / (n * delta * delta))


def _candidates(kind: InputKind, *, epsilon: float, d: int, n: int, m: int) -> list:
    """``(name, params, class)`` of every registered frequency oracle taking ``kind`` inputs, for
    each parameter choice it declares (``choose_variants``): the registry is the one list."""
    out = []
    for name, decl in sorted(load_registry().items()):
        cls = decl.mechanism_class()
        if cls.input_kind is not kind:
            continue
        try:
            variants = cls.choose_variants(epsilon=epsilon, d=d, n=n, m=m)
        except (LDPParameterError, ValueError):
            continue
        out += [(name, dict(kw), cls) for kw in variants]
    return out


def _summarize(v: np.ndarray, metric: str) -> float:
    if metric == "l2":
        return float(v.sum())
    if metric == "l1":
        return float(np.sqrt(2 * v / math.pi).sum())
    return float(math.sqrt(2 * v.max() * math.log(2 * v.size)))


def _bayes_unary(m: Any) -> float:
    """Independent bits, ``p*`` at the own item and ``q*`` elsewhere (``p* > q*``): guess any item
    whose bit is 1, else any item: ``[(p*/q*)(1 − (1 − q*)^d) + (1 − p*)(1 − q*)^(d−1)] / d``."""
    p, q, d = float(m.p_star_exact), float(m.q_star_exact), m.d
    return float(((p / q) * -np.expm1(d * np.log1p(-q)) + (1 - p) * np.exp((d - 1) * np.log1p(-q))) / d)


#: one report's Bayes attacker success in closed form, by the declared channel shape (SupportRates):
#: k-RR ``p*`` (guess the report); a k-subset ``p*/k`` (guess any item of the reported subset:
#: ``C(d,k)·p*/(d·C(d−1,k−1))``); unary encoding :func:`_bayes_unary`
BAYES_CLOSED_FORMS = {
    "randomized-response": lambda m: float(m.p_star_exact),
    "subset": lambda m: float(m.p_star_exact) / m.k,
    "unary": _bayes_unary,
}


def bayes_success(mechanism: Any) -> Optional[float]:
    """One report's Bayes attacker success under a uniform prior, ``(1/d)·Σ_y max_x P(y|x)``
    (``ldp choose``): the closed form of a declared channel shape (capability SupportRates), else
    exact from the realized channel on small domains (capability Verifiable), else None."""
    if has(mechanism, SupportRates) and mechanism.channel_shape in BAYES_CLOSED_FORMS:
        return BAYES_CLOSED_FORMS[mechanism.channel_shape](mechanism)
    if (has(mechanism, Verifiable) and mechanism.channel_is_client and (mechanism.domain_size or 1 << 31) <= 16
            and mechanism.verification_input_count() <= 16):
        M = mechanism.channel().matrix
        return float(sum(max(M[x][y] for x in range(len(M))) for y in range(len(M[0]))) / len(M))
    return None


def _gain(mechanism: Any, fraction: float) -> Optional[float]:
    """The candidate's worst-case poisoning gain, or None where no influence range is declared."""
    if not has(mechanism, PoisonBounded):
        return None
    try:
        return worst_case_gain(mechanism, fraction)
    except LDPParameterError:  # e.g. a cohort design with hash collisions: no certified bound
        return None


def rank_mechanisms(d: int, epsilon: float, *, n: int = 100_000, m: int = 1, metric: str = "l2", delta: Optional[float] = None,
                    poison_fraction: float = 0.01) -> list[Candidate]:
    """Every applicable candidate, best (lowest predicted error) first. With ``delta``, each
    candidate also carries the central ε of its ``n`` reports through a trusted shuffler
    (:func:`ldp_plugin.amplification.amplify`: a certified upper bound). Each candidate carries
    the worst-case gain of a fraction ``poison_fraction`` of fake reports on one item
    (:func:`ldp_plugin.robust.worst_case_gain`)."""
    check_real("poison_fraction", poison_fraction, 0, 1, lo_open=True, hi_open=True)
    if delta is not None:
        check_real("delta", delta, 0, 1, lo_open=True, hi_open=True)
    eps = check_epsilon(epsilon)
    d = check_int("d", d, 2, 1 << 20)
    m = check_int("m", m, 1, d)
    n = check_int("n", n, 1)
    check_choice("metric", metric, METRICS)
    dp = d + 1 if m > 1 else d
    out = []
    for label, params, cls in _candidates(InputKind.VALUE, epsilon=eps, d=dp, n=n, m=m):
        factory = (lambda D, cls=cls, params=params: cls(epsilon=eps, d=D, **params))
        try:
            inner = factory(dp)
        except (LDPParameterError, ValueError):
            continue
        bits, client, server = report_bits(inner), cls.client_cost, cls.server_cost
        if inner.takes_cohorts:
            if m == 1:
                v = np.full(d, inner.predicted_mse(n) / dp)
            else:  # i.i.d.-user (multinomial) trace, minus what fixed sets of m items remove
                iid = inner.predicted_mse(n) + (1 - 1 / dp) / n
                f = m / d
                v = np.full(d, m * m * iid / dp - f * (1 - f) / n)
        else:
            v = _pure_item_variances(inner, dp, n, m)
        build = (lambda f=factory: SampleOne(mechanism=f(d), m=m)) if m > 1 else (lambda f=factory: f(d))
        worst = None
        if m == 1 and not inner.takes_cohorts:  # Var f̂_i is linear in f_i: extremes at 0 and 1
            w = inner.variance(np.eye(1, dp).ravel(), n)
            worst = math.sqrt(max(float(w[0]), float(w[1])))
        out.append(Candidate(
            label if m == 1 else f"sample-one({label})", dict(params, **({"m": m} if m > 1 else {})),
            _summarize(v, metric), float(v.sum()), bits, client, server, build, worst_item_se=worst,
        ))
    # native set mechanisms (Wang et al. (PVLDB 2020)): the wheel (any m) and, for sets, RAPPOR-for-sets and PrivSet;
    # their estimators' variance is exact at f = m/d (every user holds m items)
    for label, kw, cls in _candidates(InputKind.SET, epsilon=eps, d=d, n=n, m=m):
        factory = (lambda cls=cls, kw=kw: cls(epsilon=eps, d=d, m=m, **kw))
        try:
            mech = factory()
        except (LDPParameterError, ValueError):
            continue
        v = mech.variance(np.full(d, m / d), n)
        bits = report_bits(mech)
        params = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in mech.spec()["params"].items() if k in ("m", "p", "grid_bits", "k")}
        out.append(Candidate(label, params, _summarize(v, metric), float(v.sum()), bits, cls.client_cost, cls.server_cost, factory))
    out.sort(key=lambda c: (c.predicted_error, c.report_bits))
    from dataclasses import replace as _replace

    out = [_replace(c, attacker_success=bayes_success(c.build())) for c in out]
    out = [_replace(c, worst_case_gain=_gain(c.build(), poison_fraction), poison_fraction=float(poison_fraction)) for c in out]
    if delta is not None and n >= 2:
        from dataclasses import replace


        out = [replace(c, central_epsilon=amplify(c.build(), n, float(delta))["epsilon"]) for c in out]
    return out


def make_auto(d: Optional[int] = None, epsilon: float = 1.0, *, categories: Optional[Sequence] = None, n: int = 100_000, m: int = 1, metric: str = "l2"):
    """The recommended mechanism of :func:`rank_mechanisms`, built (over ``categories`` if given)."""

    if categories is not None:
        d = len(categories)
    if d is None:
        raise LDPParameterError("give d or categories")
    best = rank_mechanisms(d, epsilon, n=n, m=m, metric=metric)[0]
    mech = best.build()
    if categories is not None:
        mech = mech.with_categories(categories)
    return mech


# -- means and longitudinal protocols -------------------------------------------------------------------
@dataclass(frozen=True)
class SeriesCandidate:
    mechanism: str
    params: dict
    predicted_error: float
    worst_error: float
    lifetime_expected: float | None = None
    lifetime_worst: float | None = None
    lifetime_value_expected: float | None = None
    lifetime_value_worst: float | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def rank_mean_mechanisms(epsilon: float, *, n: int, lower: float = 0.0, upper: float = 1.0) -> list:
    """Mean mechanisms, lowest average variance of the mean estimate first."""

    n = check_int("n", n, 1)
    out = []
    for name in MEAN_NAMES:
        m = build_mean(name, epsilon=epsilon, lower=lower, upper=upper)
        t = m.grid_values()
        per = (m.second_moments() - t * t) * ((upper - lower) / 2) ** 2 / n
        out.append(SeriesCandidate(name, {"grid": m.grid}, float(per.mean()), float(per.max())))
    return sorted(out, key=lambda c: c.predicted_error)


def _expected_units(probs: np.ndarray, rounds: int, change_prob: float) -> float:
    """``E[#distinct units]`` when the first value and each redraw (``Bin(rounds − 1,
    change_prob)`` of them) pick a unit independently with ``probs``."""
    from math import comb

    total = 0.0
    for r in range(rounds):
        w = comb(rounds - 1, r) * change_prob**r * (1 - change_prob) ** (rounds - 1 - r)
        draws = 1 + r
        total += w * float(np.sum(1 - (1 - probs) ** draws))
    return total


def rank_longitudinal_mechanisms(d: int, epsilon_perm: float, epsilon_1: float, *, n: int, rounds: int, change_prob: float) -> list:
    """Longitudinal protocols, lowest per-round error first, with the lifetime cost."""

    rounds = check_int("rounds", rounds, 1)
    change_prob = check_real("change_prob", change_prob, 0, 1)
    theta = np.full(d, 1.0 / d)
    out = []
    seen = set()
    declared = load_registry(kinds=("longitudinal",))
    for name in LONGITUDINAL_NAMES:
        for kw in declared[name].mechanism_class().choose_variants(epsilon=epsilon_1, d=d, n=n, m=1):
            m = build_longitudinal(name, d=d, epsilon_perm=epsilon_perm, epsilon_1=epsilon_1, **kw)
            bound = m.unit_bound()
            probs = m.unit_probabilities(theta)
            p = {k: m.spec()["params"][k] for k in kw}  # the realized choice (g="optimal" -> its g)
            if (name, tuple(sorted(p.items()))) in seen:
                continue
            seen.add((name, tuple(sorted(p.items()))))
            value_worst = float_up(m.lifetime_bound(rounds, relation="value"))
            units = min(_expected_units(probs, rounds, change_prob), bound)
            err = m.analytic_mse(n, theta=theta)
            user = m.lifetime_bound(rounds, relation="user")
            user_f = None if user is None else float_up(user)
            out.append(SeriesCandidate(name, p, err, err, user_f, user_f, min(units * epsilon_perm, value_worst), value_worst))
    return sorted(out, key=lambda c: (c.predicted_error, math.inf if c.lifetime_expected is None else c.lifetime_expected))
