"""The rates layer for every family: exact binomial tests of the realized per-output
rates of the **real** sampler against the declared channel.

The older :func:`ldp_plugin.verification.sampling_path.rate_layer` tests ``p*`` and ``q*`` of pure
frequency oracles only. This layer needs nothing but what every mechanism declares — its exact
channel (:meth:`channel`) and its real client on an input (:meth:`sample_verification_outputs`,
the verification hook of the family: per-user keys for longitudinal protocols, seeds for hashed
and cohort sketches, sets for set mechanisms, grid points for numeric ones) — so it covers the
cohort sketches, numeric mechanisms, longitudinal protocols (one report: the permanent layer for
a fresh key composed with the instantaneous one), set mechanisms, the wheel, the finite channels
and the wrappers alike.

**Test.** For each tested input ``x`` (the first, middle and last verification inputs), the
outputs are grouped into *rate classes*: the outputs whose declared probability ``Q(y|x)`` is the
same exact rational (k-RR: the own item; the ``d − 1`` others; a uniform row: each output on its
own). Each class's realized count
among ``n`` reports is tested against its declared mass ``m`` with an exact two-sided binomial
test; an output whose declared probability is 0 must never appear. The layer fails when a
p-value is below ``α / #tests`` (Bonferroni), so a correct sampler fails with probability at most
``α``.

**Sample size (power).** A relative error ``δ`` in the rate of a class of mass ``m`` is detected
with power ``1 − β = 0.99`` when (normal approximation of the binomial)

    n >= ((z_{α'/2} + z_β) / δ)² · (1 − m) / m ,   α' = α / #tests.

The full run sizes ``n`` for ``δ = 0.5%`` on the *target class* of each input: the largest class
of mass at most 1/2 (a class of mass near 1 cannot be 0.5% too frequent; its complement, the rare
outputs, is what a wrong threshold moves). It does so on the first input of a family's first
canonical instance (``target=True``: the canonical ε), up to :data:`FULL_MAX` reports
(:data:`KEYED_MAX` for samplers that derive a fresh secret key per report, whose per-user PRF runs
at about 2·10⁵ reports/s); the other inputs and instances get at most :data:`REDUCED_MAX` (keyed:
:data:`KEYED_REDUCED_MAX`); quick mode takes at most :data:`QUICK_TARGET_MAX` on that input
(keyed samplers and the other inputs: :data:`QUICK_N`) — a budget that keeps the whole
``ldp verify --self-test`` within five minutes on two cores (quick: 90 s). Every result states
the relative error it detects (``detects_relative_error``: the largest over the tested inputs;
``detects_relative_error_first_input``: the sized one), so a capped run says what it can see: the
keyed samplers' one-report channel and permanent layer reach only a few percent in the full run
(one PRF evaluation per report), their instantaneous layer reaches 0.5%.

**Layers of the longitudinal protocols.** A mechanism that declares ``verification_layers()``
(``(name, channel, sampler)`` per layer: L-GRR, LOLOHA, L-OUE, L-OSUE, L-SUE) has each layer
tested on its own as well: the permanent layer through the real keyed PRF with a fresh random key
per report (keyed caps), the instantaneous layer through the real source sampler (source caps:
0.5% at the canonical ε). Each layer gets an equal share of ``α``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from ..sampling import SeededRandomSource
from ..mechanisms.protocol import Keyed, has
from .channels import declared_channel

__all__ = ["rates_layer", "rate_classes", "rates_sample_size", "FULL_MAX", "KEYED_MAX", "REDUCED_MAX", "QUICK_TARGET_MAX", "KEYED_REDUCED_MAX", "QUICK_N", "TARGET_RELATIVE_ERROR"]

#: the relative rate error the full run is sized to detect (power 0.99)
TARGET_RELATIVE_ERROR = 0.005
#: reports per tested input, at most (full run)
FULL_MAX = 12_000_000
#: the same for samplers that need a secret key per report (longitudinal, memoized)
KEYED_MAX = 100_000
#: the same for the other canonical instances (``target=False``)
REDUCED_MAX = 200_000
KEYED_REDUCED_MAX = 25_000
#: reports per tested input in quick mode
QUICK_N = 20_000
#: reports on the target input in quick mode (samplers without per-report keys)
QUICK_TARGET_MAX = 500_000
#: reports drawn at a time (bounded memory)
CHUNK = 1 << 20
POWER = 0.99


def rate_classes(row: tuple) -> list:
    """``(columns, mass)`` per distinct declared probability of one channel row (exact)."""
    groups: dict = {}
    for j, p in enumerate(row):
        groups.setdefault(Fraction(p), []).append(j)
    return [(np.asarray(cols, dtype=np.int64), p * len(cols)) for p, cols in groups.items()]


def _z(alpha_each: float) -> float:
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha_each / 2) + nd.inv_cdf(POWER)


def rates_sample_size(mass: float, alpha_each: float, rel: float = TARGET_RELATIVE_ERROR) -> int:
    """Reports needed to detect a relative error ``rel`` in a class of mass ``mass`` (module
    docstring)."""
    return int(math.ceil((_z(alpha_each) / rel) ** 2 * (1 - mass) / mass))


def _detectable(mass: float, n: int, alpha_each: float) -> float:
    return _z(alpha_each) * math.sqrt((1 - mass) / (mass * n))


def _inputs(count: int) -> list:
    return sorted({0, count // 2, count - 1})


def _component(ch: Any, sampler: Any, n_inputs: int, *, keyed: bool, quick: bool, alpha: float, src: Any,
               n: int | None, target: bool) -> dict:
    """The class tests of one channel against one sampler (``sampler(x, n, source)`` → column
    indices), on up to three inputs; ``alpha`` is this component's share."""
    from scipy.stats import binomtest  # SciPy: the verify extra (optional, loaded on use)

    xs = _inputs(n_inputs)
    plan = []
    for x in xs:
        classes = rate_classes(ch.matrix[x])
        uniform = len(classes) == 1
        if uniform:  # one class of mass 1 (a uniform row, e.g. the wheel's empty set): each output
            classes = [(np.asarray([j]), Fraction(p)) for j, p in enumerate(ch.matrix[x])]
        testable = [(cols, m) for cols, m in classes if 0 < m < 1]
        zero = [cols for cols, m in classes if m == 0]
        plan.append((uniform, x, testable, np.concatenate(zero) if zero else np.empty(0, np.int64)))
    plan.sort(key=lambda e: e[0])  # the sized input: the first with more than one rate class
    n_tests = max(1, sum(len(t) for _u, _x, t, _z0 in plan))
    alpha_each = alpha / n_tests
    if quick:
        caps = (QUICK_N if keyed else QUICK_TARGET_MAX, QUICK_N)
    else:
        caps = (KEYED_MAX if keyed else FULL_MAX, KEYED_REDUCED_MAX if keyed else REDUCED_MAX)
    width = len(ch.outputs)
    worst, detects, needed, impossible = 1.0, 0.0, 0, 0
    sizes: list = []
    detects_target = None
    for _uniform, x, testable, zero in plan:
        if not testable:  # e.g. the wheel's empty set: every output equally likely, one class
            continue
        first = not sizes  # the first input with a testable class is the sized one
        cap = caps[0] if target and first else caps[1]
        top = max([float(m) for _c, m in testable if m <= Fraction(1, 2)] or [0.5])
        need = rates_sample_size(top, alpha_each)
        needed = max(needed, need)
        size = n if n is not None else min(need, cap)
        counts = np.zeros(width, dtype=np.int64)
        for start in range(0, size, CHUNK):
            out = np.asarray(sampler(x, min(CHUNK, size - start), src), dtype=np.int64)
            if out.size and (int(out.min()) < 0 or int(out.max()) >= width):
                impossible += int(np.count_nonzero((out < 0) | (out >= width)))
                out = out[(out >= 0) & (out < width)]
            counts += np.bincount(out, minlength=width)
        impossible += int(counts[zero].sum()) if zero.size else 0
        for cols, m in testable:
            k = int(counts[cols].sum())
            worst = min(worst, float(binomtest(k, size, float(m)).pvalue))
        detects = max(detects, _detectable(top, size, alpha_each))
        if first:
            detects_target = _detectable(top, size, alpha_each)
        sizes.append(size)
    return {
        "inputs_tested": xs,
        "rate_classes": n_tests,
        "reports_per_input": max(sizes) if sizes else 0,
        "needed_for_target": needed,
        "detects_relative_error": round(detects, 5),
        "detects_relative_error_first_input": None if detects_target is None else round(detects_target, 5),
        "outputs_declared_impossible": impossible,
        "min_pvalue": worst,
        "passed": bool(impossible == 0 and worst >= alpha_each),
    }


