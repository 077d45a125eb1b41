"""The numeric and longitudinal families in the registry (issue 18): built only through
``registry.build``, spec and wire round trips, the verification layers on their canonical
instances, the OpenDP measurements, and ``ldp choose --family``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import float_up
from ldp_plugin.registry import KINDS, build, from_spec, load_registry, verify_instance
from ldp_plugin.mechanisms.reports import frame_to_reports, from_wire, report_count, report_schema, reports_to_frame, to_wire

REG = load_registry(kinds=KINDS)
SERIES = {n: d for n, d in REG.items() if d.kind != "frequency"}
INSTANCES = [(n, i, dict(inst)) for n, d in sorted(SERIES.items()) for i, inst in enumerate(d.canonical)]
KEYS = [i.to_bytes(4, "little") * 8 for i in range(300)]


def test_default_registry_is_the_frequency_oracles():
    assert set(SERIES) == {"duchi", "piecewise", "hybrid", "one-bit-mean", "l-grr", "l-oue", "l-osue", "l-sue", "loloha", "dbitflip",
                           "square-wave", "bucketed", "spl", "smp", "rsfd", "hierarchical-histogram", "pckv", "haar-hrr", "smp-pairs"}
    assert not set(SERIES) & set(load_registry())


def _build(name, inst):
    if SERIES[name].kind == "longitudinal":
        return build(name, **inst)
    inst = dict(inst)
    return build(name, epsilon=inst.pop("epsilon"), **inst)


def _reports(m, n=300):
    if m.needs_user_keys:
        return m.randomize(np.arange(n) % m.d, KEYS[:n], rng=3)
    if m.input_kind == "key-value":  # key-value sets (issue 37)
        return m.randomize([[(i % m.d, (i % 7) / 7 - 0.5)] if i % 3 else [] for i in range(n)], rng=3)
    if m.input_kind == "tuple":  # several attributes per user (issue 37)
        return m.randomize(np.stack([np.arange(n) % k for k in m.domains], axis=1), rng=3)
    return m.randomize(np.linspace(m.lower, m.upper, n), rng=3)


@pytest.mark.parametrize("name,i,inst", INSTANCES, ids=[f"{n}-{i}" for n, i, _ in INSTANCES])
def test_build_spec_and_wire_round_trips(name, i, inst):
    m = _build(name, inst)
    assert from_spec(m.spec()) == m and from_spec(json.dumps(m.spec())) == m
    reports = _reports(m)
    cols = m._to_columns(reports)
    back, counts = from_wire(m, to_wire(m, reports))
    assert sum(counts.values()) == 0
    for k, v in m._to_columns(back).items():
        assert np.array_equal(np.asarray(v), np.asarray(cols[k]))
    frame = reports_to_frame(m, reports)
    assert frame.schema == report_schema(m)
    assert report_count(m, frame_to_reports(m, frame)) == 300


@pytest.mark.parametrize("name,i,inst", INSTANCES, ids=[f"{n}-{i}" for n, i, _ in INSTANCES])
def test_exact_and_sampling_path_layers(name, i, inst):
    m = _build(name, inst)
    out = verify_instance(m, name=name, instance=inst, layers=("exact", "sampling-path"))
    assert out["passed"], out


@pytest.mark.slow
@pytest.mark.parametrize("name,i", [("hybrid", 2), ("l-grr", 2)])
def test_all_layers_quick(name, i):
    """Every layer on one instance per family (all instances: `ldp verify NAME`, VERIFICATION.md)."""
    m = _build(name, dict(SERIES[name].canonical[i]))
    assert verify_instance(m, name=name, instance={}, quick=True)["passed"]


def test_registry_errors_name_the_parameter():
    with pytest.raises(LDPParameterError, match="takes epsilon_perm and epsilon_1, not epsilon"):
        build("l-grr", epsilon=1.0, d=4)
    with pytest.raises(LDPParameterError, match="epsilon_perm"):
        build("l-grr", epsilon_1=1.0, d=4)
    with pytest.raises(LDPParameterError, match="has no parameter"):
        build("piecewise", epsilon=1.0, d=4)


def test_opendp_measurements():
    m = ldp.make_piecewise(epsilon=1.0, lower=0, upper=3600)
    assert m.map(1) == 1.0 and 0 <= m(1200.0) < ldp.Piecewise(epsilon=1.0).cells
    batch = ldp.make_ldp(*ldp.space_of(ldp.Hybrid(epsilon=2.0), "population"), ldp.Hybrid(epsilon=2.0))
    assert batch.map(3) == 6.0 and len(batch([0.1, 0.5, 0.9])) == 3
    lol = ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8)
    lm = ldp.make_longitudinal(lol)  # the input a user holds: the code; the key lives inside
    assert lm.map(1) == float_up(lol.epsilon_inst) > lol.epsilon_1 and lm(3).shape == (1, 2)
    first, again = lm(3), lm(3)
    assert first[0, 0] == again[0, 0]  # one hidden key: the same public hash seed every call
    with pytest.raises(LDPParameterError):
        ldp.make_longitudinal(ldp.KRR(epsilon=1.0, d=4))


def test_choose_families(cli):
    def run(*argv):
        out = cli("choose", *argv, "--json")
        assert out.returncode == 0, out.stderr
        return {r["mechanism"] + str(r["params"].get("g", "")): r for r in json.loads(out.stdout)["ranking"]}

    means = run("--family", "mean", "--epsilon", "1", "--n", "100000")
    # Hybrid minimizes the worst case (Wang et al. 2019)
    assert means["hybrid"]["worst_error"] <= min(means["duchi"]["worst_error"], means["piecewise"]["worst_error"])
    lon = run("--family", "longitudinal", "--d", "64", "--epsilon-perm", "2", "--epsilon-1", "1", "--n", "100000", "--rounds", "20")
    # value level (same change pattern, the papers' relation): g·ε∞ and d·ε∞ capped by the user level
    assert lon["loloha2"]["lifetime_value_worst"] == 4.0 and lon["l-grr"]["lifetime_value_worst"] == 40.0
    assert lon["loloha2"]["lifetime_value_expected"] < lon["l-grr"]["lifetime_value_expected"]
    # user level (the default charge): data-independent, the exact bound after 20 collections
    lol2 = build("loloha", epsilon_perm=2.0, epsilon_1=1.0, d=64, g=2)
    assert lon["loloha2"]["lifetime_worst"] == lon["loloha2"]["lifetime_expected"] == float_up(lol2.lifetime_bound(20)) > 4.0
    assert lon["loloha2"]["lifetime_worst"] < lon["l-grr"]["lifetime_worst"] and lon["dbitflip"]["lifetime_worst"] is None
    assert lon["l-grr"]["predicted_error"] == pytest.approx(
        build("l-grr", epsilon_perm=2.0, epsilon_1=1.0, d=64).analytic_mse(100000, theta=np.full(64, 1 / 64)))
