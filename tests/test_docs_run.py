"""The README's python blocks run in order in a fresh directory (twice: re-running is a retry),
every example runs and leaves nothing behind (their speed — at most 20 s each — is measured by
``benchmarks/examples_time.py``, not here), and a table of CLI misuses each exit 2 with a message
that names the option — no traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_readme_python_blocks_run_in_order(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 4
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    for attempt in range(2):  # the second run re-opens the ledger and retries the same query id
        out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"run {attempt + 1}: {out.stderr[-2000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_every_example_runs_and_leaves_nothing_behind(script, tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), "an example prints its result"
    assert list(tmp_path.iterdir()) == [], "an example leaves files behind"


MISUSES = [
    (["simulate", "--mechanism", "orr", "--epsilon", "1", "--n", "10"], "needs k"),
    (["simulate", "--mechanism", "orappor", "--d", "8", "--epsilon", "1", "--n", "10"], "--param k="),
    (["simulate", "--mechanism", "krr", "--epsilon", "1", "--n", "10"], "--d"),
    (["simulate", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "-3"], "--n"),
    (["simulate", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "3", "--seed", "-1"], "--seed"),
    (["simulate", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "3", "--m", "0"], "--m"),
    (["simulate", "--mechanism", "krr", "--d", "2147483648", "--epsilon", "1", "--n", "1000"], "--d"),
    (["simulate", "--mechanism", "krr", "--d", "2147483647", "--epsilon", "1", "--n", "1000"], "--d or --n"),
    (["simulate", "--mechanism", "hadamard", "--d", "2147483647", "--epsilon", "1", "--n", "1000"], "--d or --n"),
    (["simulate", "--mechanism", "nope", "--d", "4", "--epsilon", "1", "--n", "10"], "unknown mechanism"),
    (["simulate", "--mechanism", "staircase", "--d", "3", "--epsilon", "1", "--n", "10", "--param", "p0=[0.5,"], "JSON list"),
    (["demo", "--epsilon", "1e6"], "--epsilon"),
    (["demo", "--mechanism", "orappor"], "--param k="),
    (["choose", "--d", "8", "--epsilon", "-1"], "--epsilon"),
    (["budget", "show", "/nonexistent/dir/ledger.sqlite"], "does not exist"),
    (["budget", "spend-check", "/nonexistent/x.sqlite", "--epsilon", "0.1"], "does not exist"),
    (["verify", "krr", "--quick", "--report", "/nonexistent/dir/report.md"], "--report"),
    (["aggregate", "/nonexistent/*.parquet", "--mechanism-from-metadata"], "no report files"),
    (["collect", "/nonexistent/job.toml"], "does not exist"),
]


@pytest.mark.parametrize("argv,needle", MISUSES, ids=[" ".join(a[:3]) + f"-{i}" for i, (a, _) in enumerate(MISUSES)])
@pytest.mark.parametrize("as_json", [False, True])
def test_cli_misuse_exits_2_with_a_message(argv, needle, as_json, cli):
    out = cli(*argv, *(["--json"] if as_json else []))  # in process: an escaping exception fails the test
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-500:])
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout
    if as_json:
        msg = json.loads(out.stdout)["message"]
    else:
        msg = out.stderr
    assert needle in msg, msg


def test_version(cli):
    out = cli("--version")
    assert out.returncode == 0 and out.stdout.startswith("ldp-plugin ")


@pytest.mark.slow
def test_malformed_csv_and_unopenable_ledger_exit_2(tmp_path):
    bad = tmp_path / "in.csv"
    bad.write_bytes(b'user,app\n1,"unterminated\n2,maps\n\xff\xfe')
    job = tmp_path / "job.toml"
    job.write_text('[input]\npath = "in.csv"\ncolumn = "app"\n[mechanism]\nname = "krr"\nepsilon = 1.0\ncategories = ["maps"]\n[output]\nestimates = "e.csv"\n')
    out = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "collect", str(job)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.startswith("ldp: error:")
    d = tmp_path / "dir.sqlite"
    d.mkdir()  # a directory where the ledger file should be
    out = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "budget", "init", str(d / "sub" / "x"), "--population", "p", "--lifetime-cap", "1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode in (0, 2) and "Traceback" not in out.stderr
    out = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "budget", "show", str(d)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_progress_bars_only_on_a_terminal_and_never_under_json(monkeypatch):
    import io

    from ldp_plugin import progress as prog

    class TTY(io.StringIO):
        def isatty(self):
            return True

    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    prog.enable(True)
    try:
        assert list(prog.progress(range(3), total=3, desc="ldp verify")) == [0, 1, 2]
        assert "ldp verify" in tty.getvalue()
        prog.enable(False)  # what the CLI does under --json
        before = tty.getvalue()
        assert list(prog.progress(range(3), desc="ldp verify")) == [0, 1, 2] and tty.getvalue() == before
        prog.enable(True)
        plain = io.StringIO()  # not a terminal: no bar
        monkeypatch.setattr(sys, "stderr", plain)
        assert list(prog.progress(range(3), desc="x")) == [0, 1, 2] and plain.getvalue() == ""
    finally:
        prog.enable(False)
