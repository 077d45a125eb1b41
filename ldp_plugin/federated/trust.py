"""What a device's owner trusts: the apps that may ask, the code that answers, the node's identity.

Flower runs the ClientApp of whatever app bundle (FAB) a ``flwr run`` submitter uploads, and the
Control API that accepts runs listens on the SuperLink's port. So the device answers only through
code its **owner** installed and started (:mod:`ldp_plugin.federated.runtime`, beside a SuperNode
started with ``--isolation process``): the FAB's code never runs on the device, and a run is
answered only if its FAB is one the owner pinned. The owner's device TOML says so in ``[trust]``::

    [trust]
    pins = "state/node-0/pinned-apps"            # sha256 of each FAB the owner accepts, one per line
    # apps = ["<64 hex digits>"]                 # or inline
    components = ["ldp_plugin.federated.app:client_app", "ldp_plugin.federated.secure_sum:client_app"]  # installed ClientApps
    member_key = "certs/nodes/node-0"            # the node's identity (its SuperNode auth key, OpenSSH EC)
    refusal_log = "state/node-0/refusals.jsonl"  # default: beside the ledger

* :func:`fab_digest` is the SHA-256 of the FAB's bytes (what ``flwr build`` names the file by and
  what :func:`app_digest` computes from an app directory with Flower's own deterministic builder).
* :meth:`DeviceTrust.admit` answers, before anything of the device is read, whether a run's FAB
  is pinned and which installed component answers it (read from the FAB's ``pyproject.toml``
  without executing anything); a refusal is appended to the owner's refusal record
  (:meth:`DeviceTrust.record_refusal`, a 0600 JSON-lines file).
* Membership: the plan names the public keys of the nodes that may answer; at registration the
  ServerApp sends a fresh challenge and each node signs ``(run, node id, challenge)`` with its
  member key (:func:`sign_membership` / :func:`verify_membership`, ECDSA P-384 + SHA-256 by
  ``cryptography``) — a node outside the list, or one replaying another's signature, is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from .._extras import missing_extra
from .._boundary.private import FILE_MODE, private_dirs
from .._errors import LDPParameterError

try:  # Python >= 3.11
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

try:  # the flower extra installs cryptography; membership signatures need it
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
except ImportError:  # pragma: no cover - reported when a membership key is used
    hashes = serialization = ec = None

__all__ = ["DeviceTrust", "fab_digest", "fab_component", "DEFAULT_COMPONENTS", "TRUST_REFUSALS", "membership_message",
           "sign_membership", "verify_membership", "load_member_public_key"]

DEFAULT_COMPONENTS = ("ldp_plugin.federated.app:client_app", "ldp_plugin.federated.secure_sum:client_app")
TRUST_REFUSALS = ("app_not_pinned", "component_not_allowed", "app_unreadable")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_COMPONENT = re.compile(r"^ldp_plugin(\.[A-Za-z_]\w*)+:[A-Za-z_]\w*$")
_TRUST_KEYS = {"pins", "apps", "components", "member_key", "refusal_log"}
_MEMBERSHIP_TAG = b"ldp-plugin/membership/v1\x00"


def fab_digest(content: bytes) -> str:
    """SHA-256 (hex) of a FAB's bytes: computed here from the bytes received, never taken from a field."""
    return hashlib.sha256(bytes(content)).hexdigest()


