"""The same seeds give the same reports: a pin of seeded report batches for every registered name
(all kinds) and the wrappers, taken before the architecture refactor (issue 33). Each batch is
hashed through its canonical wire encoding (which binds the mechanism's spec), so a changed sampler,
encoding or report layout fails here. Regenerate only for a deliberate, documented change:
``python tests/test_seeded_reports.py --write``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.mechanisms.reports import to_wire

PIN = Path(__file__).parent / "data" / "seeded_reports.json"
REG = load_registry(kinds=KINDS)
KEYS = [bytes([i % 256, 7]) * 16 for i in range(40)]
N = 40


def _cases():
    out = {}
    for name, decl in sorted(REG.items()):
        out[name] = lambda decl=decl: decl.mechanism_class()(**dict(decl.canonical[0]))
    out["sample-one-krr"] = lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2)
    out["memoized"] = lambda: ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)
    return out


CASES = _cases()


def _inputs(mech):
    gen = np.random.default_rng(11)
    if mech.input_kind == "number":
        return gen.uniform(mech.lower, mech.upper, N)
    if mech.input_kind == "key-value":  # (key, value) sets, some empty (issue 37)
        return [[(int(gen.integers(0, mech.d)), float(gen.uniform(-1, 1)))] if gen.random() < 0.7 else [] for _ in range(N)]
    if mech.input_kind == "tuple":  # one code per attribute (issue 37)
        return np.stack([gen.integers(0, k, N) for k in mech.domains], axis=1)
    d = mech.domain_size
    if mech.input_kind == "set":
        return [sorted(gen.choice(d, size=int(gen.integers(0, mech.m + 1)), replace=False).tolist()) for _ in range(N)]
    return gen.integers(0, d, N)


def _digest(mech, seed):
    x = _inputs(mech)
    if mech.input_kind in ("set", "number", "key-value", "tuple"):
        reports = mech.randomize(x, rng=seed)
    elif getattr(mech, "needs_user_keys", False):
        reports = mech.randomize_encoded(x, rng=seed, user_keys=KEYS[:N])
    else:
        reports = mech.randomize_encoded(x, rng=seed)
    return hashlib.sha256(to_wire(mech, reports)).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_reports_are_pinned(name):
    pinned = json.loads(PIN.read_text())
    assert name in pinned, f"{name} has no pinned reports (regenerate deliberately)"
    mech = CASES[name]()
    assert [_digest(mech, s) for s in (0, 12345)] == pinned[name]


def test_the_pin_can_fail():
    """Power check: another seed gives other reports (the pin is not vacuous)."""
    pinned = json.loads(PIN.read_text())
    assert _digest(CASES["krr"](), 1) != pinned["krr"][0]


if __name__ == "__main__" and "--write" in sys.argv:
    PIN.write_text(json.dumps({n: [_digest(f(), s) for s in (0, 12345)] for n, f in sorted(CASES.items())}, indent=1) + "\n")
