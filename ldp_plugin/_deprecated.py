"""Moved import paths, resolved only when asked, each use warned with the release that removes it.

Nothing here is imported ahead of use: :func:`install` (called by ``ldp_plugin/__init__``) puts a
finder on ``sys.meta_path`` that answers only for the old dotted paths of :data:`MOVED_MODULES`;
``import ldp_plugin.estimation_lsq`` then imports the new module, warns once with a
:class:`DeprecationWarning` naming the new path and :data:`REMOVED_IN`, and binds the old name to
the new module itself (no copy: ``ldp_plugin.estimation_lsq is ldp_plugin.estimation.least_squares``).
Public names that moved (:data:`MOVED_NAMES`) resolve the same way through the face's module
``__getattr__``. No library module imports through an old path (tests/test_face.py checks it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any, Optional, Sequence

__all__ = ["REMOVED_IN", "MOVED_MODULES", "MOVED_NAMES", "install", "moved_name"]

#: the release that removes every old path below
REMOVED_IN = "0.2.0"

#: old dotted module path -> its new home
MOVED_MODULES = {
    "ldp_plugin.estimation_lsq": "ldp_plugin.estimation.least_squares",
    "ldp_plugin.estimation_sketch": "ldp_plugin.estimation.sketch",
    "ldp_plugin.series": "ldp_plugin.simulate",
    "ldp_plugin.choose_series": "ldp_plugin.choose",
    "ldp_plugin.choose_distribution": "ldp_plugin.choose.distribution",
    "ldp_plugin.measurements_series": "ldp_plugin.measurements",
    "ldp_plugin.measurements_families": "ldp_plugin.measurements",
    "ldp_plugin.mechanisms.cohort_base": "ldp_plugin.mechanisms.cohort.base",
    "ldp_plugin.mechanisms.cohort_server": "ldp_plugin.mechanisms.cohort.server",
    "ldp_plugin.mechanisms.numeric_server": "ldp_plugin.mechanisms.numeric.server",
    "ldp_plugin.mechanisms.longitudinal_hashed": "ldp_plugin.mechanisms.longitudinal.hashed",
    "ldp_plugin.mechanisms.longitudinal_unary": "ldp_plugin.mechanisms.longitudinal.unary",
    "ldp_plugin.memo": "ldp_plugin.mechanisms.longitudinal.memoized",
    "ldp_plugin._kernels": "ldp_plugin.sampling.kernels",
    "ldp_plugin._env": "ldp_plugin.sampling._env",
    "ldp_plugin._opendp_boundary": "ldp_plugin._boundary.opendp",
    "ldp_plugin.workload": "ldp_plugin._boundary.workload",
    "ldp_plugin.cli_series": "ldp_plugin.cli.series",
    "ldp_plugin.cli_types": "ldp_plugin.cli._common",
    "ldp_plugin.cli_discovery": "ldp_plugin.cli.discovery",
}

#: ``(module, old name)`` -> ``(module, new name)`` of a public name that moved or was renamed
MOVED_NAMES = {
    ("ldp_plugin", "make_randomized_response_warner"): ("ldp_plugin.measurements", "make_warner"),
    ("ldp_plugin", "then_randomized_response_warner"): ("ldp_plugin.measurements", "then_warner"),
}


def _internal(frame) -> bool:
    """A frame of the import machinery (``importlib`` and its frozen bootstrap), of the face or of this module."""
    name = frame.f_globals.get("__name__", "")
    return name in (__name__, __package__) or name == "importlib" or name.startswith("importlib.") or name.startswith("_frozen_importlib")


def _warn(old: str, new: str) -> None:
    """Warn at the first frame outside the import machinery and this module: the user's import line."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _internal(frame):
        if "_bootstrap" not in frame.f_code.co_filename:  # warnings skips the bootstrap's frames itself
            level += 1
        frame = frame.f_back
    warnings.warn(f"{old} is deprecated and will be removed in ldp-plugin {REMOVED_IN}: use {new}", DeprecationWarning, stacklevel=level)


def moved_name(module: str, name: str) -> Any:
    """The object a moved public name now is, with a :class:`DeprecationWarning`; ``AttributeError``
    when ``name`` did not move (the caller's ``__getattr__`` reports it)."""
    try:
        new_module, new_name = MOVED_NAMES[(module, name)]
    except KeyError:
        raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
    _warn(f"{module}.{name}", f"{new_module}.{new_name}")
    return getattr(importlib.import_module(new_module), new_name)


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED_MODULES` only; loading one imports the new module and
    puts it in ``sys.modules`` under the old name (the import system returns what is there)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None):
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None  # a placeholder module; exec_module replaces it by the new one

    def exec_module(self, module: ModuleType) -> None:
        old, new = module.__name__, MOVED_MODULES[module.__name__]
        _warn(old, new)
        sys.modules[old] = importlib.import_module(new)


_FINDER = _MovedModuleFinder()


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once); it imports nothing until an old path is asked for."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)
