"""Coverage is a verification result: the privacy-path modules are selected by what they do (a
guard: a module planted in a copy of the tree that imports the sampling source, calls a client
entry point or draws OS randomness joins the list), and ``measure`` reports branch coverage and
the uncovered lines of a run made in a fresh interpreter started under coverage: module-level lines
count as run, and a worker process's lines are traced."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest

from ldp_plugin.cli import main
from ldp_plugin.verification.privacy_paths import COVERAGE_MIN, UNTRACEABLE, compiled_modules, line_ranges, measure, privacy_path_modules

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


def test_numba_compiled_modules_are_found_by_what_they_do(tmp_path):
    # every numba kernel module of the tree is listed, not measured: derived from the sources (a hand
    # list once missed the text lookup's kernels, which the report then counted at 0%)
    assert UNTRACEABLE == compiled_modules() == {"ldp_plugin.sampling.numba_kernels", "ldp_plugin.sampling._numba_aggregate",
                                                  "ldp_plugin.sampling._numba_lookup"}
    for path in sorted((ROOT / "ldp_plugin").rglob("*.py")):  # whatever imports numba at module level is one of them
        text = path.read_text(encoding="utf-8")
        if any(line.startswith(("import numba", "from numba")) for line in text.splitlines()):
            rel = path.relative_to(ROOT).with_suffix("")
            assert ".".join(rel.parts) in UNTRACEABLE, rel
    (tmp_path / "ldp_plugin" / "sampling").mkdir(parents=True)
    planted = {
        "kern.py": "import numba as nb\n\n\n@nb.njit(cache=True)\ndef f(x):\n    return x\n\n\nKERNELS = {'f': f}\n",
        "kern_jit.py": "from numba import jit, njit\n\n\n@jit\ndef f(x):\n    return x\n\n\n@njit(nogil=True)\ndef g(x):\n    return x\n",
        "mixed.py": "import numba as nb\n\n\n@nb.njit\ndef f(x):\n    return x\n\n\ndef plain(x):\n    return f(x) + 1\n",
        "lazy.py": "def load():\n    import numba\n    return numba\n",
        "no_functions.py": "import numba\n\nVERSION = numba.__version__\n",
        "factory.py": ("from numba.extending import intrinsic\n\n\ndef width(bits):\n    \"\"\"An intrinsic per width.\"\"\"\n\n"
                       "    @intrinsic\n    def load(typingctx, a):\n        return None\n\n    return load\n"),
        "factory_plus.py": ("from numba import njit\n\n\ndef width(bits):\n    print(bits)\n\n    @njit\n    def f(x):\n        return x\n\n"
                            "    return f\n"),
    }
    for name, text in planted.items():
        (tmp_path / "ldp_plugin" / "sampling" / name).write_text(text)
    # plain Python beside a kernel, a function-level import, no kernel at all: measured like any module
    # a factory that only builds kernels is compiled code; one that also runs Python is not
    assert compiled_modules(tmp_path) == {"ldp_plugin.sampling.kern", "ldp_plugin.sampling.kern_jit", "ldp_plugin.sampling.factory"}


_HELPER = """
import multiprocessing

import numpy as np
from nacl.public import PrivateKey

import ldp_plugin as ldp
from ldp_plugin.federated.sealed import open_reports, seal_reports
from ldp_plugin.sampling import SeededRandomSource


def krr_batch(n):
    return len(ldp.KRR(epsilon=1.0, d=4).randomize(np.arange(n) % 4, rng=SeededRandomSource(1)))


def open_on_two_workers():
    key = PrivateKey.generate()
    chunks = [seal_reports([b"a" * 8, b"b" * 8], key.public_key), seal_reports([b"c" * 8], key.public_key)]
    pool = multiprocessing.get_context("spawn").Pool(2)  # spawned workers: fresh interpreters
    try:
        return pool.starmap(_open_in_worker, [(c, bytes(key)) for c in chunks])
    finally:
        pool.close()  # the workers exit on their own (and save their coverage data): no terminate()
        pool.join()


def _open_in_worker(chunk, raw_key):
    return len(open_reports(chunk, PrivateKey(raw_key))[0])
"""


@pytest.fixture
def helper(tmp_path, monkeypatch):
    """A module the measured interpreter imports by name (it is on PYTHONPATH for both)."""
    (tmp_path / "measured_helper.py").write_text(_HELPER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    import measured_helper

    return measured_helper


def _lines(path, pattern):
    return [i for i, line in enumerate(Path(path).read_text().splitlines(), 1) if pattern in line]


def _missing(ranges):
    out = set()
    for part in filter(None, (x.strip() for x in ranges.split(","))):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def test_measure_counts_module_level_lines_and_uncovered_lines(helper):
    mods = {m: p for m, p in privacy_path_modules().items()
            if m in ("ldp_plugin.mechanisms.randomized_response", "ldp_plugin.federated.shuffler", "ldp_plugin.sampling._numba_lookup")}
    out, cov = measure(functools.partial(helper.krr_batch, 100), mods)
    assert out == 100
    path = mods["ldp_plugin.mechanisms.randomized_response"]
    r = cov["modules"]["ldp_plugin.mechanisms.randomized_response"]
    assert 0 < r["percent"] < 100 and r["missing_lines"]
    # the module's imports and its class line ran when the measured interpreter imported it
    module_level = _lines(path, "from ..sampling import as_source") + _lines(path, "class KRR(")
    assert len(module_level) == 2 and not set(module_level) & _missing(r["missing_lines"])
    # a module none of whose lines ran is reported with all of its statements, and counted in the total
    assert cov["never_imported"] == ["ldp_plugin.federated.shuffler"]
    sh = cov["modules"]["ldp_plugin.federated.shuffler"]
    assert sh["percent"] == 0.0 and sh["statements"] > 0 and cov["percent"] < r["percent"]
    assert cov["threshold"] == COVERAGE_MIN == 95.0
    # a numba-compiled module is listed, not measured (not in the table, not in the total)
    assert cov["compiled"] == ["ldp_plugin.sampling._numba_lookup"] and "ldp_plugin.sampling._numba_lookup" not in cov["modules"]
    assert line_ranges([9, 3, 4, 5]) == "3-5, 9"


@pytest.mark.slow
def test_measure_traces_worker_processes(helper):
    pytest.importorskip("nacl")
    mods = {"ldp_plugin.federated.sealed": ROOT / "ldp_plugin" / "federated" / "sealed.py"}
    out, cov = measure(helper.open_on_two_workers, mods)
    assert out == [2, 1]
    path = mods["ldp_plugin.federated.sealed"]
    worker_only = _lines(path, "out.append(box.decrypt(bytes(c)))")  # open_reports runs only in the spawned workers
    assert len(worker_only) == 1
    assert worker_only[0] not in _missing(cov["modules"]["ldp_plugin.federated.sealed"]["missing_lines"])


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
