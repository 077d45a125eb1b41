"""Guard tests: the layering ARCHITECTURE.md documents, checked on the code (issue 33).

An AST scan of every module of the package (``ldp_plugin/``, ``adapters/`` and ``registry/``, which
install as ``ldp_plugin.adapters`` / ``ldp_plugin.registry``) collects every ``ldp_plugin`` import,
at module level AND inside functions, and checks:

1. **layers**: a module imports only from its own layer or the layers below (:data:`LAYERS`, bottom
   first; the same table is drawn in ARCHITECTURE.md);
2. **cycles**: no cycle among module-level imports (a strongly connected component of more than
   one module), whatever the layers;
3. **function-local imports**: an ``ldp_plugin`` import inside a function only in the CLI's command
   table (one lazy import per command) and the optional-extra modules (Flower, Dask, numba, ...).

Each guard is shown to fail on a violation planted in a temporary copy of the source tree. There
is no allow-list: a violation is fixed in the code.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
import polars as pl

import ldp_plugin as ldp
import ldp_plugin.adapters  # noqa: F401  (registers the ldp namespace)
from ldp_plugin.mechanisms import reports
from ldp_plugin.mechanisms.base import MechanismBase

from ._helpers import registry_instances

ROOT = Path(__file__).resolve().parent.parent
#: source directories and the package each installs as (pyproject's package-dir)
SOURCES = {"ldp_plugin": "ldp_plugin", "adapters": "ldp_plugin.adapters", "registry": "ldp_plugin.registry"}

#: bottom first. A module belongs to the layer of its longest matching prefix; it may import from
#: its own layer and every layer below, never above.
LAYERS = [
    ("leaves", ["ldp_plugin._errors", "ldp_plugin._extras", "ldp_plugin._validation", "ldp_plugin.exact", "ldp_plugin.progress",
                "ldp_plugin.hashing", "ldp_plugin.theory", "ldp_plugin._boundary", "ldp_plugin.pictures"]),
    ("sampling", ["ldp_plugin.sampling"]),
    ("estimation", ["ldp_plugin.estimation"]),
    ("mechanisms", ["ldp_plugin.mechanisms", "ldp_plugin.sets"]),
    ("measurements", ["ldp_plugin.measurements", "ldp_plugin.verification"]),
    ("amplification", ["ldp_plugin.amplification"]),
    ("accountant", ["ldp_plugin.accountant"]),
    ("registry", ["ldp_plugin.registry"]),
    ("robust", ["ldp_plugin.robust"]),
    ("services", ["ldp_plugin.persist", "ldp_plugin.choose", "ldp_plugin.simulate", "ldp_plugin.discovery"]),
    ("adapters", ["ldp_plugin.adapters", "ldp_plugin.federated"]),
    ("system verification", ["ldp_plugin.verification.system"]),  # drives the federated runtime it verifies
    ("executors", ["ldp_plugin.executors", "ldp_plugin.verification.executors"]),  # the executors layer drives them
    ("jobs", ["ldp_plugin.collect"]),
    ("cli", ["ldp_plugin.cli", "ldp_plugin.verification.workflows", "ldp_plugin.verification.user_paths"]),  # the command line's paths, run as a user runs them
    ("face", ["ldp_plugin", "ldp_plugin._deprecated"]),  # the public face (lazy) and its warned old paths; nothing imports it
]

#: modules whose function-local ``ldp_plugin`` imports are the point: the CLI's command table
#: (one lazy import per command) and the optional extras (Flower, numba kernels, the AES source)
LOCAL_IMPORTS_ALLOWED = {"ldp_plugin.cli",  # the command table (COMMANDS: one import per command)
                         "ldp_plugin.federated.app", "ldp_plugin.sampling.kernels", "ldp_plugin.sampling.numba_kernels", "ldp_plugin.sampling.cipher"}

@functools.lru_cache(maxsize=None)
def _parse_text(text: str) -> ast.Module:
    return ast.parse(text)


def _parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per distinct source text (the guards and their planted
    copies read the same files many times; the trees are only read, never changed)."""
    return _parse_text(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _nodes_of_text(text: str) -> tuple:
    return tuple(ast.walk(_parse_text(text)))


def _nodes(path: Path) -> tuple:
    """Every node of the module's tree (``ast.walk`` order), computed once per distinct source text."""
    return _nodes_of_text(path.read_text(encoding="utf-8"))


def _module_name(src: str, rel: Path) -> str:
    parts = [SOURCES[src], *rel.with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan(root: Path) -> tuple[dict, dict]:
    """``(modules, imports)``: every module's path, and per module the list of
    ``(target module, line, function_level)`` of its ``ldp_plugin`` imports."""
    modules = {}
    for src in SOURCES:
        for path in sorted((root / src).rglob("*.py")):
            modules[_module_name(src, path.relative_to(root / src))] = path
    imports = defaultdict(list)
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = _parse(path)

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue  # annotations only: not a runtime import
                fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                        target = ".".join(base + ([child.module] if child.module else []))
                    else:
                        target = child.module or ""
                    for alias in child.names:  # `from pkg import module` imports the module
                        full = f"{target}.{alias.name}"
                        _record(imports, mod, full if full in modules else target, child.lineno, fn)
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        _record(imports, mod, alias.name, child.lineno, fn)
                visit(child, fn)

        visit(tree, False)
    return modules, imports


def _record(imports: dict, mod: str, target: str, line: int, fn: bool) -> None:
    if (target == "ldp_plugin" or target.startswith("ldp_plugin.")) and target != mod:
        imports[mod].append((target, line, fn))


def layer_of(mod: str) -> int:
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise AssertionError(f"module {mod} is in no layer: add it to LAYERS (and ARCHITECTURE.md)")
    return best


def upward_imports(imports: dict) -> list:
    """Every import of a higher layer (module or function level)."""
    out = []
    for mod, targets in imports.items():
        for target, line, fn in targets:
            if layer_of(target) > layer_of(mod):
                out.append(f"{mod}:{line} imports {target} ({LAYERS[layer_of(mod)][0]} -> {LAYERS[layer_of(target)][0]}"
                           f"{', inside a function' if fn else ''})")
    return out


def module_cycles(imports: dict) -> list:
    """Strongly connected components (> 1 module) of the module-level import graph (Tarjan)."""
    graph = {m: sorted({t for t, _, fn in ts if not fn}) for m, ts in imports.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def local_imports(imports: dict) -> list:
    """Function-local ``ldp_plugin`` imports outside the CLI table and the optional extras."""
    return [f"{mod}:{line} imports {target} inside a function"
            for mod, targets in imports.items() if mod not in LOCAL_IMPORTS_ALLOWED
            for target, line, fn in targets if fn]


# -- the guards on the real tree -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tree():
    return scan(ROOT)


def test_every_module_is_in_a_layer(tree):
    modules, _ = tree
    for mod in modules:
        layer_of(mod)


def test_no_upward_import(tree):
    _, imports = tree
    assert upward_imports(imports) == []


def test_no_module_level_import_cycle(tree):
    _, imports = tree
    assert module_cycles(imports) == []


def test_function_local_imports_only_in_the_cli_table_and_optional_extras(tree):
    _, imports = tree
    assert local_imports(imports) == []


def test_the_exempt_modules_exist(tree):
    """The modules allowed function-local imports still exist (a moved one must be renamed here)."""
    modules, _ = tree
    assert LOCAL_IMPORTS_ALLOWED <= set(modules), sorted(LOCAL_IMPORTS_ALLOWED - set(modules))


def top_level_modules(root: Path) -> list:
    return sorted(p.name for p in (root / "ldp_plugin").glob("*.py"))


def late_imports(root: Path) -> list:
    """Every ``noqa: E402`` (an import below code: e.g. a bottom-of-file re-export hiding a cycle)."""
    return [f"{path.relative_to(root)}:{i}" for src in SOURCES for path in sorted((root / src).rglob("*.py"))
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "noqa: E402" in line]


def test_top_level_is_small():
    """``ldp_plugin/`` keeps at most 16 top-level modules; the rest live in packages by role."""
    assert len(top_level_modules(ROOT)) <= 16, top_level_modules(ROOT)


def test_no_late_imports():
    assert late_imports(ROOT) == []


# -- each guard fails on a planted violation (a temporary copy of the source tree) ------------------------
@pytest.fixture
def copy(tmp_path):
    for src in SOURCES:
        shutil.copytree(ROOT / src, tmp_path / src, ignore=shutil.ignore_patterns("__pycache__", "*.toml", "names.lock"))
    return tmp_path


def _plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_layer_guard_catches_a_planted_upward_import(copy):
    _plant(copy / "ldp_plugin" / "mechanisms" / "reports.py", "\nfrom ..accountant import Accountant\n")
    _plant(copy / "ldp_plugin" / "mechanisms" / "channel.py", "\n\ndef _late():\n    from ..collect import run_job\n    return run_job\n")
    found = upward_imports(scan(copy)[1])
    assert any(f.startswith("ldp_plugin.mechanisms.reports:") and "ldp_plugin.accountant" in f for f in found)
    assert any(f.startswith("ldp_plugin.mechanisms.channel:") and "inside a function" in f for f in found)
    assert len(found) == 2


def test_cycle_guard_catches_a_planted_cycle(copy):
    # protocol is imported by base; base imported back: a cycle inside one layer (no upward arrow)
    _plant(copy / "ldp_plugin" / "mechanisms" / "protocol.py", "\nfrom . import base\n")
    _, imports = scan(copy)
    assert upward_imports(imports) == []
    cycles = module_cycles(imports)
    assert cycles and any({"ldp_plugin.mechanisms.protocol", "ldp_plugin.mechanisms.base"} <= set(c) for c in cycles)


def test_local_import_guard_catches_a_planted_function_local_import(copy):
    _plant(copy / "ldp_plugin" / "mechanisms" / "subset.py", "\n\ndef _lazy():\n    from ..theory import k_star\n    return k_star\n")
    found = local_imports(scan(copy)[1])
    assert found == [f for f in found if f.startswith("ldp_plugin.mechanisms.subset:")] and len(found) == 1


def test_mechanism_core_is_small():
    """The core protocol has at most 16 members; capabilities are separate protocols."""
    from ldp_plugin.mechanisms.protocol import Mechanism

    core = {n for n in vars(Mechanism) if not n.startswith("_")} | set(getattr(Mechanism, "__annotations__", {}))
    assert len(core) <= 16, sorted(core)
    assert {"randomize", "randomize_encoded", "randomize_one", "report_fields", "spec", "estimate_from"} <= core


def test_size_and_late_import_guards_catch_planted_violations(copy):
    for i in range(17 - len(top_level_modules(copy))):
        (copy / "ldp_plugin" / f"_planted_{i}.py").write_text("X = 1\n", encoding="utf-8")
    assert len(top_level_modules(copy)) == 17
    _plant(copy / "ldp_plugin" / "mechanisms" / "channel.py", "\nfrom .reports import ReportField  # noqa: E402\n")
    assert late_imports(copy) and all(h.startswith("ldp_plugin/mechanisms/channel.py:") for h in late_imports(copy))


def test_one_make_then_pair_per_registered_name():
    """``measurements.py`` has one generated ``make_X, then_X`` pair, exported, per registered name
    whose declaration names ``make_X`` (keyed names: ``make_longitudinal``; a new name may start
    with the generic ``make_ldp`` and get its pair later: class, declaration and lock line suffice)."""
    import ldp_plugin.measurements as m
    from ldp_plugin.registry import KINDS, load_registry

    for name, decl in sorted(load_registry(kinds=KINDS).items()):
        ident = name.replace("-", "_")
        if decl.kind == "longitudinal":
            assert not hasattr(m, "make_" + ident) and decl.measurement.endswith(":make_longitudinal"), name
            continue
        if decl.measurement == "ldp_plugin.measurements:make_ldp":
            continue
        assert callable(getattr(m, decl.measurement.rpartition(":")[2])), name
        make, then = getattr(m, "make_" + ident), getattr(m, "then_" + ident)
        assert make.__name__ == "make_" + ident and then.__name__ == "then_" + ident
        assert {"make_" + ident, "then_" + ident} <= set(m.__all__), name


def class_switches(root: Path) -> list:
    """``isinstance``/``issubclass`` tests on a mechanism class outside ``ldp_plugin/mechanisms/``
    (a consumer asks a declared capability — the Protocols of ``mechanisms/protocol.py`` — or a
    method, never the class)."""
    mech_dir = root / "ldp_plugin" / "mechanisms"
    protocols = {n.name for n in _parse(mech_dir / "protocol.py").body if isinstance(n, ast.ClassDef)}
    classes = {n.name for p in mech_dir.rglob("*.py") for n in _nodes(p)
               if isinstance(n, ast.ClassDef)} - protocols
    out = []
    for src in SOURCES:
        for path in sorted((root / src).rglob("*.py")):
            if mech_dir in path.parents:
                continue
            for node in _nodes(path):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass") and len(node.args) == 2:
                    named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                    if named & classes:
                        out.append(f"{path.relative_to(root)}:{node.lineno} tests {sorted(named & classes)}")
    return out


def test_no_switch_on_mechanism_classes_outside_mechanisms():
    assert class_switches(ROOT) == []


def test_class_switch_guard_catches_a_planted_switch(copy):
    _plant(copy / "ldp_plugin" / "simulate.py", "\n\ndef _kind(m):\n    return isinstance(m, (KRR, ldp_mechanisms.OUE))\n")
    found = class_switches(copy)
    assert len(found) == 1 and found[0].startswith("ldp_plugin/simulate.py:") and "KRR" in found[0] and "OUE" in found[0]


# -- one path per concern: no alias methods, no import through a re-export ------------------------------
def _module_names(tree: ast.Module) -> tuple:
    """``(defined, imported)`` top-level names of a module."""
    defined, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in tree.body:
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If) and node in tree.body:  # names defined under a top-level condition
            defined |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            defined |= {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and node in tree.body:
            imported |= {a.asname or a.name for a in node.names}
    return defined, imported


#: the public face and its old paths import through their packages' faces by design (handled there)
FACE_MODULES = {"ldp_plugin", "ldp_plugin._compat"}


def reexport_imports(root: Path) -> list:
    """``from M import name`` inside the library where ``M`` is a plain module (not a package's
    ``__init__``, the one place a name is re-exported) that does not define ``name`` itself: the
    import goes through a re-export, which must name the module that defines it instead."""
    modules, _ = scan(root)
    trees = {m: _parse(p) for m, p in modules.items()}
    names = {m: _module_names(t) for m, t in trees.items()}
    out = []
    for mod, tree in trees.items():
        if mod in FACE_MODULES:
            continue
        package = mod if modules[mod].name == "__init__.py" else mod.rpartition(".")[0]
        for node in tree.body:
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in modules or modules[target].name == "__init__.py":
                continue
            for alias in node.names:
                defined, imported = names[target]
                if f"{target}.{alias.name}" not in modules and alias.name not in defined and alias.name in imported:
                    out.append(f"{mod}:{node.lineno} imports {alias.name} through {target}")
    return out


def test_no_import_through_a_reexport():
    assert reexport_imports(ROOT) == []


def test_reexport_guard_catches_a_planted_reexport_import(copy):
    _plant(copy / "ldp_plugin" / "mechanisms" / "wheel.py", "\nfrom ._base import Channel as _Channel\n")
    found = reexport_imports(copy)
    assert len(found) == 1 and found[0].startswith("ldp_plugin.mechanisms.wheel:") and "Channel through ldp_plugin.mechanisms._base" in found[0]


def alias_methods(classes) -> list:
    """Methods of the mechanism classes named after a free codec of ``mechanisms/reports.py``: the
    codec has ONE path, the free function."""
    codecs = {n for n in reports.__all__ if callable(getattr(reports, n)) and not isinstance(getattr(reports, n), type)}
    return sorted(f"{c.__name__}.{n}" for c in classes for k in c.__mro__ for n in vars(k) if n in codecs)


def test_no_alias_methods_of_the_codecs():
    """Every registered name, the wrappers and the base."""
    assert alias_methods({MechanismBase} | {type(f()) for _, f in registry_instances()}) == []


def test_alias_guard_catches_a_planted_alias():
    class Planted(ldp.KRR):
        def to_wire(self, batch):
            return reports.to_wire(self, batch)

    assert alias_methods({MechanismBase, ldp.KRR, Planted}) == ["Planted.to_wire"]


# -- declared capabilities: no attribute probe of a mechanism outside mechanisms/ ----------------------
def library_nodes(root: Path, *, outside_mechanisms: bool = False):
    """``(path relative to root, node)`` for every AST node of the library (optionally outside
    ``ldp_plugin/mechanisms/``)."""
    mech_dir = root / "ldp_plugin" / "mechanisms"
    for src in SOURCES:
        for path in sorted((root / src).rglob("*.py")):
            if outside_mechanisms and mech_dir in path.parents:
                continue
            for node in _nodes(path):
                yield path.relative_to(root), node


#: the names a mechanism goes by in the library (a parameter, a local, an attribute: ``self.mechanism``)
MECHANISM_NAMES = {"mech", "mechanism", "m", "inner", "base", "wm", "q0", "padded", "word_mechanism"}


def mechanism_probes(root: Path) -> list:
    """``getattr``/``hasattr`` on a mechanism outside ``ldp_plugin/mechanisms/``: a consumer asks
    ``has(m, Capability)`` (or a member the core or a declared capability guarantees), never the shape."""
    out = []
    for rel, node in library_nodes(root, outside_mechanisms=True):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and node.args):
            continue
        target = node.args[0]
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        if name in MECHANISM_NAMES:
            out.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    return out


def test_no_attribute_probe_of_a_mechanism_outside_mechanisms():
    assert mechanism_probes(ROOT) == []


def test_probe_guard_catches_a_planted_probe(copy):
    _plant(copy / "ldp_plugin" / "simulate.py", "\n\ndef _keyed(mechanism):\n    return getattr(mechanism, 'needs_user_keys', False)\n")
    _plant(copy / "adapters" / "polars_frames.py", "\n\ndef _cohorts(self):\n    return hasattr(self.mechanism, 'cohorts')\n")
    found = mechanism_probes(copy)
    assert len(found) == 2 and {f.split(":")[0] for f in found} == {"adapters/polars_frames.py", "ldp_plugin/simulate.py"}


def capability_isinstance(root: Path) -> list:
    """``isinstance(x, Capability)`` anywhere in the library: the protocols are not runtime-checkable;
    the one answer is ``has(x, Capability)``."""
    caps = {n.name for n in _parse(root / "ldp_plugin" / "mechanisms" / "protocol.py").body
            if isinstance(n, ast.ClassDef) and n.name not in ("Mechanism", "InputKind")}
    out = []
    for rel, node in library_nodes(root):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass") and len(node.args) == 2:
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if named & caps:
                out.append(f"{rel}:{node.lineno} tests {sorted(named & caps)}")
    return out


def test_no_isinstance_on_a_capability():
    assert capability_isinstance(ROOT) == []


def test_capability_isinstance_guard_catches_a_planted_test(copy):
    _plant(copy / "ldp_plugin" / "federated" / "plan.py", "\n\ndef _keyed(m):\n    return isinstance(m, Keyed)\n")
    found = capability_isinstance(copy)
    assert len(found) == 1 and found[0].startswith("ldp_plugin/federated/plan.py:") and "Keyed" in found[0]


def test_polars_namespace_methods_are_in_the_class_body():
    """The ``ldp`` namespace is one class whose methods are all in its body (visible to IDEs and type
    checkers), registered on DataFrame and LazyFrame; nothing is attached after the class."""
    path = ROOT / "adapters" / "polars_namespace.py"
    tree = _parse(path)
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_LDPNamespace")
    methods = {n.name for n in body.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    attached = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets for a in ast.walk(t) if isinstance(a, ast.Attribute) and not ast.unparse(a).startswith("self.")]
    assert attached == []
    for frame in (pl.DataFrame({"x": [1]}), pl.LazyFrame({"x": [1]})):
        assert {m for m in dir(frame.ldp) if not m.startswith("_")} == methods


#: the modules other work owns this round (the public face and its old paths, the verification layers'
#: docstrings); each is cleaned by its owner
ISSUE_NUMBERS_PENDING: tuple = ()  # none left


def issue_numbers(root: Path) -> list:
    """``issue N`` in library code or docstrings (history belongs in git)."""
    out = []
    for src in SOURCES:
        for path in sorted((root / src).rglob("*.py")):
            rel = str(path.relative_to(root))
            if rel.startswith(ISSUE_NUMBERS_PENDING):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\bissues? \d+", line, re.IGNORECASE):
                    out.append(f"{rel}:{i}")
    return out


def test_no_issue_numbers_in_the_library():
    assert issue_numbers(ROOT) == []


def test_issue_number_guard_catches_a_planted_one(copy):
    _plant(copy / "ldp_plugin" / "theory.py", "\n# the bound of issue 12\n")
    assert [f.split(":")[0] for f in issue_numbers(copy)] == ["ldp_plugin/theory.py"]


def registered_names(root: Path) -> set:
    return {line.split("=", 1)[1].strip().strip('"') for p in (root / "registry").glob("*.toml")
            for line in p.read_text(encoding="utf-8").splitlines() if line.startswith("name = ")}


def name_switches(root: Path, names: set) -> list:
    """A comparison with a registered mechanism's name outside ``mechanisms/`` (``name == "orr"``,
    ``m.name in ("krr", ...)``): what differs by family is declared on the class and read from it."""
    out = []
    for rel, node in library_nodes(root, outside_mechanisms=True):
        if isinstance(node, ast.Compare):
            hit = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)} & names
            if hit:
                out.append(f"{rel}:{node.lineno} compares with {sorted(hit)}")
    return out


#: registered names that are also ordinary words of another vocabulary (a covariance model, a
#: distribution of simulated data): a comparison with them is not about a mechanism
HOMONYMS = {"hadamard", "geometric"}


def test_no_switch_on_registered_names_outside_mechanisms():
    assert name_switches(ROOT, registered_names(ROOT) - HOMONYMS) == []


def test_name_switch_guard_catches_a_planted_switch(copy):
    _plant(copy / "ldp_plugin" / "choose" / "__init__.py", "\n\ndef _g(m):\n    return 2 if m.name == 'loloha' else None\n")
    (copy / "registry" / "loloha.toml").write_text('name = "loloha"\n', encoding="utf-8")
    found = name_switches(copy, registered_names(copy) - HOMONYMS)
    assert len(found) == 1 and found[0].startswith("ldp_plugin/choose/__init__.py:") and "loloha" in found[0]
