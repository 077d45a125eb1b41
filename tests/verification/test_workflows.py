"""The workflows layer runs the command line in-process as a user does: one ``ldp collect`` job per
registered name a job can feed (held to the namespace's privatize and the mechanism's estimate), the
ledger (charged once, a retry free, past the cap refused), the partitioned path, and the other
commands that randomize (reproducible for a seed)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ldp_plugin as ldp

from ldp_plugin.collect import JOB_KINDS
from ldp_plugin.registry import KINDS, load_registry
from ldp_plugin.verification import workflows as wf


def test_one_collect_job_per_registered_name_a_job_can_feed():
    reg = load_registry(kinds=KINDS)
    want = {n for n, d in reg.items() if d.kind in JOB_KINDS and "epsilon" in d.canonical[0]}
    assert {label for label, _v, _s in wf.collect_jobs(quick=True)} == want
    assert any("pad-and-sample" in label for label, _v, _s in wf.collect_jobs(quick=False))


@pytest.mark.parametrize("label", ["krr", "wheel", "duchi", "orr", "warner", "staircase"])
def test_a_collect_job_is_the_namespace_path(tmp_path, label):
    (job,) = [j for j in wf.collect_jobs(quick=True) if j[0] == label]
    assert wf._collect_case(tmp_path, *job, seed=5) == []


def test_the_ledger_and_the_refusals(tmp_path):
    assert wf._ledger_case(tmp_path, seed=1) == []
    assert wf._refusals(tmp_path) == []


def test_a_command_that_ignores_its_seed_is_caught():
    argv = ["simulate", "--mechanism", "krr", "--d", 4, "--epsilon", 1.5, "--n", 300, "--json"]
    assert wf._reproducible(argv) == []
    # without --seed the OS CSPRNG is used: two runs at the same "seed" (here --repeats) differ
    assert wf._reproducible(argv, seed_flag="--repeats") == ["the same seed gave another output"]


def test_a_failed_command_is_reported_with_its_status(tmp_path):
    fails = wf._collect_case(tmp_path, "no-such", ["a", "b"], {"name": "no-such-mechanism", "epsilon": 1.0}, seed=0)
    assert fails and fails[0].startswith("exit status 2")
    assert not list(Path(tmp_path).rglob("est.parquet"))


def test_the_namespace_ledger_and_the_attack(tmp_path):
    assert wf._accountant_case(tmp_path, seed=2) == []
    assert wf._attack_case(ldp.KRR(epsilon=1.0, d=4), seed=3) == []
