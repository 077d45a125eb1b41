"""Adapters (installed as ``ldp_plugin.adapters``): Polars frames in and out."""

from .polars_frames import estimate_frame

__all__ = ["estimate_frame"]
