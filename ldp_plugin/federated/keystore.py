"""The device's keystore: its secret and the anchor of its budget ledger, in one file only the
device's owner creates (``ldp federated device init``).

* **Secrets.** One 32-byte master secret drawn from the OS CSPRNG at creation; device ``i``'s key
  is ``HMAC-SHA256(master, "ldp-device-key" || i)`` — a PRF of the master, so every device
  hosted by a node has its own key, and the keys (hence a memoized series' permanent reports,
  Erlingsson et al., CCS 2014, §3 "permanent randomized response") survive a restart of the
  SuperNode. A lost keystore cannot be regenerated: the device refuses the series
  (``keystore_missing``) instead of starting new permanent reports, which would spend the
  series' budget again. A node whose keystore is lost refuses every query (its ledger can no longer
  be checked against the anchor) until its owner runs ``ldp federated device init --rekey``: a new
  secret anchored to the existing ledger (the owner vouches for it), and every series with a spend
  before the rekey stays refused for good (new keys would randomize its values anew while the
  ledger, counting collections, charged nothing more).
* **Ledger anchor.** The ledger's creation stamp and a SHA-256 hash chain over its spend rows
  (query id, ε text, cohorts, in commit order) up to the last spend the device saw. Before every
  query the device checks the ledger against it: a ledger that is missing, replaced by a fresh
  one, truncated, or has rows removed or edited (even with its totals made consistent) no longer
  extends the anchored chain, and the device refuses every query until its owner re-initializes
  it explicitly — never a silent fresh budget. A ledger with *more* rows than the anchor (a crash
  between a spend and the anchor's update) only spent more, and is accepted.

The file is written atomically (a private temporary file created with mode 0600, fsync, then
``os.replace``); it holds JSON ``{"version", "master", "anchor"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .._errors import LDPParameterError
from .atomic import write_atomic

__all__ = ["Keystore", "KEYSTORE_VERSION", "ledger_chain"]

KEYSTORE_VERSION = 1


def ledger_chain(ledger_path: str | Path) -> tuple[str, list]:
    """``(created, [chain hash after each spend row])`` of a ledger file, read-only. Raises
    :class:`LDPParameterError` if the file is missing or not a readable ledger."""
    p = Path(ledger_path)
    if not p.is_file():
        raise LDPParameterError(f"the device ledger {p.name!r} is missing")
    try:
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0)
        try:
            created = con.execute("SELECT value FROM meta WHERE key = 'created'").fetchone()
            rows = con.execute("SELECT query_id, epsilon, cohorts FROM spend ORDER BY seq").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        raise LDPParameterError(f"the device ledger {p.name!r} is not a readable ledger (truncated or corrupted)") from None
    if created is None:
        raise LDPParameterError(f"the device ledger {p.name!r} has no creation stamp")
    h = hashlib.sha256(b"ldp-ledger-chain|" + str(created[0]).encode()).digest()
    chain = []
    for qid, eps, cohorts in rows:
        h = hashlib.sha256(h + json.dumps([qid, eps, cohorts]).encode()).digest()
        chain.append(h.hex())
    return str(created[0]), chain


@dataclass
class Keystore:
    path: Path
    master: bytes
    anchor: Optional[dict]
    rekeyed_after: Optional[int] = None  # ledger spends made under a lost keystore's keys (their series stay refused)

    @classmethod
    def create(cls, path: str | Path, *, replace: bool = False) -> "Keystore":
        """A new keystore with a fresh master secret (refuses to overwrite one unless ``replace``:
        replacing the secret ends every memoized series of these devices)."""
        p = Path(path)
        if p.exists() and not replace:
            raise LDPParameterError(f"the keystore {p.name!r} already exists (its secret keeps memoized series; replacing it needs an explicit reset)")
        ks = cls(p, secrets.token_bytes(32), None)
        ks.save()
        return ks

    @classmethod
    def open(cls, path: str | Path) -> "Keystore":
        p = Path(path)
        if not p.is_file():
            raise LDPParameterError(f"the keystore {p.name!r} is missing")
        if os.name == "posix" and (p.stat().st_mode & 0o077):
            raise LDPParameterError(f"the keystore {p.name!r} is readable by other users (mode must be 0600)")
        try:
            doc = json.loads(p.read_text())
            if doc.get("version") != KEYSTORE_VERSION:
                raise ValueError
            master = bytes.fromhex(doc["master"])
            anchor = doc.get("anchor")
            rekeyed = doc.get("rekeyed_after")
            if len(master) != 32 or not (anchor is None or isinstance(anchor, dict)) or not (rekeyed is None or isinstance(rekeyed, int)):
                raise ValueError
        except (ValueError, KeyError, TypeError, AttributeError):
            raise LDPParameterError(f"the keystore {p.name!r} is not a valid keystore") from None
        return cls(p, master, anchor, rekeyed)

    def save(self) -> None:
        """Atomic (:func:`~ldp_plugin.federated.atomic.write_atomic`: a 0600 temporary file in the
        same directory, fsync, rename over the old one)."""
        doc = {"version": KEYSTORE_VERSION, "master": self.master.hex(), "anchor": self.anchor, "rekeyed_after": self.rekeyed_after}
        write_atomic(self.path, json.dumps(doc).encode())

    def device_key(self, i: int) -> bytes:
        """Device ``i``'s secret key: ``HMAC-SHA256(master, "ldp-device-key" || i)``."""
        return hmac.new(self.master, b"ldp-device-key|" + str(int(i)).encode(), hashlib.sha256).digest()

    def device_keys(self, n: int) -> list:
        return [self.device_key(i) for i in range(n)]

    # -- the ledger anchor ---------------------------------------------------------------------------
    def anchor_ledger(self, ledger_path: str | Path) -> None:
        """Record the ledger's current state (after an explicit init, and after every spend)."""
        created, chain = ledger_chain(ledger_path)
        new = {"created": created, "spends": len(chain), "head": chain[-1] if chain else None}
        if new != self.anchor:
            self.anchor = new
            self.save()

    def verify_ledger(self, ledger_path: str | Path) -> Optional[str]:
        """``None`` if the ledger extends the anchored chain (then the anchor moves forward), else
        the refusal reason: ``ledger_missing``, ``ledger_corrupted`` or ``ledger_tampered``."""
        if self.anchor is None:
            return "ledger_tampered"  # an anchor is written at init: its absence is an edited keystore
        if not Path(ledger_path).is_file():
            return "ledger_missing"
        try:
            created, chain = ledger_chain(ledger_path)
        except LDPParameterError:
            return "ledger_corrupted"
        a = self.anchor
        k = int(a.get("spends", -1))
        if created != a.get("created") or k < 0 or len(chain) < k or (k and chain[k - 1] != a.get("head")):
            return "ledger_tampered"
        if len(chain) > k:
            self.anchor = {"created": created, "spends": len(chain), "head": chain[-1]}
            self.save()
        return None
