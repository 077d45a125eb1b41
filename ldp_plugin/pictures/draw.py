"""Estimates with their intervals: frequencies, a CDF with its band, quantiles, ranges, a mean,
per-attribute marginals and key–value estimates. Each returns the Axes (one panel) or the Figure
(several panels) it drew on; the numbers drawn are exactly the ones given (no smoothing)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from .axes import new_axes, new_figure

__all__ = ["frequencies", "cdf", "quantiles", "ranges", "mean", "marginals", "key_values"]

ESTIMATE_COLOR = "#4c72b0"
TRUTH_COLOR = "#dd8452"
BAND_ALPHA = 0.25


def _arrays(*cols: Any) -> list:
    out = [np.asarray(c, dtype=np.float64).ravel() for c in cols]
    if len({a.size for a in out}) != 1:
        raise LDPParameterError("estimates and their interval bounds must have the same length")
    return out


def frequencies(items: Sequence, estimate: Any, ci_lower: Any, ci_upper: Any, *, ax: Optional[Any] = None,
                truth: Optional[Any] = None, title: Optional[str] = None, max_items: int = 40, confidence: float = 0.95) -> Any:
    """Horizontal bars of the ``max_items`` largest estimates (largest on top), each with its
    interval as an error bar; ``truth`` (optional) as markers."""
    est, lo, hi = _arrays(estimate, ci_lower, ci_upper)
    labels = [str(i) for i in items]
    if len(labels) != est.size:
        raise LDPParameterError("items and estimates must have the same length")
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
        raise LDPParameterError(f"max_items must be an integer >= 1 (got {max_items!r})")
    order = np.argsort(-est, kind="stable")[:max_items]
    ax = new_axes(ax, height=0.3 * order.size + 1.6)
    y = np.arange(order.size)[::-1]
    ax.barh(y, est[order], color=ESTIMATE_COLOR, alpha=0.8, label="estimate")
    ax.errorbar(est[order], y, xerr=np.vstack([est[order] - lo[order], hi[order] - est[order]]).clip(min=0),
                fmt="none", ecolor="black", capsize=3, label=f"{confidence:.0%} interval")
    if truth is not None:
        t = np.asarray(truth, dtype=np.float64).ravel()
        ax.plot(t[order], y, "D", color=TRUTH_COLOR, label="truth")
    ax.set_yticks(y, [labels[i] for i in order])
    ax.set_xlabel("frequency")
    more = f" ({order.size} largest of {est.size})" if order.size < est.size else ""
    ax.set_title((title or "estimated frequencies") + more)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return ax


def cdf(x: Any, F: Any, lower_band: Any, upper_band: Any, *, ax: Optional[Any] = None, title: Optional[str] = None,
        confidence: float = 0.95, xlabel: str = "value") -> Any:
    """The estimated CDF ``F`` at the points ``x`` with its pointwise band (shaded)."""
    x, F, lo, hi = _arrays(x, F, lower_band, upper_band)
    ax = new_axes(ax)
    ax.fill_between(x, np.clip(lo, 0, 1), np.clip(hi, 0, 1), color=ESTIMATE_COLOR, alpha=BAND_ALPHA, step="post",
                    label=f"{confidence:.0%} pointwise band")
    ax.step(x, F, where="post", color=ESTIMATE_COLOR, label="estimated CDF")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of users at or below")
    ax.set_title(title or "estimated distribution")
    ax.legend(loc="lower right")
    return ax


def quantiles(q: Any, estimate: Any, ci_lower: Any, ci_upper: Any, *, ax: Optional[Any] = None, title: Optional[str] = None,
              confidence: float = 0.95, xlabel: str = "value") -> Any:
    """Each quantile level ``q`` (vertical axis) at its estimate, with its interval."""
    q, est, lo, hi = _arrays(q, estimate, ci_lower, ci_upper)
    ax = new_axes(ax)
    ax.errorbar(est, q, xerr=np.vstack([est - lo, hi - est]).clip(min=0), fmt="o", color=ESTIMATE_COLOR, ecolor="black",
                capsize=4, label=f"estimate, {confidence:.0%} interval")
    ax.set_yticks(q, [f"{v:g}" for v in q])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("quantile level")
    ax.set_title(title or "estimated quantiles")
    ax.legend(loc="lower right")
    return ax


def ranges(lo: Any, hi: Any, estimate: Any, ci_lower: Any, ci_upper: Any, *, ax: Optional[Any] = None,
           title: Optional[str] = None, confidence: float = 0.95, xlabel: str = "value") -> Any:
    """Each range ``[lo, hi)`` as a bar of its estimated fraction, with its interval."""
    a, b, est, cl, cu = _arrays(lo, hi, estimate, ci_lower, ci_upper)
    if np.any(b < a):
        raise LDPParameterError("every range needs lo <= hi")
    ax = new_axes(ax)
    ax.bar(a, est, width=b - a, align="edge", color=ESTIMATE_COLOR, alpha=0.8, edgecolor="white", label="estimate")
    ax.errorbar((a + b) / 2, est, yerr=np.vstack([est - cl, cu - est]).clip(min=0), fmt="none", ecolor="black", capsize=3,
                label=f"{confidence:.0%} interval")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of users")
    ax.set_title(title or "estimated ranges")
    ax.legend(loc="upper right")
    return ax


def mean(value: float, ci_lower: float, ci_upper: float, *, ax: Optional[Any] = None, truth: Optional[float] = None,
         lower: Optional[float] = None, upper: Optional[float] = None, title: Optional[str] = None, confidence: float = 0.95) -> Any:
    """The estimated mean with its interval on the declared range ``[lower, upper]``."""
    v, lo, hi = _arrays([value], [ci_lower], [ci_upper])
    ax = new_axes(ax, height=1.8)
    ax.errorbar(v, [0], xerr=np.vstack([v - lo, hi - v]).clip(min=0), fmt="o", color=ESTIMATE_COLOR, ecolor="black", capsize=5,
                label=f"mean, {confidence:.0%} interval")
    if truth is not None:
        ax.plot([float(truth)], [0], "D", color=TRUTH_COLOR, label="truth")
    if lower is not None and upper is not None:
        ax.set_xlim(float(lower), float(upper))
    ax.set_yticks([])
    ax.set_title(title or "estimated mean")
    ax.legend(loc="upper right")
    return ax


def marginals(panels: Sequence[tuple], *, title: Optional[str] = None, confidence: float = 0.95, max_items: int = 40) -> Any:
    """One panel per attribute: ``panels`` is ``[(name, items, estimate, ci_lower, ci_upper)]``;
    returns the Figure."""
    if not panels:
        raise LDPParameterError("marginals need at least one attribute")
    heights = [0.3 * min(len(p[1]), max_items) + 1.4 for p in panels]
    fig = new_figure(7.0, sum(heights))
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (name, items, est, lo, hi) in zip(axes, panels):
        frequencies(items, est, lo, hi, ax=ax, title=str(name), max_items=max_items, confidence=confidence)
    if title:
        fig.suptitle(title)
    return fig


def key_values(keys: Sequence, frequency: tuple, mean_value: tuple, *, title: Optional[str] = None, confidence: float = 0.95) -> Any:
    """Two panels: each key's frequency and its mean value, each ``(estimate, ci_lower, ci_upper)``
    with its interval; returns the Figure."""
    f, fl, fu = _arrays(*frequency)
    m, ml, mu = _arrays(*mean_value)
    labels = [str(k) for k in keys]
    if not (len(labels) == f.size == m.size):
        raise LDPParameterError("keys, frequencies and means must have the same length")
    fig = new_figure(9.0, 0.3 * len(labels) + 1.8)
    ax_f, ax_m = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(labels))[::-1]
    ax_f.barh(y, f, color=ESTIMATE_COLOR, alpha=0.8)
    ax_f.errorbar(f, y, xerr=np.vstack([f - fl, fu - f]).clip(min=0), fmt="none", ecolor="black", capsize=3)
    ax_f.set_yticks(y, labels)
    ax_f.set_xlabel("frequency (share of users holding the key)")
    ax_m.errorbar(m, y, xerr=np.vstack([m - ml, mu - m]).clip(min=0), fmt="o", color=ESTIMATE_COLOR, ecolor="black", capsize=3)
    ax_m.axvline(0.0, color="grey", lw=0.8)
    reach = float(np.nanmax(np.abs(np.concatenate([ml, mu, [1.0]]))))
    ax_m.set_xlim(-reach - 0.05, reach + 0.05)
    ax_m.set_xlabel(f"mean value, {confidence:.0%} interval")
    fig.suptitle(title or "estimated key–value statistics")
    return fig
