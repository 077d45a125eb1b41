"""``ldp verify``'s job pool: the same rows, in the same order, on one process or on spawned workers
(each job's seed is fixed by its place in the run, not by the worker that runs it); the declared
channel is enumerated once per instance; and under ``--coverage`` the pool's workers are traced."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ldp_plugin.mechanisms import KRR, OUE
from ldp_plugin.registry import load_registry, verify
from ldp_plugin.verification import parallel
from ldp_plugin.verification.channels import channel_floats, declared_channel
from ldp_plugin.verification.layers import audit_layer
from ldp_plugin.verification.privacy_paths import measure, privacy_path_modules

ROOT = Path(__file__).resolve().parents[2]
_SEEDED = ("exact", "goodness-of-fit", "audit")  # layers that draw from the seeded source only


def _jobs() -> list:
    reg = load_registry()
    return [functools.partial(verify, reg[name], seed=17 + i, quick=True, layers=_SEEDED) for i, name in enumerate(("krr", "warner"))]


def test_pooled_jobs_give_the_serial_rows_in_order():
    serial = parallel.run_jobs(_jobs())  # no pool open: here, in order
    with parallel.job_pool(2):
        assert parallel._POOL is not None and parallel._POOL.pool is None  # no worker until two jobs or more
        assert parallel.run_jobs(_jobs()[:1]) == serial[:1] and parallel._POOL.pool is None
        with parallel.job_pool(2):  # a nested block reuses the open pool
            pooled = parallel.run_jobs(_jobs(), costs=[0.0, 5.0])  # the costliest starts first; rows still in job order
            assert parallel._POOL.pool is not None
    assert parallel._POOL is None
    assert pooled == serial
    assert [r[0]["name"] for r in pooled] == ["krr", "warner"]


def test_default_processes_reads_the_override(monkeypatch):
    monkeypatch.setenv("LDP_PLUGIN_VERIFY_PROCESSES", "1")
    assert parallel.default_processes() == 1
    monkeypatch.setenv("LDP_PLUGIN_VERIFY_PROCESSES", "not a number")
    assert 1 <= parallel.default_processes() <= parallel.MAX_PROCESSES
    with parallel.job_pool(1):  # one process: no pool
        assert parallel._POOL is None


def test_the_declared_channel_is_enumerated_once_per_instance(monkeypatch):
    calls = []
    original = KRR.channel
    monkeypatch.setattr(KRR, "channel", lambda self: calls.append(self) or original(self))
    a, b = KRR(epsilon=1.0, d=4), KRR(epsilon=1.0, d=4)
    assert declared_channel(a) is declared_channel(a) and channel_floats(a) is channel_floats(a)
    assert declared_channel(b) == declared_channel(a) and len(calls) == 2  # equal instances: one enumeration each, never shared
    assert not channel_floats(a).flags.writeable
    assert channel_floats(a)[0, 0] == float(original(a).matrix[0][0])


def test_the_audit_shares_samples_between_pairs_and_keeps_its_power():
    # input 0 is in all four pairs: three inputs' samples, not eight; the sample size still meets the power formula
    a = audit_layer(OUE(epsilon=2.0, d=4), seed=3, n_pilot=2_000, max_samples=200_000)
    assert a["passed"] and a["power_guaranteed"] and a["samples_required_per_input"] > 10_000
    assert a["audit_samples"] <= 3 * (2_000 + a["samples_required_per_input"])  # eight draws per pair set before: 8 · (2,000 + n)


_HELPER = """
import functools

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.parallel import job_pool, run_jobs


def krr_batch(n):
    return len(ldp.KRR(epsilon=1.0, d=4).randomize(np.arange(n) % 4, rng=SeededRandomSource(n)))


def on_the_pool():
    with job_pool(2):
        return run_jobs([functools.partial(krr_batch, 100), functools.partial(krr_batch, 50)])
"""


@pytest.mark.slow
def test_coverage_traces_the_pool_workers(tmp_path, monkeypatch):
    (tmp_path / "pooled_helper.py").write_text(_HELPER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    import pooled_helper

    mods = {m: p for m, p in privacy_path_modules().items() if m == "ldp_plugin.mechanisms.randomized_response"}
    out, cov = measure(pooled_helper.on_the_pool, mods)
    assert out == [100, 50]
    path = mods["ldp_plugin.mechanisms.randomized_response"]
    worker_only = [i for i, line in enumerate(Path(path).read_text().splitlines(), 1) if "other += other >= codes" in line]
    assert len(worker_only) == 1  # k-RR's client runs only in the spawned workers
    missing = cov["modules"]["ldp_plugin.mechanisms.randomized_response"]["missing_lines"]
    ranges = [tuple(int(v) for v in part.strip().split("-")) for part in missing.split(",") if part.strip()]
    assert not any(r[0] <= worker_only[0] <= r[-1] for r in ranges)
