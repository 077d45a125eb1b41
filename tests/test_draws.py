"""Parameter draws beyond the canonical instances: seeded, inside the declared ranges, non-round,
enumerable, and able to catch a bug that every canonical instance hides; the **edges** of every
declared parameter domain (registry ``domain``) drawn first — each parameter at its low and high
end (every choice; the shortest and longest list; the smallest and largest subset), the values just
outside refused — and a property-based sweep (hypothesis, fixed seed) over each whole domain."""

from __future__ import annotations

import pytest

import ldp_plugin as ldp
from ldp_plugin.registry import KINDS, edge_rows, load_registry, verify
from ldp_plugin.verification.domains import ENUM_CAP, declaration_domains
from ldp_plugin.verification.draws import SMALL_BOUNDS, _enumerable, draw_coverage, edge_instances, random_instances
from ldp_plugin.verification.layers import exact_layer
from ldp_plugin.registry import seeded_declaration_bugs

from ._helpers import sweep_declared_space

REG = load_registry(kinds=KINDS)


def test_draws_are_seeded_distinct_and_inside_the_declared_ranges():
    reg = load_registry(kinds=KINDS)
    for name in ("krr", "cms", "loloha"):  # reproducible from --seed
        assert [i for i, _m in random_instances(reg[name], seed=3, count=2)] == [i for i, _m in random_instances(reg[name], seed=3, count=2)]
    for name, decl in reg.items():
        a = random_instances(decl, seed=3, count=2)
        assert len(a) == 2, name
        canon = [dict(c) for c in decl.canonical]
        for inst, mech in a:
            assert inst not in canon, name
            for p in ("epsilon", "epsilon_perm"):
                if p in inst:
                    assert 0.1 <= inst[p] <= 8.0
            if "epsilon_1" in inst:
                assert 0 < inst["epsilon_1"] < inst["epsilon_perm"]
            for p, hi in SMALL_BOUNDS.items():
                if isinstance(inst.get(p), int) and inst.get(p) != decl.canonical[0].get(p):
                    assert inst[p] <= hi, (name, inst)
            assert mech.verification_input_count() <= 64
    # several ε per mechanism, non-round
    eps = {i["epsilon"] for i, _m in random_instances(reg["krr"], seed=0, count=6)}
    assert len(eps) >= 4 and any(round(e, 1) != e for e in eps)
    assert random_instances(reg["krr"], seed=1, count=3) != random_instances(reg["krr"], seed=2, count=3)


def test_random_draws_catch_what_the_canonical_instances_hide():
    (_name, decl, _expected), = seeded_declaration_bugs()
    rows = verify(decl, seed=0, quick=True, layers=("exact", "sampling-path"), draws=2)
    canonical = [r for r in rows if not r.get("random_draw")]
    draws = [r for r in rows if r.get("random_draw") and "edge" not in r]
    assert canonical and all(r["passed"] for r in canonical)
    assert len(draws) == 2 and not any(r["passed"] for r in draws)
    assert all(r["realized_epsilon"] > r["declared_epsilon"] for r in draws)


# -- the edges of every declared domain -----------------------------------------------------------
def test_every_declared_parameter_states_its_domain():
    for name, decl in REG.items():
        for pname, spec in decl.parameters.items():
            assert isinstance(spec.get("domain"), dict), (name, pname)
        doms = declaration_domains(decl)
        assert all(d is not None for d in doms.values()), name
        tied = {p: d for p, d in doms.items() if d.kind == "tied"}
        assert all(d.reason and d.ref in decl.parameters for d in tied.values()), name


