"""Random parameter draws beyond the canonical instances (issue 32): seeded, inside the declared
ranges, non-round, enumerable, and able to catch a bug that every canonical instance hides."""

from __future__ import annotations

from ldp_plugin.registry import KINDS, load_registry, verify
from ldp_plugin.verification.draws import SMALL_BOUNDS, random_instances
from ldp_plugin.registry import seeded_declaration_bugs


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
    draws = [r for r in rows if r.get("random_draw")]
    assert canonical and all(r["passed"] for r in canonical)
    assert len(draws) == 2 and not any(r["passed"] for r in draws)
    assert all(r["realized_epsilon"] > r["declared_epsilon"] for r in draws)
