"""The owner's ClientApp runtime: the only code that answers for a device (needs the ``flower`` extra).

Flower's SuperNode, started with ``--isolation process``, runs no ClientApp itself: it queues each
message as a task on its Runtime API (loopback) and waits for an executor to claim it. Flower's own
executor (``flower-superexec``) would install the run's app bundle (FAB) and import whatever code
the ``flwr run`` submitter put in it. The device's owner starts this runtime instead::

    flower-supernode ... --isolation process --port 9094 &
    ldp federated device serve my-app/device.toml --node-config 'partition-id=0' --runtime-api 127.0.0.1:9094 &

For every task it claims, the runtime (:func:`answer_task`) pulls the message, the run and the
FAB with Flower's own client functions, then, before reading anything of the device:

1. computes the FAB's SHA-256 from the bytes it received and checks it against the digests the
   owner pinned in ``[trust]`` (:class:`~ldp_plugin.federated.trust.DeviceTrust`); the component
   the FAB names must be one of the owner's allowed **installed** components;
2. a run that fails either check gets a Flower error reply with a fixed reason
   (``app_not_pinned``, ``component_not_allowed``, ``app_unreadable``) — no device is opened, no
   ledger touched — and one line in the owner's refusal record (``ldp federated device refusals``);
3. a pinned run is answered by the owner's **installed** ClientApp object (never code from the
   FAB: the bundle is neither installed nor imported), with the owner's own ``node_config`` (the
   device TOML and partition given to this command, whatever the SuperNode or the run carry).

Any exception in the installed app becomes the fixed error ``device_error`` with no text: nothing
of a device's value, position or state reaches the server through an error. The runtime claims one
task at a time and keeps Flower's task heartbeat while it answers.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional

from flwr.app import Context, Message
from flwr.app.error import Error
from flwr.cli.build import build_fab_from_disk
from flwr.common.constant import ErrorCode, SubStatus
from flwr.proto.runtime_pb2 import AcquireTaskRequest  # pylint: disable=E0611
from flwr.supercore.constant import TaskType
from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
from flwr.supercore.retry import make_simple_http_retry_invoker
from flwr.supercore.runtime import RuntimeHttpClient
from flwr.supernode.runtime.run_clientapp import pull_task_input, push_message, push_task_output

from .._errors import LDPParameterError
from .config import NODE_CONFIG_KEY, DeviceConfig
from .trust import fab_digest

__all__ = ["serve", "answer_task", "app_digest", "DEVICE_ERROR"]

log = logging.getLogger("ldp_plugin.federated.runtime")
DEVICE_ERROR = "device_error"


def app_digest(app: str | Path) -> str:
    """The SHA-256 of the FAB ``flwr run APP`` ships, built from disk by Flower's own deterministic
    builder (or of a ``.fab`` file's bytes): what an owner pins."""
    p = Path(app)
    if p.is_file() and p.suffix == ".fab":
        return fab_digest(p.read_bytes())
    if not (p / "pyproject.toml").is_file():
        raise LDPParameterError("APP must be a Flower app directory (with pyproject.toml) or a .fab file")
    try:
        with warnings.catch_warnings():  # Flower's .gitignore matcher warns of its own dependency's deprecation
            warnings.simplefilter("ignore", DeprecationWarning)
            return fab_digest(build_fab_from_disk(p.resolve()))
    except Exception:  # noqa: BLE001 - Flower's builder errors are not shown raw
        raise LDPParameterError("Flower could not build the app bundle from that directory (check its pyproject.toml)") from None


def _client(address: str, interceptors: list, root_certificates: Optional[bytes], retry: Any) -> Any:
    return RuntimeHttpClient.from_server_address(server_address=address, insecure=root_certificates is None, root_certificates=root_certificates,
                                                 interceptors=interceptors, retry_invoker=retry)


def _task_retry(stop: Optional[threading.Event]) -> Any:
    """Flower's HTTP retry for a task's calls (exponential back-off on transport errors and 502/503/504,
    without end), cut short by ``stop``: a wait ends when ``stop`` is set and the next failure is given
    up, so a runtime asked to stop (SIGTERM) mid-task while its SuperNode is gone does stop."""
    retry = make_simple_http_retry_invoker()
    if stop is not None:
        give_up = retry.should_giveup
        retry.should_giveup = lambda exc: stop.is_set() or bool(give_up is not None and give_up(exc))
        retry.wait_function = stop.wait
    return retry


def _pause(stop: Optional[threading.Event], seconds: float) -> None:
    """Sleep ``seconds``, or less if ``stop`` is set meanwhile."""
    if stop is None:
        time.sleep(seconds)
    else:
        stop.wait(seconds)


def _installed(component: str) -> Any:
    """The owner's installed ClientApp object ``module:attribute`` (an allowed component)."""
    module, attr = component.split(":")
    return getattr(importlib.import_module(module), attr)


def _error_reply(message: Message, reason: str) -> Message:
    return Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason), reply_to=message)


