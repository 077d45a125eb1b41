"""The estimator layer: the server side is verified too — bias, stated variance, interval coverage and
the refusal of reports made under another spec, for every mechanism, on several data shapes.

For one mechanism instance and one data shape (:mod:`.shapes`), :func:`estimator_cell` draws ``n`` users
(:func:`.populations.population`), runs the **real client** on ``R`` independent collections of those
same users at once (one ``randomize`` call over ``R·n`` users, cut into ``R`` batches tagged as the
mechanism's; keyed mechanisms get a fresh secret per user and collection), estimates each collection with
the real server (``estimate``, defaults; IBU as a second estimate where the family offers it) and reads
every statistic the family returns (:mod:`.readouts`). The estimates cover the users who reported, so
the truth is the users' own statistic. Per statistic, over the ``R`` collections, with errors
``e_r = θ̂_r − θ`` and reported variances ``s_r²`` (``σ̄² = mean s_r²``):

* **bias**: ``|mean e_r| <= z · sqrt(max(σ̄², var e_r) / R)`` (``z`` the two-sided normal quantile at the
  test's level; the larger variance, so that a variance error is not reported as a bias);
* **stated variance**: ``MSE/σ̄² = mean(e_r²)/σ̄²`` inside ``[χ²_ν(a/2)/ν, χ²_ν(1 − a/2)/ν]`` (for normal
  errors ``R·MSE/σ² ~ χ²_R``: ``ν = R``; errors with an excess kurtosis ``κ`` — a few rare flips at a large
  ε — have ``Var(e²) = σ⁴(2 + κ)``, so ``ν = 2R/(2 + κ̂)``, the shape from the data, never the scale); a
  ``variance-only`` interval on ``var(e_r)/σ̄²``; a ``bound`` (a conservative interval, or one side of
  one) claims its coverage only: its bias and MSE are measured and reported;
* **coverage** of the 95% interval: the number of collections it covers ``k`` must not be significantly
  below 0.93: ``P[Binomial(R, 0.93) <= k] >= a``;
* **pooled stated variance** over the statistics of the cell (power against a variance misreported for
  every statistic): ``mean_{r,i}(e_{r,i}²/σ̄_i²)`` against ``χ²_ν/ν``, with Satterthwaite's
  ``ν = R·k²/Σ_{ij} ρ_ij²`` (``ρ`` the errors' empirical correlation: correlated statistics carry less
  information than ``k`` independent ones; the scale is never estimated from the data).

``a`` is the cell's share of the layer's false-alarm rate, Bonferroni over every test of the cell. A
quantile reports an interval only: its coverage is tested (the interval must meet the set of the users'
``q``-quantiles). A statistic whose errors take fewer than 12 distinct values over the collections (a
rare-event regime: k-RR at ε = 20) gets no χ² test, only the bias and coverage tests. Statistics labelled ``variance-only`` or ``none`` are measured (bias, coverage, MSE) and
reported, and tested only for what the label claims. Every result row carries the power of its tests
(the bias in standard errors, the variance ratio and the coverage detected with probability 0.99).

**Power check** (:func:`power_check` and the seeded estimator bugs of :mod:`.seeded_bugs`): the same
tests at the same ``R`` must fail a mechanism whose server debiases with an off-by-one ``q*``, reports a
variance without its square, or halves a mean's variance.

**Spec refusal** (:func:`spec_refusal`): the estimator must refuse (``LDPInputError``) the same
mechanism's reports made with another parameter (ε × 0.8, or a wrapper's ``m + 1``) and k-RR's reports.
"""

from __future__ import annotations

import dataclasses
import math
import time
import zlib
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from .._errors import LDPArgumentError, LDPInputError
from ..mechanisms import KRR
from ..mechanisms.protocol import Distribution, InputKind, Keyed, has
from ..mechanisms.tagged import tag_reports
from .layers import FAMILY_ALPHA, _stats
from .populations import mechanism_parameter, population
from .readouts import readout
from .refusals import refusal_problems
from .shapes import CATEGORY_SHAPES, NUMBER_SHAPES

__all__ = ["estimator_layer", "estimator_cell", "judge", "spec_refusal", "shapes_for", "ESTIMATOR_RUNS", "COVERAGE_FLOOR"]

