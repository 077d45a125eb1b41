"""Pictures of what was estimated: matplotlib drawings of estimates with their intervals, of a
ledger's spend over time, and a self-contained HTML report.

A leaf: every function takes plain numbers (arrays, labels, intervals), never a mechanism or a
ledger, so the estimate classes' ``.plot()`` methods and the CLI draw through the same code.
matplotlib is the optional ``plot`` extra: it is imported only when something is drawn, and a
missing matplotlib is an :class:`~ldp_plugin.LDPParameterError` that names the extra. Drawing
never changes matplotlib's global state (no backend switch, no pyplot): a new picture is a
:class:`matplotlib.figure.Figure` of its own; pass ``ax=`` to draw into yours.
"""

from .axes import MissingPlotExtra, new_axes, new_figure
from .draw import cdf, frequencies, key_values, marginals, mean, quantiles, ranges
from .budget import spend_over_time
from .html import figure_data_uri, html_report

__all__ = [
    "MissingPlotExtra",
    "new_axes",
    "new_figure",
    "frequencies",
    "cdf",
    "quantiles",
    "ranges",
    "mean",
    "marginals",
    "key_values",
    "spend_over_time",
    "figure_data_uri",
    "html_report",
]
