"""The switches between a plain path and an optional faster one (``LDP_PLUGIN_KERNELS``: numpy or
numba; ``LDP_PLUGIN_RANDOM``: os.urandom or its AES-256-CTR expansion): ``auto`` (default) takes
the faster path when its package loads, the plain value never loads it, the fast value requires it."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from .._extras import missing_extra


def env_choice(var: str, plain: str, fast: str) -> str:
    """``auto``, ``plain`` or ``fast`` from the environment variable ``var`` (case and spaces ignored)."""
    choice = os.environ.get(var, "auto").strip().lower() or "auto"
    if choice not in ("auto", plain, fast):
        raise ValueError(f"{var} must be one of auto, {plain}, {fast}")
    return choice


def use_fast(var: str, plain: str, fast: str, load: Callable[[], Any], package: str, choice: Optional[str] = None) -> bool:
    """Whether the fast path runs now: ``load()`` (None when its package is unavailable) is only
    called unless ``var`` says ``plain``; ``var=fast`` without the package is a
    :class:`~ldp_plugin._extras.MissingExtra` (an ImportError) that names the extra to install. ``choice``: a value the caller names instead of the variable's
    (``plain`` or ``fast``; ``var`` then names the argument in the error)."""
    choice = env_choice(var, plain, fast) if choice is None else choice
    if choice == plain:
        return False
    ok = load() is not None
    if choice == fast and not ok:
        raise missing_extra(f"{var}={fast} needs {package}", "fast")
    return ok
