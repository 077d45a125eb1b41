"""Mutation score of ``ldp verify --quick`` on the privacy-path modules (a benchmark, not in CI).

A mutant is one small change to one privacy-path module
(:func:`ldp_plugin.verification.privacy_paths.privacy_path_modules`, minus the numba-compiled
modules, which coverage cannot trace); the score is the share of the mutants that change some
realized channel or estimate that ``ldp verify --quick`` rejects.

**The mutator** (our own, on the AST: mutmut and cosmic-ray drive a test command per mutant in place
and cannot restrict the run to the mechanisms that reach the mutated line nor classify survivors by
their channels). Every site of these operators is enumerated in a module (not in docstrings,
annotations, ``__all__``, f-strings, or the arguments of a ``raise``):

=========  ====================================================================================
cmp        a comparison operator swapped: ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``is``↔``is not``,
           ``in``↔``not in``
arith      a binary or augmented operator: ``+``↔``-``, ``*``→``/``, ``/``→``*``, ``//``→``*``,
           ``%``→``//``, ``**``→``*``, ``<<``↔``>>``, ``&``↔``|``, ``^``→``|``
const      an integer or float constant ``c`` → ``c + 1`` and ``c - 1``
bool       ``True``↔``False``
logic      ``and``↔``or``
negate     ``if c`` / ``while c`` / ``x if c else y`` → ``not (c)``; ``not x`` → ``x``
return     ``return e`` → ``return None``
index      ``a[i]`` → ``a[(i) + 1]`` (a scalar index); a slice bound ``a[lo:hi]`` → ``a[(lo) + 1:hi]``,
           ``a[lo:(hi) - 1]``
drop       a statement replaced by ``pass``: a call statement, an augmented assignment, an assignment
           to an attribute or item, ``raise``, ``break``, ``continue``
=========  ====================================================================================

The new text replaces only the node's source span (wrapped in parentheses, padded with newlines so
every other line keeps its number); a mutant that does not compile or whose AST equals the
original's is discarded. The sample (:func:`sample_mutants`, fixed seed) draws from every site of
every module, weighted toward where channels are realized: 45% ``mechanisms``, 25% ``sampling``,
10% each ``adapters``, ``federated`` and the rest (measurements, collect, simulate, accountant …).

**Isolation.** The package is copied in its installed layout (``ldp_plugin/`` with ``adapters/`` and
``registry/`` as its subpackages) into a temporary directory, one copy per worker; a mutant is
written into the worker's copy, run in a subprocess with ``PYTHONPATH`` pointing at the copy (the
child checks that ``ldp_plugin`` is imported from it, and bytecode is neither written nor read for
the mutated file), and the original file is restored. The worktree is never written.

**Reach.** One unmutated run of ``ldp verify --quick`` under coverage.py with a dynamic context per
*unit* (a registered name, or one of the wrappers the full run adds: ``wrapper:sample-one``,
``wrapper:memoized-krr``) records which privacy-path lines each unit executes, and its time. A
mutant inside a function body is reached by the units that executed one of its lines; a mutant
executed at import (module or class level, a default value) by the units that executed any line of
its module. A mutant no unit reaches is reported **not reached** (a coverage gap), never as killed.
Lines run only in the production layer's worker processes are not traced, so the reach is a lower
bound.

**Kill.** The reached units run in ascending order of their unmutated time, exactly as the full
``ldp verify --quick`` runs them (same seeds, same family-wise α share), and the run stops at the
first failing row: a failing row is *killed (failed)*, an exception out of the verifier *killed
(error)*. The timeout is ``60 s + 6 ×`` the units' unmutated time measured under coverage (itself
above the untraced time), so a mutant is *killed (timeout)* only if it runs more than six times
longer than the original would under tracing; on this shared machine the unmutated time varies by
at most 2×.

**Equivalence.** A survivor is **equivalent** only if, for every instance of every reached unit
(the canonical instances and the quick run's random draws; the edge instances for the declared
channel), all of these are identical, mutant vs original: the declared channel (exact Fractions);
the channel rebuilt by replaying the real client over every outcome of its sampler calls
(:func:`ldp_plugin.verification.client_channel.client_channel`, exact Fractions; for clients that
cannot be enumerated — keyed, rejection loops — their outputs on fixed seeds); the real client on the
real seeded source (the replay answers the sampling API itself, so a mutant inside a sampler
primitive is seen only here and by the fixed reports: compared on fixed seeds); the row each public
entry point realizes (:func:`ldp_plugin.verification.positions.enumerate_client`, exact, or its
keyed replicates on a fixed seed, or the outputs on a fixed seed); ``randomize_one`` and the wire
round trip; and the server's estimate (default, and without post-processing) on a fixed batch of reports made
by the original code. Anything else is a surviving **non-equivalent** mutant: a blind spot of the
verifier. Output-on-fixed-seed comparisons can call a mutant that only reorders its randomness
non-equivalent, so the score is a lower bound.

Score = killed / (killed + surviving non-equivalent), over reached mutants.

Usage (resumable: rerunning with the same ``--out`` skips the mutants already recorded)::

    python benchmarks/mutation.py --mutants 300 --seed 0 --jobs 2 --out benchmarks/results/mutation.jsonl
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import hashlib
import json
import os
import pickle
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # run as a script: benchmarks/coverage.py would shadow coverage.py

import coverage  # noqa: E402
import numpy as np  # noqa: E402

import ldp_plugin  # noqa: E402
from ldp_plugin.registry import verify_instance, verify_name, wrapper_instances  # noqa: E402
from ldp_plugin.registry._verify import failed_layers  # noqa: E402
from ldp_plugin.sampling import SeededRandomSource  # noqa: E402
from ldp_plugin.verification import FAMILY_ALPHA  # noqa: E402
from ldp_plugin.verification.client_channel import client_channel  # noqa: E402
from ldp_plugin.verification.draws import DRAWS_QUICK, edge_instances, random_instances  # noqa: E402
from ldp_plugin.verification.entry_points import _one_and_wire, _randomize, _seed_fields, entry_cases  # noqa: E402
from ldp_plugin.verification.positions import NotEnumerable, OutsideChannel, enumerate_client  # noqa: E402
from ldp_plugin.verification.privacy_paths import UNTRACEABLE, privacy_path_modules  # noqa: E402
from ldp_plugin.cli._common import registry as _registry_of  # noqa: E402

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
#: worktree source directory -> its place in the installed layout
LAYOUT = {"ldp_plugin": "ldp_plugin", "adapters": "ldp_plugin/adapters", "registry": "ldp_plugin/registry"}
GROUP_WEIGHTS = {"mechanisms": 0.45, "sampling": 0.25, "adapters": 0.10, "federated": 0.10, "other": 0.10}

# -- the mutator --------------------------------------------------------------------------------------
CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
              ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
              ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr}


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One change: the span ``(line, col)``–``(end_line, end_col)`` (1-based lines, UTF-8 byte
    columns, as the AST gives them) of ``rel`` (path in the installed layout) becomes ``new``."""

    module: str
    rel: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    new: str
    at_import: bool

    @property
    def key(self) -> str:
        return f"{self.module}:{self.line}:{self.col}:{self.end_line}:{self.end_col}:{self.operator}:{self.new}"

    def apply(self, source: str) -> str:
        """The mutated text of ``source`` (the original module)."""
        lines = source.encode("utf-8").splitlines(keepends=True)
        head = b"".join(lines[: self.line - 1]) + lines[self.line - 1][: self.col]
        tail = lines[self.end_line - 1][self.end_col:] + b"".join(lines[self.end_line:])
        pad = "\n" * (self.end_line - self.line)
        return (head + (self.new + pad).encode("utf-8") + tail).decode("utf-8")


