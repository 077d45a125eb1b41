"""The verification suite beyond the declarations (the registry drives the verification layers,
never the reverse): the canonical instances of the wrappers that are not registry entries
(:func:`wrapper_instances`), and the self-test — every layer on every seeded bug of
:mod:`ldp_plugin.verification.seeded_bugs`, which the layers must catch (:func:`self_test`,
``ldp verify --self-test``)."""

from __future__ import annotations

import dataclasses
import functools

from ldp_plugin.mechanisms import KRR, OUE, SampleOne
from ldp_plugin.mechanisms.longitudinal import Memoized
from ldp_plugin.verification.draws import DRAW_LAYERS, DRAWS_FULL, DRAWS_QUICK
from ldp_plugin.verification.layers import FAMILY_ALPHA
from ldp_plugin.verification.parallel import run_jobs
from ldp_plugin.verification.seeded_bugs import seeded_bugs

from ._loader import load_registry
from ._verify import failed_layers, verify, verify_instance

__all__ = ["self_test", "wrapper_instances", "seeded_declaration_bugs"]


def self_test(*, seed: int = 0, quick: bool = False) -> list[dict]:
    """Run every layer on every seeded bug: each row says whether it was caught, and by which
    layers (a bug counts as caught when at least one layer fails it). One job per bug
    (:func:`~ldp_plugin.verification.parallel.run_jobs`: on the caller's open job pool, if any)."""
    bugs = seeded_bugs()
    decl_bugs = seeded_declaration_bugs()
    alpha = FAMILY_ALPHA / (len(bugs) + len(decl_bugs))
    jobs = [functools.partial(_bug_row, name, mech, expected, seed=seed + 104729 * i, quick=quick, alpha=alpha)
            for i, (name, mech, expected) in enumerate(bugs)]
    jobs += [functools.partial(_declaration_bug_rows, [bug], seed=seed, quick=quick, alpha=alpha, first=j) for j, bug in enumerate(decl_bugs)]
    done = run_jobs(jobs, costs=[1.0] * len(bugs) + [float(len(decl.canonical)) for _, decl, _ in decl_bugs])
    return [r for rows in done for r in rows]


def _bug_row(name: str, mech, expected: tuple, *, seed: int, quick: bool, alpha: float) -> list[dict]:
    """One seeded bug through every layer (a list of its one row)."""
    r = verify_instance(mech, name=name, instance=mech.params(), seed=seed, quick=quick, alpha=alpha, estimator_shapes=1)
    caught_by = failed_layers(r)
    r.update({"seeded_bug": True, "caught": bool(caught_by), "caught_by": caught_by, "expected_layers": list(expected)})
    return [r]


def _declaration_bug_rows(decl_bugs: list, *, seed: int, quick: bool, alpha: float, first: int = 0) -> list[dict]:
    """Bugs that only random parameter draws reveal: the declaration's canonical instances and its
    random draws (as many as ``ldp verify`` takes) go through the layers the draws get (exact,
    sampling path); the bug is caught by the random draws when a draw fails. The row shown is the first failing draw (else the
    first canonical instance), with ``canonical_passed`` saying whether the canonical instances
    alone would have missed it."""
    rows = []
    for j, (name, decl, expected) in enumerate(decl_bugs, first):
        got = verify(decl, seed=seed + 7_368_787 * (j + 1), quick=quick, alpha=alpha, layers=DRAW_LAYERS, draws=DRAWS_QUICK if quick else DRAWS_FULL)
        canonical = [r for r in got if not r.get("random_draw")]
        failed_draws = [r for r in got if r.get("random_draw") and not r["passed"]]
        r = dict(failed_draws[0] if failed_draws else canonical[0])
        caught_by = (["random-draws"] if failed_draws else []) + [
            "canonical-" + layer for layer, key in (("exact", "exact"), ("sampling-path", "sampling_path")) if any(key in c and not c[key]["passed"] for c in canonical)
        ]
        r.update({"name": name, "seeded_bug": True, "caught": bool(caught_by), "caught_by": caught_by, "expected_layers": list(expected),
                  "canonical_passed": all(c["passed"] for c in canonical), "draws_failed": len(failed_draws)})
        rows.append(r)
    return rows


def wrapper_instances() -> list:
    """Canonical instances of the wrappers that are not registry entries: pad-and-sample and the
    memoized (longitudinal) k-RR. ``ldp verify`` runs every layer on them."""
    return [
        ("sample-one", SampleOne(mechanism=KRR(epsilon=1.0, d=4), m=2)),
        ("sample-one", SampleOne(mechanism=OUE(epsilon=2.0, d=3), m=2)),
        ("memoized-krr", Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)),
        ("memoized-krr", Memoized(epsilon_permanent=8.0, epsilon_instantaneous=4.0, d=3, max_values=1)),
    ]


def seeded_declaration_bugs() -> list:
    """``(name, registry declaration, layers expected to catch it)`` for bugs that only a random
    parameter draw can reveal: the declaration is k-RR's (same ranges, same canonical instances)
    with the broken constructor."""
    krr = load_registry()["krr"]
    decl = dataclasses.replace(krr, name="grid-epsilon-krr", constructor="ldp_plugin.verification.seeded_bugs:GridEpsilonKRR")
    return [("grid-epsilon-krr", decl, ("random-draws",))]
