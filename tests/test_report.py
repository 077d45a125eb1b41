"""``ldp report``: the HTML report of a collection job (its estimates with their intervals, its
mechanism and ε, its ledger's state and spend) and of federated round summaries, written as one
self-contained file, then opened in headless Chromium: it renders (every picture decoded, every
section there, a screenshot that is not blank, kept as ``report.png`` in the test's directory),
with no console error, warning, exception or failed load — and the same check catches a planted
script error and a planted external asset (its power)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("matplotlib")

from tests.headless_browser import chromium, open_page  # noqa: E402

JOB = """
[input]
path = "apps.csv"
column = "app"
user_id = "user"
[mechanism]
name = "oue"
epsilon = 2.0
categories = ["maps", "mail", "chat", "news"]
[collection]
seed = 3
[output]
estimates = "out/estimates.csv"
[budget]
ledger = "apps.ledger"
query_id = "apps-day-1"
"""


@pytest.fixture
def collected(tmp_path, cli):
    users = [f"u{i}" for i in range(8000)]
    pl.DataFrame({"user": users, "app": (["maps"] * 4 + ["mail"] * 2 + ["chat", "news"]) * 1000}).write_csv(tmp_path / "apps.csv")
    (tmp_path / "job.toml").write_text(JOB)
    assert cli("budget", "init", str(tmp_path / "apps.ledger"), "--population", "app-users", "--lifetime-cap", "4", "--cohorts", "16").returncode == 0
    out = cli("collect", str(tmp_path / "job.toml"))
    assert out.returncode == 0, out.stderr
    return tmp_path


def _round_summary(path: Path) -> Path:
    rows = [{"item": f"app{i}", "estimate": 0.25 - 0.01 * i, "ci_lower": 0.2 - 0.01 * i, "ci_upper": 0.3 - 0.01 * i} for i in range(6)]
    doc = {"plan": "demo", "round": 1, "queries": [
        {"query": "apps", "mechanism": "oue", "epsilon": "1.0", "status": "complete", "reports_accepted": 4000, "reports_rejected": 2,
         "devices_refused": 0, "nodes_answered": 2, "nodes_asked": 2, "estimate": rows},
        {"query": "apps-late", "mechanism": "oue", "epsilon": "1.0", "status": "incomplete", "reports_accepted": 0, "reports_rejected": 0,
         "devices_refused": 4000, "refused_by_reason": {"budget_exhausted": 4000}, "nodes_answered": 2, "nodes_asked": 2, "estimate": None},
    ]}
    path.mkdir(parents=True)
    (path / "round-0001.json").write_text(json.dumps(doc))
    return path


def test_report_of_a_job_holds_its_estimates_mechanism_epsilon_and_ledger(collected, cli):
    out = cli("report", str(collected / "job.toml"), "--out", str(collected / "report.html"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sections"] == 2
    page = (collected / "report.html").read_text()
    est = pl.read_csv(collected / "out" / "estimates.csv")
    for row in est.iter_rows(named=True):  # every estimate and interval bound in the table, as the file has them
        for col in ("estimate", "ci_lower", "ci_upper"):
            assert f"<td>{row[col]:.6g}</td>" in page, (row["item"], col)
    assert "<dt>mechanism</dt><dd>oue</dd>" in page and "<dt>epsilon per user</dt><dd>2</dd>" in page
    assert "<dt>remaining (all cohorts)</dt><dd>2</dd>" in page and "<td>all 16</td>" in page  # the ledger, cohorts summarised
    # self-contained: no script, no external reference, every image an inline PNG
    assert "<script" not in page and not re.search(r'(src|href)="(?!data:)', page)
    assert len(re.findall(r'<img src="data:image/png;base64,', page)) == 2


def test_report_of_round_summaries(tmp_path, cli):
    results = _round_summary(tmp_path / "results" / "demo")
    out = cli("report", str(tmp_path / "results"), "--out", str(tmp_path / "fed.html"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "fed.html").read_text()
    assert "demo · round 1 · apps</h2>" in page and "<td>app5</td>" in page
    assert "no estimate was released" in page and "budget_exhausted" in page
    assert cli("report", str(results / "round-0001.json"), "--out", str(tmp_path / "one.html")).returncode == 0


@pytest.mark.parametrize("argv,needle", [
    (["report", "/nonexistent/job.toml", "--out", "r.html"], "does not exist"),
    (["report", "{dir}", "--out", "{dir}/r.txt"], "--out"),
    (["report", "{dir}", "--out", "{dir}/r.html"], "no round summaries"),
    (["report", "{dir}", "--out", "{dir}/r.html", "--ledger", "{dir}/missing.ledger"], "--ledger"),
])
def test_report_misuse_exits_2_naming_the_problem(tmp_path, cli, argv, needle):
    out = cli(*[a.format(dir=tmp_path) for a in argv])
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr


def _png_size_and_spread(data: bytes) -> tuple:
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.float64)
    return img.shape, float(img.std())


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Chromium (.ci/run installs it: apt-get install -y chromium)")
def test_report_renders_in_headless_chromium_without_console_errors(collected, cli, tmp_path):
    report = collected / "report.html"
    assert cli("report", str(collected / "job.toml"), "--out", str(report)).returncode == 0
    with open_page(report.as_uri(), tmp_path / "profile") as page:
        assert page.problems() == []
        state = page.evaluate("""({
            images: document.images.length,
            decoded: Array.from(document.images).filter(i => i.complete && i.naturalWidth > 300).length,
            sections: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
            rows: document.querySelectorAll('tbody tr').length,
            height: document.body.scrollHeight,
        })""")
        shot = page.screenshot(tmp_path / "report.png")  # kept with the test's files
    assert state["images"] == 2 and state["decoded"] == 2, state
    assert state["sections"] == ["estimates: app", "budget ledger: app-users"] and state["rows"] == 4 + 1
    (h, w), spread = _png_size_and_spread(shot)
    assert w == 1200 and h >= min(state["height"], 900) and spread > 10, "the screenshot is blank"


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Chromium (.ci/run installs it: apt-get install -y chromium)")
def test_the_browser_check_catches_a_script_error_and_an_external_asset(collected, cli, tmp_path):
    report = collected / "report.html"
    assert cli("report", str(collected / "job.toml"), "--out", str(report)).returncode == 0
    page_text = report.read_text()
    broken = collected / "broken.html"
    broken.write_text(page_text.replace("</body>", '<img src="http://127.0.0.1:9/missing.png"><script>undefined_function()</script></body>'))
    with open_page(broken.as_uri(), tmp_path / "profile") as page:
        problems = page.problems()
    assert any("undefined_function" in p for p in problems), problems
    assert any("load failed" in p or "127.0.0.1:9" in p for p in problems), problems


def test_report_of_a_ledger_alone(collected, cli):
    out = cli("report", str(collected / "apps.ledger"), "--out", str(collected / "ledger.html"))
    assert out.returncode == 0, out.stderr
    page = (collected / "ledger.html").read_text()
    assert "budget ledger: app-users</h2>" in page and "<td>apps-day-1</td>" in page
