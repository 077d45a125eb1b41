"""Certified poisoning bounds: how far a fraction β of arbitrary well-formed reports can move each
item's estimate.

Model (Cao, Jia and Gong, "Data Poisoning Attacks to Local Differential Privacy Protocols",
USENIX Security 2021, threat model and MGA): ``m`` fake users send any reports the mechanism accepts; ``N = n + m``
reports are aggregated and ``β = m/N``. Every estimator certified here is linear in the reports,

    raw_i = (1/N) Σ_r φ_i(y_r),      φ_i(y) ∈ [lo_i, hi_i] for every well-formed report y

(the mechanism declares ``lo``/``hi``: :class:`~ldp_plugin.mechanisms.protocol.PoisonBounded`). With
``raw^h`` the estimate of the ``n`` honest reports alone and ``φ̄`` the fakes' mean contribution,
``raw = (1 − β) raw^h + β φ̄``, so

    raw − raw^h = β/(1 − β) · (φ̄ − raw),     hence   raw^h ∈ [raw − up, raw + down],
    up_i = β/(1 − β) (hi_i − raw_i),        down_i = β/(1 − β) (raw_i − lo_i).

Both ends are attained (all fakes at ``hi_i``, resp. ``lo_i``), so the bound is exact, computed from
the estimate actually released — no assumption on the honest data. In Cao et al.'s terms the
expected gain of the maximal-gain attack is ``β (hi_t − f_t)`` (their Theorems 1–3: k-RR
``β(1 − f_t) + β(d − 1)/(e^ε − 1)``, OUE ``β(2e^ε/(e^ε − 1) − f_t)``, OLH ``β(2e^ε/(e^ε − 1)
− f_t)`` at ``g = e^ε + 1``), which is this ``up`` with ``raw^h`` in place of ``f_t``.

Post-processing (``postprocess=``):

* ``"none"``: the shift of the raw estimate: ``poison_shift = up`` (promotion),
  ``poison_shift_down = down`` (demotion).
* ``"projection"`` (Euclidean projection onto the simplex) and ``"normalize"`` (clip, rescale): both
  are non-decreasing in their own coordinate and non-increasing in every other one, so the honest
  post-processed value of item ``i`` lies between the post-processed corners
  ``(raw^h_lo_i, raw^h_hi_{−i})`` and ``(raw^h_hi_i, raw^h_lo_{−i})`` of the box above; the
  ``poison_shift`` is the distance from the released value to the farther corner. Projection
  typically shrinks the shift of small items (clipped at 0) and spreads a promoted item's excess
  over the others (every other item can drop by up to the largest raw shift); normalization can
  amplify it (the rescaling sum is itself moved by the fakes; a corner whose clipped sum is 0 gives
  the whole ``[0, total]``).
* ``"em"`` is not linear in the reports: refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import PoisonBounded, has

__all__ = ["PoisonBound", "poison_bound", "worst_case_gain", "fake_fraction"]


@dataclass(frozen=True)
class PoisonBound:
    """Per item: the certified interval ``[honest_lower, honest_upper]`` of the estimate the honest
    reports alone would give; ``poison_shift`` how far the fakes can have pushed the released
    estimate **up** (promotion, the maximal-gain attack: ``estimate − honest_lower``) and
    ``poison_shift_down`` how far **down** (demotion: ``honest_upper − estimate``)."""

    poison_shift: np.ndarray
    poison_shift_down: np.ndarray
    honest_lower: np.ndarray
    honest_upper: np.ndarray
    fraction: float
    postprocess: str

    def to_dict(self) -> dict:
        return {"fraction": self.fraction, "postprocess": self.postprocess, "poison_shift": self.poison_shift.tolist(),
                "poison_shift_down": self.poison_shift_down.tolist(),
                "honest_lower": self.honest_lower.tolist(), "honest_upper": self.honest_upper.tolist()}


def fake_fraction(n: int, poison_fraction: Optional[float] = None, poison_count: Optional[int] = None) -> float:
    """``β`` from a fraction in ``[0, 1)`` or a count ``m`` of fake reports among ``n`` (``β = m/n``)."""
    if (poison_fraction is None) == (poison_count is None):
        raise LDPParameterError("give exactly one of poison_fraction (in [0, 1)) and poison_count (an integer in [0, n))")
    if poison_count is not None:
        if isinstance(poison_count, bool) or not isinstance(poison_count, (int, np.integer)) or not 0 <= int(poison_count) < n:
            raise LDPParameterError(f"poison_count must be an integer in [0, {n}) (the number of reports)")
        return int(poison_count) / n
    if isinstance(poison_fraction, bool) or not isinstance(poison_fraction, (int, float, np.floating)) or not 0 <= float(poison_fraction) < 1:
        raise LDPParameterError("poison_fraction must be a number in [0, 1)")
    return float(poison_fraction)


def _influence(mechanism: Any) -> tuple[np.ndarray, np.ndarray]:
    if not has(mechanism, PoisonBounded):
        raise LDPParameterError(
            f"{type(mechanism).__name__} declares no per-report influence range, so no certified "
            "poisoning bound is available for it (the pure frequency oracles and HCMS with d == k declare one)"
        )
    lo, hi = mechanism.report_influence()
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def poison_bound(mechanism: Any, estimate: Any, *, poison_fraction: Optional[float] = None, poison_count: Optional[int] = None) -> PoisonBound:
    """The certified poisoning bound of a released :class:`~ldp_plugin.estimation.FrequencyEstimate`
    (see the module docstring): exact for the raw estimate, a sound box for projection/normalize.

    >>> from ldp_plugin import KRR
    >>> m = KRR(epsilon=1.0, d=4)
    >>> est = m.estimate(m.randomize([0, 1, 2, 3] * 250, rng=0), postprocess="none")
    >>> b = poison_bound(m, est, poison_fraction=0.01)
    >>> bool((b.poison_shift > 0).all())
    True
    """
    n = int(estimate.n)
    beta = fake_fraction(n, poison_fraction, poison_count)
    lo, hi = _influence(mechanism)
    raw = np.asarray(estimate.raw, dtype=np.float64)
    if raw.shape != lo.shape:
        raise LDPParameterError("the estimate's items do not match the mechanism's domain (a certified bound needs the closed domain)")
    post = estimate.postprocess
    if post in ("em", "ibu"):
        raise LDPParameterError(f"postprocess={post!r} is not linear in the reports: no certified poisoning bound; use 'none', 'projection' or 'normalize'")
    k = beta / (1.0 - beta)
    up = np.maximum(k * (hi - raw), 0.0)
    down = np.maximum(k * (raw - lo), 0.0)
    h_lo, h_hi = raw - up, raw + down
    if post == "none":
        low, high = h_lo, h_hi
    else:
        est = np.asarray(estimate.estimate, dtype=np.float64)
        low, high = _corner_bounds(h_lo, h_hi, float(est.sum()), post)
        up, down = np.maximum(est - low, 0.0), np.maximum(high - est, 0.0)
    for a in (up, down, low, high):
        a.setflags(write=False)
    return PoisonBound(up, down, low, high, beta, post)


def worst_case_gain(mechanism: Any, fraction: float) -> float:
    """The largest expected gain of a fraction ``β`` of fake reports on an item of true frequency 0
    (Cao, Jia, Gong 2021, Thm. 1–3 at ``f_t = 0``): ``β · max_i hi_i`` — before any data is seen
    (``ldp choose``'s column)."""
    beta = fake_fraction(1 << 62, poison_fraction=fraction)
    return float(beta * np.max(_influence(mechanism)[1]))


# -- post-processing corners ----------------------------------------------------------------------------------
_ROWS = 1 << 22  # cells per batched corner computation


def _corner_bounds(v_lo: np.ndarray, v_hi: np.ndarray, total: float, post: str) -> tuple[np.ndarray, np.ndarray]:
    """Per item ``i``: the post-processed value at ``(v_lo_i, v_hi_{−i})`` and at ``(v_hi_i, v_lo_{−i})``."""
    d = v_lo.size
    low, high = np.empty(d), np.empty(d)
    rows = max(1, _ROWS // d)
    f = _project_rows if post == "projection" else _normalize_rows
    for a in range(0, d, rows):
        idx = np.arange(a, min(d, a + rows))
        w = np.repeat(v_hi[None, :], idx.size, axis=0)
        w[np.arange(idx.size), idx] = v_lo[idx]
        low[idx] = f(w, total, idx, upper=False)
        w = np.repeat(v_lo[None, :], idx.size, axis=0)
        w[np.arange(idx.size), idx] = v_hi[idx]
        high[idx] = f(w, total, idx, upper=True)
    return low, high


def _project_rows(w: np.ndarray, total: float, idx: np.ndarray, *, upper: bool) -> np.ndarray:
    """Coordinate ``idx[r]`` of the Euclidean projection of row ``r`` onto ``{x >= 0, Σx = total}``
    (Wang & Carreira-Perpiñán 2013, row-wise as :func:`ldp_plugin.estimation.project_simplex`)."""
    if total <= 0:
        return np.zeros(idx.size)
    u = -np.sort(-w, axis=1)
    css = np.cumsum(u, axis=1)
    ks = np.arange(1, w.shape[1] + 1)
    cond = u + (total - css) / ks > 0
    rho = w.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # the last index where cond holds, 1-based
    lam = (total - css[np.arange(w.shape[0]), rho - 1]) / rho
    return np.maximum(w[np.arange(w.shape[0]), idx] + lam, 0.0)


def _normalize_rows(w: np.ndarray, total: float, idx: np.ndarray, *, upper: bool) -> np.ndarray:
    """Coordinate ``idx[r]`` of clip-and-rescale of row ``r``; a row whose clipped sum is 0 (the
    uniform fallback breaks monotonicity there) gives the whole range: ``total`` (upper) or 0."""
    c = np.clip(w, 0.0, None)
    s = c.sum(axis=1)
    own = c[np.arange(w.shape[0]), idx]
    out = np.where(s > 0, own * total / np.where(s > 0, s, 1.0), total if upper else 0.0)
    return out