def rates_layer(mech: Any, *, quick: bool = False, alpha: float = 1e-6, seed: int = 0, n: int | None = None, target: bool = True) -> dict:
    """Exact binomial tests of every rate class of the real sampler on up to three inputs (module
    docstring): the one-report channel, and — for mechanisms that declare
    ``verification_layers()`` (the longitudinal protocols) — each layer on its own (the permanent
    layer through the keyed PRF, the instantaneous one through the source, sized like any
    source sampler). ``target``: size the full run for :data:`TARGET_RELATIVE_ERROR` (a family's
    canonical instance); ``n`` overrides the sample size per input (tests)."""
    src = SeededRandomSource(seed)
    keyed = has(mech, Keyed)
    # quick mode: each family's layers on its canonical instance only
    layers = () if quick and not target else mech.verification_layers()
    parts = [("report", declared_channel(mech), mech.sample_verification_outputs, mech.verification_input_count(), keyed)]
    parts += [(name, ch, fn, len(ch.matrix), name == "permanent" and keyed) for name, ch, fn in layers]
    share = alpha / len(parts)
    res = {name: _component(ch, fn, count, keyed=k, quick=quick, alpha=share, src=src, n=n, target=target)
           for name, ch, fn, count, k in parts}
    top = res["report"]
    out = {"layer": "rates", "applicable": True, **top, "target_relative_error": TARGET_RELATIVE_ERROR,
           "passed": all(r["passed"] for r in res.values()), "min_pvalue": min(r["min_pvalue"] for r in res.values())}
    if layers is not None:
        out["layers"] = {name: r for name, r in res.items() if name != "report"}
    return out
