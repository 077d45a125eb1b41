"""Shared fixtures: the small instances every mechanism's contract tests run on."""

from __future__ import annotations

import contextlib
import io
from typing import NamedTuple

import pytest

from ldp_plugin.mechanisms.protocol import InputKind, SupportRates, has
from ldp_plugin.registry import load_registry

from .module_seconds import load as module_weights

#: distinct canonical instances per name the statistical contract runs on (each at every epsilon)
PER_NAME = 3
from ldp_plugin import enable_ldp_features

# The test process is the application: it makes the one explicit call a user makes before building
# OpenDP measurements (no constructor turns the features on; tests/test_opendp.py checks the refusal
# with the features off, and the README's and the docs' blocks run in fresh processes with their own call).
enable_ldp_features()


def small_instances():
    """(id, factory(epsilon) -> mechanism) for every registered pure frequency oracle (value inputs,
    declared SupportRates: the contract tests its support rates), on up to ``PER_NAME`` distinct
    canonical instances of its declaration (small enough to enumerate): derived from the registry,
    so a newly registered oracle is under the contract without a new line here."""
    out = []
    for name, decl in sorted(load_registry().items()):
        cls = decl.mechanism_class()
        seen: list = []
        for inst in decl.canonical:
            params = {k: v for k, v in dict(inst).items() if k != "epsilon"}
            if params in seen or len(seen) == PER_NAME:
                continue
            m = cls(**dict(inst))
            if m.input_kind is not InputKind.VALUE or not has(m, SupportRates):
                break
            seen.append(params)
            ident = "-".join([name] + [f"{k}{v}" for k, v in sorted(params.items())])
            out.append((ident, lambda e, cls=cls, params=params: cls(epsilon=e, **params)))
    return out


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


def pytest_configure(config):
    """``--dist loadscope`` hands the modules out in the order :func:`pytest_collection_modifyitems`
    gives them: pytest-xdist's default (``--loadscope-reorder``) would sort them by their number of
    tests instead, which sends the one-test deployment modules, among the longest, to the end of
    the run (one worker then finishes them alone)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """The longest modules first (``tests/module_seconds.json``), each module's tests in file order:
    ``--dist loadscope`` hands modules out in this order, so no long module starts last and leaves one
    worker alone at the end. Modules without a weight keep their file order, after the weighted ones."""
    weights = module_weights()
    first: dict = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)
    items.sort(key=lambda it: (-weights.get(it.nodeid.split("::")[0], 0), first[it.nodeid.split("::")[0]]))

