"""The device's state as its owner keeps it: what a device answers when its ledger or keystore is
missing, edited or replaced, and after the owner's explicit re-initialization.

On two devices that differ only in what their users hold (:mod:`._fixture`), through the node's
reply path, the sequence (:func:`lifecycle_script`): a query before the owner initialized the
device (``not_initialized``); an answered query and one collection of a memoized series; the
ledger edited (its last spend deleted: ``ledger_tampered``); the owner's reset (the old ledger moved
aside, a new budget) and an answered query; the keystore lost (``keystore_missing``); the owner's
``--rekey`` and an answered query, while the series begun under the lost keys stays refused
(``keystore_missing``: its permanent reports cannot be continued); a keystore others may read
or that is not a keystore (``device_misconfigured``); the owner's re-initialization without ``--reset`` and ``--rekey``
while the keystore exists (both refused: the budget goes on); the ledger file deleted
(``ledger_missing``); and a device whose data source fails (``device_misconfigured``). The step
passes iff both devices give the same answer, the expected one, and a refusal changes no ledger."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from ..._errors import LDPParameterError
from ...federated.app import device_answer
from ...federated.device import DeviceFleet
from ...federated.query import Query
from ...mechanisms import KRR
from ...mechanisms.longitudinal import LGRR
from ..refusals import refusal_problems
from ._fixture import DEVICES, Device, normalized

__all__ = ["lifecycle_sequence"]

_POLICY = {"lifetime_cap": "100", "max_epsilon_per_query": "4"}


def _delete_last_spend(device: Device) -> None:
    con = sqlite3.connect(device.config.ledger)
    try:
        con.execute("DELETE FROM spend WHERE seq = (SELECT MAX(seq) FROM spend)")
        con.commit()
    finally:
        con.close()


def _ledger_bytes(device: Device):
    """The ledger file's bytes (``None``: no file): a refusal leaves them as they were."""
    path = device.config.ledger
    return path.read_bytes() if path.is_file() else None


def lifecycle_script() -> list:
    """``(label, owner action or None, query JSON, expected reply refusal or None: answered)``."""
    krr = KRR(epsilon=1.0, d=4)
    series = LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)

    def q(qid, mech=krr):
        return Query.for_mechanism(f"system/lifecycle/{qid}", mech).to_json()

    return [
        ("before the owner's init", None, q("early"), "not_initialized"),
        ("after init", "init", q("first"), None),
        ("a series' first collection", None, q("series-1", series), None),
        ("init again without --reset (refused)", "init_again", q("init-again"), None),
        ("--rekey while the keystore exists (refused)", "rekey_present", q("rekey-present"), None),
        ("a keystore others may read", "open_keystore", q("open-keystore"), "device_misconfigured"),
        ("the keystore's mode fixed", "close_keystore", q("closed-keystore"), None),
        ("a keystore that is not one", "garble_keystore", q("garbled-keystore"), "device_misconfigured"),
        ("the keystore restored", "restore_keystore", q("restored-keystore"), None),
        ("the ledger edited", "delete_last_spend", q("edited"), "ledger_tampered"),
        ("after the owner's reset", "reset", q("after-reset"), None),
        ("a series' first collection (new budget)", None, q("series-2", series), None),
        ("the keystore lost", "lose_keystore", q("lost"), "keystore_missing"),
        ("after the owner's rekey", "rekey", q("after-rekey"), None),
        ("the series begun under the lost keys", None, q("series-3", series), "keystore_missing"),
        ("the ledger file deleted", "delete_ledger", q("no-ledger"), "ledger_missing"),
    ]


class OwnerActionAccepted(AssertionError):
    """An owner action that must be refused was carried out, or refused otherwise than a refusal must be."""


def _refused(device: Device, action: Callable, names: tuple) -> None:
    """The owner's ``action`` must be refused
    (:func:`~ldp_plugin.verification.refusals.refusal_problems`): an :class:`LDPParameterError`
    naming one of ``names`` (the option the owner needs), the ledger's bytes unchanged."""
    problems = refusal_problems(action, errors=(LDPParameterError,), names=names, unchanged={"the ledger": lambda: _ledger_bytes(device)})
    if problems:
        raise OwnerActionAccepted(f"an owner action that must be refused: {'; '.join(problems)}")


def _act(device: Device, action: str) -> None:
    cfg = device.config
    if action == "init":
        DeviceFleet.init(cfg)
    elif action == "reset":
        DeviceFleet.init(cfg, reset=True)
    elif action == "rekey":
        DeviceFleet.init(cfg, rekey=True)
    elif action == "init_again":  # refused: a new budget needs the owner's explicit --reset
        _refused(device, lambda: DeviceFleet.init(cfg), ("--reset",))
    elif action == "rekey_present":  # refused: --rekey replaces a lost keystore only
        _refused(device, lambda: DeviceFleet.init(cfg, rekey=True), ("--rekey",))
    elif action == "open_keystore":  # a keystore others may read: the device refuses until its owner fixes the mode
        cfg.keystore.chmod(0o644)
    elif action == "close_keystore":
        cfg.keystore.chmod(0o600)
    elif action == "garble_keystore":  # kept aside, restored by "restore_keystore"
        device.saved_keystore = cfg.keystore.read_bytes()
        cfg.keystore.write_bytes(b"{not a keystore")
    elif action == "restore_keystore":
        cfg.keystore.write_bytes(device.saved_keystore)
    elif action == "delete_last_spend":
        _delete_last_spend(device)
    elif action == "lose_keystore":
        cfg.keystore.unlink()
    elif action == "delete_ledger":
        cfg.ledger.unlink()


def lifecycle_sequence(directory: Path, *, answer: Callable = device_answer) -> tuple:
    """``(rows, failures)`` of :func:`lifecycle_script` on two devices answering through ``answer``."""
    devices = {v: Device(directory / f"lifecycle-{v}", policy=_POLICY, variant=v, answer=answer, init=False) for v in ("in", "out")}
    rows, failures = [], []
    for label, action, qjson, refusal in lifecycle_script():
        seen, problems = {}, []
        for v, d in devices.items():
            if action is not None:
                _act(d, action)
            before = _ledger_bytes(d)
            seen[v] = normalized(d.answer(qjson))
            if refusal is not None:
                if seen[v]["refused"] != {refusal: DEVICES} or seen[v]["reports"]:
                    problems.append(f"{v}: expected refusal {refusal!r} from every device, got {seen[v]['refused']}")
                if _ledger_bytes(d) != before:
                    problems.append(f"{v}: a refusal changed the ledger")
            elif seen[v]["refused"] or seen[v]["reports"] != DEVICES:
                problems.append(f"{v}: expected {DEVICES} reports, got {seen[v]['reports']} (refused {seen[v]['refused']})")
        if seen["in"] != seen["out"]:
            problems.append("the answer depends on the values held")
        rows.append({"step": label, "expected": refusal or "answered", "answer": seen["in"], "passed": not problems})
        failures += [f"{label}: {p}" for p in problems]
    broken = Device(directory / "lifecycle-broken", policy=_POLICY, variant="broken", answer=answer, init=False)
    got = normalized(broken.answer(Query.for_mechanism("system/lifecycle/broken", KRR(epsilon=1.0, d=4)).to_json()))
    ok = got["refused"] == {"device_misconfigured": 1} and not got["reports"]
    rows.append({"step": "a failing data source", "expected": "device_misconfigured", "answer": got, "passed": ok})
    if not ok:
        failures.append(f"a failing data source: expected device_misconfigured, got {got['refused']}")
    return rows, failures
