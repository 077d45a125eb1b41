"""The system layers in one table (:data:`SYSTEM_LAYERS`), run by ``ldp verify`` on a whole-registry
run (:func:`system_rows`) and, with ``--self-test``, on their seeded bugs (:func:`system_self_test`).

The table names each layer as ``module:function`` (Flower's component convention) and loads it
when it runs: the layers drive the federated runtime, which needs the ``flower`` extra (Flower and
PyNaCl); without it every system layer's row says so and fails (a run that could not verify the
deployment does not pass). Each layer runs in its own fresh temporary directory; a layer that
raises fails (its row names the exception type, never its text)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import tempfile
import time

from ..parallel import run_jobs

__all__ = ["SYSTEM_LAYERS", "EXTRAS", "missing_extras", "system_rows", "system_jobs", "system_self_test"]

#: layer name -> ``module:function`` that runs it
SYSTEM_LAYERS = {
    "device": "ldp_plugin.verification.system.device:device_layer",
    "shuffler": "ldp_plugin.verification.system.shuffler:shuffler_layer",
    "analyzer": "ldp_plugin.verification.system.analyzer:analyzer_layer",
    "wire": "ldp_plugin.verification.system.wire:wire_layer",
    "kernels": "ldp_plugin.verification.twins:kernels_layer",  # each numba kernel vs its numpy twin; the secure source's splits
    "executors": "ldp_plugin.verification.executors:executors_layer",  # partitioned release and aggregation vs the serial path
    "refusals": "ldp_plugin.verification.system.refusals:refusals_layer",
    "mechanism paths": "ldp_plugin.verification.system.mechanism_paths:mechanism_paths_layer",
    "flower": "ldp_plugin.verification.system.flower:flower_layer",
    "federated-state": "ldp_plugin.verification.system.federated_state:state_layer",
}
#: the seeded bugs' table (``(bug, layer, keyword arguments)``)
_BUGS = "ldp_plugin.verification.system.seeded_bugs:SYSTEM_BUGS"
#: the packages the federated runtime needs (``pip install 'ldp-plugin[flower]'``)
EXTRAS = ("flwr", "nacl")


def missing_extras() -> list:
    """The packages of :data:`EXTRAS` that are not installed."""
    return [p for p in EXTRAS if importlib.util.find_spec(p) is None]


def _load(path: str):
    mod, attr = path.split(":")
    return getattr(importlib.import_module(mod), attr)


def _run(layer: str, *, seed: int, quick: bool, **kw) -> dict:
    t0 = time.perf_counter()
    missing = missing_extras()
    if missing:
        return {"layer": layer, "failures": [f"not run: needs {', '.join(missing)} (pip install 'ldp-plugin[flower]')"], "seconds": 0.0,
                "passed": False}
    with tempfile.TemporaryDirectory(prefix=f"ldp-system-{layer}-") as tmp:
        try:
            return _load(SYSTEM_LAYERS[layer])(seed=seed, quick=quick, directory=tmp, **kw)
        except Exception as e:  # noqa: BLE001 - a layer that raises fails; its row says how
            return {"layer": layer, "failures": [f"the layer raised {type(e).__name__}"], "seconds": round(time.perf_counter() - t0, 2),
                    "passed": False}


def _layer_rows(layer: str, *, seed: int, quick: bool) -> list:
    r = _run(layer, seed=seed, quick=quick)
    return [{"name": "system", "system_layer": layer, "passed": bool(r["passed"]), "result": r}]


def system_jobs(*, seed: int = 0, quick: bool = False) -> list:
    """:func:`system_rows` as one job per layer (:func:`~ldp_plugin.verification.parallel.run_jobs`;
    each job returns its layer's row in a list)."""
    return [functools.partial(_layer_rows, layer, seed=seed, quick=quick) for layer in SYSTEM_LAYERS]


def system_rows(*, seed: int = 0, quick: bool = False) -> list:
    """One row per system layer: ``{"name": "system", "system_layer", "passed", "result"}`` (on the
    open job pool, if any: each layer runs in its own temporary directory)."""
    return [r for rows in run_jobs(system_jobs(seed=seed, quick=quick)) for r in rows]


def _bugs() -> list:
    return list(_load(_BUGS)) if not missing_extras() else [("(system bugs)", layer, {}) for layer in SYSTEM_LAYERS]


def _bug_row(index: int, *, seed: int, quick: bool) -> dict:
    """The ``index``-th seeded bug through its layer (the table is loaded where the job runs: its
    defective components are closures, which do not cross processes)."""
    bug, layer, kw = _bugs()[index]
    r = _run(layer, seed=seed, quick=quick, **kw)
    caught = not r["passed"] and not any(f.startswith("not run") for f in r["failures"])
    return {"name": bug, "system_layer": layer, "seeded_bug": True, "caught": caught, "caught_by": [layer] if caught else [], "result": r}


def system_self_test(*, seed: int = 0, quick: bool = False) -> list:
    """Every seeded bug through its layer: ``caught`` iff the layer fails on it (a bug whose layer
    could not run is not caught). One job per bug, on the open job pool if any."""
    return run_jobs([functools.partial(_bug_row, i, seed=seed, quick=quick) for i in range(len(_bugs()))])
