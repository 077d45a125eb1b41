"""What a server estimate claims, statistic by statistic, next to what is true.

:func:`readout` turns any family's estimate into :class:`Claim` rows — one per statistic the family
returns: each item's frequency (a category, a set, an attribute, a pair of attributes), a mean, a key's
frequency and mean value, a range's fraction (inside buckets, across bucket edges, one ending inside a
bucket) and a quantile. Each row holds the value, the reported standard error (None where the family
reports only an interval: quantiles), the interval, the truth and the interval's declared kind:

* ``"interval"``: covers the truth at its confidence, and the standard error is the estimator's;
* ``"bound"``: a conservative interval (it covers at least its confidence; the standard error is an
  upper bound);
* ``"variance-only"``: the standard error and interval describe the estimator's spread, not its bias;
* ``"none"``: no interval.

The frequency oracles' intervals are centred on the unbiased (``raw``) estimate they describe, so the
row's value is ``raw``; post-processed values (projection, normalization) are not claimed unbiased.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..mechanisms.protocol import Distribution, InputKind, has
from .populations import Truth

__all__ = ["Claim", "readout", "RANGES", "QUANTILES"]

#: the ranges read from a distribution estimate, as fractions of ``[lower, upper]``: a middle range,
#: the lower half, a range ending inside most buckets and a top range
RANGES = ((0.25, 0.75), (0.0, 0.5), (0.1, 0.37), (0.8, 1.0))
#: the quantile levels read from a distribution estimate
QUANTILES = (0.25, 0.5, 0.9)


@dataclass(frozen=True)
class Claim:
    """One statistic of one estimate: ``label``, ``value``, ``std_error`` (None: interval only),
    ``ci_lower``, ``ci_upper``, ``truth`` (None for a quantile, whose coverage is ``covered``) and
    ``kind`` (module docstring)."""

    label: str
    value: float
    std_error: Optional[float]
    ci_lower: float
    ci_upper: float
    truth: Optional[float]
    kind: str = "interval"
    covered: Optional[bool] = None

    @property
    def covers(self) -> bool:
        if self.covered is not None:
            return self.covered
        return bool(self.ci_lower <= self.truth <= self.ci_upper)


def _frequencies(prefix: str, est: Any, truth: np.ndarray, limit: int = 16) -> list:
    raw, se, lo, hi = (np.asarray(a, dtype=np.float64) for a in (est.raw, est.std_error, est.ci_lower, est.ci_upper))
    k = min(raw.size, truth.size, limit)
    kind = str(getattr(est, "interval_kind", "interval"))  # "bound": the set mechanisms' sampled-down long sets
    return [Claim(f"{prefix}{i}", float(raw[i]), float(se[i]), float(lo[i]), float(hi[i]), float(truth[i]), kind) for i in range(k)]


def _ibu(prefix: str, est: Any, truth: np.ndarray, limit: int = 16) -> list:
    """A post-processed estimate with its own intervals (IBU's bootstrap): the value is ``estimate``."""
    e, se, lo, hi = (np.asarray(a, dtype=np.float64) for a in (est.estimate, est.std_error, est.ci_lower, est.ci_upper))
    k = min(e.size, truth.size, limit)
    kind = str(getattr(est, "interval_kind", "interval"))  # "bound": IBU's conservative intervals
    return [Claim(f"{prefix}{i}", float(e[i]), float(se[i]), float(lo[i]), float(hi[i]), float(truth[i]), kind) for i in range(k)]


def readout(mech: Any, est: Any, truth: Truth, *, postprocessed: bool = False) -> list:
    """The :class:`Claim` rows of ``est`` (an estimate of ``mech``'s reports of the users ``truth``
    describes). ``postprocessed``: a frequency estimate whose intervals are its own (IBU)."""
    kind = mech.input_kind
    if kind == InputKind.NUMBER and has(mech, Distribution):
        lo, hi = truth.lower, truth.upper
        w = hi - lo
        rows = []
        for a, b in RANGES:
            r = est.range_fraction(lo + a * w, lo + b * w)
            t = truth.fraction(lo + a * w, lo + b * w) if b < 1 else float(np.mean(truth.values >= lo + a * w))
            rows.append(Claim(f"range[{a:g},{b:g})", float(r.fraction), float(r.std_error), float(r.ci_lower), float(r.ci_upper), t,
                              str(r.interval_kind)))
        for q in est.quantiles(list(QUANTILES)):
            rows.append(Claim(f"quantile {q['q']:g}", float(q["estimate"]), None, float(q["ci_lower"]), float(q["ci_upper"]), None,
                              str(q.get("interval_kind", getattr(est, "interval_kind", "interval"))),
                              covered=truth.quantile_covered(q["q"], q["ci_lower"], q["ci_upper"])))
        return rows
    if kind == InputKind.NUMBER:
        return [Claim("mean", float(est.mean), float(est.std_error), float(est.ci_lower), float(est.ci_upper), float(truth.mean),
                      str(est.interval_kind))]
    if kind == InputKind.KEY_VALUE:
        ik = str(est.interval_kind)
        rows = [Claim(f"key {i} frequency", float(est.frequency[i]), float(est.frequency_se[i]), float(est.frequency_ci_lower[i]),
                      float(est.frequency_ci_upper[i]), float(truth.key_frequencies[i]), ik) for i in range(len(truth.key_frequencies))]
        rows += [Claim(f"key {i} mean", float(est.mean[i]), float(est.mean_se[i]), float(est.mean_ci_lower[i]), float(est.mean_ci_upper[i]),
                       float(truth.key_means[i]), ik) for i in range(len(truth.key_means)) if truth.key_frequencies[i] > 0]
        return rows
    if kind == InputKind.TUPLE:
        singles, pairs = truth.frequencies
        rows = []
        n_attr = len(singles)
        pair_index = list(itertools.combinations(range(n_attr), 2))
        for j, a in enumerate(est.attributes):
            if a.items and isinstance(a.items[0], tuple):  # a pair of attributes: items (x, y) row-major
                t = pairs[j] if j < len(pairs) else None
                name = "pair {}{}".format(*pair_index[j]) if j < len(pair_index) else f"pair {j}"
            else:
                t, name = singles[j], f"attribute {j}"
            if t is not None:
                rows += _frequencies(f"{name} item ", a, t)
        return rows
    return (_ibu if postprocessed else _frequencies)("item ", est, truth.frequencies[0])