def _docstring_nodes(tree: ast.AST) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first))
    return out


def _skipped_subtrees(tree: ast.AST) -> set:
    """Nodes whose subtree is not mutated: docstrings, annotations, ``__all__``, f-strings, the
    arguments of a ``raise`` (error messages), ``if TYPE_CHECKING`` blocks."""
    skip = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                skip.add(id(node.returns))
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
                if arg.annotation is not None:
                    skip.add(id(arg.annotation))
        elif isinstance(node, ast.AnnAssign):
            skip.add(id(node.annotation))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            skip.add(id(node))
        elif isinstance(node, ast.JoinedStr):
            skip.add(id(node))
        elif isinstance(node, ast.Raise):
            for part in (node.exc, node.cause):
                if part is not None:
                    skip.add(id(part))
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skip.add(id(node))
    return skip


def _paren(node: ast.AST) -> str:
    return "(" + ast.unparse(node) + ")"


def _replace(node: ast.AST, **changes) -> ast.AST:
    new = copy.deepcopy(node)
    for k, v in changes.items():
        setattr(new, k, v)
    return new


def _expression_mutations(node: ast.AST) -> list:
    """``(operator, new text)`` for an expression node."""
    out = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in CMP_SWAP:
                ops = list(node.ops)
                ops[i] = CMP_SWAP[type(op)]()
                out.append(("cmp", _paren(_replace(node, ops=ops))))
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITH_SWAP:
        out.append(("arith", _paren(_replace(node, op=ARITH_SWAP[type(node.op)]()))))
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        for delta in (1, -1):
            out.append(("const", _paren(ast.Constant(node.value + delta))))
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        out.append(("bool", repr(not node.value)))
    elif isinstance(node, ast.BoolOp):
        out.append(("logic", _paren(_replace(node, op=ast.Or() if isinstance(node.op, ast.And) else ast.And()))))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("negate", _paren(node.operand)))
    elif isinstance(node, ast.Subscript):
        s = node.slice
        if isinstance(s, ast.Slice):
            if s.lower is not None:
                out.append(("index", _paren(_replace(node, slice=_replace(s, lower=ast.BinOp(s.lower, ast.Add(), ast.Constant(1)))))))
            if s.upper is not None:
                out.append(("index", _paren(_replace(node, slice=_replace(s, upper=ast.BinOp(s.upper, ast.Sub(), ast.Constant(1)))))))
        elif isinstance(s, (ast.Name, ast.BinOp, ast.UnaryOp)) or (isinstance(s, ast.Constant) and type(s.value) is int):
            out.append(("index", _paren(_replace(node, slice=ast.BinOp(s, ast.Add(), ast.Constant(1))))))
    return out


