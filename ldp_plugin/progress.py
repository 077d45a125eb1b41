"""Progress bars for long commands (tqdm), on a terminal only.

The library never draws by default: :func:`enable` turns bars on (the CLI does, unless ``--json``
or stderr is not a terminal). Bars go to stderr, so stdout stays clean for results."""

from __future__ import annotations

import sys
from typing import Iterable, Optional

_ENABLED = False


def enable(on: bool = True) -> None:
    """Draw progress bars (when stderr is a terminal and tqdm is installed)."""
    global _ENABLED
    _ENABLED = bool(on)


def enabled() -> bool:
    return _ENABLED and sys.stderr.isatty()


def progress(iterable: Iterable, *, total: Optional[int] = None, desc: str = "", unit: str = "it") -> Iterable:
    """``iterable`` wrapped in a tqdm bar when progress is enabled, else unchanged."""
    if not enabled():
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return iterable
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)


def status(message: str) -> None:
    """One line of progress text (text mode on a terminal only)."""
    if enabled():
        print(message, file=sys.stderr, flush=True)
