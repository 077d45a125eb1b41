"""Running the TypeScript client under Node from the tests (skipped only where Node is absent)."""

from __future__ import annotations

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