def _statement_mutations(node: ast.stmt) -> list:
    out = []
    drop = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)) or isinstance(node, (ast.AugAssign, ast.Raise, ast.Break, ast.Continue))
    drop |= isinstance(node, ast.Assign) and all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets)
    if drop:
        out.append(("drop", "pass"))
    if isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append(("return", "return None"))
    if isinstance(node, (ast.If, ast.While)):
        out.append(("negate-test", node.test))  # resolved by the caller (spans the test only)
    if isinstance(node, ast.AugAssign) and type(node.op) in ARITH_SWAP:
        out.append(("arith", ast.unparse(_replace(node, op=ARITH_SWAP[type(node.op)]()))))
    return out


def module_mutants(module: str, rel: str, source: str) -> list:
    """Every mutation site of one module (the operators of the module docstring), in source order
    (validity is checked on the sampled ones: :func:`is_valid`)."""
    tree = ast.parse(source)
    skip = _skipped_subtrees(tree)
    found: dict = {}

    def add(node, operator, new, at_import):
        m = Mutant(module, rel, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, operator, new, at_import)
        if m.key not in found:
            found[m.key] = m

    def visit(node, at_import):
        if id(node) in skip:
            return
        if isinstance(node, ast.IfExp):
            add(node.test, "negate", "(not " + _paren(node.test) + ")", at_import)
        if isinstance(node, ast.stmt):
            for op, new in _statement_mutations(node):
                if op == "negate-test":
                    add(new, "negate", "(not " + _paren(new) + ")", at_import)
                else:
                    add(node, op, new, at_import)
        elif isinstance(node, ast.expr):
            for op, new in _expression_mutations(node):
                add(node, op, new, at_import)
        for field, value in ast.iter_fields(node):
            inner = at_import and not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and field == "body") \
                and not (isinstance(node, ast.Lambda) and field == "body")
            for child in (value if isinstance(value, list) else [value]):
                if isinstance(child, ast.AST):
                    visit(child, inner)

    visit(tree, True)
    return list(found.values())


def is_valid(m: Mutant, source: str, original_dump: str | None = None) -> bool:
    """The mutant compiles and its AST differs from the original's."""
    try:
        new_tree = ast.parse(m.apply(source))
        compile(new_tree, m.rel, "exec")
    except (SyntaxError, ValueError):
        return False
    return ast.dump(new_tree) != (original_dump if original_dump is not None else ast.dump(ast.parse(source)))


def _group(module: str) -> str:
    for g in ("mechanisms", "sampling", "adapters", "federated"):
        if module.startswith(f"ldp_plugin.{g}"):
            return g
    return "other"


def _rel(path: Path) -> str:
    rel = Path(path).resolve().relative_to(ROOT)
    return str(Path(LAYOUT[rel.parts[0]]) / Path(*rel.parts[1:]))


def target_modules() -> dict:
    """``{module: path in the installed layout}``: the traceable privacy-path modules."""
    return {m: _rel(p) for m, p in sorted(privacy_path_modules().items()) if m not in UNTRACEABLE}


def all_mutants(tree_root: Path) -> list:
    out = []
    for mod, rel in target_modules().items():
        out += module_mutants(mod, rel, (tree_root / rel).read_text(encoding="utf-8"))
    return out


def source_of(rel: str, tree_root: Path | None = None) -> Path:
    """The file of ``rel`` (a path in the installed layout) in a copy, or in the worktree."""
    if tree_root is not None:
        return tree_root / rel
    for src, dest in sorted(LAYOUT.items(), key=lambda kv: -len(kv[1])):
        if rel.startswith(dest + "/"):
            return ROOT / src / rel[len(dest) + 1:]
    raise ValueError(rel)


