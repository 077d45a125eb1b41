"""Driving Flower's own command-line tools (``flower-superlink``, ``flower-supernode``, ``flwr``)
from ``ldp federated simulate`` and the deployment test: free ports, a private ``FLWR_HOME`` with
the SuperLink connection, processes in their own process groups (always killed on exit), and
``flwr run`` whose outcome is read back from ``flwr ls`` — a run that fails or stops inside
Flower is a failure here, never a silent success."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from .._extras import missing_extra
from .._errors import LDPParameterError

__all__ = ["run_to_completion", "free_port", "flower_tool", "tool_env", "run_log", "write_connection", "Spawned", "flwr_run", "run_status", "wait_for_run"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def flower_tool(name: str) -> str:
    """The path of a Flower executable next to this interpreter (or on PATH)."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise missing_extra(f"{name} is not installed", "flower")
    return found


def tool_env(**extra: str) -> dict:
    """This environment with this interpreter's ``bin`` first on ``PATH``: the SuperLink and
    SuperNode start ``flwr-simulation`` / ``flwr-serverapp`` / ``flwr-clientapp`` by name, and
    those must be the ones that import this installation of ldp-plugin."""
    env = dict(os.environ, **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_log(run_id: int, connection: str, *, env: dict) -> str:
    """The run's own log (``flwr log --show``), for a failure report written to a file."""
    proc = subprocess.run([flower_tool("flwr"), "log", str(run_id), connection, "--show"], env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


def write_connection(flwr_home: Path, name: str, address: str, *, root_certificates: Optional[str] = None) -> None:
    """A Flower configuration (``$FLWR_HOME/config.toml``) with one SuperLink connection:
    TLS with the given root certificate, or plain only for a simulation SuperLink on loopback."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    lines = ["[superlink]", f'default = "{name}"', "", f"[superlink.{name}]", f'address = "{address}"']
    if root_certificates is not None:
        lines.append(f'root-certificates = "{Path(root_certificates).resolve()}"')
    else:
        lines.append("insecure = true")
    (flwr_home / "config.toml").write_text("\n".join(lines) + "\n")


_MARK = "LDP_FEDERATED_SPAWN"
_SPAWNS = itertools.count()


def _new_marker() -> str:
    """A marker no other process on this machine carries: this process's id, the system-wide
    monotonic clock and a per-process counter (unique, not secret: it tags the processes a
    :class:`Spawned` started so that :meth:`Spawned.stop` finds them, and protects nothing)."""
    return f"{os.getpid()}-{time.monotonic_ns()}-{next(_SPAWNS)}"


def _marked(marker: str) -> list:
    """The pids whose environment carries ``marker`` (our process and everything it started,
    whatever session or process group they moved to)."""
    needle = f"{_MARK}={marker}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def _descendants(root: int) -> list:
    """Every live process below ``root`` in the parent tree (read from /proc)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Spawned:
    """A process started in its own session, with a unique marker in its environment (inherited
    by everything it starts: Flower's SuperExec, ``flwr-simulation``, Ray's workers and agents,
    which start sessions of their own); :meth:`stop` kills its process group, then every process
    that still carries the marker — only processes this object started."""

    def __init__(self, cmd: list, *, env: dict, log: Path, cwd: Optional[Path] = None):
        self.log = log
        self.marker = _new_marker()
        self._f = open(log, "ab")
        self.proc = subprocess.Popen(cmd, env={**env, _MARK: self.marker}, stdout=self._f, stderr=subprocess.STDOUT, cwd=cwd,
                                     start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """SIGTERM to the whole group, then SIGKILL to whatever is left of it — repeated, because
        Flower's engine (Ray's agents) may still be starting processes in the group."""
        pgid = self.proc.pid
        tree = _descendants(pgid) if os.path.isdir("/proc") else []  # before anything dies: orphans leave the tree
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        for _ in range(10):
            left = _marked(self.marker) + _descendants(pgid) + [p for p in tree if os.path.exists(f"/proc/{p}")] if os.path.isdir("/proc") else []
            tree = []
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if not left:
                break
            time.sleep(0.5)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
            pass
        self._f.close()

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""


def _config_args(flag: str, cfg: dict) -> list:
    items = []
    for k, v in cfg.items():
        items.append(f"{k}={json.dumps(v) if isinstance(v, str) else v}")
    return [flag, " ".join(items)] if items else []


def flwr_run(app_dir: Path, connection: str, *, env: dict, run_config: Optional[dict] = None, federation_config: Optional[dict] = None,
             timeout: float = 600) -> int:
    """``flwr run APP CONNECTION`` → the run id (Flower's output shown on failure only)."""
    cmd = [flower_tool("flwr"), "run", str(app_dir), connection, "--format", "json"]
    cmd += _config_args("--run-config", run_config or {}) + _config_args("--federation-config", federation_config or {})
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    try:
        doc = json.loads(proc.stdout[proc.stdout.index("{"):])
        return int(doc["run-id"])
    except (ValueError, KeyError, TypeError):
        raise LDPParameterError(f"flwr run failed (exit {proc.returncode}): {(proc.stderr or proc.stdout)[-1500:]}") from None


def run_status(run_id: int, connection: str, *, env: dict) -> dict:
    proc = subprocess.run([flower_tool("flwr"), "ls", connection, "--run-id", str(run_id), "--format", "json"], env=env,
                          capture_output=True, text=True, timeout=60)
    try:
        doc = json.loads(proc.stdout[proc.stdout.index("{"):])
        return dict(doc["runs"][0])
    except (ValueError, KeyError, IndexError, TypeError):
        return {"status": "unknown", "status-details": (proc.stderr or proc.stdout)[-500:]}


def wait_for_run(run_id: int, connection: str, *, env: dict, timeout: float, on_poll: Optional[Callable[[], None]] = None) -> dict:
    """Poll ``flwr ls`` until the run is finished; its last status record. ``on_poll`` is called
    after every poll (a caller's progress report). Each poll is a process of its own (an
    interpreter importing Flower: about a CPU-second here), so the wait after a poll is twice what
    the poll took, at least a second: polling holds at most a third of a core, not the machine the
    run itself needs."""
    deadline = time.time() + timeout
    st: dict = {}
    while time.time() < deadline:
        t0 = time.monotonic()
        st = run_status(run_id, connection, env=env)
        if on_poll is not None:
            on_poll()
        if str(st.get("status", "")).startswith("finished"):
            return st
        time.sleep(min(max(1.0, 2 * (time.monotonic() - t0)), max(0.0, deadline - time.time())))
    return {**st, "status": "timeout"}


def run_to_completion(app_dir: Path, connection: str, *, env: dict, run_config: Optional[dict] = None, federation_config: Optional[dict] = None,
                      timeout: float = 900, start_timeout: float = 60, on_poll: Optional[Callable[[], None]] = None) -> int:
    """``flwr run`` (retried while the SuperLink is still coming up), then wait for the run; a
    run that is not ``finished:completed`` raises :class:`LDPParameterError` naming a file that
    holds the run's log. Returns the run id."""
    import tempfile

    deadline = time.time() + start_timeout
    while True:
        try:
            run_id = flwr_run(app_dir, connection, env=env, run_config=run_config, federation_config=federation_config)
            break
        except LDPParameterError as e:
            if "onnect" not in str(e) or time.time() > deadline:
                raise
            time.sleep(1.0)
    status = wait_for_run(run_id, connection, env=env, timeout=timeout, on_poll=on_poll)
    if status.get("status") != "finished:completed":
        fd, log_path = tempfile.mkstemp(prefix=f"ldp-federated-run-{run_id}-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(run_log(run_id, connection, env=env))
        raise LDPParameterError(f"the Flower run {run_id} did not complete ({status.get('status')}); its log is in {log_path}")
    return run_id
