"""The system layers in one table (:data:`SYSTEM_LAYERS`), run by ``ldp verify`` on a whole-registry
run (:func:`system_rows`) and, with ``--self-test``, on their seeded bugs (:func:`system_self_test`).
Each layer runs in its own fresh temporary directory; a layer that raises fails (its row names the
exception type, never its text)."""

from __future__ import annotations

import tempfile
import time
from typing import Callable

from .analyzer import analyzer_layer
from .device import device_layer
from .seeded_bugs import SYSTEM_BUGS
from .shuffler import shuffler_layer
from .wire import wire_layer

__all__ = ["SYSTEM_LAYERS", "system_rows", "system_self_test"]

#: layer name -> the function that runs it
SYSTEM_LAYERS: dict = {"device": device_layer, "shuffler": shuffler_layer, "analyzer": analyzer_layer, "wire": wire_layer}


def _run(layer: str, fn: Callable, *, seed: int, quick: bool, **kw) -> dict:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"ldp-system-{layer}-") as tmp:
        try:
            return fn(seed=seed, quick=quick, directory=tmp, **kw)
        except Exception as e:  # noqa: BLE001 - a layer that raises fails; its row says how
            return {"layer": layer, "failures": [f"the layer raised {type(e).__name__}"], "seconds": round(time.perf_counter() - t0, 2),
                    "passed": False}


def system_rows(*, seed: int = 0, quick: bool = False) -> list:
    """One row per system layer: ``{"name": "system", "system_layer", "passed", "result"}``."""
    rows = []
    for layer, fn in SYSTEM_LAYERS.items():
        r = _run(layer, fn, seed=seed, quick=quick)
        rows.append({"name": "system", "system_layer": layer, "passed": bool(r["passed"]), "result": r})
    return rows


def system_self_test(*, seed: int = 0, quick: bool = False) -> list:
    """Every seeded bug through its layer: ``caught`` iff the layer fails on it."""
    rows = []
    for bug, layer, kw in SYSTEM_BUGS:
        r = _run(layer, SYSTEM_LAYERS[layer], seed=seed, quick=quick, **kw)
        rows.append({"name": bug, "system_layer": layer, "seeded_bug": True, "caught": not r["passed"],
                     "caught_by": [layer] if not r["passed"] else [], "result": r})
    return rows