def sample_mutants(mutants: list, count: int, seed: int, tree_root: Path | None = None) -> list:
    """``count`` valid mutants drawn without replacement, stratified by :data:`GROUP_WEIGHTS`, in a
    fixed order for a fixed seed (invalid draws are skipped and replaced by the next draw; sources
    read from ``tree_root``, a copy, or from the worktree)."""
    rng = random.Random(seed)
    by: dict = {}
    for m in sorted(mutants, key=lambda m: m.key):
        by.setdefault(_group(m.module), []).append(m)
    sources: dict = {}

    def valid(m):
        if m.rel not in sources:
            text = source_of(m.rel, tree_root).read_text(encoding="utf-8")
            sources[m.rel] = (text, ast.dump(ast.parse(text)))
        return is_valid(m, *sources[m.rel])

    picked = []
    for g, w in GROUP_WEIGHTS.items():
        pool = list(by.get(g, []))
        rng.shuffle(pool)
        want = round(count * w)
        picked += [m for m in pool if valid(m)][:want] if len(pool) <= want else _first_valid(pool, want, valid)
    rng.shuffle(picked)
    return picked[:count]


def _first_valid(pool: list, want: int, valid) -> list:
    out = []
    for m in pool:
        if len(out) == want:
            break
        if valid(m):
            out.append(m)
    return out


# -- the copy of the tree -----------------------------------------------------------------------------
def make_copy(dest: Path, *, compile_all: bool = True) -> Path:
    """The package in its installed layout under ``dest`` (compiled once, so unmutated modules load
    from bytecode; the children never write bytecode)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "ldp_plugin", dest / "ldp_plugin", ignore=ignore)
    shutil.copytree(ROOT / "adapters", dest / "ldp_plugin" / "adapters", ignore=ignore)
    shutil.copytree(ROOT / "registry", dest / "ldp_plugin" / "registry", ignore=ignore)
    if compile_all:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "ldp_plugin")], check=True, stdout=subprocess.DEVNULL)
    return dest


def _pyc(path: Path) -> Path:
    return path.parent / "__pycache__" / f"{path.stem}.{sys.implementation.cache_tag}.pyc"


def _child(tree: Path, args: list, timeout: float) -> tuple:
    """``(returncode or None on timeout, stdout, seconds)`` of this script's child mode on ``tree``
    (a nonzero return code: stdout ends with the last line of the child's stderr)."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", LDP_PLUGIN_STATE=str(tree / "state"))
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, str(HERE), "--child", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=str(tree))
    except subprocess.TimeoutExpired:
        return None, "", time.perf_counter() - t0
    err = p.stderr.strip().splitlines()[-1:] if p.returncode else []
    return p.returncode, p.stdout + "".join("\n" + e for e in err), time.perf_counter() - t0


class Worker:
    """One copy of the tree; a mutant is written into it, run, and the original restored."""

    def __init__(self, tree: Path):
        self.tree = tree

    def run(self, mutant: Mutant, child_args: list, timeout: float) -> tuple:
        path = self.tree / mutant.rel
        original = path.read_text(encoding="utf-8")
        try:
            path.write_text(mutant.apply(original), encoding="utf-8")
            _pyc(path).unlink(missing_ok=True)
            return _child(self.tree, child_args, timeout)
        finally:
            path.write_text(original, encoding="utf-8")
            _pyc(path).unlink(missing_ok=True)


# -- the child modes (run inside a copy) --------------------------------------------------------------
def _units() -> tuple:
    """``(registry, ordered unit names)``: every registered name as ``ldp verify`` runs it, then the
    wrappers the full run adds."""
    reg = _registry_of(True)
    return reg, sorted(reg) + [f"wrapper:{w}" for w in dict.fromkeys(n for n, _ in wrapper_instances())]


def _run_unit(unit: str, reg: dict, names: list, seed: int) -> list:
    """The rows the full ``ldp verify --quick --seed SEED`` produces for ``unit`` (same seed, same
    α share as in the full run)."""
    share = FAMILY_ALPHA / len(names)
    if unit.startswith("wrapper:"):
        rows = []
        for j, (wname, mech) in enumerate(wrapper_instances()):
            if f"wrapper:{wname}" == unit:
                rows.append(verify_instance(mech, name=wname, instance=mech.params(), seed=seed + 7_000_001 * (j + 1), quick=True, alpha=share))
        return rows
    return verify_name(reg[unit], seed=seed + 1_000_003 * names.index(unit), quick=True, alpha=share)


def _check_imported_from(tree: str) -> None:
    if not Path(ldp_plugin.__file__).resolve().is_relative_to(Path(tree).resolve()):
        print(json.dumps({"error": "ImportedElsewhere", "where": ldp_plugin.__file__}))
        sys.exit(4)


