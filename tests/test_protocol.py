"""The mechanism protocol, for every registered mechanism's canonical instances plus SampleOne
and Memoized: spec round trip, frame and wire round trips, row-wise validation rejecting each
malformed class (with counts), the registry as the only builder, and the CLI never tracebacking
for any registered name."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.mechanisms import Mechanism
from ldp_plugin.registry import build, from_spec, load_registry
from ldp_plugin.mechanisms.reports import check_reports, frame_to_reports, from_wire, report_count, report_schema, reports_to_frame, to_wire, wire_fingerprint, wire_size

REG = load_registry()
KEYS = [bytes([i % 256, i // 256]) * 16 for i in range(512)]


def _instances():
    out = []
    for name, decl in sorted(REG.items()):
        for i, inst in enumerate(decl.canonical):
            out.append(pytest.param(name, dict(inst), id=f"{name}-{i}"))
    return out


def _mech(name, inst):
    return REG[name].mechanism_class()(**inst)


def _inputs(mech, n):
    """Valid inputs for ``mech``: codes (values) or sets of codes."""
    gen = np.random.default_rng(1)
    d = mech.domain_size
    if mech.input_kind == "set":
        m = mech.m
        return [sorted(gen.choice(d, size=int(gen.integers(0, m + 1)), replace=False).tolist()) for _ in range(n)]
    return gen.integers(0, d, n)


def _reports(mech, n=64, rng=0):
    x = _inputs(mech, n)
    if isinstance(mech, ldp.Memoized):
        return mech.randomize(x, KEYS[:n], rng=rng)
    return mech.randomize(x, rng=rng) if mech.input_kind == "set" else mech.randomize_encoded(x, rng=rng)


EXTRA = [
    pytest.param(lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2), id="sample-one-krr"),
    pytest.param(lambda: ldp.SampleOne(mechanism=ldp.ORR(epsilon=2.0, d=6, k=3, cohorts=4), m=3), id="sample-one-orr"),
    pytest.param(lambda: ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2), id="memoized"),
]


def _all():
    return [pytest.param(lambda n=p.values[0], i=p.values[1]: _mech(n, i), id=p.id) for p in _instances()] + EXTRA


@pytest.fixture(params=_all())
def mech(request):
    return request.param()


def _same(mech, r1, r2) -> bool:
    c1, c2 = mech.base._to_columns(r1), mech.base._to_columns(r2)
    return c1.keys() == c2.keys() and all(np.array_equal(np.asarray(c1[k]).astype(np.uint64), np.asarray(c2[k]).astype(np.uint64)) for k in c1)


def test_is_a_mechanism_with_a_spec_that_round_trips(mech):
    assert isinstance(mech, Mechanism)
    spec = mech.spec()
    again = from_spec(json.loads(json.dumps(spec)))
    assert again == mech and again.spec() == spec
    assert wire_fingerprint(mech) == wire_fingerprint(again)


def test_frame_and_wire_round_trip(mech):
    r = _reports(mech)
    frame = reports_to_frame(mech, r)
    assert frame.schema == report_schema(mech)
    assert _same(mech, frame_to_reports(mech, frame), r)
    blob = to_wire(mech, r, tag=b"query-1")
    assert len(blob) == wire_size(mech, report_count(mech, r), tag=b"query-1")
    back, rejected = from_wire(mech, blob, tag=b"query-1")
    assert rejected == {} and _same(mech, back, r)
    # the accumulator takes the decoded reports and gives the same counts
    a, b = mech.accumulator().add(r), mech.accumulator().add(back)
    assert np.array_equal(a.counts, b.counts)


def test_wire_rejects_each_malformed_class_and_counts_it(mech):
    r = _reports(mech, n=16)
    blob = to_wire(mech, r, tag=b"q")
    n = report_count(mech, r)
    assert from_wire(mech, blob[:-1], tag=b"q")[1] == {"malformed": n}
    assert from_wire(mech, b"", tag=b"q")[1] == {"malformed": 1}
    assert from_wire(mech, b"XXXX" + blob[4:], tag=b"q")[1] == {"malformed": 1}
    assert from_wire(mech, blob, tag=b"other")[1] == {"wrong_tag": n}
    # a report of another mechanism (other parameters) is refused as a whole
    other = ldp.KRR(epsilon=0.3, d=3)
    assert from_wire(mech, to_wire(other, other.randomize_encoded([0, 1], rng=0), tag=b"q"), tag=b"q")[1] == {"wrong_mechanism": 2}
    # row-level corruption: every field at its bound (out of range / padding bits / unsorted)
    fields = mech.base.report_fields()
    cols = {k: np.array(v, copy=True) for k, v in mech.base._to_columns(r).items()}
    for f in fields:
        if f.kind in ("int", "sorted") and f.bound is not None and f.bound < 2 ** (8 * np.dtype(f.dtype).itemsize):
            bad = {k: v.copy() for k, v in cols.items()}
            bad[f.name][0] = f.bound  # row 0 out of range (for a row field: every slot)
            acc, rej = check_reports(mech, mech.base._from_columns(bad))
            assert rej == {"out_of_range": 1} and report_count(mech, acc) == n - 1
            # through the wire too: never raises, never estimates the bad row
            back, rej = from_wire(mech, to_wire(mech, mech.base._from_columns(bad), tag=b"q"), tag=b"q")
            assert rej == {"out_of_range": 1} and report_count(mech, back) == n - 1
        if f.kind == "bits" and f.bound % 8:
            bad = {k: v.copy() for k, v in cols.items()}
            bad[f.name][1, -1] |= np.uint8(0x80)
            assert check_reports(mech, mech.base._from_columns(bad))[1] == {"padding_bits": 1}
        if f.kind == "sorted" and f.width > 1:
            bad = {k: v.copy() for k, v in cols.items()}
            bad[f.name][2, :2] = bad[f.name][2, 1::-1]
            assert check_reports(mech, mech.base._from_columns(bad))[1] == {"not_sorted": 1}


def test_check_reports_power_on_a_clean_batch(mech):
    """The row checks accept every report the real client produces (no false rejections)."""
    r = _reports(mech, n=256, rng=5)
    acc, rej = check_reports(mech, r)
    assert rej == {} and report_count(mech, acc) == 256


def test_cohorts_only_for_cohort_mechanisms():
    with pytest.raises(LDPParameterError, match="cohorts"):
        ldp.KRR(epsilon=1.0, d=3).randomize([0, 1], cohorts=[0, 0])
    r = ldp.ORR(epsilon=1.0, d=3, k=2, cohorts=2).randomize([0, 1], cohorts=[1, 1], rng=0)
    assert r.cohort.tolist() == [1, 1]


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(name="orappor", epsilon=1.0, d=8), "needs k (int in [2, 2^24]); on the command line: --param k=VALUE"),
        (dict(name="orr", epsilon=1.0), "needs k"),
        (dict(name="krr", epsilon=1.0), "needs the domain: d"),
        (dict(name="krr", epsilon=1.0, d=4, bogus=1), "no parameter(s) ['bogus']"),
        (dict(name="nope", epsilon=1.0, d=4), "unknown mechanism 'nope'"),
        (dict(name="warner", epsilon=1.0, d=3), "d fixed at 2"),
    ],
)
def test_registry_build_names_what_is_missing(kw, needle):
    with pytest.raises(LDPParameterError) as e:
        build(**kw)
    assert needle in str(e.value)


def test_registry_build_defaults_live_in_one_place():
    a = build("orr", epsilon=2.0, d=64, n=10**5)
    assert a.k >= 2 and a.cohorts >= 1  # choose_orr's pick
    s = build("sample-krr", epsilon=1.0, d=4, m=3)
    assert isinstance(s, ldp.SampleOne) and s.m == 3
    w = build("wheel", epsilon=1.0, d=8, m=2)
    assert w.m == 2 and w.input_kind == "set"


@pytest.mark.parametrize("name", sorted(REG))
@pytest.mark.parametrize("with_d", [True, False])
def test_cli_simulate_every_registered_name_never_tracebacks(name, with_d, cli):
    cmd = ["simulate", "--mechanism", name, "--epsilon", "1", "--n", "500", "--seed", "1", "--json"]
    if with_d:
        cmd += ["--d", "4"]
    out = cli(*cmd)  # in process: an uncaught exception would fail here, not just print a traceback
    assert out.returncode in (0, 2), out.stderr
    assert "Traceback" not in out.stderr
    if out.returncode == 2:  # under --json the error is a JSON document naming the problem
        err = json.loads(out.stdout)
        assert err["error"] == "LDPParameterError" and err["message"]
    else:
        assert "mean_l2_squared" in json.loads(out.stdout)


def test_polars_namespace_uses_only_the_protocol():
    """The adapter holds no per-family branches: every mechanism goes through the same path."""
    import inspect

    from ldp_plugin.adapters import polars_namespace

    src = inspect.getsource(polars_namespace)
    for cls in ("KRR", "OLH", "Wheel", "SampleOne", "WarnerRR", "CohortReports", "_CohortMechanism", "RapporSet", "PrivSet"):
        assert f"isinstance(mechanism, {cls}" not in src and f"import {cls}" not in src and f" {cls}," not in src
    df = pl.DataFrame({"v": ["a", "b", "a"], "s": [["a"], ["a", "b"], []]})
    for mech, col in [(ldp.KRR(epsilon=1.0, categories=["a", "b"]), "v"), (ldp.Wheel(epsilon=1.0, m=2, categories=["a", "b", "c"]), "s"),
                      (ldp.SampleOne(mechanism=ldp.OUE(epsilon=1.0, categories=["a", "b"]), m=2), "s")]:
        rep = df.ldp.privatize(col, mech, seed=0)
        assert rep.schema == report_schema(mech)
        assert rep.ldp.estimate(mech).height == len(mech.categories)


def test_opendp_map_at_its_edge(mech):
    """make_ldp in OpenDP's order, unit from the metric: ``check(1, ε)`` holds and
    ``check(1, ε·(1−1e−9))`` fails (the map is ε, never rounded down)."""
    import opendp.prelude as dp

    if isinstance(mech, ldp.Memoized):
        pytest.skip("a memoized series is charged by its collection_cost, not one measurement")
    meas = ldp.make_ldp(ldp.category_domain(mech), dp.discrete_distance(), mech)
    eps = mech.epsilon
    assert meas.check(1, eps) and not meas.check(1, eps * (1 - 1e-9))
    assert meas.map(0) == 0
    pop = ldp.make_ldp(ldp.batch_domain(mech), dp.hamming_distance(), mech)
    assert pop.check(3, 3 * eps * (1 + 1e-12)) and not pop.check(3, 3 * eps * (1 - 1e-9))
    with pytest.raises(LDPParameterError, match="input_metric"):
        ldp.make_ldp(ldp.category_domain(mech), dp.symmetric_distance(), mech)
