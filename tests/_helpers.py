"""Helpers shared by the registry-driven test modules: every registered mechanism's canonical
instance (plus the two wrappers), one valid client input per user, a valid report batch, the
property-based sweep over a declaration's whole declared space, the coverage of a
distribution's quantile intervals and its intervals through the Polars namespace, and a tree's
range variance against its analytic one."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.verification.domains import ENUM_CAP, declaration_domains, resolve

REG = load_registry(kinds=KINDS)
#: one secret key per user for the keyed (memoized) mechanisms
KEYS = [bytes([i % 251, 9]) * 16 for i in range(256)]


def registry_instances(*, wrappers: bool = True) -> list:
    """``(id, factory)`` for the first canonical instance of every registered name, every kind
    (``"kind:name"``), and with ``wrappers`` the two wrappers (SampleOne, Memoized)."""
    out = [(f"{decl.kind}:{name}", lambda decl=decl: decl.mechanism_class()(**dict(decl.canonical[0]))) for name, decl in sorted(REG.items())]
    if wrappers:
        out.append(("wrapper:sample-one", lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2)))
        out.append(("wrapper:memoized", lambda: ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)))
    return out


def valid_values(m, n: int = 32):
    """One valid client input per user, as ``randomize`` takes it (key-value: some empty sets;
    tuples: an ``n × attributes`` array of codes; sets: a set of one item)."""
    if m.input_kind == "number":
        return np.linspace(m.lower, m.upper, n)
    if m.input_kind == "key-value":
        return [[(i % m.d, (i % 7) / 7 - 0.5)] if i % 3 else [] for i in range(n)]
    if m.input_kind == "tuple":
        return np.stack([np.arange(n) % k for k in m.domains], axis=1)
    codes = np.arange(n) % m.domain_size
    items = getattr(m, "items", None)
    values = codes if items is None else np.array([items[c] for c in codes])
    return [[v] for v in values.tolist()] if m.input_kind == "set" else values


def valid_reports(m, n: int = 32, seed: int = 4):
    """A batch of ``n`` reports of the real client (keyed mechanisms: with one key per user)."""
    keys = KEYS[:n] if m.needs_user_keys else None
    return m.randomize(valid_values(m, n), rng=seed, user_keys=keys)


def declared_space(decl: Any):
    """A hypothesis strategy of instances over each domain (sizes up to their enumerable cap)."""
    base_st = st.sampled_from([dict(c) for c in decl.canonical])

    @st.composite
    def inst(draw):
        base = draw(base_st)
        out = dict(base)
        for pname, dom in declaration_domains(decl).items():
            if pname not in base or dom is None or dom.kind in ("tied", "subset", "list"):
                continue
            env = {k: v for k, v in out.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            lo, hi = resolve(dom.lo, env), resolve(dom.hi, env)
            opts = [st.sampled_from(list(dom.choices))] if dom.choices else []
            if dom.kind == "int" and lo is not None and hi is not None:
                top = int(min(hi, ENUM_CAP.get(pname, 8))) if dom.extra.get("size", True) else int(hi)
                if int(lo) <= top:
                    opts.append(st.integers(int(lo), top))
            elif dom.kind == "float" and lo is not None and hi is not None:
                a, b = (max(lo, 1e-3), min(hi, 30.0)) if pname.startswith("epsilon") else (lo, hi)
                if math.isfinite(a) and math.isfinite(b) and b > a * (1 + 1e-9) + 1e-12:
                    opts.append(st.floats(a, b, exclude_min=True, exclude_max=True))
            if opts:
                out[pname] = draw(st.one_of(*opts))
        return out

    return inst()


def sweep_declared_space(decl: Any, check: Callable[[Any, dict], None], *, at: int, examples: int) -> None:
    """``check(mechanism, instance)`` on every instance of ``examples`` that hypothesis draws (seed
    ``at``, derandomized) from ``decl``'s declared space and the constructor accepts; an instance
    the constructor refuses (an invalid combination: a ValueError) is passed over."""
    cls = decl.mechanism_class()

    @seed(at)
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(declared_space(decl))
    def run(inst):
        try:
            m = cls(**inst)
        except (LDPParameterError, ValueError):
            return
        check(m, inst)

    run()


def quantile_coverage(m: Any, *, users: int = 10_000, collections: int = 150) -> np.ndarray:
    """Per quantile (the median, the 95th percentile), the fraction of ``collections`` seeded
    collections of ``users`` Beta(2, 5) values whose interval from ``m``'s estimate holds the true
    quantile of the values."""
    x = np.random.default_rng(3).beta(2, 5, users)
    truth = np.quantile(x, [0.5, 0.95])
    cover = []
    for s in range(collections):
        q = m.estimate(m.randomize(x, rng=s)).quantiles([0.5, 0.95])
        cover.append([r["ci_lower"] <= t <= r["ci_upper"] for r, t in zip(q, truth)])
    return np.mean(cover, axis=0)


def polars_latency_intervals(m: Any, quantiles: list) -> tuple:
    """``(reports, quantiles frame)`` of 6,000 Beta(2, 5)·1000 latencies privatized through the
    Polars ``ldp`` namespace (seed 1), after checking that every quantile's interval and the range
    count's interval over [100, 300] hold their estimates."""
    df = pl.DataFrame({"latency": np.random.default_rng(0).beta(2, 5, 6000) * 1000})
    reports = df.ldp.privatize("latency", m, seed=1)
    q = reports.ldp.quantiles(m, quantiles)
    assert (q["ci_lower"] <= q["estimate"]).all() and (q["estimate"] <= q["ci_upper"]).all()
    r = reports.lazy().ldp.range_count(m, 100, 300)
    assert r["count_ci_lower"][0] <= r["count"][0] <= r["count_ci_upper"][0]
    return reports, q


#: the unaligned range of width 1/4 the range-variance checks estimate
RANGE = (0.1234, 0.3734)


def range_variance_with_power(m: Any, collections: int) -> tuple:
    """The range fraction over :data:`RANGE` estimated by ``m`` (a tree over ``m.buckets`` buckets
    of [0, 1)) from ``collections`` seeded collections of the same 5,000 Beta(2, 5) users: the
    measured variance within 3 standard errors of ``m.analytic_range_variance`` while a model 30%
    off is rejected (the power check), and the mean within 4 standard errors of the true fraction.
    Returns ``(bucket weights of the range, the users' bucket frequencies, the analytic variance)``."""
    x = np.random.default_rng(0).beta(2, 5, 5000)
    lo, hi = RANGE
    vals = [m.estimate(m.randomize(x, rng=s)).range_fraction(lo, hi).fraction for s in range(collections)]
    analytic = m.analytic_range_variance(x, lo, hi)
    ratio = np.var(vals, ddof=1) / analytic
    band = 3 * math.sqrt(2 / (collections - 1))
    assert abs(ratio - 1) < band and abs(ratio * 1.3 - 1) > band and abs(ratio / 1.3 - 1) > band
    B = m.buckets
    a = np.clip(np.minimum(np.arange(B) + 1, hi * B) - np.maximum(np.arange(B), lo * B), 0, 1)
    th = np.bincount(m.encode(x), minlength=B) / x.size
    assert abs(np.mean(vals) - a @ th) < 4 * math.sqrt(analytic / collections)
    return a, th, analytic