def child_reach(tree: str, seed: int, out: str) -> None:
    """Run every unit under coverage.py with one dynamic context per unit: its executed lines and time."""
    _check_imported_from(tree)
    reg, units = _units()
    names = sorted(reg)
    files = [str(Path(tree) / rel) for rel in target_modules_copy(Path(tree)).values()]
    cov = coverage.Coverage(data_file=None, include=files, config_file=False)
    seconds = {}
    cov.start()
    for unit in units:
        cov.switch_context(unit)
        t0 = time.perf_counter()
        rows = _run_unit(unit, reg, names, seed)
        seconds[unit] = time.perf_counter() - t0
        if not all(r["passed"] for r in rows):
            print(json.dumps({"error": "UnmutatedFails", "where": unit}))
    cov.stop()
    data = cov.get_data()
    lines: dict = {u: {} for u in units}
    for f in data.measured_files():
        rel = str(Path(f).resolve().relative_to(Path(tree).resolve()))
        for line, ctxs in data.contexts_by_lineno(f).items():
            for c in ctxs:
                if c in lines:
                    lines[c].setdefault(rel, []).append(line)
    Path(out).write_text(json.dumps({"seconds": seconds, "lines": lines, "imported_from": ldp_plugin.__file__}))


def child_verify(tree: str, units: list, seed: int) -> None:
    """Run ``units`` in order; stop at the first failing row. Prints one JSON line."""
    _check_imported_from(tree)
    reg, all_units = _units()
    names = sorted(reg)
    for unit in units:
        try:
            rows = _run_unit(unit, reg, names, seed)
        except Exception as e:  # an exception out of the verifier: the run fails
            tb = traceback.extract_tb(e.__traceback__)
            where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if str(tree) in f.filename), "")
            print(json.dumps({"passed": False, "unit": unit, "error": type(e).__name__, "where": where}))
            return
        bad = [r for r in rows if not r["passed"]]
        if bad:
            print(json.dumps({"passed": False, "unit": unit, "failed": [[r["name"], str(r["instance"]), failed_layers(r) or ["edge"]] for r in bad[:3]]}))
            return
    print(json.dumps({"passed": True}))


def _digest(obj) -> str:
    """A stable digest of numbers, arrays, Fractions, dataclasses and containers (floats by bits)."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, np.ndarray):
            h.update(f"nd{x.dtype}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes() if x.dtype != object else repr(x.tolist()).encode())
        elif isinstance(x, (float, np.floating)):
            h.update(float(x).hex().encode())
        elif isinstance(x, (bool, int, np.integer, Fraction, str, bytes, type(None))):
            h.update(repr(x).encode())
        elif isinstance(x, dict):
            for k in sorted(x, key=repr):
                feed(k)
                feed(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        elif dataclasses.is_dataclass(x):
            h.update(type(x).__name__.encode())
            for f in dataclasses.fields(x):
                feed(f.name)
                feed(getattr(x, f.name))
        elif hasattr(x, "__dict__"):
            h.update(type(x).__name__.encode())
            feed({k: v for k, v in vars(x).items() if not k.startswith("_")})
        else:
            h.update(repr(x).encode())

    feed(obj)
    return h.hexdigest()[:16]


def _guard(f):
    try:
        return _digest(f())
    except Exception as e:  # a mutant that raises where the original does not differs
        return f"raises {type(e).__name__}"


def _client_component(mech) -> str:
    try:
        return _digest(client_channel(mech, total_leaves=20_000))
    except NotEnumerable:
        return "seeded " + _digest([mech.sample_verification_outputs(x, 256, SeededRandomSource(1000 + x))
                                    for x in range(min(mech.verification_input_count(), 64))])


def _entry_component(mech, i: int, case) -> str:
    label, m, make, keyed, expected, x = case
    width = len(mech.channel().outputs)

    def run(n, src):
        return m.output_index(_randomize(m, make(n), n, src, keyed))

    if _seed_fields(m):
        return "seeded " + _digest(m._to_columns(_randomize(m, make(256), 256, SeededRandomSource(500 + i), keyed)))
    try:
        e = enumerate_client(run, width, max_rows=1 << 15, replicates=1024, seed=i)
        return _digest(e["rows"])
    except (NotEnumerable, OutsideChannel) as err:
        return f"{type(err).__name__} seeded " + _digest(run(512, SeededRandomSource(500 + i)))


def fingerprint(mech, *, full: bool, reports_file: Path) -> dict:
    """The components of the module docstring's equivalence test for one instance."""
    out = {"declared": _guard(lambda: (mech.channel().outputs, mech.channel().matrix))}
    if not full:
        return out
    out["client"] = _guard(lambda: _client_component(mech))
    # the real sampler primitives on fixed seeds (the replay above answers the sampling API itself)
    out["real source"] = _guard(lambda: [mech.sample_verification_outputs(x, 256, SeededRandomSource(2000 + x))
                                         for x in range(min(mech.verification_input_count(), 64))])
    try:
        cases = entry_cases(mech)
    except Exception as e:
        cases = []
        out["entry"] = f"raises {type(e).__name__}"
    for i, case in enumerate(cases):
        out[f"entry {case[0]}"] = _guard(lambda: _entry_component(mech, i, case))
        out[f"one+wire {case[0]}"] = _guard(lambda: _one_and_wire(case[1], case[2], case[3], 4242 + i, replicates=4))
    if cases:
        label, m, make, keyed, expected, x = cases[0]
        if not reports_file.exists():  # the original's reports: the fixed batch every mutant's server reads
            try:
                reports_file.write_bytes(pickle.dumps(_randomize(m, make(400), 400, SeededRandomSource(77), keyed)))
            except Exception as e:
                reports_file.write_bytes(pickle.dumps(f"raises {type(e).__name__}"))
        out["estimate"] = _guard(lambda: m.estimate(pickle.loads(reports_file.read_bytes())))
        out["estimate none"] = _guard(lambda: m.estimate(pickle.loads(reports_file.read_bytes()), postprocess="none"))
    return out


