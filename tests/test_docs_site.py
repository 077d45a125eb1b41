"""The rendered documentation: every public name of ``ldp_plugin`` has a docstring and an entry in
the API reference (``docs/api/*.md``, split by package; the Polars namespace page lists every
method with its signature), paper references resolve (author, venue, year — never a bare
"paper 00N"), the site builds with ``mkdocs build --strict`` (a warning or a broken reference
fails) and the README's Python calls type-check under ``mypy --strict``. Every page's code blocks
run in ``tests/test_docs_run.py``."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ldp_plugin

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = list(dict.fromkeys(ldp_plugin.__all__))


def test_every_public_name_has_a_docstring():
    missing = [n for n in PUBLIC if not isinstance(getattr(ldp_plugin, n), str) and not (getattr(ldp_plugin, n).__doc__ or "").strip()]
    assert missing == [], f"public names without a docstring: {missing}"
    pairs = [n for n in PUBLIC if n.startswith("then_")]
    assert len(pairs) >= 30 and all(f"make_{n[5:]}" in PUBLIC for n in pairs)


def test_api_reference_lists_every_public_name():
    listed = [n for page in sorted((ROOT / "docs" / "api").glob("*.md")) for n in re.findall(r"^::: ldp_plugin\.(\w+)$", page.read_text(), re.M)
              if importlib.util.find_spec(f"ldp_plugin.{n}") is None]  # a whole package's page is not a public name
    assert sorted(set(PUBLIC) - set(listed)) == []
    assert sorted(set(listed) - set(PUBLIC)) == [], "the API page documents a name that is not public"


BARE_PAPER = re.compile(r"\bpaper\s+0\d\d\b", re.I)


def _doc_files():
    for top in ("ldp_plugin", "registry", "adapters", "docs", "examples", "benchmarks"):
        yield from (p for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".toml", ".md", ".tmpl"))
    yield from (ROOT / n for n in ("README.md", "ARCHITECTURE.md", "BENCHMARKS.md") if (ROOT / n).exists())


def test_paper_references_resolve():
    bare = [f"{p.relative_to(ROOT)}:{i}" for p in _doc_files() for i, line in enumerate(p.read_text().splitlines(), 1) if BARE_PAPER.search(line)]
    assert bare == [], f"bare 'paper 00N' references (cite author, venue, year; docs/references.md lists them): {bare[:20]}"
    refs = (ROOT / "docs" / "references.md").read_text()
    for cite in ("Wang et al. (arXiv 2016)", "Kairouz, Bonawitz & Ramage (ICML 2016)", "Kairouz, Oh & Viswanath (JMLR 2016)", "Wang et al. (PVLDB 2020)"):
        assert cite in refs, cite


def test_the_check_finds_a_bare_reference():  # power: the pattern the previous test relies on
    assert BARE_PAPER.search("the estimator of paper 002 eq. 11") and not BARE_PAPER.search("benchmarks/paper003.py")


@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "WARNING" not in out.stderr, out.stderr[-3000:]
    page = "".join(p.read_text() for p in (tmp_path / "site" / "api").rglob("index.html"))
    missing = [n for n in PUBLIC if f'id="ldp_plugin.{n}"' not in page]
    assert missing == [], f"not rendered: {missing}"
    assert "then_smp_pairs(*, epsilon, domains" in re.sub(r"<[^>]+>", "", page)


#: the Polars ``ldp`` namespace is registered at import time (``pl.api.register_dataframe_namespace``),
#: which no type checker can see: the one error class left out of the README's strict check
POLARS_NAMESPACE = re.compile(r'"(DataFrame|LazyFrame)" has no attribute "ldp"')


@pytest.mark.slow
def test_readme_python_calls_type_check_strict(tmp_path):
    pytest.importorskip("mypy")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    script = tmp_path / "readme_calls.py"
    script.write_text("\n".join(blocks))
    # --follow-imports=silent: the library's own modules are read for their types, only the README is judged;
    # --allow-redefinition: the README's blocks reuse names such as ``mech`` across sections
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--allow-redefinition",
                          "--cache-dir", str(tmp_path / "cache"), str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line and not POLARS_NAMESPACE.search(line)]
    assert errors == [], "\n".join(errors)
    assert "ldp_plugin" not in out.stdout or "import-not-found" not in out.stdout


def test_the_polars_namespace_page_lists_every_method_with_its_signature():
    """docs/api/polars.md is written by hand from the functions the namespace calls (mkdocstrings
    cannot collect the installed-under-another-name ``adapters`` package): every public method of
    both namespace classes has a section whose signature names exactly the function's parameters."""
    import inspect

    from ldp_plugin.adapters import polars_namespace as ns

    page = (ROOT / "docs" / "api" / "polars.md").read_text()
    methods = {n for cls in (ns.LDPFrame, ns.LDPLazyFrame) for n in dir(cls) if not n.startswith("_")}
    assert len(methods) >= 10
    for name in sorted(methods):
        m = re.search(rf"^df\.ldp\.{name}\((.*)\)$", page, re.M)
        assert m, f"df.ldp.{name} is not documented in docs/api/polars.md"
        target = re.search(rf"^`(ldp_plugin\.adapters\.[\w.]+)`$", page[m.end():], re.M).group(1)
        module, func = target.rsplit(".", 1)
        params = list(inspect.signature(getattr(__import__(module, fromlist=[func]), func)).parameters)[1:]
        documented = re.findall(r"(?:^|, )\**(\w+)(?=:|=|,|$)", m.group(1))
        assert documented == params, (name, documented, params)
