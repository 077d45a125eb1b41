"""Shared fixtures: the small instances every mechanism's contract tests run on."""

from __future__ import annotations

import contextlib
import io
from typing import NamedTuple

import pytest

from ldp_plugin import KRR, OLH, OUE, RAPPOR, THE, HadamardMechanism, HadamardResponse, KSubset, WarnerRR
from ldp_plugin import enable_ldp_features

# The test process is the application: it makes the one explicit call a user makes before building
# OpenDP measurements (no constructor turns the features on; tests/test_opendp.py checks the refusal
# with the features off, and the README's and the docs' blocks run in fresh processes with their own call).
enable_ldp_features()


def small_instances():
    """(id, factory(epsilon) -> mechanism) for every family, on domains small enough to enumerate."""
    return [
        ("warner", lambda e: WarnerRR(epsilon=e)),
        ("krr-d2", lambda e: KRR(epsilon=e, d=2)),
        ("krr-d5", lambda e: KRR(epsilon=e, d=5)),
        ("rappor-d3", lambda e: RAPPOR(epsilon=e, d=3)),
        ("rappor-d6", lambda e: RAPPOR(epsilon=e, d=6)),
        ("oue-d4", lambda e: OUE(epsilon=e, d=4)),
        ("oue-d6", lambda e: OUE(epsilon=e, d=6)),
        ("ksubset-d4-k1", lambda e: KSubset(epsilon=e, d=4, k=1)),
        ("ksubset-d5-k2", lambda e: KSubset(epsilon=e, d=5, k=2)),
        ("ksubset-d6-k3", lambda e: KSubset(epsilon=e, d=6, k=3)),
        ("ksubset-d6-l2", lambda e: KSubset(epsilon=e, d=6)),
        ("ksubset-d20-k2-shuffle", lambda e: KSubset(epsilon=e, d=20, k=2)),
        ("olh-d5", lambda e: OLH(epsilon=e, d=5)),
        ("blh-d4", lambda e: OLH(epsilon=e, d=4, g=2)),
        ("olh-d6-g5", lambda e: OLH(epsilon=e, d=6, g=5)),
        ("hadamard-d3", lambda e: HadamardResponse(epsilon=e, d=3)),
        ("hadamard-d6", lambda e: HadamardResponse(epsilon=e, d=6)),
        ("hm-d3", lambda e: HadamardMechanism(epsilon=e, d=3)),
        ("hm-d6", lambda e: HadamardMechanism(epsilon=e, d=6)),
        ("the-d4", lambda e: THE(epsilon=e, d=4)),
        ("the-d5-t07", lambda e: THE(epsilon=e, d=5, threshold=0.7)),
    ]


INSTANCES = small_instances()
INSTANCE_IDS = [i for i, _ in INSTANCES]


@pytest.fixture(params=[f for _, f in INSTANCES], ids=INSTANCE_IDS)
def factory(request):
    return request.param


EPSILONS = [0.1, 0.7, 1.0, 2.5, 6.0]


class CliResult(NamedTuple):
    """What a CLI run returned, shaped like ``subprocess.CompletedProcess``."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*argv: str) -> CliResult:
    """The ``ldp`` command line in process (``main(argv)`` with captured output): ~13x faster than a
    subprocess per call; the console script itself has one subprocess smoke test
    (tests/test_cli_and_packaging.py)."""
    from ldp_plugin.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return CliResult(int(code), out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    """``cli(*argv)`` runs the ``ldp`` command line in process (see :func:`run_cli`)."""
    return run_cli