def _instances(unit: str, reg: dict, names: list, seed: int) -> list:
    """``(key, mechanism, full)`` of every instance the quick run builds for ``unit``."""
    if unit.startswith("wrapper:"):
        return [(f"{unit}#{j}", m, True) for j, (n, m) in enumerate(wrapper_instances()) if f"wrapper:{n}" == unit]
    decl = reg[unit]
    cls = decl.mechanism_class()
    out = [(f"{unit}#c{i}", cls(**inst), True) for i, inst in enumerate(decl.canonical)]
    s = seed + 1_000_003 * names.index(unit)
    out += [(f"{unit}#r{j}", m, True) for j, (inst, m) in enumerate(random_instances(decl, seed=s, count=DRAWS_QUICK))]
    out += [(f"{unit}#e{j}", m, False) for j, (inst, m, edge) in enumerate(edge_instances(decl)[0])]
    return out


def child_fingerprint(tree: str, units: list, seed: int, reports_dir: str) -> None:
    _check_imported_from(tree)
    reg, _ = _units()
    names = sorted(reg)
    out = {}
    for unit in units:
        try:
            insts = _instances(unit, reg, names, seed)
        except Exception as e:
            out[unit] = f"raises {type(e).__name__}"
            continue
        for key, mech, full in insts:
            out[key] = fingerprint(mech, full=full, reports_file=Path(reports_dir) / (hashlib.sha1(key.encode()).hexdigest()[:12] + ".pkl"))
    print(json.dumps(out))


