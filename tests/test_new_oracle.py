"""The registry is the one list: a new frequency oracle is one class and one declaration (a
built-in adds its ``names.lock`` line), and it is then ranked by ``ldp choose`` and held to the
statistical contract — with no edit of ``choose``, of the contract's instances or of any list.

The oracle registered here is k-RR's channel under a new name and class (its own cost columns):
what is tested is the plumbing from the registry to every consumer, not a new channel."""

from __future__ import annotations

import json

import pytest

from ldp_plugin.choose import rank_mechanisms
from ldp_plugin.registry import load_registry, register
from ldp_plugin.registry._loader import _USER

from . import conftest, test_contract as contract

NAME = "krr-twin"

CLASS_FILE = '''
from ldp_plugin.mechanisms import KRR


class KRRTwin(KRR):
    """k-RR's channel under a new registered name (a test of the registry's consumers)."""

    name = "krr-twin"
    client_cost, server_cost = "O(1)", "O(n + d) (twin)"
'''

DECLARATION = f'''
name = "{NAME}"
summary = "k-ary randomized response, registered a second time under a new name"
constructor = "krr_twin_oracle:KRRTwin"
measurement = "ldp_plugin.measurements:make_ldp"
privacy_unit = "user"
privacy_map = "0 if d_in == 0 else epsilon"
population_map = "d_in * epsilon (rounded up)"
citation = "Kairouz, Bonawitz, Ramage, Discrete Distribution Estimation under Local Privacy (ICML 2016) eq. 6-11"
report = "one item code (uint32)"

[parameters.epsilon]
type = "float"
range = "(0, inf)"
[parameters.d]
type = "int"
range = "[2, 2^31]"

[[canonical]]
epsilon = 1.0
d = 3
[[canonical]]
epsilon = 2.0
d = 5
'''


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """The two files a contributor writes (class, declaration), registered for this module only."""
    root = tmp_path_factory.mktemp("new-oracle")
    (root / "krr_twin_oracle.py").write_text(CLASS_FILE, encoding="utf-8")
    (root / f"{NAME}.toml").write_text(DECLARATION, encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(root))
    try:
        yield register(root / f"{NAME}.toml")
    finally:
        _USER.pop(NAME, None)
        mp.undo()
    assert NAME not in load_registry()


def test_a_registered_oracle_is_ranked_by_ldp_choose(registered, cli):
    rows = {c.label: c for c in rank_mechanisms(5, 1.0, n=10_000)}
    assert NAME in rows and rows[NAME].server_cost == "O(n + d) (twin)"
    assert abs(rows[NAME].predicted_error - rows["krr"].predicted_error) < 1e-12  # the same channel, the same prediction
    out = cli("choose", "--d", "5", "--epsilon", "1", "--n", "10000", "--json")
    assert out.returncode == 0 and NAME in {r["mechanism"] for r in json.loads(out.stdout)["ranking"]}


def test_a_registered_oracle_is_under_the_statistical_contract(registered):
    ours = [(i, f) for i, f in conftest.small_instances() if i.startswith(NAME + "-")]
    assert [i for i, _ in ours] == [f"{NAME}-d3", f"{NAME}-d5"]
    for _, factory in ours:
        for eps in (0.7, 2.5):
            contract.test_exact_channel(factory, eps)
            contract.test_sampler_follows_channel_with_power(factory, eps)
            contract.test_unbiased_and_variance_match_analytic(factory, eps)
