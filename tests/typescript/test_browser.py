"""The browser test: headless Chromium (Debian's package, driven by playwright-core) loads a page
that imports the minified client bundle, keeps its device's budget in IndexedDB, randomizes its
value and posts the envelope over HTTPS to ``ldp serve`` on 127.0.0.1; the estimate appears on the
server; a second run over the device's cap, in a new browser process on the same profile, is
refused in the browser (and a retried query is answered from the kept envelope, not re-randomized)."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.federated._serve_helpers import live_server, write_setup

from ._node import CLIENT, NODE, dev_tools, needs_node, run_node

pytestmark = needs_node

CHROMIUM = "/usr/bin/chromium"
BUNDLE_LIMIT = 50_000

PLAN = """
[plan]
name = "browser"
min_batch = 3

[[query]]
name = "colour"
mechanism = "krr"
epsilon = "1"
params = {d = 4}

[[query]]
name = "second"
mechanism = "oue"
epsilon = "0.5"
params = {d = 8}
"""


def _bundle(out: Path) -> Path:
    esbuild = dev_tools() / ".bin" / "esbuild"
    target = out / "ldp-client.min.js"
    subprocess.run([str(esbuild), str(CLIENT / "src" / "index.ts"), "--bundle", "--minify", "--format=esm", "--target=es2020",
                    "--external:node:*", f"--outfile={target}", "--log-level=warning"], check=True, timeout=120)
    return target


def test_minified_bundle_is_at_most_50_kb(tmp_path):
    assert _bundle(tmp_path).stat().st_size <= BUNDLE_LIMIT


@pytest.mark.slow
def test_browser_collects_into_ldp_serve_and_refuses_over_its_cap(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed: apt-get install -y chromium (CI's .ci/run installs it)")
    static = tmp_path / "static"
    static.mkdir()
    _bundle(static)
    shutil.copy(CLIENT / "browser" / "index.html", static / "index.html")
    setup = write_setup(tmp_path, PLAN)
    tokens = setup["tokens"]
    with live_server(setup, static_dir=static) as (service, url):
        devices = [(tmp_path / f"profile-{i}", v) for i, v in enumerate([2, 2, 1])]
        runs = [{"profile": str(p), "token": tokens["laptop"], "value": v} for p, v in devices]
        runs.append({"profile": str(devices[0][0]), "token": tokens["laptop"], "value": 2})  # device 0 again
        job = tmp_path / "job.json"
        job.write_text(json.dumps({"url": url, "runs": runs, "chromium": CHROMIUM}))
        out = json.loads(run_node("browser/run.mjs", str(job), timeout=600))
        assert all("error" not in r for r in out), out
        # first runs: the first query (ε = 1) answered and posted (200); the second (ε = 0.5) refused
        # in the browser: the device's lifetime cap of 1 is spent
        for r in out[:3]:
            first, second = r["results"]
            assert (first["refused"], first["retry"], first["status"]) == (None, False, 200)
            assert (second["refused"], second["status"]) == ("budget_exhausted", None)
            assert r["remaining"] == {"lifetime": "0", "period": None}
        # the second run of device 0 (a new browser process, the same IndexedDB): the kept answer
        # for the first query (not re-randomized, not posted again), the second still refused
        again = out[3]["results"]
        assert (again[0]["refused"], again[0]["retry"], again[0]["status"]) == (None, True, None)
        assert again[1]["refused"] == "budget_exhausted"
        # the estimate appears on the server (3 reports: the minimum batch)
        ids = {s.query.query_id: k for k, s in service.served.items()}
        with httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=setup["tls"]["ca"]), timeout=30) as client:
            status = client.get(f"/v1/status/{ids['browser/colour/r1']}", headers={"Authorization": f"Bearer {tokens['analyst']}"}).json()
            assert status["accepted"] == 3 and status["rejected"] == {}
            assert [str(r["item"]) for r in status["estimate"]] == ["0", "1", "2", "3"]  # the released rows, one per item
            assert all(r["ci_lower"] <= r["ci_upper"] for r in status["estimate"])  # (three reports: the raw estimate may sit outside [0, 1])
            assert client.get(f"/v1/status/{ids['browser/second/r1']}", headers={"Authorization": f"Bearer {tokens['analyst']}"}).json()["accepted"] == 0
