"""Budgets for work: before a long simulation starts, estimate its time (reports to randomize at
a conservative rate) and memory, and refuse with the estimate and the option to change instead of
running for hours or being killed for memory.

The limits are deliberately generous (minutes, gigabytes): they stop a typo (``--repeats
1000000000``, ``--n 1e12``), not a real study. ``LDP_PLUGIN_MAX_SECONDS`` raises the time limit.
"""

from __future__ import annotations

import os

from .._errors import LDPParameterError

__all__ = ["MAX_SECONDS", "MAX_BYTES", "check_work", "check_seconds", "check_memory"]

#: the longest run started without the user raising ``LDP_PLUGIN_MAX_SECONDS``
MAX_SECONDS = 900.0
#: the largest allocation a simulation may plan
MAX_BYTES = 8 << 30


def _limit() -> float:
    raw = os.environ.get("LDP_PLUGIN_MAX_SECONDS")
    if raw is None:
        return MAX_SECONDS
    try:
        v = float(raw)
    except ValueError:
        raise LDPParameterError("LDP_PLUGIN_MAX_SECONDS must be a number of seconds") from None
    if not v > 0:
        raise LDPParameterError("LDP_PLUGIN_MAX_SECONDS must be > 0")
    return v


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.3g} days"


def check_work(reports: float, *, rate: float, what: str, options: str) -> float:
    """Refuse work of ``reports`` randomized reports at ``rate`` per second if it would exceed the
    time limit; returns the estimate in seconds."""
    seconds = float(reports) / float(rate)
    limit = _limit()
    if seconds > limit:
        raise LDPParameterError(
            f"{what} needs about {float(reports):.3g} randomized reports: an estimated {_duration(seconds)} at about "
            f"{rate:.0e} reports/s, above the {_duration(limit)} limit; use a smaller {options} "
            "(or raise LDP_PLUGIN_MAX_SECONDS)"
        )
    return seconds


def check_seconds(seconds: float, *, what: str, options: str, limit: float | None = None) -> float:
    """Refuse a computation predicted to take ``seconds`` above ``limit`` (default the time limit;
    ``LDP_PLUGIN_MAX_SECONDS`` raises either); returns the prediction."""
    cap = _limit() if limit is None or "LDP_PLUGIN_MAX_SECONDS" in os.environ else float(limit)
    if seconds > cap:
        raise LDPParameterError(f"{what} would take an estimated {_duration(seconds)}, above the {_duration(cap)} limit; "
                                f"use a smaller {options} (or raise LDP_PLUGIN_MAX_SECONDS)")
    return float(seconds)


def check_memory(nbytes: float, *, what: str, options: str) -> None:
    """Refuse a plan whose arrays would need more than :data:`MAX_BYTES`."""
    if nbytes > MAX_BYTES:
        raise LDPParameterError(
            f"{what} needs about {nbytes / 2**30:.3g} GiB of memory, above the {MAX_BYTES / 2**30:.0f} GiB limit; use a smaller {options}"
        )