# -- the driver ----------------------------------------------------------------------------------------
def reached_units(m: Mutant, reach: dict) -> list:
    """The units that reach ``m`` (module docstring), fastest first."""
    lines = set(range(m.line, m.end_line + 1))
    units = []
    for unit, files in reach["lines"].items():
        ran = files.get(m.rel)
        if ran and (m.at_import or lines & set(ran)):
            units.append(unit)
    return sorted(units, key=lambda u: reach["seconds"][u])


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.workdir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.out = Path(args.out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.fp_lock = threading.Lock()
        self.original_fp: dict = {}

    def tree(self, name: str) -> Path:
        dest = self.work / name
        if not (dest / "ldp_plugin").is_dir():
            tmp = self.work / (name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            make_copy(tmp)
            tmp.rename(dest)
        return dest

    def reach(self) -> dict:
        path = self.work / f"reach-seed{self.args.seed}.json"
        if not path.exists():
            base = self.tree("base")
            print(f"recording the reach of every unit (one unmutated quick run under coverage) in {base} ...", flush=True)
            rc, out, sec = _child(base, ["reach", str(base), str(self.args.seed), str(path)], timeout=3600)
            if rc != 0 or not path.exists():
                raise SystemExit(f"the reach run failed ({rc}): {out[-3000:]}")
            print(out.strip() or f"reach recorded in {sec:.0f} s", flush=True)
        return json.loads(path.read_text())

    def original_fingerprints(self, units: list) -> dict:
        """The original's fingerprints of ``units`` (computed once, in one child, and kept on disk)."""
        with self.lock:
            missing = [u for u in units if u not in self.original_fp]
        if missing:
            with self.fp_lock:
                path = self.work / f"fingerprints-v2-seed{self.args.seed}.json"
                known = json.loads(path.read_text()) if path.exists() else {}
                todo = [u for u in missing if u not in known]
                if todo:
                    rc, out, _ = _child(self.tree("base"), ["fingerprint", str(self.tree("base")), str(self.args.seed), str(self.work / "reports"), *todo], timeout=7200)
                    if rc != 0:
                        raise RuntimeError(f"fingerprint of the original {todo} failed: {out[-2000:]}")
                    got = json.loads(out.strip().splitlines()[-1])
                    for u in todo:
                        known[u] = {k: v for k, v in got.items() if k == u or k.startswith(u + "#")}
                    path.write_text(json.dumps(known))
                with self.lock:
                    self.original_fp.update({u: known[u] for u in missing})
        out: dict = {}
        for u in units:
            out.update(self.original_fp[u])
        return out

    def one(self, worker: Worker, m: Mutant, reach: dict) -> dict:
        rec = {"key": m.key, "module": m.module, "line": m.line, "operator": m.operator, "new": m.new[:120], "at_import": m.at_import}
        units = reached_units(m, reach)
        rec["units"] = len(units)
        if not units:
            return {**rec, "status": "not reached"}
        timeout = 60 + 6 * sum(reach["seconds"][u] for u in units)
        rc, out, sec = worker.run(m, ["verify", str(worker.tree), str(self.args.seed), *units], timeout)
        rec["seconds"] = round(sec, 1)
        if rc is None:
            return {**rec, "status": "killed", "how": f"timeout after {timeout:.0f} s"}
        try:
            res = json.loads(out.strip().splitlines()[0])
        except (ValueError, IndexError):
            res = {"passed": False, "error": f"exit {rc}", "where": out.strip()[-200:]}
        if res.get("error") == "ImportedElsewhere":
            raise SystemExit(f"the child imported ldp_plugin from {res['where']}, not from the copy")
        if not res.get("passed"):
            how = f"error {res['error']} at {res.get('where', '')}" if "error" in res else f"failed {res.get('failed')}"
            layers = sorted({x for f in res.get("failed", []) for x in f[2]}) or ["error"]
            return {**rec, "status": "killed", "how": how, "by": res.get("unit"), "layers": layers}
        (self.work / "reports").mkdir(exist_ok=True)
        original = self.original_fingerprints(units)
        rc, out, _ = worker.run(m, ["fingerprint", str(worker.tree), str(self.args.seed), str(self.work / "reports"), *units], max(timeout, 900))
        if rc != 0:
            return {**rec, "status": "survived", "equivalent": False, "differs": f"fingerprint run {'timed out' if rc is None else 'failed'}"}
        mutant = json.loads(out.strip().splitlines()[-1])
        differs = []
        for key, comps in original.items():
            mine = mutant.get(key)
            if not isinstance(comps, dict) or not isinstance(mine, dict):
                if comps != mine:
                    differs.append(f"{key}: instance")
                continue
            differs += [f"{key}: {c}" for c, v in comps.items() if mine.get(c) != v]
        return {**rec, "status": "survived", "equivalent": not differs, "differs": differs[:4]}

    def run(self) -> None:
        base = self.tree("base")
        reach = self.reach()
        mutants = sample_mutants(all_mutants(base), self.args.mutants, self.args.seed, base)
        done = set()
        if self.out.exists():
            done = {json.loads(x)["key"] for x in self.out.read_text().splitlines() if x.strip()}
        todo = [m for m in mutants if m.key not in done]
        print(f"{len(mutants)} mutants sampled (seed {self.args.seed}), {len(todo)} to run, {self.args.jobs} workers", flush=True)
        for i in range(self.args.jobs):  # a run stopped mid-mutant leaves its copy mutated: fresh copies
            shutil.rmtree(self.work / f"w{i}", ignore_errors=True)
        workers = [Worker(self.tree(f"w{i}")) for i in range(self.args.jobs)]
        free = list(workers)
        cv = threading.Condition()

        def task(m):
            with cv:
                while not free:
                    cv.wait()
                w = free.pop()
            try:
                rec = self.one(w, m, reach)
            except Exception as e:
                rec = {"key": m.key, "module": m.module, "line": m.line, "operator": m.operator, "status": "harness error", "how": repr(e)[:300]}
            finally:
                with cv:
                    free.append(w)
                    cv.notify()
            with self.lock:
                with self.out.open("a") as f:
                    f.write(json.dumps(rec) + "\n")
                label = rec["status"] if rec["status"] != "survived" else ("equivalent" if rec["equivalent"] else "SURVIVED")
                print(f"{label:<12} {m.module}:{m.line} {m.operator} {rec.get('how', rec.get('differs', ''))!s:.100}", flush=True)

        with ThreadPoolExecutor(self.args.jobs) as ex:
            list(ex.map(task, todo))
        summarize(self.out, [m.key for m in mutants])


def _layers_of(how: str) -> list:
    """The failing layers named in a ``how`` text (records written before ``layers`` was kept)."""
    if not how.startswith("failed "):
        return ["error" if how.startswith("error") else how.split(" ")[0]]
    try:
        return sorted({x for f in ast.literal_eval(how[len("failed "):]) for x in f[2]})
    except (ValueError, SyntaxError):
        return ["?"]


def _equivalence_evidence(recs: list, workdir: Path | None) -> tuple:
    """``(exact, seeded, unshown)``: equivalent mutants whose reached instances were all compared
    exactly; those where some component was compared by outputs on fixed seeds; and mutants of a
    sampler primitive whose originals were fingerprinted without the real-source component (needs the
    work directory's reach and fingerprints; zeros without them)."""
    workdir = Path(workdir or os.path.join(tempfile.gettempdir(), "ldp-mutation"))
    reach_files, fp = sorted(workdir.glob("reach-seed*.json")), sorted(workdir.glob("fingerprints-v2-seed*.json"))
    if not reach_files or not fp:
        return 0, 0, 0
    reach, prints = json.loads(reach_files[0].read_text()), json.loads(fp[0].read_text())
    targets = target_modules()
    exact = seeded = unshown = 0
    for r in recs:
        if r["status"] != "survived" or not r["equivalent"]:
            continue
        mod, line, col, end_line, end_col, op, new = r["key"].split(":", 6)
        m = Mutant(mod, targets[mod], int(line), int(col), int(end_line), int(end_col), op, new, r["at_import"])
        comps = [v for u in reached_units(m, reach) for inst in prints.get(u, {}).values() if isinstance(inst, dict) for v in inst.values()]
        real = all("real source" in inst for u in reached_units(m, reach) for inst in prints.get(u, {}).values() if isinstance(inst, dict))
        if _group(mod) == "sampling" and not real:
            unshown += 1  # a sampler primitive, compared before the real-source component existed
        elif any(str(v).startswith(("seeded", "NotEnumerable", "OutsideChannel")) for v in comps):
            seeded += 1
        else:
            exact += 1
    return exact, seeded, unshown


def summarize(path: Path, keys: list | None = None, workdir: Path | None = None) -> dict:
    """Counts, the score and the surviving non-equivalent mutants of a results file."""
    recs = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    if keys is not None:
        keep = set(keys)
        recs = [r for r in recs if r["key"] in keep]
    c = Counter(r["status"] if r["status"] != "survived" else ("equivalent" if r["equivalent"] else "survived, changes a channel") for r in recs)
    killed, live = c["killed"], c["survived, changes a channel"]
    score = killed / (killed + live) if killed + live else float("nan")
    blind = sorted((r for r in recs if r["status"] == "survived" and not r["equivalent"]), key=lambda r: (r["module"], r["line"]))
    print(f"\n{len(recs)} mutants: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    print(f"mutation score = killed / (killed + surviving non-equivalent) = {killed}/{killed + live} = {100 * score:.1f}%")
    unreached = c["not reached"]
    if killed + live + unreached:
        print(f"counting the not-reached mutants as survivors (a lower bound): {killed}/{killed + live + unreached} = "
              f"{100 * killed / (killed + live + unreached):.1f}%")
    kinds = Counter(r.get("how", "").split(" ")[0] for r in recs if r["status"] == "killed")
    print("killed by: " + ", ".join(f"{k} {v}" for k, v in kinds.items()))
    layers = Counter(x for r in recs if r["status"] == "killed" for x in r.get("layers") or _layers_of(r.get("how", "")))
    print("layers with a failing row (a mutant can fail several): " + ", ".join(f"{k} {v}" for k, v in layers.most_common()))
    groups: dict = {}
    for r in recs:
        st = r["status"] if r["status"] != "survived" else ("equivalent" if r["equivalent"] else "surviving")
        groups.setdefault(_group(r["module"]), Counter())[st] += 1
    for g, cnt in sorted(groups.items()):
        print(f"  {g:<11} " + ", ".join(f"{k} {v}" for k, v in sorted(cnt.items())))
    exact, seeded, unshown = _equivalence_evidence(recs, workdir)
    if exact + seeded + unshown:
        print(f"equivalent: {exact} by exact channels only; {seeded} with some instance compared by fixed-seed outputs "
              f"(a client that cannot be enumerated); {unshown} sampler-primitive mutants not compared on the real source")
    if blind:
        print("surviving non-equivalent mutants (blind spots):")
        for r in blind:
            print(f"  {r['module']}:{r['line']} {r['operator']} -> {r['new'][:70]}  [{'; '.join(r['differs'])[:110]}]")
    return {"counts": dict(c), "score": score, "blind_spots": [f"{r['module']}:{r['line']} {r['operator']}" for r in blind]}


def main(argv=None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        mode, tree, seed, *rest = argv[1:]
        if mode == "reach":
            child_reach(tree, int(seed), rest[0])
        elif mode == "verify":
            child_verify(tree, rest, int(seed))
        elif mode == "fingerprint":
            child_fingerprint(tree, rest[1:], int(seed), rest[0])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mutants", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mutation.jsonl"))
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "ldp-mutation"))
    p.add_argument("--summary", action="store_true", help="only summarize --out")
    args = p.parse_args(argv)
    if args.summary:
        summarize(Path(args.out))
        return
    t0 = time.perf_counter()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores", flush=True)
    Bench(args).run()
    print(f"wall time {time.perf_counter() - t0:.0f} s")


def target_modules_copy(tree: Path) -> dict:
    """The privacy-path modules of the copy in ``tree``, as paths relative to it."""
    out = {}
    for m, p in sorted(privacy_path_modules().items()):
        if m not in UNTRACEABLE:
            out[m] = str(Path(p).resolve().relative_to(Path(tree).resolve()))
    return out


if __name__ == "__main__":
    main()
