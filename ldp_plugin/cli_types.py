"""Argument types shared by the ``ldp`` commands: every bad value is one usage error that names
the allowed range (exit 2, never a traceback)."""

from __future__ import annotations

import argparse
import math
from typing import Optional


def float_in(lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False, hi_open: bool = False, note: str = ""):
    """A finite float in the interval ``lo``..``hi`` (open or closed ends; ``None``: unbounded)."""
    if lo is None and hi is None:
        what = "a finite number"
    elif hi is None:
        what = f"a finite number {'>' if lo_open else '>='} {lo:g}"
    elif lo is None:
        what = f"a number {'<' if hi_open else '<='} {hi:g}"
    else:
        what = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    what += note

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
        bad = not math.isfinite(v)
        if lo is not None:
            bad |= v <= lo if lo_open else v < lo
        if hi is not None:
            bad |= v >= hi if hi_open else v > hi
        if bad:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})")
        return v

    return parse


#: ε per user: > 0 and at most 700 (``e**epsilon`` must be a finite float)
EPSILON = float_in(0, 700, lo_open=True, note=" (e**epsilon must be a finite float)")
#: δ, or a probability strictly between 0 and 1
UNIT_OPEN = float_in(0, 1, lo_open=True, hi_open=True)
PROBABILITY = float_in(0, 1)
FINITE = float_in()
