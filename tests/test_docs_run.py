"""Every code block of the README and the docs site runs as written, and every example runs and
leaves nothing behind (their speed — at most 20 s each — is measured by ``benchmarks/examples_time.py``,
not here); a table of CLI misuses each exit 2 with a message that names the option — no traceback.

A page's blocks run in a fresh directory: its ``python`` blocks in order as one script (the budget
page twice: re-running is a retry), then its ``bash`` blocks line by line (``ldp`` commands in
process). A block preceded by ``<!-- run by: FILE, ... -->`` is a deployment that needs processes
this test does not start: the named tests run it, so they must exist and use every ``ldp``
subcommand and option the block types. The README's install-and-test block is CI's own command
(``.ci/run``); a ``toml`` block documents the ``ldp collect`` job format and must name exactly the
sections and keys the job loader accepts."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import ldp_plugin as ldp
from ldp_plugin import progress as prog
from ldp_plugin.collect import _SECTIONS
from ldp_plugin.simulate import simulate, simulate_mean
from tests.conftest import run_cli

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
#: pages whose python blocks run twice (the second run re-opens the ledger and retries the same query ids)
RETRIED = {"docs/budgets.md"}
BLOCK = re.compile(r"(?:<!--\s*run by:\s*(?P<by>[^>]*?)\s*-->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.S)


def blocks(page: str) -> list:
    """``[(lang, code, run_by)]`` of a page, in order (``run_by``: the named test files, or [])."""
    out = []
    for m in BLOCK.finditer((ROOT / page).read_text()):
        by = [] if m.group("by") is None else re.findall(r"(tests/[\w/]+\.py|\.ci/run)", m.group("by"))
        out.append((m.group("lang"), m.group("code"), by))
    return out


def shell_lines(code: str) -> list:
    """A bash block's commands: continuations joined, comments and blank lines dropped."""
    lines, cur = [], ""
    for raw in code.splitlines():
        line = "" if raw.lstrip().startswith("#") else re.split(r"\s+#\s", raw)[0].rstrip()
        if line.endswith("\\"):
            cur += line[:-1].strip() + " "
            continue
        cur += line.strip()
        if cur:
            lines.append(cur)
        cur = ""
    return lines


def test_every_page_has_runnable_blocks_and_the_parser_sees_them():
    assert len(PAGES) >= 20
    readme = blocks("README.md")
    assert [lang for lang, _, _ in readme] == ["bash", "bash", "python"]
    assert shell_lines("ldp a \\\n    --b 1  # note\n# comment\nldp c") == ["ldp a --b 1", "ldp c"]
    fed = [by for lang, _, by in blocks("docs/federated.md") if by]
    assert fed and all(by for by in fed)


def test_readme_commands_are_ci_commands():
    """The README's install-and-test line is what .ci/run runs; installs come from the checkout
    (the package is not on the index)."""
    ci = (ROOT / ".ci" / "run").read_text()
    test_line = next(line for lang, code, _ in blocks("README.md") if lang == "bash" for line in shell_lines(code) if "pytest" in line)
    install, run = test_line.split(" && ")
    assert install in ci and run in ci
    text = "\n".join(code for page in PAGES for _, code, _ in blocks(page))
    assert "pip install ldp-plugin" not in text and "ldp list" not in text
    for page in PAGES:
        assert "pip install ldp-plugin" not in (ROOT / page).read_text(), page


def test_the_job_format_block_names_every_section_and_key():
    [toml] = [code for lang, code, _ in blocks("docs/cli.md") if lang == "toml"]
    doc = tomllib.loads(toml)
    named = {k: set(v) for k, v in doc.items()}
    for section, body in re.findall(r"^\[(\w+)\]\n(.*?)(?=^\[\w+\]$|\Z)", toml, re.S | re.M):  # alternatives named in comments: `d = 1024`
        named.setdefault(section, set()).update(re.findall(r"`(\w+) = ", body))
    assert named == {k: set(v) for k, v in _SECTIONS.items()}