#: ``(collections R, users n, seconds per cell)`` of the quick and the full run; an estimator slower
#: than ``seconds / R`` runs fewer collections (never below 12), and says so in its row
ESTIMATOR_RUNS = {"quick": (160, 1000, 1.0), "full": (300, 1000, 2.5)}
#: the coverage an interval labelled 95% must not be significantly below
COVERAGE_FLOOR = 0.93
#: bootstrap replicates asked of an estimator that takes ``replicates=`` (Square Wave's EMS)
BOOTSTRAP_REPLICATES = 20
_MIN_R = 12
#: fewer distinct errors than this over the R collections: a rare-event regime, no χ² test
_MIN_DISTINCT = 12


def shapes_for(mech: Any) -> tuple:
    """The data shapes of the mechanism's input: five for a number, three for a category."""
    return NUMBER_SHAPES if mech.input_kind == InputKind.NUMBER else CATEGORY_SHAPES


# -- the collections ---------------------------------------------------------------------------------
def _repeat(values: Any, R: int) -> Any:
    if isinstance(values, np.ndarray):
        return np.tile(values, (R, 1)) if values.ndim == 2 else np.tile(values, R)
    return list(values) * R


def _collections(mech: Any, values: Any, n: int, R: int, seed: int) -> list:
    """``R`` independent report batches of the same ``n`` users from ONE call of the real client
    (tagged as ``mech``'s, as the client tags them)."""
    keys = None
    if mech.needs_user_keys:
        gen = np.random.default_rng(seed + 1)
        raw = gen.integers(0, 256, size=(R * n, 32), dtype=np.uint8)
        keys = [bytes(row) for row in raw]
    reports = mech.randomize(_repeat(values, R), rng=seed, user_keys=keys)
    cols = mech.to_columns(reports)
    return [tag_reports(mech, mech.from_columns({k: v[r * n:(r + 1) * n] for k, v in cols.items()})) for r in range(R)]


def _estimate(mech: Any, batch: Any, options: dict) -> Any:
    return mech.estimate(batch, **options)


def _options(mech: Any, batch: Any) -> dict:
    """The estimate options of the layer (fewer bootstrap replicates where the estimator takes them),
    after one estimate with them."""
    if mech.input_kind == InputKind.NUMBER and has(mech, Distribution):
        try:
            mech.estimate(batch, replicates=BOOTSTRAP_REPLICATES)
            return {"replicates": BOOTSTRAP_REPLICATES}
        except LDPArgumentError:
            pass
    mech.estimate(batch)
    return {}


# -- the tests ---------------------------------------------------------------------------------------
def _z(a: float) -> float:
    return NormalDist().inv_cdf(1 - a / 2)


def _power_bias(R: int, a: float) -> float:
    """The bias (in standard errors) detected with probability 0.99 by the bias test at ``R``."""
    return (_z(a) + NormalDist().inv_cdf(0.99)) / math.sqrt(R)


