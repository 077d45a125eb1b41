"""A real local Flower deployment for the deployment tests, started with the walkthrough's own command
lines (``docs/federated.md``, "A deployment on one machine"): ``ldp federated new``/``certs``/``device init`` as written (the
CLI in process), then ``flower-superlink`` (TLS, SuperNode authentication), ``flwr supernode
register`` and ``flower-supernode`` exactly as the walkthrough types them, with its ports and
``$PWD`` replaced by free ports and the test's directory. Readiness is polled (the SuperLink's log,
each SuperNode's log), never slept on; every process runs in its own session under
:class:`~ldp_plugin.federated.deploy.Spawned` and :meth:`Deployment.stop` kills all of them."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from ldp_plugin.cli import main as ldp_main
from ldp_plugin.federated.deploy import Spawned, flower_tool, flwr_run, free_port, tool_env

ROOT = Path(__file__).resolve().parent.parent
#: the owner's trust section a test's device TOML gets when it has none (the README's device.toml has it)
TRUST = """
[trust]
pins = "state/pins-{partition-id}"
member_key = "certs/nodes/node-{partition-id}"
"""


#: the page that holds the federated walkthrough, and the heading of its deployment block
WALKTHROUGH = ROOT / "docs" / "federated.md"
WALKTHROUGH_HEADING = "## A deployment on one machine"


def readme_commands() -> list:
    """The federated walkthrough's deployment block (``docs/federated.md``) as logical lines
    (continuations joined, comments dropped): ``[(line, background)]``, shell variables left for
    the caller."""
    text = WALKTHROUGH.read_text()
    start = text.index(WALKTHROUGH_HEADING)
    block = re.search(r"```bash\n(.*?)```", text[start:], re.S).group(1)
    lines, cur = [], ""
    for raw in block.splitlines():
        line = "" if raw.lstrip().startswith("#") else raw.split("  #")[0].rstrip()
        if not line and not cur:
            continue
        if line.endswith("\\"):
            cur += line[:-1].strip() + " "
            continue
        cur += line.strip()
        if cur.strip():
            lines.append(cur.strip())
        cur = ""
    return [(ln[:-1].strip(), True) if ln.endswith("&") else (ln, False) for ln in lines]


def command_argv(line: str, subs: dict) -> list:
    """A walkthrough line as argv, with each key of ``subs`` (``$PWD``, a port, …) replaced."""
    for k, v in subs.items():
        line = line.replace(k, v)
    return shlex.split(line)


def spends(ledger: Path, query_id: Optional[str] = None) -> int:
    """Spend records in a device ledger (of one query id, or all), read-only."""
    con = sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        if query_id is None:
            return int(con.execute("SELECT COUNT(*) FROM spend").fetchone()[0])
        return int(con.execute("SELECT COUNT(*) FROM spend WHERE query_id = ?", (query_id,)).fetchone()[0])
    finally:
        con.close()


def release_status(ledger: Path, query_id: str) -> Optional[str]:
    try:
        con = sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        row = con.execute("SELECT status FROM release_status WHERE query_id = ?", (query_id,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return None if row is None else row[0]


def stop_all(procs: list) -> None:
    """:meth:`Spawned.stop` of every process at once (each waits for its own exit)."""
    threads = [threading.Thread(target=p.stop) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Deployment:
    """The walkthrough's deployment in ``root``: ``app`` = ``root/my-app``. ``plan`` and ``device`` (TOML
    text) replace the example files before the owners' ``device init``; ``node_config`` adds items to
    each SuperNode's ``--node-config`` (e.g. a node hosting more devices)."""

    def __init__(self, root: Path, *, plan: str, device: str, node_config: Optional[dict] = None):
        self.root, self.app = root, root / "my-app"
        self.cmds = readme_commands()
        self.port = free_port()
        self.node_ports = {"9094": str(free_port()), "9095": str(free_port())}
        self.env = tool_env(FLWR_HOME=str(self.app / "flwr-home"))
        self.subs = {"$PWD": str(root), "$FLWR_HOME": self.env["FLWR_HOME"], "9093": str(self.port), **self.node_ports}
        self.procs: list = []
        self.nodes: dict = {}
        self.node_lines: dict = {}
        self.extra = node_config or {}
        self.runtimes: dict = {}
        self.serve_lines: dict = {}
        cwd = os.getcwd()
        os.chdir(root)
        try:
            for line, _ in self.cmds:
                argv = command_argv(line, self.subs)
                if argv[:3] == ["ldp", "federated", "new"] or argv[:3] == ["ldp", "federated", "certs"]:
                    assert ldp_main(argv[1:]) in (0, None), line
                    if argv[2] == "new":
                        (self.app / "plan.toml").write_text(plan)
                        (self.app / "device.toml").write_text(device if "[trust]" in device else device + TRUST)
                elif argv[:4] == ["ldp", "federated", "device", "init"]:
                    pid = argv[argv.index("--node-config") + 1].split("=")[1]
                    extra = " ".join(f"{k}={v}" for k, v in self.extra.get(int(pid), {}).items())
                    assert ldp_main(argv[1:-1] + [f"{argv[-1]} {extra}".strip()]) in (0, None), line
                elif argv[:4] == ["ldp", "federated", "device", "pin"]:  # after the plan is final: the bundle flwr run ships
                    self._pin(argv)
        finally:
            os.chdir(cwd)
        (self.app / "flwr-home").mkdir(parents=True, exist_ok=True)
        (self.app / "flwr-home" / "config.toml").write_text(  # the walkthrough's printf line
            f'[superlink]\ndefault = "ldp-tls"\n\n[superlink.ldp-tls]\naddress = "127.0.0.1:{self.port}"\nroot-certificates = "{self.app / "certs" / "ca.pem"}"\n')

    def _pin(self, argv: list) -> None:
        pid = argv[argv.index("--node-config") + 1].split("=")[1]
        extra = " ".join(f"{k}={v}" for k, v in self.extra.get(int(pid), {}).items())
        assert ldp_main(argv[1:-1] + [f"{argv[-1]} {extra}".strip()]) in (0, None), argv

    def repin(self) -> None:
        """Each owner pins the app bundle again (the README's pin lines): after a test changed the app."""
        cwd = os.getcwd()
        os.chdir(self.root)
        try:
            for argv in self._line("ldp federated device pin"):
                self._pin(argv)
        finally:
            os.chdir(cwd)

    def _line(self, prefix: str) -> list:
        return [command_argv(ln, self.subs) for ln, _ in self.cmds if ln.startswith(prefix)]

    def wait(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            for p in self.procs:
                assert p.alive(), f"{what}: a Flower process exited:\n{p.tail()}"
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(p.tail(1500) for p in self.procs))

    def start(self) -> "Deployment":
        [link] = self._line("flower-superlink")
        self.link = Spawned(link, env=self.env, log=self.root / "superlink.log", cwd=self.root)
        self.procs.append(self.link)
        self.wait(lambda: "Uvicorn running on https://" in self.link.tail(20000), 60, "the SuperLink (TLS)")
        regs = [subprocess.Popen(argv, env=self.env, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for argv in self._line("flwr supernode register")]
        for reg in regs:
            out, _ = reg.communicate(timeout=90)
            assert reg.returncode == 0, out
        serves = {}
        for argv in self._line("ldp federated device serve"):  # each owner's runtime, with the node's own node_config
            nc = argv[argv.index("--node-config") + 1]
            pid = int(re.search(r"partition-id=(\d+)", nc).group(1))
            extra = " ".join(f"{k}={v}" for k, v in self.extra.get(pid, {}).items())
            argv[argv.index("--node-config") + 1] = f"{nc} {extra}".strip()
            serves[pid] = argv
        for argv in self._line("flower-supernode")[:2]:
            pid = int(re.search(r"nodes/node-(\d+)", " ".join(argv)).group(1))
            self.node_lines[pid] = argv
        self.serve_lines = serves
        for pid in sorted(serves):
            self.start_runtime(pid)
        for ready in [self.start_node(pid, wait=False) for pid in sorted(self.node_lines)]:  # both start at once
            ready()
        return self

    def start_runtime(self, pid: int) -> None:
        """The owner's ClientApp runtime of node ``pid`` (``ldp federated device serve``, the README's line)."""
        argv = self.serve_lines[pid]
        rt = Spawned([flower_tool("ldp")] + argv[1:], env=self.env, log=self.root / f"runtime-{pid}.log", cwd=self.root)
        self.runtimes[pid] = rt
        self.procs.append(rt)

    def start_node(self, pid: int, *, wait: bool = True) -> Callable[[], None]:
        """Start SuperNode ``pid`` with its walkthrough command (and its owner's runtime, if
        :meth:`kill_node` stopped it); returns (or calls) the wait for its connection."""
        if pid in self.serve_lines and pid not in self.runtimes:
            self.start_runtime(pid)
        log = self.root / f"supernode-{pid}.log"
        start = log.stat().st_size if log.exists() else 0
        node = Spawned(self.node_lines[pid], env=self.env, log=log, cwd=self.root)
        self.nodes[pid] = node
        self.procs.append(node)

        def ready() -> None:
            self.wait(lambda: "SuperNode ID" in log.read_bytes()[start:].decode(errors="replace"), 60, f"SuperNode {pid} to connect")

        if wait:
            ready()
        return ready

    def kill_node(self, pid: int) -> None:
        """SIGKILL the node's owner runtime (the device, mid-answer), then stop the SuperNode as the
        walkthrough's ``kill $NODE1`` does (SIGTERM: it leaves the SuperLink, so the same command
        restarts it at once; a SIGKILLed SuperNode stays "online" for two heartbeats, 60 s).
        :meth:`start_node` starts both again: a runtime started while its SuperNode is down would
        be inside Flower's reconnection back-off (up to 20 s) when the SuperNode comes back."""
        rt = self.runtimes.pop(pid, None)
        if rt is not None:
            rt.stop(signal.SIGKILL)
            self.procs.remove(rt)
        node = self.nodes.pop(pid)
        node.stop()
        self.procs.remove(node)

    @staticmethod
    def _marked(marker: str, name: bytes) -> list:
        """Pids whose command line holds ``name`` and whose environment holds ``marker`` (started by that process)."""
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if name not in f.read():
                            continue
                    with open(f"/proc/{entry}/environ", "rb") as g:
                        if f"LDP_FEDERATED_SPAWN={marker}".encode() in g.read().split(b"\0"):
                            out.append(int(entry))
                except OSError:
                    continue
        return out

    def run(self, **run_config) -> int:
        """``flwr run my-app ldp-tls`` (the walkthrough's line) with ``--run-config`` items."""
        return flwr_run(self.app, "ldp-tls", env=self.env, run_config=run_config)

    def summary(self, plan: str, r: int, out: Optional[Path] = None) -> Path:
        return (out or self.app / "results") / plan / f"round-{r:04d}.json"

    def wait_summary(self, path: Path, timeout: float = 120) -> dict:
        self.wait(path.exists, timeout, f"the round summary {path.name}")
        return json.loads(path.read_text())

    def serverapps(self) -> list:
        """The pids of the running ServerApp processes (``flwr-serverapp``, started by the SuperLink)."""
        return self._marked(self.link.marker, b"flwr-serverapp")

    def runs(self) -> dict:
        """``{run id: status}`` of every run (one ``flwr ls``)."""
        proc = subprocess.run([flower_tool("flwr"), "ls", "ldp-tls", "--format", "json"], env=self.env, capture_output=True, text=True, timeout=90)
        doc = json.loads(proc.stdout[proc.stdout.index("{"):])
        return {int(r["run-id"]): r["status"] for r in doc["runs"]}

    def stop(self) -> None:
        """Stop every process: the owners' runtimes first, while their SuperNodes still answer (a
        runtime whose SuperNode is gone is inside Flower's reconnection back-off, up to 20 s, and
        sees its SIGTERM only after it), then the SuperNodes together, then the SuperLink."""
        link = getattr(self, "link", None)
        runtimes = [p for p in self.procs if p in self.runtimes.values()]
        rest = [p for p in self.procs if p is not link and p not in runtimes]
        for group in (runtimes, rest, [p for p in self.procs if p is link]):
            stop_all(group)
        self.procs.clear()