@pytest.mark.parametrize("name", sorted(REG))
def test_every_declared_parameter_is_drawn_at_its_edges(name):
    """Per name, the parameters drawn and their range (printed on failure): every declared
    parameter with a domain is drawn at both ends (ranges), or at every choice, or as the shortest
    and longest list / smallest and largest subset, and refused just outside."""
    decl = REG[name]
    cov = draw_coverage(decl)
    listing = {p: (c["domain"], c["drawn"], c["refused_outside"]) for p, c in cov.items()}
    for pname, c in cov.items():
        dom = declaration_domains(decl)[pname]
        if dom.kind == "tied":
            continue  # fixed by another parameter (the reason is stated in the declaration)
        drawn = c["drawn"]
        if dom.kind in ("int", "float"):
            assert {"low", "high"} <= set(drawn), (name, pname, listing)
        if dom.kind == "list":
            assert {"shortest", "longest", "widest"} <= set(drawn), (name, pname, listing)
        if dom.kind == "subset":
            assert {"single", "largest"} <= set(drawn), (name, pname, listing)
        for ch in dom.choices:
            assert ch in drawn.get("choice", []), (name, pname, ch, listing)
        assert c["refused_outside"] and not c["not_refused"], (name, pname, listing)


def test_edges_reach_the_declared_ends():
    cov = {n: draw_coverage(REG[n]) for n in ("krr", "hcms", "pckv", "rsfd", "binary", "l-grr")}
    assert cov["krr"]["d"]["drawn"]["low"] == [2] and cov["krr"]["d"]["drawn"]["high"] == [ENUM_CAP["d"]]
    assert min(cov["krr"]["epsilon"]["drawn"]["low"]) == 1e-6 and max(cov["krr"]["epsilon"]["drawn"]["high"]) == 700.0
    assert cov["hcms"]["hash_seed"]["drawn"] == {"low": [0], "high": [2**64 - 1]} and 2**64 in cov["hcms"]["hash_seed"]["refused_outside"]
    assert cov["hcms"]["k"]["drawn"]["low"] == [2] and 3 in cov["hcms"]["k"]["refused_outside"]  # a power of two only
    assert cov["pckv"]["ell"]["drawn"]["low"] == [1] and 0 in cov["pckv"]["ell"]["refused_outside"]
    assert [2, 2] in cov["rsfd"]["domains"]["drawn"]["shortest"] and [2] in cov["rsfd"]["domains"]["refused_outside"]
    assert [] in cov["binary"]["subset"]["refused_outside"] and [0, 1, 2] in cov["binary"]["subset"]["refused_outside"]
    assert 2.0 in cov["l-grr"]["epsilon_1"]["refused_outside"]  # epsilon_1 = epsilon_perm: outside (0, epsilon_perm)


def test_pinned_counterexample_dbitflip_allows_epsilon_1_equal_to_epsilon_perm():
    """Found by the edges: dBitFlipPM (no instantaneous layer) accepts ε₁ = ε∞, which its declaration
    once excluded; the declaration now says (0, epsilon_perm] and the exact layer passes there."""
    m = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=2.0, d=4, d_bits=2)
    assert exact_layer(m)["passed"]
    assert declaration_domains(REG["dbitflip"])["epsilon_1"].extra["open"] == (True, False)


@pytest.mark.slow
def test_every_edge_passes_the_exact_layer_and_every_outside_value_is_refused():
    failed = [(n, r["edge"]) for n in sorted(REG) for r in edge_rows(REG[n]) if not r["passed"]]
    assert not failed, failed


def test_edge_rows_catch_a_bug_at_a_domain_end():
    (_name, decl, _expected), = seeded_declaration_bugs()  # k-RR thresholds from a 0.1 grid of ε
    rows = edge_rows(decl)
    assert any(not r["passed"] and r["edge"]["parameter"] == "epsilon" for r in rows)


# -- property-based: the whole declared space, fixed seed -------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REG))
def test_property_every_instance_in_the_declared_space_is_refused_cleanly_or_exact(name):
    """Any instance hypothesis draws from the declared domains either is refused with a ValueError
    (an invalid combination) or builds a mechanism whose exact channel is within its ε."""
    def check(m, inst):
        if _enumerable(m):
            assert exact_layer(m)["passed"], inst

    sweep_declared_space(REG[name], check, at=20240601, examples=8)