def _run_shell_line(line: str, page: str) -> None:
    if line.startswith("python3 -m pip install "):
        install, _, rest = line.partition(" && ")
        target = shlex.split(install)[-1]
        assert target == "." or target.startswith(".["), f"{page}: installs come from the checkout: {line}"
        if rest:
            _run_shell_line(rest, page)
        return
    if line.startswith("python3 -m pytest"):
        return  # CI's own command (test_readme_commands_are_ci_commands)
    argv = shlex.split(line)
    assert argv[0] == "ldp", f"{page}: a docs block runs `ldp` commands (annotate a deployment with <!-- run by: ... -->): {line}"
    out = run_cli(*argv[1:])
    assert out.returncode == 0, f"{page}: {line}\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_blocks_run_as_written(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = blocks(page)
    python = [code for lang, code, by in found if lang == "python" and not by]
    if python:
        script = tmp_path / "page.py"
        script.write_text("\n".join(python))
        for attempt in range(2 if page in RETRIED else 1):
            out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, f"{page}, run {attempt + 1}: {out.stderr[-2000:]}"
    for lang, code, by in found:
        if lang != "bash":
            continue
        if by:  # a deployment: the named tests run it
            named = "".join((ROOT / f).read_text() for f in by)
            for f in by:
                assert (ROOT / f).is_file(), f"{page}: run by {f}, which does not exist"
            if page in named:
                continue  # the test reads the page itself
            for line in shell_lines(code):
                argv = shlex.split(line)
                if argv[0] != "ldp":
                    continue
                used = [a for a in argv[1:] if a.startswith("--")] + [a for a in argv[1:3] if not a.startswith("-") and "/" not in a and "." not in a]
                missing = [a for a in used if f'"{a}"' not in named and f"'{a}'" not in named and f" {a} " not in named]
                assert missing == [], f"{page}: {by} do not exercise {missing} of: {line}"
            continue
        for line in shell_lines(code):
            _run_shell_line(line, page)


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


class TTY(io.StringIO):
    """A captured stderr that says it is a terminal (progress is drawn only on one)."""

    def isatty(self):
        return True


@contextlib.contextmanager
def on_a_terminal(monkeypatch):
    """stderr replaced by a :class:`TTY` and progress enabled (as the CLI does without --json),
    inside the test's call (pytest's capture resets stderr between a fixture and the call)."""
    tty = TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    prog.enable(True)
    try:
        yield tty
    finally:
        prog.enable(False)


def test_progress_bars_only_on_a_terminal_and_never_under_json(monkeypatch):
    with on_a_terminal(monkeypatch) as terminal:
        _check_bars(terminal, monkeypatch)


def _check_bars(terminal, monkeypatch):
    assert list(prog.progress(range(3), total=3, desc="ldp verify")) == [0, 1, 2]
    assert "ldp verify" in terminal.getvalue()
    prog.enable(False)  # what the CLI does under --json
    before = terminal.getvalue()
    assert list(prog.progress(range(3), desc="ldp verify")) == [0, 1, 2] and terminal.getvalue() == before
    prog.enable(True)
    plain = io.StringIO()  # not a terminal: no bar
    monkeypatch.setattr(sys, "stderr", plain)
    assert list(prog.progress(range(3), desc="x")) == [0, 1, 2] and plain.getvalue() == ""


def test_long_simulations_draw_a_bar_per_repeat(monkeypatch):
    with on_a_terminal(monkeypatch) as terminal:
        simulate(ldp.KRR(epsilon=1.0, d=4), n=200, repeats=3, seed=1)
        simulate_mean(ldp.Duchi(epsilon=1.0, lower=0, upper=1), n=200, repeats=3, seed=1)
    assert "ldp simulate" in terminal.getvalue() and "ldp mean simulate" in terminal.getvalue()
