"""Helpers shared by the registry-driven test modules: every registered mechanism's canonical
instance (plus the two wrappers), one valid client input per user, and a valid report batch."""

from __future__ import annotations

import numpy as np

import ldp_plugin as ldp
from ldp_plugin.registry import KINDS, load_registry

REG = load_registry(kinds=KINDS)
#: one secret key per user for the keyed (memoized) mechanisms
KEYS = [bytes([i % 251, 9]) * 16 for i in range(256)]


def registry_instances(*, wrappers: bool = True) -> list:
    """``(id, factory)`` for the first canonical instance of every registered name, every kind
    (``"kind:name"``), and with ``wrappers`` the two wrappers (SampleOne, Memoized)."""
    out = [(f"{decl.kind}:{name}", lambda decl=decl: decl.mechanism_class()(**dict(decl.canonical[0]))) for name, decl in sorted(REG.items())]
    if wrappers:
        out.append(("wrapper:sample-one", lambda: ldp.SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2)))
        out.append(("wrapper:memoized", lambda: ldp.Memoized(epsilon_permanent=2.0, epsilon_instantaneous=1.0, d=4, max_values=2)))
    return out


def valid_values(m, n: int = 32):
    """One valid client input per user, as ``randomize`` takes it (key-value: some empty sets;
    tuples: an ``n × attributes`` array of codes; sets: a set of one item)."""
    if m.input_kind == "number":
        return np.linspace(m.lower, m.upper, n)
    if m.input_kind == "key-value":
        return [[(i % m.d, (i % 7) / 7 - 0.5)] if i % 3 else [] for i in range(n)]
    if m.input_kind == "tuple":
        return np.stack([np.arange(n) % k for k in m.domains], axis=1)
    codes = np.arange(n) % m.domain_size
    items = getattr(m, "items", None)
    values = codes if items is None else np.array([items[c] for c in codes])
    return [[v] for v in values.tolist()] if m.input_kind == "set" else values


def valid_reports(m, n: int = 32, seed: int = 4):
    """A batch of ``n`` reports of the real client (keyed mechanisms: with one key per user)."""
    keys = KEYS[:n] if m.needs_user_keys else None
    return m.randomize(valid_values(m, n), rng=seed, user_keys=keys)
