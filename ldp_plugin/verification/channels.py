"""A mechanism instance's exact channel, enumerated once per instance and shared by the layers.

Nearly every layer compares the real client with ``mech.channel()`` — the exact, rational channel
matrix over every input and output — and enumerating it is the costliest step of several of them
(a set mechanism's channel over every subset: seconds of exact arithmetic). A mechanism is a frozen
dataclass, so its channel is a function of the instance: :func:`declared_channel` enumerates it the
first time a layer asks and hands the same (frozen) :class:`~ldp_plugin.mechanisms.channel.Channel`
to every later layer of the run; :func:`channel_floats` does the same for its float matrix (the
statistical layers' expected frequencies).

The memo is keyed by the instance's **identity** (a weak reference: an instance that is gone leaves
it), never by equality, so no two instances ever share an entry — not even a seeded bug and the
correct mechanism it copies. An instance that cannot be weakly referenced is enumerated each time,
as before. A ``channel()`` that raises raises on every call (nothing is stored).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

__all__ = ["declared_channel", "channel_floats"]

#: id(instance) -> (weak reference to it, channel, float matrix or None)
_MEMO: dict = {}


def _entry(mech: Any) -> list:
    key = id(mech)
    hit = _MEMO.get(key)
    if hit is not None and hit[0]() is mech:
        return hit
    ch = mech.channel()
    try:
        ref = weakref.ref(mech, lambda _r, key=key: _MEMO.pop(key, None))
    except TypeError:  # not weakly referenceable: no memo
        return [None, ch, None]
    entry = [ref, ch, None]
    _MEMO[key] = entry
    return entry


def declared_channel(mech: Any) -> Any:
    """``mech.channel()``, enumerated once per instance (module docstring)."""
    return _entry(mech)[1]


def channel_floats(mech: Any) -> np.ndarray:
    """The channel's matrix as a read-only ``float64`` array (``P[x, j]``), computed once per instance."""
    entry = _entry(mech)
    if entry[2] is None:
        P = np.array([[float(p) for p in row] for row in entry[1].matrix], dtype=np.float64)
        P.setflags(write=False)
        if entry[0] is None:
            return P
        entry[2] = P
    return entry[2]