def fab_component(content: bytes) -> Optional[str]:
    """The ClientApp component a FAB declares (``[tool.flwr.app.components] clientapp``), read
    from its ``pyproject.toml`` without installing or importing anything; ``None`` if unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(content))) as z:
            doc = tomllib.loads(z.read("pyproject.toml").decode("utf-8"))
        comp = doc["tool"]["flwr"]["app"]["components"]["clientapp"]
    except (zipfile.BadZipFile, KeyError, TypeError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, OSError):
        return None
    return comp if isinstance(comp, str) else None


@dataclass(frozen=True)
class DeviceTrust:
    """The ``[trust]`` section of a device TOML (paths resolved against the TOML's directory)."""

    apps: tuple = ()
    pins: Optional[Path] = None
    components: tuple = DEFAULT_COMPONENTS
    member_key: Optional[Path] = None
    refusal_log: Optional[Path] = None

    @classmethod
    def from_dict(cls, doc: Optional[Mapping[str, Any]], base: Path, *, ledger: Path) -> "DeviceTrust":
        doc = {} if doc is None else doc
        if not isinstance(doc, Mapping):
            raise LDPParameterError("[trust] must be a table")
        extra = sorted(set(doc) - _TRUST_KEYS)
        if extra:
            raise LDPParameterError(f"unknown key(s) {extra} in [trust]; allowed: {sorted(_TRUST_KEYS)}")
        apps = doc.get("apps", [])
        if not isinstance(apps, list) or not all(isinstance(a, str) and _HEX64.match(a.lower()) for a in apps):
            raise LDPParameterError("[trust] apps must be a list of FAB digests (64 hex digits each: `ldp federated app-digest APP`)")
        comps = doc.get("components", list(DEFAULT_COMPONENTS))
        if not isinstance(comps, list) or not comps or not all(isinstance(c, str) and _COMPONENT.match(c) for c in comps):
            raise LDPParameterError("[trust] components must be a non-empty list of installed ldp_plugin ClientApps ('ldp_plugin.module:attribute')")
        paths = {}
        for key in ("pins", "member_key", "refusal_log"):
            v = doc.get(key)
            if v is not None and (not isinstance(v, str) or not v):
                raise LDPParameterError(f"[trust] {key} must be a path")
            paths[key] = None if v is None else base / v
        log = paths["refusal_log"] or ledger.with_name(ledger.name + ".refusals.jsonl")
        return cls(apps=tuple(a.lower() for a in apps), pins=paths["pins"], components=tuple(comps), member_key=paths["member_key"],
                   refusal_log=log)

    def pinned(self) -> frozenset:
        """Every pinned digest: inline ``apps`` and the lines of the ``pins`` file (read at each run)."""
        out = set(self.apps)
        if self.pins is not None:
            try:
                lines = self.pins.read_text().split()
            except OSError:
                lines = []
            out.update(ln.strip().lower() for ln in lines if _HEX64.match(ln.strip().lower()))
        return frozenset(out)

    def admit(self, fab_content: bytes) -> tuple:
        """``(component, digest, None)`` if the FAB is pinned and names an allowed installed
        component, else ``(None, digest, reason)`` with a reason of :data:`TRUST_REFUSALS`."""
        digest = fab_digest(fab_content)
        if digest not in self.pinned():
            return None, digest, "app_not_pinned"
        comp = fab_component(fab_content)
        if comp is None:
            return None, digest, "app_unreadable"
        if comp not in self.components:
            return None, digest, "component_not_allowed"
        return comp, digest, None

    def pin(self, digest: str) -> bool:
        """Add ``digest`` to the pins file (created 0600); ``False`` if it was already pinned."""
        if self.pins is None:
            raise LDPParameterError("the device configuration has no [trust] pins file to add a digest to")
        digest = digest.lower()
        if not _HEX64.match(digest):
            raise LDPParameterError("a FAB digest is 64 hex digits")
        if digest in self.pinned():
            return False
        _append_private(self.pins, digest + "\n")
        return True

    def record_refusal(self, record: Mapping[str, Any]) -> None:
        """Append one refused run to the owner's record (JSON lines, 0600, directory 0700)."""
        if self.refusal_log is None:
            return
        _append_private(self.refusal_log, json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record}, sort_keys=True) + "\n")

    def refusals(self) -> list:
        """The owner's refusal record, oldest first."""
        if self.refusal_log is None or not self.refusal_log.exists():
            return []
        out = []
        for line in self.refusal_log.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


# -- membership -------------------------------------------------------------------------------------
def membership_message(run_id: int, node_id: int, challenge: bytes) -> bytes:
    """The bytes a member signs at registration: a fixed tag, the run, the node id it answers as, the challenge."""
    return _MEMBERSHIP_TAG + int(run_id).to_bytes(8, "big", signed=False) + int(node_id).to_bytes(8, "big", signed=False) + bytes(challenge)


def _serialization() -> Any:
    if ec is None:  # pragma: no cover - the flower extra installs cryptography
        raise missing_extra("node membership needs the 'cryptography' package", "flower")
    return hashes, serialization, ec


def _append_private(path: Path, text: str) -> None:
    """Append ``text`` to an owner-only file (created 0600; missing directories 0700)."""
    private_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def sign_membership(key_path: Path, run_id: int, node_id: int, challenge: bytes) -> tuple:
    """``(public key in OpenSSH form, signature hex)`` by the node's member key."""
    _serialization()
    try:
        key = serialization.load_ssh_private_key(Path(key_path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        raise LDPParameterError("the device's [trust] member_key cannot be read as an OpenSSH EC private key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise LDPParameterError("the device's [trust] member_key must be an EC key (the SuperNode auth key)")
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return pub, key.sign(membership_message(run_id, node_id, challenge), ec.ECDSA(hashes.SHA256())).hex()


def load_member_public_key(text: str) -> str:
    """A member's public key in canonical OpenSSH form (``ecdsa-sha2-... AAAA...``, comment dropped)."""
    _serialization()
    try:
        key = serialization.load_ssh_public_key(text.strip().encode())
    except (ValueError, TypeError, UnicodeError):
        raise LDPParameterError("a plan member must be an OpenSSH EC public key (the node's .pub file)") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise LDPParameterError("a plan member must be an EC public key (the SuperNode auth key's .pub)")
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def verify_membership(public_key: str, signature_hex: str, run_id: int, node_id: int, challenge: bytes) -> bool:
    """Whether ``signature_hex`` is ``public_key``'s signature of :func:`membership_message`."""
    _serialization()
    try:
        key = serialization.load_ssh_public_key(public_key.encode())
        key.verify(bytes.fromhex(signature_hex), membership_message(run_id, node_id, challenge), ec.ECDSA(hashes.SHA256()))
    except Exception:  # noqa: BLE001 - any malformed key or signature is a failed proof, never the run's end
        return False
    return True