def judge(rows: list, alpha: float, *, stats=None) -> dict:
    """The tests of the module docstring on ``rows`` (``R`` lists of :class:`~.readouts.Claim`, the
    same labels in the same order): ``{"passed", "statistics": [...], "pooled": {...}}``."""
    st = stats or _stats()
    R = len(rows)
    labels = [c.label for c in rows[0]]
    per = []
    n_tests = 3 * len(labels) + 1
    a = alpha / n_tests
    chi_lo, chi_hi = float(st.chi2.ppf(a / 2, R)) / R, float(st.chi2.isf(a / 2, R)) / R
    # the coverage test's critical count and the coverage it detects with probability 0.99
    k_crit = int(st.binom.ppf(a, R, COVERAGE_FLOOR)) - 1
    while st.binom.cdf(k_crit + 1, R, COVERAGE_FLOOR) < a:
        k_crit += 1
    pooled_E, pooled_s, pooled_k = [], [], []
    ok = True
    for j, label in enumerate(labels):
        cl = [row[j] for row in rows]
        kind = cl[0].kind
        covered = np.array([c.covers for c in cl])
        cov = float(covered.mean())
        r: dict = {"label": label, "kind": kind, "coverage": cov}
        checks = []
        if kind in ("interval", "bound"):
            r["coverage_passed"] = bool(st.binom.cdf(int(covered.sum()), R, COVERAGE_FLOOR) >= a)
            checks.append(r["coverage_passed"])
        if cl[0].truth is not None and cl[0].std_error is not None:
            v = np.array([c.value for c in cl])
            e = v - np.array([c.truth for c in cl])
            s2 = np.array([c.std_error for c in cl]) ** 2
            var_rep = float(np.mean(s2))
            finite = bool(np.isfinite(var_rep) and np.all(np.isfinite(e)))
            if np.isinf(var_rep) and kind in ("interval", "bound"):  # an unbounded interval claims nothing but coverage
                r.update({"bias": float(np.mean(e)), "reported_variance": None, "unbounded": True})
                r["passed"] = bool(all(checks))
                ok &= r["passed"]
                per.append(r)
                continue
            mse, var_emp = float(np.mean(e ** 2)), float(np.var(e, ddof=1)) if R > 1 else 0.0
            bias = float(np.mean(e))
            r.update({"bias": bias, "mse": mse, "reported_variance": var_rep})
            if finite and var_rep > 0:
                tol = _z(a) * math.sqrt(max(var_rep, var_emp) / R)
                r["bias_sd"] = bias / math.sqrt(var_rep)
                r["mse_over_variance"] = mse / var_rep
                r["variance_over_reported"] = var_emp / var_rep
                # non-normal errors (a few rare flips at a large ε) spread the variance ratio by their excess
                # kurtosis κ: Var(e²) = σ⁴(2 + κ), so the χ² bounds take ν = 2R/(2 + κ) degrees of freedom
                kappa = _excess_kurtosis(e)
                r["excess_kurtosis"] = kappa
                nu = 2 * R / (2 + kappa)
                if np.unique(e).size < _MIN_DISTINCT:
                    # a few rare events per collection (k-RR at ε = 20 flips nobody): the errors are not
                    # near-normal, so no χ² test applies; bias and coverage still do
                    r["discrete_errors"] = int(np.unique(e).size)
                    if kind == "interval":
                        r["bias_passed"] = abs(bias) <= tol
                elif kind == "interval":
                    r["bias_passed"] = abs(bias) <= tol
                    r["variance_passed"] = _chi(st, a / 2, nu, "lower") <= mse / var_rep <= _chi(st, a / 2, nu, "upper")
                    pooled_E.append(e)
                    pooled_s.append(math.sqrt(var_rep))
                    pooled_k.append(kappa)
                elif kind == "bound":  # a conservative interval claims its coverage only (bias and MSE measured)
                    r["mse_within_bound"] = mse / var_rep <= _chi(st, a, nu, "upper")
                elif kind == "variance-only":
                    nu1 = 2 * (R - 1) / (2 + kappa)
                    r["variance_passed"] = _chi(st, a / 2, nu1, "lower") <= var_emp / var_rep <= _chi(st, a / 2, nu1, "upper")
                checks += [r[k] for k in ("bias_passed", "variance_passed") if k in r]
            elif kind in ("interval", "variance-only"):
                r["variance_passed"] = bool(finite and var_rep == 0 and mse == 0)  # a zero variance must be exact
                checks.append(r["variance_passed"])
            # a ``bound`` with a zero standard error (a partial range's interpolated point that the
            # channel fixes, e.g. half of each of two cells) claims its coverage only: tested above
        r["passed"] = bool(all(checks))
        ok &= r["passed"]
        per.append(r)
    pooled: dict = {"statistics": len(pooled_E)}
    if len(pooled_E) >= 2:
        E = np.stack(pooled_E, axis=1)
        Z2 = (E / np.array(pooled_s)) ** 2
        live = E.std(axis=0) > 0
        rho = np.corrcoef(E[:, live], rowvar=False) if live.sum() >= 2 else np.eye(1)
        k = E.shape[1]
        nu = R * k * k / max(float(np.sum(np.atleast_2d(rho) ** 2)) + (k - int(live.sum())), 1.0) * 2 / (2 + float(np.mean(pooled_k)))
        lo, hi = float(st.chi2.ppf(a / 2, nu)) / nu, float(st.chi2.isf(a / 2, nu)) / nu
        ratio = float(Z2.mean())
        pooled.update({"mse_over_variance": ratio, "dof": nu, "bounds": [lo, hi], "passed": bool(lo <= ratio <= hi),
                       "detects_variance_factor": [lo / (float(st.chi2.ppf(0.99, nu)) / nu), hi / (float(st.chi2.ppf(0.01, nu)) / nu)]})
        ok &= pooled["passed"]
    power = {"bias_sd": _power_bias(R, a), "variance_factor": [chi_lo / (float(st.chi2.ppf(0.99, R)) / R), chi_hi / (float(st.chi2.ppf(0.01, R)) / R)],
             "coverage_below": _coverage_power(R, k_crit, st)}
    return {"passed": bool(ok), "R": R, "alpha_per_test": a, "statistics": per, "pooled": pooled, "power": power}


