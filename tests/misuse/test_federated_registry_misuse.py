"""Misuse cases of the third pass (issue 38): ``ldp federated simulate | new | certs | device init``
with bad options and paths (each fails before Flower starts: exit 2, one message naming the
option or file, ``--json`` one document), every registered mechanism given to every command that
takes ``--mechanism`` (a kind the command does not take points to a command that exists — the
guidance does not loop), ``make_longitudinal`` behind the OpenDP boundary, the usable-ε message
of the mechanisms with a narrower range (its bound is accepted, and a slightly larger ε is not),
and a few cases in a subprocess under a memory limit (``RLIMIT_AS``) and a timeout."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys

import pytest

import ldp_plugin as ldp
import registry
from registry._loader import KINDS, _tuples

from .cases_api import api_parameter_cases
from .cases_cli import cli_cases
from .harness import SENTINEL, assert_clear_api, assert_clear_cli, run_cli

DECLS = registry.load_registry(kinds=KINDS)
FREQUENCY = sorted(n for n, d in DECLS.items() if d.kind == "frequency")
OTHER_KINDS = sorted(n for n, d in DECLS.items() if d.kind != "frequency")

SIM = ["federated", "simulate", "--nodes", "2", "--users-per-node", "10", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--device-cap", "4"]


def _with(base: list, option: str, value: str) -> list:
    argv = list(base)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def federated_simulate_cases() -> list:
    """``(id, argv, names)``: every option of ``ldp federated simulate`` × bad values; each fails
    before any Flower process starts."""
    table = {
        "--device-cap": (["abc", "-1", "0", "nan", "inf", "1e309", "", "1/0", "0.5"], ["--device-cap"]),
        "--max-epsilon": (["abc", "0", "-1", "nan", "inf", "1e309", "", "0.5"], ["--max-epsilon"]),
        "--nodes": (["0", "-1", "abc", "1001", "2.5", "100000"], ["--nodes"]),
        "--users-per-node": (["0", "abc", "1000001", "-5"], ["--users-per-node"]),
        "--d": (["1", "abc", "2147483648", "2147483649", "70000", "2.5"], ["--d"]),
        "--epsilon": (["0", "abc", "nan", "701", "1e-300", "-1"], ["epsilon"]),
        "--mechanism": (["bogus", "", "duchi", "square-wave", "pckv", "rsfd", "smp"], ["mechanism", "duchi", "square-wave", "pckv", "rsfd", "smp"]),
        "--param": (["no_such_param=1", "epsilon=2", "d=3", "k", "=3"], ["--param", "no_such_param", "epsilon", " d"]),
        "--rounds": (["0", "abc", "1001"], ["--rounds"]),
        "--min-batch": (["0", "abc", "-1"], ["--min-batch"]),
        "--timeout": (["5", "abc", "100000"], ["--timeout"]),
        "--seed": (["abc", "-1"], ["--seed"]),
        "--out": (["{D}/afile", "{D}/afile/sub"], ["afile", "file"]),
    }
    out = []
    for option, (values, names) in table.items():
        for v in values:
            out.append((f"fed-sim{option}={v or 'empty'}", _with(SIM, option, v), names))
    big = _with(_with(SIM, "--nodes", "1000"), "--users-per-node", "1000000")
    out.append(("fed-sim-work", big, ["--nodes", "--users-per-node"]))
    out.append(("fed-sim-lgrr-no-params", _with(SIM, "--mechanism", "l-grr")[:-0] if False else
                [a for a in _with(SIM, "--mechanism", "l-grr") if a not in ("--epsilon",)][:10] + ["--device-cap", "4"], ["epsilon_perm"]))
    lg = _with(SIM, "--mechanism", "l-grr")
    i = lg.index("--epsilon")
    lg = lg[:i] + lg[i + 2:] + ["--param", "epsilon_perm=2", "--param", "epsilon_1=1"]
    out.append(("fed-sim-lgrr-over-max", lg + ["--max-epsilon", "0.1"], ["--max-epsilon"]))
    out.append(("fed-sim-lgrr-over-cap", _with(lg, "--device-cap", "0.01"), ["--device-cap"]))
    return out


def federated_other_cases() -> list:
    """``new``, ``certs``, ``device init`` (no ``--json`` option: plain only)."""
    return [
        ("fed-new-file", ["federated", "new", "{D}/afile"], ["afile"]),
        ("fed-new-under-file", ["federated", "new", "{D}/afile/sub"], ["afile", "file"]),
        ("fed-new-exists", ["federated", "new", "{D}/project"], ["--force"]),
        ("fed-new-nodes-0", ["federated", "new", "{D}/p2", "--nodes", "0"], ["--nodes"]),
        ("fed-new-nodes-abc", ["federated", "new", "{D}/p2", "--nodes", "abc"], ["--nodes"]),
        ("fed-new-nodes-huge", ["federated", "new", "{D}/p2", "--nodes", "100001"], ["--nodes"]),
        ("fed-certs-file", ["federated", "certs", "{D}/afile"], ["afile"]),
        ("fed-certs-under-file", ["federated", "certs", "{D}/afile/sub"], ["afile", "file"]),
        ("fed-certs-host-empty", ["federated", "certs", "{D}/c1", "--host", ""], ["--host"]),
        ("fed-certs-host-space", ["federated", "certs", "{D}/c1", "--host", "a b"], ["--host"]),
        ("fed-certs-host-long", ["federated", "certs", "{D}/c1", "--host", "x" * 70], ["--host"]),
        ("fed-certs-host-dash", ["federated", "certs", "{D}/c1", "--host", "-bad"], ["--host"]),
        ("fed-certs-nodes-neg", ["federated", "certs", "{D}/c1", "--nodes", "-1"], ["--nodes"]),
        ("fed-certs-nodes-abc", ["federated", "certs", "{D}/c1", "--nodes", "abc"], ["--nodes"]),
        ("fed-certs-nodes-huge", ["federated", "certs", "{D}/c1", "--nodes", "10001"], ["--nodes"]),
        ("fed-device-missing", ["federated", "device", "init", "{D}/nope.toml"], ["nope.toml"]),
        ("fed-device-dir", ["federated", "device", "init", "{D}/adir"], ["adir", "directory"]),
        ("fed-device-bad-toml", ["federated", "device", "init", "{D}/bad.toml"], ["bad.toml"]),
        ("fed-device-empty", ["federated", "device", "init", "{D}/empty.toml"], ["ledger", "[device]", "[policy]"]),
        ("fed-device-unknown-section", ["federated", "device", "init", "{D}/extra.toml"], ["bogus", "section"]),
        ("fed-device-node-config", ["federated", "device", "init", "{D}/empty.toml", "--node-config", "x"], ["--node-config"]),
        ("fed-device-node-config-eq", ["federated", "device", "init", "{D}/empty.toml", "--node-config", "=3"], ["--node-config"]),
        ("fed-no-subcommand", ["federated", "bogus"], ["bogus", "invalid choice"]),
    ]


def registry_cli_cases() -> list:
    """Every registered mechanism through every command that takes ``--mechanism``."""
    out = []
    for name in sorted(DECLS):
        freq = name in FREQUENCY
        sim = ["simulate", "--mechanism", name, "--d", "8", "--epsilon", "1", "--n", "200", "--seed", "1"]
        amp = ["amplify", "--mechanism", name, "--d", "8", "--epsilon", "1", "--n", "1000", "--delta", "1e-6"]
        fed = _with(SIM, "--mechanism", name)
        if freq:
            out.append((f"reg-simulate-{name}-unknown-param", sim + ["--param", "no_such_param=1"], ["no_such_param"]))
            out.append((f"reg-simulate-{name}-eps-701", _with(sim, "--epsilon", "701"), ["epsilon"]))
            out.append((f"reg-amplify-{name}-unknown-param", amp + ["--param", "no_such_param=1"], ["no_such_param"]))
            out.append((f"reg-federated-{name}-unknown-param", fed + ["--param", "no_such_param=1"], ["no_such_param"]))
        else:
            out.append((f"reg-simulate-{name}-kind", sim, [name]))
            out.append((f"reg-amplify-{name}-kind", amp, [name]))
            out.append((f"reg-federated-{name}-kind", fed, [name, "epsilon_perm", "--d", "d"]))
        out.append((f"reg-simulate-{name}-dup-epsilon", sim + ["--param", "epsilon=2"], ["epsilon", name]))
    return out


def _params():
    out = []
    for cid, argv, names in federated_simulate_cases() + registry_cli_cases():
        for mode in ("plain", "json"):
            out.append(pytest.param(argv + (["--json"] if mode == "json" else []), names, id=f"{cid}-{mode}"))
    for cid, argv, names in federated_other_cases():
        out.append(pytest.param(argv, names, id=f"{cid}-plain"))
    return out


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("misuse3")
    (d / "afile").write_text(SENTINEL)
    (d / "adir").mkdir()
    (d / "bad.toml").write_text(f"garbage = [ {SENTINEL}\n")
    (d / "empty.toml").write_text("")
    (d / "extra.toml").write_text("[bogus]\nx = 1\n")
    assert run_cli(["federated", "new", str(d / "project")])[0] == 0
    return d


@pytest.mark.parametrize("argv,names", _params())
def test_federated_and_registry_cli_misuse(fixture_dir, argv, names):
    argv = [a.replace("{D}", str(fixture_dir)) for a in argv]
    assert_clear_cli(argv, names)


_SUGGESTION = re.compile(r"`ldp ([a-z-]+(?: [a-z-]+)?) --mechanism")


@pytest.mark.parametrize("name", OTHER_KINDS)
def test_guidance_names_a_command_that_takes_the_mechanism(name):
    """A kind ``ldp simulate`` does not take: the message names a command that exists and does not
    send the user back to ``ldp simulate`` (or names the Python class when no command takes it)."""
    rc, out, err, _ = run_cli(["simulate", "--mechanism", name, "--d", "8", "--epsilon", "1", "--n", "200"])
    assert rc == 2
    found = _SUGGESTION.search(err)
    if found is None:
        cls = DECLS[name].mechanism_class().__name__
        assert f"ldp_plugin.{cls}" in err and hasattr(ldp, cls), err
        return
    command = found.group(1).split()
    assert command != ["simulate"], err
    help_rc, help_out, _, _ = run_cli(command + ["--help"])
    assert help_rc == 0 and "--mechanism" in help_out, (command, help_out[-300:])


# -- make_longitudinal: the OpenDP boundary -------------------------------------------------------------
LONGITUDINAL = [
    ("l-grr", lambda: ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8)),
    ("l-oue", lambda: ldp.LOUE(epsilon_perm=2.0, epsilon_1=1.0, d=8)),
    ("l-osue", lambda: ldp.LOSUE(epsilon_perm=2.0, epsilon_1=1.0, d=8)),
    ("l-sue", lambda: ldp.LSUE(epsilon_perm=2.0, epsilon_1=1.0, d=8)),
    ("loloha", lambda: ldp.LOLOHA(epsilon_perm=2.0, epsilon_1=1.0, d=8)),
]


@pytest.mark.parametrize("make", [m[1] for m in LONGITUDINAL], ids=[m[0] for m in LONGITUDINAL])
@pytest.mark.parametrize("arg", ["str", "none", "list", "outside", "negative", "float", "bool", "dict"])
def test_make_longitudinal_checks_its_argument_before_the_ffi(make, arg):
    m = ldp.make_longitudinal(make())
    value = {"str": SENTINEL, "none": None, "list": [1, 2], "outside": 8, "negative": -1, "float": 2.5, "bool": True, "dict": {"a": 1}}[arg]
    assert_clear_api(lambda: m(value), ["argument", "item code"])


@pytest.mark.parametrize("make", [m[1] for m in LONGITUDINAL], ids=[m[0] for m in LONGITUDINAL])
@pytest.mark.parametrize("d_in", [1.0, "1", -1, None, True])
def test_make_longitudinal_map_argument(make, d_in):
    m = ldp.make_longitudinal(make())
    assert_clear_api(lambda: m.map(d_in), ["d_in"])


def test_make_longitudinal_still_works_and_refuses_a_second_dbitflip_report():
    m = ldp.make_longitudinal(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8))
    assert 0 <= int(m(3)[0]) < 8 and m.map(1) > 1.0
    once = ldp.make_longitudinal(ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=8, d_bits=2))
    once(3)
    assert_clear_api(lambda: once(3), ["dbitflip", "second report"])
    assert_clear_api(lambda: ldp.make_longitudinal(ldp.KRR(epsilon=1.0, d=4)), ["longitudinal"])
    assert_clear_api(lambda: ldp.make_longitudinal(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=8), key=b"short"), ["key"])


# -- the usable-ε message names the bound for the mechanism and its parameters -----------------------------
USABLE = [
    ("rue-d2", lambda e: ldp.RUE(epsilon=e, d=2)),
    ("rue-d100", lambda e: ldp.RUE(epsilon=e, d=100)),
    ("geometric-d4", lambda e: ldp.GeometricMechanism(epsilon=e, d=4)),
    ("geometric-d16", lambda e: ldp.GeometricMechanism(epsilon=e, d=16)),
    ("staircase-d4", lambda e: ldp.StaircaseMechanism(epsilon=e, d=4)),
    ("binary-d3", lambda e: ldp.BinaryMechanism(epsilon=e, d=3, subset=(0,))),
]


@pytest.mark.parametrize("eps", [200.0, 699.0])
@pytest.mark.parametrize("make", [u[1] for u in USABLE], ids=[u[0] for u in USABLE])
def test_usable_epsilon_bound_is_named_and_tight(make, eps):
    msg = assert_clear_api(lambda: make(eps), ["epsilon"])
    found = re.search(r"usable range of epsilon for this mechanism and these parameters is \[1e-06, ([0-9.]+)\]", msg)
    assert found, msg
    bound = float(found.group(1))
    make(bound)  # the named bound is usable
    with pytest.raises(ValueError):
        make(bound + 0.1)  # and it is within 0.1 of the limit (a loose bound fails here)


# -- subprocess cases: a memory limit and a timeout per case ----------------------------------------------
def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


SUBPROCESS = [
    ("fed-d-2-31", _with(SIM, "--d", "2147483648"), "--d"),
    ("fed-work", _with(_with(SIM, "--nodes", "1000"), "--users-per-node", "1000000"), "--users-per-node"),
    ("fed-max-eps-huge", _with(SIM, "--max-epsilon", "1e309"), "--max-epsilon"),
    ("fed-cap-below-charge", _with(SIM, "--device-cap", "0.5"), "--device-cap"),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv,names", [s[1:] for s in SUBPROCESS], ids=[s[0] for s in SUBPROCESS])
def test_subprocess_cases_under_limits(argv, names):
    """As a user runs them, in a fresh process with a 6 GiB address-space limit and a 60 s timeout:
    exit 2 (never killed for memory, never a hang), one JSON document naming the option."""
    proc = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", *argv, "--json"], capture_output=True, text=True, timeout=60,
                          preexec_fn=_limited, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 2, proc.stdout[-500:] + proc.stderr[-500:]
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert names in doc["message"], doc


def test_a_min_batch_no_round_could_reach_exits_2_before_flower_starts(tmp_path):
    """--min-batch above the simulated devices (--nodes × --users-per-node): no round could release
    an estimate, so it is refused before any file, ledger or Flower process (it used to run the
    whole simulation and then exit 2), never exit 0 with an empty result."""
    pytest.importorskip("flwr")
    argv = ["federated", "simulate", "--nodes", "1", "--users-per-node", "5", "--mechanism", "krr", "--d", "4", "--epsilon", "1",
            "--device-cap", "4", "--min-batch", "1000", "--out", str(tmp_path / "sim"), "--json"]
    proc = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", *argv], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr[-1000:]
    doc = json.loads(proc.stdout)
    assert "--min-batch" in doc["message"] and "no round could release an estimate" in doc["message"], doc
    assert not (tmp_path / "sim" / "superlink.db").exists() and not (tmp_path / "sim" / "app").exists()


# -- the size of the misuse tables ----------------------------------------------------------------------
def test_the_misuse_tables_are_large_enough():
    cli = {c[0] for c in cli_cases()} | {c[0] for c in federated_simulate_cases() + federated_other_cases() + registry_cli_cases()}
    api = {c[0] for c in api_parameter_cases()}
    assert len(cli) >= 300 and len(api) >= 200, (len(cli), len(api))


# -- notebook reprs of every estimate type ----------------------------------------------------------------
def test_estimate_reprs_are_notebook_sized():
    import numpy as np

    duchi = ldp.Duchi(epsilon=1.0, lower=0, upper=1)
    mean = repr(duchi.estimate(duchi.randomize(np.linspace(0, 1, 300), rng=1)))
    assert mean.startswith("MeanEstimate(mean=") and "95% CI [" in mean and "n=300" in mean and "\n" not in mean
    sw = ldp.SquareWave(epsilon=1.0, grid=16)
    dist = repr(sw.estimate(sw.randomize(np.linspace(0, 1, 300), rng=1)))
    assert dist.startswith("DistributionEstimate(n=300, range=[0, 1], buckets=") and len(dist.splitlines()) == 6 and "array(" not in dist
    spl = ldp.SPL(epsilon=2.0, domains=(3, 4))
    multi = repr(spl.estimate(spl.randomize(np.array([[0, 1], [2, 3]] * 50), rng=1)))
    assert multi.startswith("MultiAttributeEstimate(mechanism='spl', n=100, attributes=2)") and len(multi.splitlines()) == 3
    kv = ldp.PCKV(epsilon=2.0, d=12)
    text = repr(kv.estimate(kv.randomize([[(0, 0.5)], [(1, -0.5)]] * 50, rng=1)))
    assert text.startswith("KeyValueEstimate(n=100, keys=12") and "4 more keys" in text and "array(" not in text


def _processes_mentioning(text: str) -> list:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        out.append(int(pid))
            except OSError:
                pass
    return out


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_terminated_simulation_leaves_no_flower_process(tmp_path):
    """SIGTERM while Flower runs (as `timeout` or a scheduler sends it): the command stops its
    SuperLink and everything it started, never leaving them behind."""
    import signal
    import time

    pytest.importorskip("flwr")
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "ldp_plugin.cli", *_with(SIM, "--nodes", "1"), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not _processes_mentioning(str(out / "superlink.db")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before its SuperLink was seen"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    time.sleep(1)
    assert _processes_mentioning(str(out)) == []
