"""``register()`` runs what ``ldp verify --quick`` runs: one function (``verify_name``), so a
third-party mechanism that ``ldp verify`` would flag is refused — here seeded bugs that only the
random parameter draws (``GridEpsilonKRR``) or only the transcript layer over every history
(``FittedChargeLGRR``) catch, which a registration over the canonical instances alone accepted."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ldp_plugin import PrivacyVerificationError
from ldp_plugin.registry import load_registry, register, unregister_all, verify_name
from ldp_plugin.registry import _register

REGISTRY = Path(__file__).resolve().parents[2] / "registry"


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("LDP_PLUGIN_STATE", str(tmp_path / "state"))
    yield
    unregister_all()


def _from_toml(builtin: str, name: str, constructor: str) -> dict:
    raw = tomllib.loads((REGISTRY / f"{builtin}.toml").read_text())
    return {**raw, "name": name, "constructor": constructor}


def test_register_calls_the_function_ldp_verify_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(_register, "verify_name", lambda decl, **kw: calls.append((decl.name, kw)) or [])
    register(_from_toml("krr", "spy-krr", "ldp_plugin.mechanisms:KRR"))
    assert calls == [("spy-krr", {"seed": 0, "quick": True})]


@pytest.mark.slow
def test_a_bug_only_the_draws_catch_is_refused():
    decl = _from_toml("krr", "grid-krr", "ldp_plugin.verification.seeded_bugs:GridEpsilonKRR")
    with pytest.raises(PrivacyVerificationError, match="random parameter draw.*layers: exact"):
        register(decl)
    assert "grid-krr" not in load_registry()


@pytest.mark.slow
def test_a_charge_only_the_exact_worst_case_catches_is_refused():
    decl = _from_toml("l-grr", "fitted-lgrr", "ldp_plugin.verification.seeded_bugs:FittedChargeLGRR")
    decl["canonical"] = [{"epsilon_perm": 2.0, "epsilon_1": 1.0, "d": 3}]
    with pytest.raises(PrivacyVerificationError, match="canonical instance.*transcript"):
        register(decl)
    assert "fitted-lgrr" not in load_registry(kinds=("longitudinal",))


@pytest.mark.slow
def test_verify_name_runs_the_draws_of_the_cli():
    krr = load_registry()["krr"]
    rows = verify_name(krr, quick=True, seed=3)
    assert sum(bool(r.get("random_draw")) and "edge" not in r for r in rows) == 2 and sum(not r.get("random_draw") for r in rows) == len(krr.canonical)
    edges = [r for r in rows if "edge" in r]
    assert {r["edge"]["parameter"] for r in edges} == {"epsilon", "d"} and any("refusal" in r for r in edges)
    assert all(r["passed"] for r in rows)
