"""``ldp federated simulate --secure-sum`` refuses every misconfiguration before any file, ledger or
Flower process (exit 2, a message naming the option or parameter), and the secure-sum modules
that need no Flower import without it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ldp_plugin.cli import main

BASE = ["federated", "simulate", "--secure-sum", "--epsilon", "1", "--delta", "1e-6", "--d", "8", "--users-per-node", "1", "--device-cap", "5"]


@pytest.mark.parametrize("extra, needle", [
    (["--mechanism", "oue", "--nodes", "5"], "--mechanism krr or skellam"),
    (["--mechanism", "skellam", "--nodes", "2"], "--nodes >= 3"),
    (["--mechanism", "skellam", "--nodes", "5", "--min-participants", "5"], "min_participants must be below shares"),
    (["--mechanism", "krr", "--nodes", "4", "--min-participants", "9"], "min_participants must be below shares"),
    (["--mechanism", "krr", "--nodes", "4", "--param", "k=2"], "--param"),
    (["--mechanism", "krr", "--nodes", "4", "--shuffle"], "--shuffle"),
])
def test_refused_before_anything(extra, needle, capsys, tmp_path):
    argv = BASE + extra + ["--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "out" / "app").exists()  # no app project, no ledger, no process


def test_secure_modules_import_without_flower_or_dp_accounting():
    code = ("import sys\n"
            "for m in ('flwr', 'flwr.app', 'flwr.clientapp', 'flwr.serverapp', 'dp_accounting', 'ray'):\n"
            "    sys.modules[m] = None\n"
            "import ldp_plugin.federated.plan, ldp_plugin.federated.secure_query, ldp_plugin.federated.secure_device\n"
            "import ldp_plugin.federated.secure_release, ldp_plugin.federated.secure_simulate, ldp_plugin.federated.cli\n"
            "from ldp_plugin.federated.secure_query import SecureSumQuery\n"
            "try:\n"
            "    SecureSumQuery('a', 'noise', 8, '1', 1e-6, 5, 3).derive()\n"
            "except ValueError as e:\n"
            "    assert 'dp_accounting' in str(e), e\n"
            "else:\n"
            "    raise AssertionError('derived without dp_accounting')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_secure_options_need_secure_sum(capsys, tmp_path):
    argv = ["federated", "simulate", "--mechanism", "krr", "--epsilon", "1", "--d", "8", "--nodes", "3", "--users-per-node", "1",
            "--device-cap", "5", "--min-participants", "2", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    assert "--min-participants goes with --secure-sum" in capsys.readouterr().err
