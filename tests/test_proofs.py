"""The written privacy proofs (``docs/proofs/*.md``) state the constants the code computes: each
page's ``proof-constants`` block — its formulas for the thresholds, p*, q* and the worst-case
ratio, in Python syntax over exact rationals — is evaluated for parameters drawn at random and
compared with the constructed mechanism (``m``). A constant off by one part in a thousand must
fail (the power of each block), every family has a page with a block, and every public
mechanism class names its proof page in its docstring."""

from __future__ import annotations

import ast
import inspect
import math
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest

import ldp_plugin as ldp
from ldp_plugin.exact import epsilon_of_ratio, exp_lower_bound

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "docs" / "proofs"
PAGES = sorted(p.name for p in PROOFS.glob("*.md") if p.name != "index.md")
BLOCK = re.compile(r"```proof-constants\n(.*?)```", re.S)
DRAWS = 12


def _env() -> dict:
    return {"ldp": ldp, "Fraction": Fraction, "floor": math.floor, "ceil": math.ceil, "W": Fraction(2**64), "exp_lower": exp_lower_bound,
            "eps_up": epsilon_of_ratio, "prod": math.prod, "comb": math.comb, "min": min, "max": max, "range": range, "len": len,
            "all": all, "any": any, "sum": sum, "abs": abs, "getattr": getattr, "round": round, "int": int, "math": math}


def run_block(text: str, rng: random.Random, *, perturb: str | None = None) -> None:
    """Evaluate one block: ``draw NAME uniform|integer|pow2|choice ...``, ``NAME = EXPR``, ``check
    EXPR``. ``perturb`` names a definition whose value is scaled by 1001/1000 (the power check)."""
    env = _env()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("  #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("draw "):
            _, name, kind, rest = line.split(" ", 3)
            if kind == "uniform":  # bounds may name earlier draws (no spaces inside a bound)
                a, b = (float(eval(x, env)) for x in rest.split())
                env[name] = round(rng.uniform(a, b), 6)
            elif kind == "integer":
                a, b = (int(eval(x, env)) for x in rest.split())
                env[name] = rng.randint(a, b)
            elif kind == "pow2":  # a power of two 2**a .. 2**b
                a, b = (int(eval(x, env)) for x in rest.split())
                env[name] = 2 ** rng.randint(a, b)
            elif kind == "choice":
                env[name] = rng.choice(ast.literal_eval(rest))
            else:
                raise AssertionError(f"line {n}: unknown draw {kind!r}")
        elif line.startswith("check "):
            expr = line[len("check "):]
            assert eval(expr, env), f"line {n}: {expr} fails for " + ", ".join(f"{k}={env[k]!r}" for k in env if k.islower() and len(k) <= 8 and isinstance(env[k], (int, float)))
        else:
            name, _, expr = line.partition(" = ")
            assert name.isidentifier() and expr, f"line {n}: not a definition: {line}"
            env[name] = eval(expr, env)
            if name == perturb:
                v = env[name]
                env[name] = [x * Fraction(1001, 1000) for x in v] if isinstance(v, list) else v * Fraction(1001, 1000)


def _blocks(page: str) -> list:
    return BLOCK.findall((PROOFS / page).read_text())


def _definitions(text: str) -> list:
    """The names a block defines from the formulas (not the mechanism ``m``, not the draws, not
    ``_helpers``)."""
    out = []
    for raw in text.splitlines():
        line = raw.split("  #")[0].strip()
        if " = " in line and not line.startswith(("draw ", "check ")):
            name = line.split(" = ")[0]
            if name != "m" and not name.startswith("_"):  # _name: an index or helper, not a constant
                out.append(name)
    return out


def test_every_family_has_a_proof_page_with_constants():
    expected = {"randomized-response.md", "unary.md", "local-hashing.md", "hadamard.md", "k-subset.md", "cohort.md", "sets.md",
                "numeric.md", "longitudinal.md", "multi-attribute.md", "key-value.md"}
    assert set(PAGES) == expected
    for page in PAGES:
        text = (PROOFS / page).read_text()
        assert _blocks(page), f"{page} has no proof-constants block"
        for heading in ("## Statement", "## Realized thresholds", "## Proof", "## Privacy map"):
            assert heading in text, f"{page} lacks {heading!r}"


@pytest.mark.parametrize("page", PAGES)
def test_proof_constants_equal_the_codes(page):
    for i, block in enumerate(_blocks(page)):
        for draw in range(DRAWS):
            run_block(block, random.Random(f"{page}/{i}/{draw}"))


@pytest.mark.parametrize("page", PAGES)
def test_a_constant_off_by_a_thousandth_fails(page):
    """Power: for every formula a block defines, scaling its value by 1001/1000 breaks a check for
    at least one of the draws; a formula no check depends on is a formula nobody checked."""
    for i, block in enumerate(_blocks(page)):
        names = _definitions(block)
        assert names, f"{page} block {i} defines no formula"
        for name in names:
            caught = 0
            for draw in range(DRAWS):
                try:
                    run_block(block, random.Random(f"{page}/{i}/{draw}"), perturb=name)
                except AssertionError:
                    caught += 1
                    break
            assert caught, f"{page} block {i}: {name} scaled by 1001/1000 passes every check"


def test_every_registered_mechanism_links_its_proof():
    missing, seen = [], 0
    for cls in [getattr(ldp, n) for n in ldp.__all__ if isinstance(getattr(ldp, n), type)]:
        if inspect.isabstract(cls) or not hasattr(cls, "randomize") or cls.__name__.endswith(("Estimate", "Accumulator", "Batch", "Reports", "Source")):
            continue
        seen += 1
        doc = cls.__doc__ or ""
        m = re.search(r"Proof: docs/proofs/([\w-]+\.md)", doc)
        if m is None or not (PROOFS / m.group(1)).is_file():
            missing.append(cls.__name__)
    assert missing == [], f"mechanism classes without a 'Proof: docs/proofs/<family>.md' line: {missing}"
    assert seen >= 40, seen
