"""The optional extras (ldp_plugin._extras): a feature asks for its package in one place, and a
missing one is one clear error — what needs it and the pip command — that is both the library's
parameter error (the CLI's exit 2) and an ImportError, with no ImportError chained behind it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ldp_plugin._errors import LDPParameterError
from ldp_plugin._extras import MissingExtra, extra_module, missing_extra, require_extra
from ldp_plugin.pictures import MissingPlotExtra

ROOT = Path(__file__).resolve().parent.parent


def test_a_missing_extra_is_one_clear_error():
    with pytest.raises(MissingExtra) as err:
        extra_module("ldp_plugin_no_such_package.sub", "shuffle", "the thing needs Nothing")
    assert str(err.value) == "the thing needs Nothing: pip install 'ldp-plugin[shuffle]'"
    assert isinstance(err.value, LDPParameterError) and isinstance(err.value, ImportError)
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no ImportError trace behind it
    with pytest.raises(MissingPlotExtra, match=r"plot' extra: pip install 'ldp-plugin\[plot\]' \(or drop it\)$"):
        extra_module("ldp_plugin_no_such_package", "plot", "drawing needs it, the optional 'plot' extra", hint=" (or drop it)",
                     error=MissingPlotExtra)
    with pytest.raises(MissingExtra, match=r"^X needs Y: pip install 'ldp-plugin\[verify\]'$"):
        require_extra("ldp_plugin_no_such_package.deep.name", "verify", "X needs Y")
    assert str(missing_extra("A needs B", "fast")) == "A needs B: pip install 'ldp-plugin[fast]'"


def test_an_installed_extra_is_the_module_itself():
    import json

    assert extra_module("json", "verify", "unused") is json
    assert require_extra("json.decoder", "verify", "unused") is None


def test_no_other_module_words_a_missing_extra_itself():
    # every "pip install 'ldp-plugin[...]'" a module raises comes from _extras: one wording, one type
    offenders = []
    for src in ("ldp_plugin", "adapters", "registry"):
        for path in sorted((ROOT / src).rglob("*.py")):
            if path.name == "_extras.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Raise) and node.exc is not None and "ldp-plugin[" in ast.unparse(node.exc):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
