"""Coverage is a verification result: the privacy-path modules are selected by what they do (a
guard: a module planted in a copy of the tree that imports the sampling source, calls a client
entry point or draws OS randomness joins the list), and ``measure`` reports branch coverage and
the uncovered lines of a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.cli import main
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.privacy_paths import COVERAGE_MIN, UNTRACEABLE, line_ranges, measure, privacy_path_modules

ROOT = Path(__file__).resolve().parents[2]


def test_the_list_is_selected_by_what_modules_do():
    mods = privacy_path_modules()
    for must in ("ldp_plugin.sampling.source", "ldp_plugin.mechanisms.randomized_response", "ldp_plugin.mechanisms.longitudinal.unary",
                 "ldp_plugin.federated.device", "ldp_plugin.federated.keystore", "ldp_plugin.federated.shuffler",
                 "ldp_plugin.federated.analyzer", "ldp_plugin.adapters.polars_namespace", "ldp_plugin.simulate"):
        assert must in mods, must
    assert not any(m.startswith("ldp_plugin.verification") for m in mods)  # the verifier instruments, holds no data
    assert "ldp_plugin.exact" not in mods and "ldp_plugin.federated.query" not in mods
    assert UNTRACEABLE <= set(mods)


@pytest.mark.slow
def test_a_planted_module_joins_the_list(tmp_path):
    for src in ("ldp_plugin", "adapters", "registry"):
        shutil.copytree(ROOT / src, tmp_path / src, ignore=shutil.ignore_patterns("__pycache__"))
    base = privacy_path_modules(tmp_path)
    planted = {
        "ldp_plugin/estimation/planted_source.py": "from ..sampling import SecureRandomSource\n",
        "ldp_plugin/estimation/planted_client.py": "def f(m, v):\n    return m.randomize_one(v)\n",
        "adapters/planted_keys.py": "import os\n\ndef key():\n    return os.urandom(32)\n",
        "registry/planted_rng.py": "def draw(values, *, rng=None):\n    return values\n",
        "ldp_plugin/estimation/planted_pure.py": "def mean(x):\n    return sum(x) / len(x)\n",
    }
    for rel, text in planted.items():
        (tmp_path / rel).write_text(text)
    after = privacy_path_modules(tmp_path)
    assert set(after) - set(base) == {"ldp_plugin.estimation.planted_source", "ldp_plugin.estimation.planted_client",
                                      "ldp_plugin.adapters.planted_keys", "ldp_plugin.registry.planted_rng"}


@pytest.mark.slow
def test_measure_reports_branch_coverage_and_uncovered_lines():
    mods = {m: p for m, p in privacy_path_modules().items() if m == "ldp_plugin.mechanisms.randomized_response"}
    mech = ldp.KRR(epsilon=1.0, d=4)
    out, cov = measure(lambda: mech.randomize(np.arange(100) % 4, rng=SeededRandomSource(1)), mods)
    assert len(out) == 100
    r = cov["modules"]["ldp_plugin.mechanisms.randomized_response"]
    assert 0 < r["percent"] < 100 and r["missing_lines"] and cov["percent"] == r["percent"]
    assert cov["never_imported"] == [] and cov["threshold"] == COVERAGE_MIN == 95.0
    assert line_ranges([9, 3, 4, 5]) == "3-5, 9"


@pytest.mark.slow
def test_ldp_verify_coverage_reports_and_applies_the_threshold(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LDP_PLUGIN_STATE", str(tmp_path / "state"))
    report = tmp_path / "v.md"
    # a quick run reports without a threshold; an explicit minimum applies (and fails: one name covers little)
    assert main(["verify", "warner", "--quick", "--coverage", "--json", "--report", str(report)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["coverage"]["threshold"] is None and 0 < out["coverage"]["percent"] < COVERAGE_MIN
    text = report.read_text()
    assert "## Branch coverage of the privacy-path modules" in text and "ldp_plugin.mechanisms.randomized_response" in text
    assert main(["verify", "warner", "--quick", "--coverage", "--coverage-min", "95", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["coverage"]["passed"] is False
