"""The mutation-score benchmark's own machinery (``benchmarks/mutation.py``): the mutator makes
valid, distinct mutants that keep every other line in place; a k-RR mutant that skips the true item
wrongly is killed by ``ldp verify --quick krr``, and a k-RR mutant that changes nothing any
instance realizes survives and is classified equivalent by the exact-channel comparison."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
KRR = "ldp_plugin.mechanisms.randomized_response"
KRR_REL = "ldp_plugin/mechanisms/randomized_response.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("mutation_bench", ROOT / "benchmarks" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mutation_bench"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("mutation_bench", None)


@pytest.fixture(scope="module")
def tree(bench, tmp_path_factory):
    return bench.make_copy(tmp_path_factory.mktemp("mutation") / "tree")


def _krr_mutant(bench, tree, line_text: str, operator: str, new: str):
    source = (tree / KRR_REL).read_text(encoding="utf-8")
    line = next(i for i, t in enumerate(source.splitlines(), 1) if line_text in t)
    found = [m for m in bench.module_mutants(KRR, KRR_REL, source) if m.line == line and m.operator == operator and m.new == new]
    assert len(found) == 1, [(m.operator, m.new) for m in bench.module_mutants(KRR, KRR_REL, source) if m.line == line]
    return found[0]


def test_mutator_produces_valid_distinct_mutants_that_keep_line_numbers(bench):
    picked = {KRR: KRR_REL, "ldp_plugin.sampling.source": "ldp_plugin/sampling/source.py",
              "ldp_plugin.federated.shuffler": "ldp_plugin/federated/shuffler.py",
              "ldp_plugin.adapters.polars_multi": "ldp_plugin/adapters/polars_multi.py", "ldp_plugin.collect": "ldp_plugin/collect.py"}
    mutants = [m for mod, rel in picked.items() for m in bench.module_mutants(mod, rel, bench.source_of(rel).read_text(encoding="utf-8"))]
    assert len({m.key for m in mutants}) == len(mutants)
    assert {m.operator for m in mutants} == {"cmp", "arith", "const", "bool", "logic", "negate", "return", "index", "drop"}
    assert {bench._group(m.module) for m in mutants} == set(bench.GROUP_WEIGHTS)
    sample = bench.sample_mutants(mutants, 40, 0)
    assert sample == bench.sample_mutants(mutants, 40, 0)  # a fixed seed, a fixed sample
    assert len(sample) == 40 and len(set(sample)) == 40
    assert sum(bench._group(m.module) in ("mechanisms", "sampling") for m in sample) >= 0.6 * 40
    texts = set()
    sources = {rel: bench.source_of(rel).read_text(encoding="utf-8") for rel in {m.rel for m in sample}}
    dumps = {rel: ast.dump(ast.parse(text)) for rel, text in sources.items()}
    for m in sample:
        source = sources[m.rel]
        text = m.apply(source)
        assert bench.is_valid(m, source, dumps[m.rel]) and ast.dump(ast.parse(text)) != dumps[m.rel]
        assert text.count("\n") == source.count("\n")  # every other line keeps its number
        texts.add((m.rel, text))
    assert len(texts) == 40
    # nothing inside a docstring, an annotation or an error message is mutated
    source = bench.source_of(KRR_REL).read_text(encoding="utf-8")
    doc_lines = set(range(1, ast.get_docstring(ast.parse(source), clean=False).count("\n") + 2))
    assert not [m for m in bench.module_mutants(KRR, KRR_REL, source) if m.line in doc_lines]


@pytest.mark.slow  # four child processes, each importing the package and verifying k-RR
def test_a_threshold_mutant_in_krr_is_killed_and_a_dtype_mutant_is_equivalent(bench, tree, tmp_path):
    b = bench.Bench(SimpleNamespace(workdir=str(tmp_path / "work"), out=str(tmp_path / "out.jsonl"), seed=0))
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "base").symlink_to(tree)
    every_line = list(range(1, (tree / KRR_REL).read_text().count("\n") + 2))
    reach = {"lines": {"krr": {KRR_REL: every_line}}, "seconds": {"krr": 60.0}}
    # one copy serves as the original and as the worker's tree: the runs are sequential and the
    # worker restores the original file after each one
    worker = bench.Worker(tree)

    # the other items are drawn uniformly over d − 1 codes and shifted past the true one: `>=` -> `>`
    bad = _krr_mutant(bench, tree, "other += other >= codes", "cmp", "(other > codes)")
    rec = b.one(worker, bad, reach)
    assert rec["status"] == "killed", rec
    assert "krr" in json.dumps(rec)

    # the report dtype for d = 2**16 exactly: uint16 or uint32 holds the same codes
    same = _krr_mutant(bench, tree, "return np.uint16 if d <= 1 << 16", "cmp", "(d < 1 << 16)")
    rec = b.one(worker, same, reach)
    assert rec["status"] == "survived" and rec["equivalent"], rec
    assert (tree / KRR_REL).read_text() == (ROOT / "ldp_plugin" / "mechanisms" / "randomized_response.py").read_text()  # restored
