"""Running the TypeScript client under Node from the tests (skipped only where Node is absent)."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NODE = shutil.which("node")

needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed (CI installs it)")


def run_node(script: str, *args: str, timeout: float = 300) -> str:
    """stdout of ``node clients/typescript/<script> args…``; a failure fails the test with stderr."""
    proc = subprocess.run([NODE, str(CLIENT / script), *args], capture_output=True, text=True, timeout=timeout, cwd=CLIENT)
    if proc.returncode != 0:
        pytest.fail(f"node {script} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def run_node_json(script: str, *args: str, timeout: float = 300):
    return json.loads(run_node(script, *args, timeout=timeout))


def dev_tools() -> Path:
    """``clients/typescript/node_modules`` (TypeScript, esbuild, playwright-core: the pinned dev tools),
    installed from the committed lock file by ``npm ci`` when absent — so the README's test command
    works on a fresh machine; one installer at a time across the test workers (a file lock)."""
    modules = CLIENT / "node_modules"
    with open(CLIENT / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (modules / ".package-lock.json").exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail("npm is not installed: the TypeScript client's dev tools need it (Node ships it)")
            proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT, capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                pytest.fail(f"npm ci failed in clients/typescript: {proc.stderr[-1500:]}")
    return modules