def _excess_kurtosis(e: np.ndarray) -> float:
    """The errors' excess kurtosis about their mean (0 for normal errors; never below 0 here)."""
    c = e - e.mean()
    v = float(np.mean(c * c))
    return max(float(np.mean(c ** 4)) / (v * v) - 3.0, 0.0) if v > 0 else 0.0


def _chi(st, tail: float, nu: float, end: str) -> float:
    """``χ²_ν(tail)/ν`` (lower end) or ``χ²_ν(1 − tail)/ν`` (upper end)."""
    return float(st.chi2.ppf(tail, nu) if end == "lower" else st.chi2.isf(tail, nu)) / nu


def _coverage_power(R: int, k_crit: int, st) -> float:
    """The largest true coverage the coverage test rejects with probability 0.99 (bisection)."""
    lo, hi = 0.0, COVERAGE_FLOOR
    for _ in range(40):
        mid = (lo + hi) / 2
        if st.binom.cdf(k_crit, R, mid) >= 0.99:
            lo = mid
        else:
            hi = mid
    return lo


# -- one cell: one mechanism, one shape ---------------------------------------------------------------
def estimator_cell(mech: Any, shape: str, *, R: int, n: int, seed: int, alpha: float, seconds: float = math.inf,
                   postprocess: Optional[str] = None) -> dict:
    """The tests of the module docstring for ``mech`` on ``n`` users of ``shape``, over ``R``
    collections (fewer when one estimate takes more than ``seconds / R``). ``postprocess``: a
    post-processed estimate with its own intervals (``"ibu"``), read as such."""
    gen = np.random.default_rng(seed)
    values, truth = population(mech, shape, n, gen)
    t0 = time.process_time()  # CPU time: a loaded machine does not change R
    first = _collections(mech, values, n, 1, seed + 2)[0]
    if postprocess is None:
        options = _options(mech, first)  # (also warms the estimator: lazy imports, compiled kernels)
    else:
        options = {"postprocess": postprocess}
    t1 = time.process_time()
    est = _estimate(mech, first, options)
    per = max(time.process_time() - t1, 1e-6) + (t1 - t0) / 4
    R_used = int(min(R, max(_MIN_R, seconds // per))) if math.isfinite(seconds) else R
    batches = [first] + _collections(mech, values, n, R_used - 1, seed + 3)
    post = postprocess is not None
    rows = [readout(mech, est, truth, postprocessed=post)] + [readout(mech, _estimate(mech, b, options), truth, postprocessed=post) for b in batches[1:]]
    out = {"shape": shape, "n": n, "R": R_used, "options": options, **judge(rows, alpha)}
    return out


# -- reports of another spec --------------------------------------------------------------------------
def _other_parameters(mech: Any) -> Optional[Any]:
    """The same mechanism with one parameter changed: ε × 0.8 (the first ε-like field that gives a
    valid mechanism), else a wrapper's ``m + 1``."""
    fields = [f.name for f in dataclasses.fields(mech) if f.init]
    for name in sorted((f for f in fields if f.startswith("epsilon")), key=lambda f: (f != "epsilon", f)):
        for factor in (0.8, 1.25):
            try:
                return dataclasses.replace(mech, **{name: mechanism_parameter(mech, name) * factor})
            except (ValueError, TypeError):
                continue
    if "m" in fields:
        return dataclasses.replace(mech, m=mechanism_parameter(mech, "m") + 1)
    return None


def _refuses(mech: Any, reports: Any) -> bool:
    """Whether ``mech``'s estimator refuses ``reports`` as reports of another mechanism or parameters
    must be refused: an :class:`LDPInputError` passing
    :func:`~ldp_plugin.verification.refusals.refusal_problems` (any other outcome is no refusal)."""
    return not refusal_problems(lambda: mech.estimate(reports), errors=(LDPInputError,))


def spec_refusal(mech: Any, *, seed: int = 0, n: int = 64) -> dict:
    """Whether the estimator of ``mech`` with one parameter changed refuses ``mech``'s reports, and
    whether ``mech``'s estimator refuses k-RR's (its own reports are accepted: every cell estimates them)."""
    values, _ = population(mech, shapes_for(mech)[0], n, np.random.default_rng(seed))
    own = _collections(mech, values, n, 1, seed + 5)[0]
    other = _other_parameters(mech)
    out: dict = {"other": None if other is None else other.spec()}
    out["other_parameters_refused"] = other is not None and other.spec() != mech.spec() and _refuses(other, own)
    krr = KRR(epsilon=1.0, d=2)
    foreign = krr.randomize(np.arange(n) % 2, rng=seed)
    out["another_mechanism_refused"] = mech.spec() == krr.spec() or _refuses(mech, foreign)
    out["passed"] = bool(out["other_parameters_refused"] and out["another_mechanism_refused"])
    return out


# -- the layer ---------------------------------------------------------------------------------------
def _error_text(exc: Exception) -> str:
    """The exception's class and first line (never a traceback)."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def estimator_layer(mech: Any, *, quick: bool = False, alpha: float = FAMILY_ALPHA, seed: int = 0, shapes: Optional[int] = 1,
                    name: str = "") -> dict:
    """The estimator layer on one instance: ``shapes`` data shapes of its input kind (``None``: all of
    them; the first one rotated by ``name`` and ``seed``, so that the instances of a run see every
    shape), in the full run one more cell where a third of the users hold sets longer than the
    mechanism takes (a mechanism with ``on_long``, rebuilt with ``on_long="sample"``), the spec refusal,
    and each cell's tests at the run's ``R`` (:data:`ESTIMATOR_RUNS`)."""
    R, n, seconds = ESTIMATOR_RUNS["quick" if quick else "full"]
    if has(mech, Keyed):
        n = n // 2  # one secret per user and collection: the keyed clients hash each (the tests' power is R's, not n's)
    all_shapes = shapes_for(mech)
    k = len(all_shapes) if shapes is None else max(1, min(int(shapes), len(all_shapes)))
    start = (zlib.crc32(name.encode()) + seed) % len(all_shapes)
    chosen = [all_shapes[(start + i) % len(all_shapes)] for i in range(k)]
    a = alpha / (k + 2)
    cells = []
    t0, c0 = time.perf_counter(), time.process_time()
    for i, shape in enumerate(chosen):
        try:
            cells.append(estimator_cell(mech, shape, R=R, n=n, seed=seed + 7907 * i, alpha=a, seconds=seconds))
        except Exception as exc:  # an estimator that raises on its own valid reports fails the layer
            cells.append({"shape": shape, "R": 0, "statistics": [], "pooled": {}, "passed": False, "error": _error_text(exc)})
    if not quick and "on_long" in {f.name for f in dataclasses.fields(mech)} and mechanism_parameter(mech, "on_long") != "sample":
        # users holding more than the mechanism takes, sampled (on_long="sample"): what its estimate claims then
        try:
            cell = estimator_cell(dataclasses.replace(mech, on_long="sample"), chosen[0], R=R, n=n, seed=seed + 7907 * k, alpha=a,
                                  seconds=seconds)
            cells.append({**cell, "shape": chosen[0] + " (long sets sampled)"})
        except Exception as exc:
            cells.append({"shape": chosen[0] + " (long sets sampled)", "R": 0, "statistics": [], "pooled": {}, "passed": False,
                          "error": _error_text(exc)})
    try:
        refusal = spec_refusal(mech, seed=seed)
    except Exception as exc:
        refusal = {"passed": False, "error": _error_text(exc)}
    failed = [f"{c['shape']}: {s['label']}" for c in cells for s in c["statistics"] if not s["passed"]]
    failed += [f"{c['shape']}: {c['error']}" for c in cells if "error" in c]
    failed += [f"{c['shape']}: pooled variance" for c in cells if not c["pooled"].get("passed", True)]
    return {
        "layer": "estimators",
        "cells": cells,
        "spec_refusal": refusal,
        "failed": failed,
        "seconds": round(time.perf_counter() - t0, 2),
        "cpu_seconds": round(time.process_time() - c0, 2),
        "passed": bool(all(c["passed"] for c in cells) and refusal["passed"]),
    }
