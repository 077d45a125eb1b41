"""The owner's runtime (``ldp federated device serve``) stops when its owner asks (SIGTERM), also
while its SuperNode is down: the claim of a task is one call, not Flower's retry whose back-off never
ends, and every wait is cut short by the stop request. Started as a user starts it: the CLI, in a
process of its own, pointed at a Runtime API port where nothing listens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from ldp_plugin.cli import main as ldp_main  # noqa: E402
from ldp_plugin.federated.deploy import free_port  # noqa: E402
from tests.federated.test_owner_runtime import DEVICE as OWNER_DEVICE  # noqa: E402

#: the owner-runtime test's device, for one partition and without a member key (no plan asks it)
DEVICE = OWNER_DEVICE.replace("{partition-id}", "0").replace('member_key = "certs/nodes/node-0"\n', "")


def _wait_for(path: Path, text: str, proc: subprocess.Popen, deadline: float) -> None:
    while text not in path.read_text(errors="replace"):
        assert proc.poll() is None, path.read_text(errors="replace")[-2000:]
        assert time.monotonic() < deadline, f"no {text!r} in the runtime's output"
        time.sleep(0.05)


def test_serve_stops_on_sigterm_while_its_supernode_is_down(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "device.toml").write_text(DEVICE)
    assert ldp_main(["federated", "device", "init", "device.toml"]) in (0, None)
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ldp_plugin.cli", "federated", "device", "serve", "device.toml",
                                 "--node-config", "partition-id=0", "--runtime-api", f"127.0.0.1:{free_port()}"],
                                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_for(log, "answering the SuperNode", proc, time.monotonic() + 120)
        time.sleep(1.5)  # past the first failed claims: the runtime is in its wait-and-retry loop
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # within one wait (0.5 s), not Flower's endless back-off
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
