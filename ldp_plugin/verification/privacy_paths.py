"""Coverage is a verification result: the modules on a privacy path, and how much of them a
verification run executed (branch coverage, measured with coverage.py).

A module is on a **privacy path** by what it does, not by a hand list (:func:`privacy_path_modules`,
an AST scan of the installed source trees ``ldp_plugin/``, ``adapters/`` and ``registry/``):

* it imports the sampling layer (``ldp_plugin.sampling``: the random source, the samplers), or is
  part of it; or
* it calls or defines a client entry point (``randomize``, ``randomize_encoded``,
  ``randomize_one``, ``_randomize_codes``, ``privatize``) — the code that reads a user's value; or
* it takes a random source (a function with an ``rng`` or ``source`` parameter) or draws the
  operating system's randomness (``os.urandom``, ``secrets``: keys, nonces).

A module **compiled by numba** is listed but not measured (:func:`compiled_modules`, by what it
does too: it imports numba at module level and every function it defines at module level is a
numba kernel — ``@njit``, ``@jit``, ``@intrinsic``, …): coverage.py cannot trace compiled code;
their numpy twins are measured, and the kernels layer holds each kernel to its twin bit for bit. A
module that imports numba but also defines plain Python functions is measured like any other.

The verifier itself (``ldp_plugin.verification``, the registry's verification driver and suite, the
``ldp verify`` command) is left out: it instruments the source, it does not hold user data.

:func:`measure` runs a callable in a **fresh interpreter started under coverage** (``python -m
coverage run``, branch coverage restricted to those files), so every line the run executes counts,
module-level lines included (imports, ``def`` and ``class`` lines run when a module is first
imported: measured from a process that had already imported the package they would all read as
uncovered). Processes the run starts are traced too (coverage.py's ``patch = subprocess, fork,
_exit``: spawned workers (a ``multiprocessing`` pool), and forked children such as
the joint layer's), each into its own data file; the files are combined before the report. A
module none of whose lines ran is reported with every statement and branch uncovered (coverage.py
analyses its source), so the total is exact. :func:`measure` returns the total branch coverage
(coverage.py's combined statement + branch percentage) and, per module, the percentage and the
uncovered lines; ``ldp verify --coverage`` reports it in the markdown report and the full run fails
below ``--coverage-min`` (95 by default).
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, Callable, Optional

from .._extras import extra_module
from .._errors import LDPParameterError

__all__ = ["ENTRY_POINTS", "UNTRACEABLE", "privacy_path_modules", "compiled_modules", "measure", "line_ranges", "COVERAGE_MIN"]

#: the client entry points: a module calling or defining one reads a user's value
ENTRY_POINTS = frozenset({"randomize", "randomize_encoded", "randomize_one", "_randomize_codes", "privatize"})
#: the branch coverage the full ``ldp verify --coverage`` run requires (percent)
COVERAGE_MIN = 95.0
#: the decorators that compile a function with numba (``nb.njit(...)``, ``numba.jit``, ``intrinsic``, ...)
_NUMBA_DECORATORS = frozenset({"njit", "jit", "intrinsic", "vectorize", "guvectorize", "cfunc", "generated_jit", "overload", "stencil"})
#: the verifier: instruments the source, holds no user data
_VERIFIER = ("ldp_plugin.verification", "ldp_plugin.registry._verify", "ldp_plugin.registry._suite", "ldp_plugin.cli.verify")
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
#: source directory -> the package it installs as (pyproject's package-dir)
SOURCES = {"ldp_plugin": "ldp_plugin", "adapters": "ldp_plugin.adapters", "registry": "ldp_plugin.registry"}


def _module_name(src: str, rel: Path) -> str:
    parts = [SOURCES[src], *rel.with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports_sampling(tree: ast.AST, module: str) -> bool:
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.startswith("ldp_plugin.sampling") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                target = node.module or ""
            else:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            names = [target] + [f"{target}.{a.name}" for a in node.names]
            if any(n == "ldp_plugin.sampling" or n.startswith("ldp_plugin.sampling.") for n in names):
                return True
    return False


def _uses_entry_point(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in ENTRY_POINTS:
                return True
            args = node.args
            if any(a.arg in ("rng", "source") for a in args.args + args.kwonlyargs + args.posonlyargs):
                return True
        if isinstance(node, ast.Import) and any(a.name == "secrets" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "secrets":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "urandom":
            return True
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in ENTRY_POINTS:
                return True
    return False


def _compiled_by_numba(tree: ast.Module) -> bool:
    """Whether a module is numba-compiled code: it imports numba at module level and defines at
    least one function there, every one of them under a numba decorator or a factory that only
    defines numba-decorated functions and returns one."""
    imports = any((isinstance(n, ast.Import) and any(a.name.split(".")[0] == "numba" for a in n.names))
                  or (isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "numba") for n in tree.body)
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def numba_decorated(fn: ast.AST) -> bool:
        for d in fn.decorator_list:
            f = d.func if isinstance(d, ast.Call) else d
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in _NUMBA_DECORATORS:
                return True
        return False

    def kernel_factory(fn: ast.AST) -> bool:  # builds numba kernels at import and returns one (e.g. an intrinsic per word width)
        body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]  # the docstring
        defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        rest = [n for n in body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return bool(defs) and all(numba_decorated(d) for d in defs) and all(isinstance(n, ast.Return) for n in rest)

    return imports and bool(functions) and all(numba_decorated(f) or kernel_factory(f) for f in functions)


def compiled_modules(root: Optional[Path] = None) -> frozenset:
    """The modules under ``root`` (default: the installed sources) compiled by numba: listed on the
    privacy paths, not measured (module docstring)."""
    root = Path(root) if root is not None else _PACKAGE_ROOT
    out = set()
    for src in SOURCES:
        base = root / src
        for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
            text = path.read_text(encoding="utf-8")
            if "numba" in text and _compiled_by_numba(ast.parse(text, filename=str(path))):
                out.add(_module_name(src, path.relative_to(base)))
    return frozenset(out)


def __getattr__(name: str) -> Any:
    if name == "UNTRACEABLE":  # compiled by numba: listed, not measured (derived from the sources, once)
        globals()["UNTRACEABLE"] = value = compiled_modules()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def privacy_path_modules(root: Optional[Path] = None) -> dict:
    """``{module name: path}`` of every module on a privacy path under ``root`` (default: the
    installed sources), selected by what it does (module docstring)."""
    root = Path(root) if root is not None else _PACKAGE_ROOT
    out = {}
    for src in SOURCES:
        base = root / src
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            mod = _module_name(src, path.relative_to(base))
            if mod.startswith(_VERIFIER):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            if mod.startswith("ldp_plugin.sampling") or _imports_sampling(tree, mod if path.name != "__init__.py" else mod + ".__init__") or _uses_entry_point(tree):
                out[mod] = path
    return out


def line_ranges(lines: list) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    out, run = [], []
    for x in sorted(lines):
        if run and x == run[-1] + 1:
            run.append(x)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [x]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def measure(run: Callable[[], Any], modules: Optional[dict] = None) -> tuple:
    """``(result of run(), coverage summary)``: ``run`` called in a fresh interpreter started
    under branch coverage of ``modules`` (default: :func:`privacy_path_modules`), with every
    process it starts traced too (module docstring). ``run`` must be picklable (a module-level
    function, or a :func:`functools.partial` of one with picklable arguments), and so must its
    result. The summary: ``percent`` (total, statements and branches combined), ``statements``,
    ``branches``, and per module ``percent``, ``missing_lines`` (line ranges) and
    ``missing_branches`` (count); ``never_imported`` lists the modules none of whose lines ran,
    ``compiled`` the numba-compiled ones, listed and not measured (:func:`compiled_modules`)."""
    coverage = _coverage()
    modules = privacy_path_modules() if modules is None else modules
    untraceable = compiled_modules()
    compiled = sorted(m for m in modules if m in untraceable)
    modules = {m: p for m, p in modules.items() if m not in untraceable}
    files = {str(Path(p).resolve()): m for m, p in modules.items()}
    with tempfile.TemporaryDirectory(prefix="ldp-coverage-") as tmp:
        data_file = os.path.join(tmp, ".coverage")
        rc = os.path.join(tmp, "coveragerc")
        include = "".join(f"\n    {f}" for f in sorted(files))
        Path(rc).write_text(f"[run]\nbranch = True\nparallel = True\ndata_file = {data_file}\npatch =\n    subprocess\n    fork\n    _exit\n"
                            f"include ={include}\n")
        job, out = os.path.join(tmp, "job.pickle"), os.path.join(tmp, "result.pickle")
        Path(job).write_bytes(pickle.dumps(run))
        env = {k: v for k, v in os.environ.items() if k not in ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")}
        done = subprocess.run([sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", __name__, job, out],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False)
        if done.returncode != 0 or not os.path.exists(out):
            raise LDPParameterError(f"the measured verification run failed (exit status {done.returncode}); its error is on standard error above")
        result = pickle.loads(Path(out).read_bytes())
        cov = coverage.Coverage(branch=True, data_file=data_file, include=list(files), config_file=False)
        with warnings.catch_warnings():  # a process that measured no line leaves no data: coverage.py warns
            warnings.simplefilter("ignore", coverage.exceptions.CoverageWarning)
            cov.combine([tmp], keep=False)
        data = cov.get_data()
        ran = {str(Path(f).resolve()) for f in data.measured_files()}
        never = sorted(m for f, m in files.items() if f not in ran)
        for f, m in files.items():
            if f not in ran:  # none of its lines ran: coverage.py analyses it as wholly uncovered
                data.touch_file(f)
        data.write()
        report = os.path.join(tmp, "coverage.json")
        try:
            cov.json_report(outfile=report, ignore_errors=True)
            data = json.loads(Path(report).read_text())
        except coverage.exceptions.NoDataError:
            data = {"files": {}, "totals": {"percent_covered": 0.0, "num_statements": 0, "num_branches": 0}}
    per: dict = {}
    for fname, rec in data.get("files", {}).items():
        mod = files.get(str(Path(fname).resolve()))
        if mod is None:
            continue
        s = rec["summary"]
        per[mod] = {"percent": round(float(s["percent_covered"]), 2), "statements": s["num_statements"], "branches": s.get("num_branches", 0),
                    "missing_lines": line_ranges(rec.get("missing_lines", [])), "missing_branches": s.get("missing_branches", 0)}
    statements = sum(r["statements"] for r in per.values())
    branches = sum(r["branches"] for r in per.values())
    percent = float(data.get("totals", {}).get("percent_covered", 0.0))
    return result, {"percent": round(percent, 2), "statements": statements, "branches": branches, "modules": per,
                    "never_imported": never, "compiled": compiled, "threshold": COVERAGE_MIN}


def _child(job: str, out: str) -> None:
    """The measured interpreter: unpickle the run (its modules are imported here, under
    coverage), call it, pickle its result."""
    run = pickle.loads(Path(job).read_bytes())
    Path(out).write_bytes(pickle.dumps(run()))
    _stop_resource_tracker()


def _stop_resource_tracker() -> None:
    """Stop this interpreter's multiprocessing resource tracker (started with a spawned pool) and
    wait for it to exit, so that its coverage data file is written before the measured interpreter
    exits: otherwise it outlives the interpreter by a moment, and the parent's combine can read the
    directory while that file (or its SQLite journal) is being written and removed."""
    tracker = getattr(resource_tracker, "_resource_tracker", None)
    stop = getattr(tracker, "_stop", None)  # CPython's own shutdown of the tracker (3.8+)
    if stop is not None and getattr(tracker, "_pid", None) is not None:
        stop()


def _coverage():
    return extra_module("coverage", "verify", "ldp verify --coverage needs coverage.py")


if __name__ == "__main__":  # the measured interpreter (see measure)
    _child(sys.argv[1], sys.argv[2])
