"""The optional extras (``pip install 'ldp-plugin[<extra>]'``): the packages a feature needs beyond
the core — SciPy, dp_accounting, coverage.py, Dask, matplotlib, Flower — imported where the feature
runs, never by ``import ldp_plugin``. A feature asks for one here and nowhere else:

* :func:`extra_module` — the module, imported now, or :class:`LDPParameterError` saying what needs
  it and which extra installs it (never Python's ``ImportError`` or its traceback);
* :func:`require_extra` — the same check without importing (a command that refuses before it
  starts: ``find_spec`` only);
* :func:`missing_extra` — the error itself, for a check of its own (a fast path asked for by name).

The error is :class:`MissingExtra`: an :class:`LDPParameterError` (the CLI's exit 2, one line) that
is also an ``ImportError`` (code that catches a missing package keeps working).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from ._errors import LDPParameterError

__all__ = ["MissingExtra", "extra_module", "require_extra", "missing_extra"]


class MissingExtra(LDPParameterError, ImportError):
    """A feature's optional package is not installed: the message says what needs it and the
    ``pip install 'ldp-plugin[<extra>]'`` that installs it."""


def missing_extra(needs: str, extra: str, *, hint: str = "", error: type = MissingExtra) -> MissingExtra:
    """The error ``"<needs>: pip install 'ldp-plugin[<extra>]'<hint>"`` (``error``: a subclass of
    :class:`MissingExtra` naming the feature)."""
    return error(f"{needs}: pip install 'ldp-plugin[{extra}]'{hint}")


def extra_module(name: str, extra: str, needs: str, *, hint: str = "", error: type = MissingExtra) -> ModuleType:
    """The module ``name`` (dotted), imported; if it cannot be, :func:`missing_extra`'s error
    (``needs`` says what needs it, e.g. ``"Skellam accounting needs dp_accounting"``)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise missing_extra(needs, extra, hint=hint, error=error) from None


def require_extra(name: str, extra: str, needs: str, *, hint: str = "") -> None:
    """:func:`extra_module`'s refusal when the top-level package of ``name`` is not installed,
    without importing it."""
    if importlib.util.find_spec(name.split(".")[0]) is None:
        raise missing_extra(needs, extra, hint=hint)
