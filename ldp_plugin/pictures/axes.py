"""A new matplotlib figure or axes without touching matplotlib's global state, or a clear error
naming the ``plot`` extra when matplotlib is not installed."""

from __future__ import annotations

from typing import Any, Optional

from .._errors import LDPParameterError
from .._extras import MissingExtra, extra_module

__all__ = ["MissingPlotExtra", "new_figure", "new_axes", "matplotlib_figure_class"]


class MissingPlotExtra(MissingExtra):
    """matplotlib is not installed: drawing needs the ``plot`` extra (``pip install 'ldp-plugin[plot]'``).
    An :class:`~ldp_plugin.LDPParameterError` (the CLI's exit 2) that is also an ``ImportError``."""


def matplotlib_figure_class() -> Any:
    """``matplotlib.figure.Figure``, imported on first use (the optional ``plot`` extra)."""
    return extra_module("matplotlib.figure", "plot", "drawing needs matplotlib, the optional 'plot' extra", error=MissingPlotExtra).Figure


def new_figure(width: float = 7.0, height: float = 4.0) -> Any:
    """A new :class:`matplotlib.figure.Figure` of its own (no pyplot, no backend switch), sized in
    inches; ``savefig`` works on it with any backend, in notebooks it displays as a figure."""
    if not (0 < width <= 100 and 0 < height <= 100):
        raise LDPParameterError(f"a figure's width and height must be in (0, 100] inches (got {width!r}, {height!r})")
    return matplotlib_figure_class()(figsize=(width, height), layout="constrained")


def new_axes(ax: Optional[Any] = None, *, width: float = 7.0, height: float = 4.0) -> Any:
    """``ax`` itself, or the one axes of a new figure."""
    if ax is not None:
        if not hasattr(ax, "errorbar") or not hasattr(ax, "figure"):
            raise LDPParameterError("ax must be a matplotlib Axes (or None for a new figure)")
        return ax
    return new_figure(width, height).add_subplot()