def answer_task(token: str, address: str, config_path: Path, node_config: Mapping[str, Any], *,
                root_certificates: Optional[bytes] = None, stop: Optional[threading.Event] = None) -> dict:
    """Answer one claimed task (see the module docstring); returns what the owner's log records:
    ``{"run_id", "fab_hash", "answered": bool, "reason"}``. The task's calls retry as Flower's own
    do, until ``stop`` is set."""
    client = _client(address, [RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"), RuntimeTokenHttpInterceptor(token)],
                      root_certificates, _task_retry(stop))
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    heartbeat.start()
    context: Optional[Context] = None
    status, outcome = SubStatus.FAILED, {"run_id": None, "fab_hash": None, "answered": False, "reason": DEVICE_ERROR}
    try:
        message, context, run, fab = pull_task_input(client)
        outcome["run_id"] = int(run.run_id)
        cfg = DeviceConfig.load(config_path, node_config)  # the owner's file, read at each task
        component, digest, reason = cfg.trust.admit(fab.content)
        outcome["fab_hash"] = digest
        if reason is not None:
            cfg.trust.record_refusal({"run_id": int(run.run_id), "fab_hash": digest, "fab_id": str(run.fab_id),
                                      "fab_version": str(run.fab_version), "reason": reason})
            reply = _error_reply(message, reason)
            outcome["reason"] = reason
        else:
            owner_context = Context(run_id=context.run_id, node_id=context.node_id,
                                    node_config={**dict(node_config), NODE_CONFIG_KEY: str(Path(config_path).resolve())},
                                    state=context.state, run_config=context.run_config, series_id=context.series_id)
            try:
                reply = _installed(component)(message=message, context=owner_context)
                status, outcome["answered"], outcome["reason"] = SubStatus.COMPLETED, True, None
            except Exception:  # noqa: BLE001 - nothing of the device's state leaves through an error text
                log.exception("the installed ClientApp failed")
                reply = _error_reply(message, DEVICE_ERROR)
        push_message(client, reply, context)
    except Exception:  # noqa: BLE001 - a task that cannot be pulled or pushed is that task's failure only
        log.exception("task failed")
    finally:
        push_task_output(client, context, status, "" if status == SubStatus.COMPLETED else outcome["reason"] or DEVICE_ERROR)
        if heartbeat.is_running:
            heartbeat.stop()
        client.close()
    return outcome


def serve(config_path: str | Path, node_config: Mapping[str, Any], address: str, *, root_certificates: Optional[bytes] = None,
          poll: float = 0.1, stop: Optional[threading.Event] = None, max_tasks: Optional[int] = None) -> int:
    """Claim and answer the SuperNode's ClientApp tasks until ``stop`` is set (or ``max_tasks``
    were answered); returns the number of tasks handled. The device TOML is checked once here, so
    a misconfigured device fails at start, not at the first query. The claim is one call without
    Flower's retry (whose back-off never ends while the SuperNode is down): a failed claim waits
    ``max(poll, 0.5)`` seconds, or until ``stop``, and tries again — so ``stop`` (SIGTERM) ends the
    runtime within that wait whether or not its SuperNode is up."""
    DeviceConfig.load(config_path, node_config)
    client = _client(address, [RuntimeVersionHttpInterceptor(component_name="SuperExec")], root_certificates, None)
    handled = 0
    try:
        while (stop is None or not stop.is_set()) and (max_tasks is None or handled < max_tasks):
            try:
                res = client.AcquireTask(AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP]))
            except Exception:  # noqa: BLE001 - the SuperNode restarting: wait and retry
                _pause(stop, max(poll, 0.5))
                continue
            if res.HasField("task") and res.token:
                out = answer_task(res.token, address, Path(config_path), node_config, root_certificates=root_certificates, stop=stop)
                log.info("run %s (FAB %s): %s", out["run_id"], (out["fab_hash"] or "?")[:12], "answered" if out["answered"] else out["reason"])
                handled += 1
            else:
                _pause(stop, poll)
    finally:
        client.close()
    return handled
