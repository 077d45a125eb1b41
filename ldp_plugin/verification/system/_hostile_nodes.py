"""Hostile SuperNodes for the flower layer (:mod:`.flower`): real ``ClientApp`` objects whose
answers a deployed server must survive — a sybil registering a million devices and flooding, a
reply without its record, one in the old wire, one with a negative device count or an extra field,
one that raises (its text holds :data:`SECRET`), one forging a member's proof."""

from __future__ import annotations

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ...federated.envelope import seal
from ...federated.query import Query
from ...mechanisms.reports import to_wire_each

__all__ = ["SECRET", "sybil_app", "malformed_app", "crash_app", "legacy_app", "negative_app", "extra_app", "forger_app"]

#: text a crashing ClientApp and a failing data source put in their errors: never in a summary
SECRET = "held-value-8c1f"


def _reply(msg: Message, devices: int, blob: bytes = b"") -> Message:
    rec: dict = {"wire": 2, "devices": devices, "refused": "{}", "retry": False}
    if blob:
        rec["blob"] = blob
    return Message(content=RecordDict({"reply": ConfigRecord(rec)}), reply_to=msg)


sybil_app = ClientApp()


@sybil_app.query()
def _sybil(msg: Message, context: Context) -> Message:
    """Registers a million devices, then sends 50 fresh well-formed reports of item 0 (over any cap)."""
    if "query" not in msg.content:
        return _reply(msg, 10**6)
    q = Query.from_json(str(msg.content["query"]["json"]))
    mech = q.mechanism()
    return _reply(msg, 50, b"".join(seal(to_wire_each(mech, mech.randomize_encoded(np.zeros(50, dtype=np.int64)), tag=q.content_hash))))


malformed_app = ClientApp()


@malformed_app.query()
def _malformed(msg: Message, context: Context) -> Message:
    return Message(content=RecordDict({"other": ConfigRecord({"x": 1})}), reply_to=msg)


crash_app = ClientApp()


@crash_app.query()
def _crash(msg: Message, context: Context) -> Message:
    if "query" not in msg.content:
        return _reply(msg, 3)
    raise RuntimeError(f"a user holds {SECRET}")


legacy_app = ClientApp()


@legacy_app.query()
def _legacy(msg: Message, context: Context) -> Message:
    """Answers in the old wire (a list of reports): ``unsupported_version``."""
    return Message(content=RecordDict({"reply": ConfigRecord({"wire": 1, "devices": 3, "refused": "{}", "retry": False, "reports": [b"x"]})}),
                   reply_to=msg)


negative_app = ClientApp()


@negative_app.query()
def _negative(msg: Message, context: Context) -> Message:
    """Registers -1 devices: ``bad_field``."""
    return _reply(msg, -1)


extra_app = ClientApp()


@extra_app.query()
def _extra(msg: Message, context: Context) -> Message:
    """A reply record with a field the wire does not have: ``malformed``."""
    rep = _reply(msg, 3)
    rep.content["reply"]["note"] = SECRET
    return rep


forger_app = ClientApp()


@forger_app.query()
def _forger(msg: Message, context: Context) -> Message:
    """Claims a listed member's public key (``member-key``) with a signature it cannot make."""
    rep = _reply(msg, 3)
    rep.content["reply"]["member"] = str(context.node_config["member-key"])
    rep.content["reply"]["signature"] = "00" * 64
    return rep
