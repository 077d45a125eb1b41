"""Optional compiled kernels (numba) for the sampling layer's hot loops.

Nothing here changes *what* is sampled: every kernel has a pure-numpy twin in
:mod:`ldp_plugin.sampling` that consumes the same random bytes and returns the same output bit for
bit (tests compare the two on the same streams). The kernels only make it faster. They are used
when numba is installed (``pip install "ldp-plugin[fast]"``) unless the environment variable
``LDP_PLUGIN_KERNELS`` says otherwise:

* ``auto`` (default): numba if importable, else numpy;
* ``numpy``: never import numba;
* ``numba``: require numba (an ImportError names the extra to install).

A caller that must run both implementations in one process (the verification's kernels layer,
tests) names the backend explicitly instead: every dispatching function of the sampling layer
takes ``backend`` (``None``: the rule above; ``"numpy"``: the twin; ``"numba"``: the compiled
kernel), resolved by :func:`select` and :func:`select_table` — no environment variable is set
and no module global is patched.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from typing import Optional

from .._errors import LDPParameterError
from ._env import env_choice, use_fast


__all__ = ["kernel_backend", "compiled", "kernel_table", "select", "select_table", "BACKENDS"]

#: the explicit backends a caller may name (``None``: the ``LDP_PLUGIN_KERNELS`` rule)
BACKENDS = ("numpy", "numba")

_STATE: dict = {}
_LOCK = threading.Lock()


def _new_lock_in_child() -> None:
    """After ``fork()``, in the child: a fresh loader lock (the parent's may have been held by a
    thread that does not exist in the child, which would block the child's first kernel load)."""
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_lock_in_child)


def kernel_backend() -> str:
    """``"numba"`` or ``"numpy"``: which implementation the sampling layer's kernels use now."""
    return "numba" if use_fast("LDP_PLUGIN_KERNELS", "numpy", "numba", _load, "numba") else "numpy"


#: in ``auto`` mode a call with less work than this (elementary events or draws) does not import
#: numba for it: numba's import costs about 0.5-1 s per process, more than it saves on a small
#: batch, and the numpy twins give the same output bit for bit. Once loaded, every call uses it.
LAZY_WORK = 5 * 10**7


def compiled(name: str, work: Optional[int] = None):
    """The compiled kernel ``name`` (``decode_runs``, ``batched_rejects``, ``floyd_sorted``) when
    the numba backend is selected, else None (the caller runs its numpy twin). ``work``: the
    size of the call, for the lazy rule of :data:`LAZY_WORK` (``LDP_PLUGIN_KERNELS=numba``
    always loads)."""
    choice = env_choice("LDP_PLUGIN_KERNELS", "numpy", "numba")
    if choice == "auto" and work is not None and work < LAZY_WORK and "kernels" not in _STATE:
        return None
    if kernel_backend() != "numba":
        return None
    return _load()[name]


def _load() -> Optional[dict]:
    if "kernels" in _STATE:
        return _STATE["kernels"]
    with _LOCK:  # the sampling layer calls in from worker threads: compile (or load) once
        if "kernels" not in _STATE:
            _STATE["kernels"] = _import_and_compile()
    return _STATE["kernels"]


def _import_and_compile() -> Optional[dict]:
    try:
        import numba  # noqa: F401  (only: is it installed and importable?)
    except Exception:  # not installed, or broken against this numpy: fall back to numpy
        return None
    with warnings.catch_warnings():  # an unwritable cache directory must not turn into an error
        warnings.simplefilter("ignore")
        for cache in (True, False):  # no usable cache directory: compile in memory instead
            try:
                return _import_kernels(cache)
            except Exception:
                continue
    return None  # numba cannot compile here: the numpy twins give the same results


def _import_kernels(cache: bool) -> dict:
    """Import :mod:`ldp_plugin.sampling.numba_kernels` (compiled, or loaded from numba's disk cache)."""
    os.environ["LDP_PLUGIN_NUMBA_CACHE"] = "1" if cache else "0"
    sys.modules.pop("ldp_plugin.sampling.numba_kernels", None)
    return dict(importlib.import_module("ldp_plugin.sampling.numba_kernels").KERNELS)


def _explicit(backend: str) -> Optional[dict]:
    """The sampling kernels for an explicitly named backend: None for ``numpy``; for ``numba`` the
    compiled table, loaded now whatever ``LDP_PLUGIN_KERNELS`` and the lazy rule say (an
    ImportError names the extra when numba cannot load)."""
    if backend not in BACKENDS:
        raise LDPParameterError("backend must be None, 'numpy' or 'numba'")
    return _load() if use_fast("backend", "numpy", "numba", _load, "numba", choice=backend) else None


def select(name: str, work: Optional[int] = None, backend: Optional[str] = None):
    """The compiled sampling kernel ``name`` or None (run the numpy twin): by the
    ``LDP_PLUGIN_KERNELS`` rule of :func:`compiled` when ``backend`` is None, else the named
    backend's (``"numpy"``: None; ``"numba"``: the compiled kernel)."""
    if backend is None:
        return compiled(name, work)
    table = _explicit(backend)
    return None if table is None else table[name]


def select_table(module: str, work: int, backend: Optional[str] = None) -> Optional[dict]:
    """:func:`kernel_table` for an explicitly named ``backend`` (``None``: the environment's rule)."""
    if backend is None:
        return kernel_table(module, work)
    if _explicit(backend) is None:
        return None
    return _module_table(module)


def kernel_table(module: str, work: int) -> Optional[dict]:
    """The ``KERNELS`` table of the compiled kernel module ``ldp_plugin.sampling.<module>`` (the
    aggregation's, the text lookup's) when the numba backend runs a call of ``work`` steps, else
    None (the caller runs its numpy twin). Imported once per process, after the sampling kernels
    (so the cache flag they settled is the one it reads)."""
    if compiled("decode_runs", work) is None:
        return None
    return _module_table(module)


def _module_table(module: str) -> dict:
    key = ("table", module)
    if key not in _STATE:
        with _LOCK:
            if key not in _STATE:
                name = __name__.rsplit(".", 1)[0] + "." + module
                sys.modules.pop(name, None)  # the cache flag is read at import
                _STATE[key] = dict(importlib.import_module(name).KERNELS)
    return _STATE[key]


def preload(work: Optional[int] = None) -> str:
    """Load (or compile) the kernels now if a call of ``work`` would use them (see
    :data:`LAZY_WORK`), e.g. before timing a run; returns the backend that will run."""
    if compiled("decode_runs", work) is None:
        return "numpy"
    return "numba"
