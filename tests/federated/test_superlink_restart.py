"""A SuperLink killed mid-run leaves no orphaned ServerApp (real processes, the README's deployment):
the ServerApp watches the process Flower started it from and ends with it, so a restarted
SuperLink does not find an old run's ServerApp still polling for replies."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytest.importorskip("flwr")

from tests.federated_deployment import Deployment  # noqa: E402
from tests.test_federated_deploy import DEVICE  # noqa: E402

PLAN = """[plan]
name = "restart"
rounds = 1
min_batch = 1
out_dir = "results"
round_timeout = 30
expected_nodes = 3
node_wait = 300

[[query]]
name = "apps"
mechanism = "oue"
epsilon = "1"
params = {d = 8}
"""


@pytest.mark.slow
def test_a_killed_superlink_leaves_no_serverapp_behind(tmp_path):
    dep = Deployment(tmp_path, plan=PLAN, device=DEVICE)
    try:
        dep.start()
        dep.run()  # waits for a third node that never comes: the ServerApp stays in its registration wait
        dep.wait(lambda: bool(dep.serverapps()), 90, "the ServerApp to start")
        orphans = dep.serverapps()
        os.kill(dep.link.proc.pid, signal.SIGKILL)  # the SuperLink alone: its executor and ServerApp are left to notice
        dep.link.proc.wait(timeout=30)  # reaped, as the shell that started it would
        deadline = time.time() + 30
        while time.time() < deadline and any(os.path.exists(f"/proc/{p}") and _alive(p) for p in orphans):
            time.sleep(0.2)
        assert not [p for p in orphans if os.path.exists(f"/proc/{p}") and _alive(p)], "a ServerApp outlived its SuperLink"
    finally:
        dep.procs = [p for p in dep.procs if p is not dep.link] + [dep.link]
        dep.stop()


def _alive(pid: int) -> bool:
    """Running (not a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] != b"Z"
    except OSError:
        return False
