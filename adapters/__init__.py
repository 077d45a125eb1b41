"""Adapters (installed as ``ldp_plugin.adapters``): Polars frames in and out.

Importing :mod:`ldp_plugin` registers the ``ldp`` namespace on ``pl.DataFrame`` and
``pl.LazyFrame``; its implementation (:mod:`.polars_namespace`) is imported on first use.
"""

from .polars_frames import estimate_frame
from .polars_frames import ROWS_PER_CHUNK
from .polars_namespace import estimate, frame_to_reports, privatize, reports_to_frame

__all__ = ["estimate_frame", "privatize", "estimate", "reports_to_frame", "frame_to_reports", "ROWS_PER_CHUNK"]
