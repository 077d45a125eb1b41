"""The public face: ``import ldp_plugin`` is light (no command line, no federated runtime, no optional
extra), ``__all__`` is one literal table whose every name resolves to its home module's object, the
Polars ``ldp`` namespace works though its implementation loads on first use, the old module paths
resolve only when asked and warn with their removal version, and no library module imports through
them."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import ldp_plugin
from ldp_plugin import _deprecated

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("ldp_plugin", "adapters", "registry")
#: third-party packages that only the parts using them may load (extras, or heavy and rarely needed)
HEAVY = ("scipy", "matplotlib", "dask", "distributed", "flwr", "numba", "cryptography", "nacl", "sklearn", "pandas")


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON document."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


LOADED = """
import json, sys
{setup}
mods = sorted(m for m in sys.modules if m == "ldp_plugin" or m.startswith("ldp_plugin."))
print(json.dumps({{"ldp": mods, "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def test_import_loads_neither_the_cli_nor_the_federated_runtime():
    got = _fresh(LOADED.format(setup="import ldp_plugin", heavy=HEAVY))
    mods = got["ldp"]
    assert [m for m in mods if m.startswith(("ldp_plugin.cli", "ldp_plugin.federated"))] == [], mods
    assert got["heavy"] == [], got["heavy"]
    # the count, listed: the face, its errors and its deprecation finder (everything else on first use)
    assert len(mods) <= 5, f"import ldp_plugin loads {len(mods)} modules: {mods}"


def test_first_use_loads_what_it_needs_and_still_no_cli_or_federated():
    setup = "import ldp_plugin as ldp\nldp.enable_ldp_features()\nldp.make_krr(epsilon=1.0, d=4)\nldp.Accountant"
    got = _fresh(LOADED.format(setup=setup, heavy=HEAVY))
    assert "ldp_plugin.measurements" in got["ldp"] and "ldp_plugin.mechanisms" in got["ldp"]
    assert [m for m in got["ldp"] if m.startswith(("ldp_plugin.cli", "ldp_plugin.federated"))] == []


def test_the_guard_sees_a_loaded_federated_runtime():  # power: the same probe reports a module that is loaded
    got = _fresh(LOADED.format(setup="import ldp_plugin.federated.cli\nimport nacl", heavy=HEAVY))
    # the device configuration reads the owner's [trust] section, whose membership signatures use cryptography;
    # OpenDP's own extras may load more where they are installed (opendp.extras.sklearn loads scikit-learn)
    assert "ldp_plugin.federated.cli" in got["ldp"] and {"cryptography", "nacl"} <= set(got["heavy"])


def test_polars_namespace_loads_its_implementation_on_first_use():
    code = """
import json, sys
import polars as pl
import ldp_plugin as ldp
before = "ldp_plugin.adapters.polars_namespace" in sys.modules
df = pl.DataFrame({"c": ["a", "b", "a"]})
mech = ldp.KRR(epsilon=1.0, categories=["a", "b"])
rep = df.ldp.privatize("c", mech, seed=1)
est = rep.ldp.estimate(mech)
lazy = df.lazy().ldp.privatize("c", mech, seed=1)
print(json.dumps({"before": before, "after": "ldp_plugin.adapters.polars_namespace" in sys.modules,
                  "rows": rep.height, "items": est["item"].to_list(), "same": lazy.equals(rep),
                  "type": type(df.ldp).__name__}))
"""
    got = _fresh(code)
    assert got == {"before": False, "after": True, "rows": 3, "items": ["a", "b"], "same": True, "type": "LDPFrame"}


def test_cli_command_table_imports_the_federated_parser_only_for_its_command():
    code = """
import json, sys
from ldp_plugin import cli
cli.build_parser("mechanisms")
first = sorted(m for m in sys.modules if m.startswith("ldp_plugin.federated"))
cli.build_parser("federated")
print(json.dumps({"first": first, "then": "ldp_plugin.federated.cli" in sys.modules}))
"""
    assert _fresh(code) == {"first": [], "then": True}


def test_listed_help_is_the_parsers_own():
    from ldp_plugin import cli

    full = cli.build_parser()
    listed = cli.build_parser("mechanisms")
    for name, (_, _, help_line) in cli.PARSERS.items():
        for parser in (full, listed):
            sub = next(a for a in parser._actions if a.dest == "command")
            assert [c.help for c in sub._choices_actions if c.dest == name] == [help_line]


# -- the table of contents ---------------------------------------------------------------------------------
def _face_tree() -> ast.Module:
    return ast.parse((ROOT / "ldp_plugin" / "__init__.py").read_text(encoding="utf-8"))


def test_all_is_one_literal_without_duplicates():
    tree = _face_tree()
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    assert len(assigns) == 1 and isinstance(assigns[0], ast.Assign) and isinstance(assigns[0].value, ast.List)
    assert all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in assigns[0].value.elts)
    assert len(ldp_plugin.__all__) == len(set(ldp_plugin.__all__)), sorted(n for n in ldp_plugin.__all__ if ldp_plugin.__all__.count(n) > 1)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                and not _under_type_checking(tree, n)], "a star import outside TYPE_CHECKING"


def _under_type_checking(tree: ast.Module, node: ast.AST) -> bool:
    return any(isinstance(i, ast.If) and "TYPE_CHECKING" in ast.unparse(i.test) and node in list(ast.walk(i)) for i in tree.body)


def test_every_public_name_resolves_to_its_home():
    """Errors are eager (from ``_errors``), the names of ``_HOMES`` come from their module, and the rest
    of ``__all__`` is exactly the public OpenDP constructors of ``measurements``."""
    homes = dict(ldp_plugin._HOME)
    errors = importlib.import_module("ldp_plugin._errors")
    measurements = importlib.import_module("ldp_plugin.measurements")
    eager = [n for n in ldp_plugin.__all__ if n in vars(errors)]
    assert set(eager) == {"LDPParameterError", "LDPInputError", "LDPArgumentError", "PrivacyVerificationError", "UnderdeterminedWarning"}
    assert set(homes) <= set(ldp_plugin.__all__) and not set(homes) & set(eager)
    rest = [n for n in ldp_plugin.__all__ if n not in homes and n not in eager]
    assert set(rest) == set(measurements.__all__)
    for name in ldp_plugin.__all__:
        home = errors if name in eager else measurements if name in rest else importlib.import_module(homes[name], "ldp_plugin")
        assert getattr(ldp_plugin, name) is getattr(home, name), name
    assert set(ldp_plugin.__all__) <= set(dir(ldp_plugin))


def test_unknown_names_and_submodules():
    with pytest.raises(AttributeError, match="no_such_name"):
        ldp_plugin.no_such_name
    assert ldp_plugin.exact is importlib.import_module("ldp_plugin.exact")  # a submodule, loaded on first use


# -- moved paths: resolved when asked, warned, never used inside the library ------------------------------
@pytest.mark.parametrize("old", sorted(_deprecated.MOVED_MODULES))
def test_old_module_path_warns_with_removal_version(old):
    new = _deprecated.MOVED_MODULES[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning) as rec:
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    msg = str(rec[0].message)
    assert old in msg and new in msg and _deprecated.REMOVED_IN in msg
    assert rec[0].filename == __file__  # points at the line that imported the old path
    sys.modules.pop(old, None)


@pytest.mark.parametrize("key", sorted(_deprecated.MOVED_NAMES))
def test_moved_name_warns_at_every_use(key):
    module, name = key
    new_module, new_name = _deprecated.MOVED_NAMES[key]
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match=_deprecated.REMOVED_IN):
            obj = getattr(importlib.import_module(module), name)
        assert obj is getattr(importlib.import_module(new_module), new_name)


def test_the_finder_answers_only_for_old_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.util.find_spec("ldp_plugin.no_such_module") is None
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("ldp_plugin.no_such_module")


def old_path_imports(root: Path) -> list:
    """Every import of an old module path (or of a moved name from its old module) in the library."""
    old_names = {name for (module, name) in _deprecated.MOVED_NAMES if module == "ldp_plugin"}
    installed = {"ldp_plugin": "ldp_plugin", "adapters": "ldp_plugin.adapters", "registry": "ldp_plugin.registry"}
    out = []
    for src in SOURCES:
        for path in sorted((root / src).rglob("*.py")):
            if path.name == "_deprecated.py":
                continue
            parts = [installed[src], *path.relative_to(root / src).with_suffix("").parts]
            package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                targets = []
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module
                    targets = [base] + [f"{base}.{a.name}" for a in node.names]
                    if base == "ldp_plugin":
                        targets += [a.name for a in node.names if a.name in old_names]
                hits = [t for t in targets if t in _deprecated.MOVED_MODULES or t in old_names]
                out += [f"{path.relative_to(root)}:{node.lineno} imports {h}" for h in hits]
    return out


def test_no_library_module_imports_through_an_old_path():
    assert old_path_imports(ROOT) == []


def test_old_path_guard_catches_a_planted_import(tmp_path):
    for src in SOURCES:
        (tmp_path / src).mkdir()
    (tmp_path / "ldp_plugin" / "x.py").write_text("import ldp_plugin.memo\nfrom ldp_plugin.estimation_lsq import solve\n"
                                                  "from . import series\nfrom ldp_plugin import make_randomized_response_warner\n")
    (tmp_path / "ldp_plugin" / "mechanisms").mkdir()
    (tmp_path / "ldp_plugin" / "mechanisms" / "y.py").write_text("from .cohort_base import X\nfrom ..sets import PAD\n")
    found = old_path_imports(tmp_path)
    assert len(found) == 5, found
    assert sum(f.startswith("ldp_plugin/x.py:") for f in found) == 4 and "ldp_plugin.mechanisms.cohort_base" in found[0]
