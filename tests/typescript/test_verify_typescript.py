"""``ldp verify --client typescript``: the exact-channel and goodness-of-fit layers run on the real
TypeScript client under Node, and catch the seeded TypeScript bugs."""

from __future__ import annotations

import json

import pytest

from ldp_plugin import KRR, OUE
from ldp_plugin.cli import main
from ldp_plugin.verification.typescript_client import (typescript_channel, typescript_gof, typescript_instances, typescript_seeded_bugs,
                                                        verify_typescript_instance)

from ._node import needs_node

pytestmark = needs_node


@pytest.mark.parametrize("name,mech", typescript_instances(), ids=lambda v: v if isinstance(v, str) else "")
def test_typescript_client_channel_is_the_declared_channel(name, mech):
    rows = typescript_channel(mech)
    if name in ("olh", "duchi", "hybrid"):  # they read raw words (a per-user seed, a 64-bit comparison)
        assert isinstance(rows, str) and "not enumerable" in rows
        return
    declared = [list(r) for r in mech.channel().matrix]
    width = len(declared[0])
    assert [r[:width] for r in rows] == declared
    assert all(r[width] == 0 for r in rows)  # nothing outside the declared outputs


@pytest.mark.parametrize("bug,mech", typescript_seeded_bugs(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_seeded_typescript_bug_is_caught_by_the_exact_channel(bug, mech):
    rows = typescript_channel(mech, bug=bug)
    width = len(mech.channel().outputs)
    assert [r[:width] for r in rows] != [list(r) for r in mech.channel().matrix]


def test_goodness_of_fit_passes_the_client_and_catches_a_bug():
    ok = typescript_gof(KRR(epsilon=2.0, d=5), n_per_input=2_000, seed=3)
    assert ok["passed"] and ok["power_check_rejects_1.3eps"]
    bad = typescript_gof(OUE(epsilon=1.0, d=4), n_per_input=2_000, seed=3, bug="oue-own-bit-with-q")
    assert not bad["passed"]


def test_instance_report_names_the_layers_that_caught_a_bug():
    r = verify_typescript_instance("krr-no-skip", KRR(epsilon=1.0, d=4), quick=True, bug="krr-no-skip")
    assert r["caught"] and r["caught_by"] == ["exact channel", "goodness of fit"]
    assert r["exact_channel"]["enumerated"] and not r["exact_channel"]["equal_to_declared"]


@pytest.mark.slow
def test_ldp_verify_client_typescript_cli(capsys):
    assert main(["verify", "--client", "typescript", "--quick", "--self-test", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["client"] == "typescript" and out["passed"]
    assert {r["name"] for r in out["results"]} >= {"krr", "oue", "rappor", "hadamard", "warner"}
    assert all(b["caught"] for b in out["seeded_bugs"]) and len(out["seeded_bugs"]) >= 2
