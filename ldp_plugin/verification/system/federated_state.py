"""The federated runtime's state and its refusals, checked against exact references: the
collector's replay guard, the device's keystore and ledger anchor, atomic writes, the ingest
service's tokens and queries, and the secure-sum query's parameters.

* **Replay guard** (:class:`~ldp_plugin.federated.nonces.NonceSet`): over batches built to stress
  it — replays inside a batch and across batches, forged nonces sharing their first 64-bit word
  (inside a batch, and a run of them already in the set), rows whose header does not match, a
  non-contiguous view, an empty batch — every answer (``admit``, ``admit_matching``,
  ``admit_envelopes`` and its gathered payload) equals a plain Python set's, on the numpy twin and
  on the compiled kernels, switching backends in the middle (the set converts between its
  representations) and growing the compiled table past its first size; in the full run also one
  batch past the size at which the compiled admission scans its rows on two threads (the shares
  closed up in row order), against the set computed with numpy; a malformed batch or reserve count
  is refused (:class:`LDPInputError`) and changes nothing.
* **Keystore**: each way an owner's state can be broken gives its reason — no anchor
  (``ledger_tampered``), a missing ledger (``ledger_missing``), a truncated one
  (``ledger_corrupted``), a rewritten history (``ledger_tampered``) — a ledger extended by a spend
  moves the anchor forward, and a keystore that is missing, world-readable, of another version or
  with a short secret is refused naming only the file (never its content); ``create`` never
  replaces a keystore.
* **Atomic writes**: a write that fails midway leaves the old file whole and no temporary file.
* **Ingest**: a tokens file that is not JSON, has no clients, extra keys, a malformed hash, an
  unknown role or an out-of-range quota is refused naming the rule, never the file's text; a plan
  query that is not a frequency query, and a service without queries, are refused; reports out of
  the mechanism's range are a 400 that stores nothing.
* **Secure-sum queries**: each field out of its range is refused naming the field.
* **Fleets and the shuffler's inputs**: a fleet built in code answers one envelope per device,
  charged once (its retry the kept envelopes); a node whose data outgrew its ledger refuses
  ``ledger_mismatch`` and spends nothing; a query whose release failed after its spend is
  ``interrupted`` (a retry, never a second randomization, nothing charged again); the permutation refuses a count outside its range and
  a malformed reply holds nothing at the shuffler.
* **Work limits**: a query whose timed dry run exceeds the owner's ``max_query_seconds`` is
  ``query_too_large``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...accountant import Accountant
from ...federated.atomic import write_atomic
from ...federated.config import NODE_CONFIG_KEY, DeviceConfig
from ...federated.app import device_answer
from ...federated.device import DeviceFleet
from ...federated.envelope import seal
from ...federated.ingest import ClientToken, IngestService, load_tokens, plan_queries
from ...federated.keystore import Keystore, ledger_chain
from ...federated.nonces import NonceSet
from ...federated.plan import Plan
from ...federated.policy import DevicePolicy
from ...federated.query import Query
from ...federated.secure_query import SecureSumQuery, planned_secure_query
from ...federated.shuffler import Shuffler, permutation
from ...federated.work import refusal as work_refusal
from ...mechanisms import KRR
from ...mechanisms.charge import report_charge
from ...mechanisms.reports import to_wire
from ..production import kernel_env, numba_available
from ..refusals import refusal_problems

__all__ = ["state_layer", "nonce_checks", "keystore_checks", "atomic_checks", "ingest_checks", "secure_query_checks", "SECRET"]

#: text planted in files and values: never in a refusal
SECRET = "held-value-5e0d"


# -- the replay guard ---------------------------------------------------------------------------------
class _Reference:
    """The replay guard's specification: a Python set of nonces."""

    def __init__(self):
        self.seen: set = set()

    def admit(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(rows.shape[0], dtype=bool)
        for i, r in enumerate(rows):
            n = bytes(r[:16])
            if n not in self.seen:
                self.seen.add(n)
                out[i] = True
        return out

    def admit_matching(self, rows: np.ndarray, offset: int, pattern: bytes) -> np.ndarray:
        out = np.full(rows.shape[0], 2, dtype=np.uint8)
        ok = [i for i, r in enumerate(rows) if bytes(r[offset:offset + len(pattern)]) == pattern]
        if ok:
            out[ok] = self.admit(rows[ok]).astype(np.uint8)
        return out


def _batches(rng: np.random.Generator, width: int, pattern: bytes, offset: int) -> list:
    """Batches of ``(m, width)`` rows: fresh nonces, replays of earlier rows (same batch and
    earlier ones), forged nonces sharing a first word, rows whose header is not ``pattern``."""
    out, earlier = [], []
    for m in (7, 40, 3, 700, 600):
        rows = rng.integers(0, 256, size=(m, width), dtype=np.uint8)
        rows[:, offset:offset + len(pattern)] = np.frombuffer(pattern, dtype=np.uint8)
        if m > 5:
            rows[m // 2] = rows[0]  # a replay inside the batch
            rows[1, 8:16] = rows[2, 8:16]  # a forged pair: equal second word...
            rows[3, :8] = rows[4, :8]  # ...and a pair sharing the first word
            rows[5, offset] ^= 0xFF  # a header that is not the query's
        if earlier:
            rows[-1] = earlier[-1][0]  # a replay of an earlier batch
            prev = earlier[0][1]
            rows[-2, :8] = prev[:8]  # a new nonce sharing its first word with one in the set
        out.append(rows)
        earlier.append(rows)
    return out


def nonce_checks(*, quick: bool = False, nonce_set: Callable = NonceSet) -> list:
    """The replay guard (``nonce_set``: :class:`NonceSet` or a class with its interface) against
    the reference set (module docstring)."""
    failures: list = []
    rng = np.random.default_rng(20260)
    width, offset, pattern = 24, 16, b"HDR1"
    backends = ["numpy", "numba", "numpy", "numba", "numba"] if numba_available() else ["numpy"]  # the last batch grows the compiled table
    for method in ("admit", "admit_matching", "admit_envelopes"):
        ns, ref = nonce_set(), _Reference()
        for k, rows in enumerate(_batches(rng, width, pattern, offset)):
            backend = backends[k % len(backends)]
            with kernel_env(backend):
                if k == 1:
                    ns.reserve(64)
                if method == "admit":
                    view = rows[:, :20] if k == 2 else rows  # a non-contiguous view of the nonces
                    got, want = ns.admit(view), ref.admit(rows)
                elif method == "admit_matching":
                    got, want = ns.admit_matching(rows, offset, pattern), ref.admit_matching(rows, offset, pattern)
                else:
                    got, payload = ns.admit_envelopes(rows, offset, pattern, offset)
                    want = ref.admit_matching(rows, offset, pattern)
                    if not np.array_equal(np.asarray(payload), rows[want == 1, offset:]):
                        failures.append(f"replay guard ({backend}): admit_envelopes gathered other payload bytes than the admitted rows'")
            if not np.array_equal(np.asarray(got).astype(np.int64), np.asarray(want).astype(np.int64)) or len(ns) != len(ref.seen):
                failures.append(f"replay guard ({backend}, {method}, batch {k}): its answer differs from a set of nonces")
        empty = ns.admit(np.zeros((0, 16), dtype=np.uint8))
        if empty.shape != (0,) or len(ns) != len(ref.seen):
            failures.append("replay guard: an empty batch changed the set")
    if not quick:  # one batch past the size at which the compiled admission scans its rows on both cores
        failures += _split_scan_check(rng, nonce_set)
    ns = nonce_set()
    for bad, call in (("admit", lambda: ns.admit(np.zeros((2, 8), dtype=np.uint8))), ("reserve", lambda: ns.reserve(-1)),
                      ("admit_envelopes", lambda: ns.admit_envelopes(np.zeros((2, 16), dtype=np.uint8), 0, b"", 17))):
        _refused(call, LDPInputError, bad, failures, f"replay guard: a malformed {bad} call", unchanged={"the set": lambda: len(ns)})
    return failures


def _split_scan_check(rng: np.random.Generator, nonce_set: Callable) -> list:
    """``admit_envelopes`` on a batch of ``2·2**18 + 1,001`` rows (the compiled admission splits its
    scan of the rows over two threads from ``2·2**18``; the numpy twin below it) against the set of
    nonces: header mismatches in the first share (a gap to close), replays across the shares and of
    nonces already in the set, forged nonces sharing their first word; statuses, payloads and size."""
    m, width, offset, pattern = (2 << 18) + 1_001, 24, 16, b"HDR1"
    rows = rng.integers(0, 256, size=(m, width), dtype=np.uint8)
    rows[:, offset:offset + 4] = np.frombuffer(pattern, dtype=np.uint8)
    rows[3:200_000:97, offset + 1] ^= 4  # not the query's header, most in the first share
    rows[400_000:400_300, :16] = rows[100:400, :16]  # replays of the first share in the second
    rows[10:20, :16] = rows[0, :16]  # and within the first
    rows[450_000:450_500, 8:16] = rows[450_000, 8:16]  # forged: one second word, many first words
    rows[460_000:460_050, :8] = rows[460_000, :8]  # and one first word, many second words
    earlier = rows[500_000:500_100, :16].copy()
    # the set of nonces, vectorized (a row is admitted iff its header is the query's and its nonce is
    # neither in the set before the batch nor on an earlier row of it)
    as_void = lambda a: np.ascontiguousarray(a).view(np.dtype((np.void, 16))).ravel()  # noqa: E731
    idx = np.flatnonzero((rows[:, offset:offset + 4] == np.frombuffer(pattern, dtype=np.uint8)).all(axis=1))
    nonces = as_void(rows[idx, :16])
    first = np.zeros(idx.size, dtype=bool)
    first[np.unique(nonces, return_index=True)[1]] = True
    want = np.full(m, 2, dtype=np.int64)
    want[idx] = first & ~np.isin(nonces, as_void(earlier))
    size = np.unique(as_void(earlier)).size + int((want == 1).sum())
    failures = []
    for backend in (["numba", "numpy"] if numba_available() else ["numpy"]):
        ns = nonce_set()
        with kernel_env(backend):
            ns.admit(earlier)
            got, payload = ns.admit_envelopes(rows, offset, pattern, offset)
        if not np.array_equal(np.asarray(got).astype(np.int64), want) or len(ns) != size:
            failures.append(f"replay guard ({backend}, a batch past the two-core split): its answer differs from a set of nonces")
        elif not np.array_equal(np.asarray(payload), rows[want == 1, offset:]):
            failures.append(f"replay guard ({backend}, a batch past the two-core split): other payload bytes than the admitted rows'")
    return failures


# -- keystore, ledger anchor, atomic writes ----------------------------------------------------------
def _owner(directory: Path, name: str) -> tuple:
    d = directory / name
    d.mkdir(parents=True)
    (d / "device.toml").write_text("\n".join(["[device]", f'name = "{name}"', 'ledger = "ledger.sqlite"', 'keystore = "keys.json"', "",
                                              "[policy]", 'lifetime_cap = "4"', 'max_epsilon_per_query = "2"', "", "[data]",
                                              'source = "ldp_plugin.federated.synthetic:zipf_values"', "[data.args]", "devices = 3", "d = 4", ""]))
    node_config = {NODE_CONFIG_KEY: str(d / "device.toml")}
    cfg = DeviceConfig.load(d / "device.toml", node_config)
    DeviceFleet.init(cfg)
    return cfg, node_config


def _refused(call: Callable, kind: Any, must: str, failures: list, what: str, unchanged: Optional[dict] = None) -> None:
    """``call()`` must be refused (:func:`~ldp_plugin.verification.refusals.refusal_problems`): ``kind``
    naming ``must``, never the file's content (:data:`SECRET`), each of ``unchanged`` unchanged."""
    errors = kind if isinstance(kind, tuple) else (kind,)
    failures.extend(f"{what}: {why}" for why in refusal_problems(call, errors=errors, names=(must,), values=(SECRET,), unchanged=unchanged))


def keystore_checks(directory: Path) -> list:
    """The keystore and its ledger anchor (module docstring)."""
    failures: list = []
    cfg, _ = _owner(directory, "owner")
    ks = Keystore.open(cfg.keystore)
    if ks.verify_ledger(cfg.ledger) is not None:
        failures.append("keystore: a freshly initialized ledger does not extend its anchor")
    acc = Accountant(cfg.ledger)
    acc.spend("state/q1", Fraction(1, 2), cohorts=[0, 1])  # a spend the anchor has not seen yet
    acc.close()
    head = ledger_chain(cfg.ledger)[1]
    if ks.verify_ledger(cfg.ledger) is not None or ks.anchor["spends"] != len(head) or Keystore.open(cfg.keystore).anchor != ks.anchor:
        failures.append("keystore: a ledger extended by a spend does not move the saved anchor forward")
    bare = Keystore(cfg.keystore, ks.master, None)
    if bare.verify_ledger(cfg.ledger) != "ledger_tampered":
        failures.append("keystore: a keystore without an anchor is not ledger_tampered")
    if ks.verify_ledger(directory / "owner" / "absent.sqlite") != "ledger_missing":
        failures.append("keystore: a missing ledger is not ledger_missing")
    broken = directory / "owner" / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + SECRET.encode() * 8)
    if ks.verify_ledger(broken) != "ledger_corrupted":
        failures.append("keystore: a corrupted ledger is not ledger_corrupted")
    _refused(lambda: ledger_chain(broken), LDPParameterError, "broken.sqlite", failures, "ledger_chain of a corrupted ledger")
    _refused(lambda: ledger_chain(directory / "owner" / "absent.sqlite"), LDPParameterError, "absent.sqlite", failures, "ledger_chain of a missing ledger")
    other, _ = _owner(directory, "other")
    if ks.verify_ledger(other.ledger) != "ledger_tampered":
        failures.append("keystore: another ledger (another creation stamp) is not ledger_tampered")
    con_path = other.ledger.with_name("stampless.sqlite")
    other.ledger.with_name(con_path.name).write_bytes(other.ledger.read_bytes())
    _strip_stamp(con_path)
    _refused(lambda: ledger_chain(con_path), LDPParameterError, "creation stamp", failures, "ledger_chain of a ledger without its stamp")
    _refused(lambda: Keystore.create(cfg.keystore), LDPParameterError, "keys.json", failures, "Keystore.create over an existing keystore")
    _refused(lambda: Keystore.open(directory / "owner" / "none.json"), LDPParameterError, "none.json", failures, "Keystore.open of a missing file")
    for name, doc, mode in (("version", {"version": 99, "master": "00" * 32, "note": SECRET}, 0o600),
                            ("short", {"version": 1, "master": "00" * 8, "anchor": None, "note": SECRET}, 0o600),
                            ("text", SECRET, 0o600), ("readable", {"version": 1, "master": "00" * 32, "anchor": None}, 0o644)):
        p = directory / "owner" / f"{name}.json"
        p.write_text(json.dumps(doc))
        os.chmod(p, mode)
        _refused(lambda: Keystore.open(p), LDPParameterError, p.name, failures, f"Keystore.open of a {name} keystore")
    return failures


def _strip_stamp(path: Path) -> None:
    con = sqlite3.connect(path)
    try:
        con.execute("DELETE FROM meta WHERE key = 'created'")
        con.commit()
    finally:
        con.close()


def atomic_checks(directory: Path) -> list:
    """A write that fails midway leaves the old content and no temporary file."""
    failures: list = []
    target = directory / "atomic" / "state.json"
    write_atomic(target, b"old")
    try:
        write_atomic(target, b"new-", SECRET)  # the second chunk is not bytes: the write fails after the first
        failures.append("atomic write: a failing write succeeded")
    except TypeError:
        pass
    left = sorted(p.name for p in target.parent.iterdir())
    if target.read_bytes() != b"old" or left != ["state.json"] or (target.stat().st_mode & 0o777) != 0o600:
        failures.append(f"atomic write: a failed write left {left} and changed the file")
    return failures


# -- ingest -------------------------------------------------------------------------------------------
def ingest_checks(directory: Path) -> list:
    """The ingest service's tokens, queries and out-of-range reports (module docstring)."""
    failures: list = []
    d = directory / "ingest"
    d.mkdir(parents=True)
    good_hash = hashlib.sha256(b"t").hexdigest()
    cases = {"not-json": ("{" + SECRET, "not readable JSON"), "no-clients": ({"clients": {}}, "clients"),
             "extra-key": ({"clients": {"a": {"token_sha256": good_hash, "note": SECRET}}}, "token_sha256, role and quota only"),
             "bad-hash": ({"clients": {"a": {"token_sha256": SECRET}}}, "64 lowercase hex"),
             "bad-role": ({"clients": {"a": {"token_sha256": good_hash, "role": SECRET}}}, "role must be one of"),
             "bad-quota": ({"clients": {"a": {"token_sha256": good_hash, "quota": 0}}}, "quota must be an integer in [1, 2**30]")}
    for name, (doc, says) in cases.items():
        p = d / f"{name}.json"
        p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        _refused(lambda: load_tokens(p), LDPParameterError, says, failures, f"tokens file {name}")
    plan = Plan.from_dict({"name": "ingest"}, [{"name": "mean", "mechanism": "piecewise", "epsilon": "1"}], d)
    _refused(lambda: plan_queries(plan), LDPParameterError, "frequency queries", failures, "a non-frequency plan query for ldp serve")
    freq = Plan.from_dict({"name": "ingest", "min_batch": 3}, [{"name": "apps", "mechanism": "krr", "epsilon": "1", "params": {"d": 4}}], d)
    (served,) = plan_queries(freq)
    if served.query_id != "ingest/apps/r1" or served.epsilon != "1" or served.min_batch != 3 or served.mechanism().spec() != KRR(epsilon=1.0, d=4).spec():
        failures.append("ingest: a plan's frequency query is not served as the devices receive it")
    _refused(lambda: IngestService([], {}), LDPParameterError, "at least one query", failures, "an ingest service without queries")
    mech = KRR(epsilon=1.0, d=4)
    q = Query.for_mechanism("state/ingest", mech, min_batch=1)
    svc = IngestService([q], {good_hash: ClientToken("phone", "device", 10), hashlib.sha256(b"a").hexdigest(): ClientToken("an", "analyst", 1)})
    code, out = svc.post("Bearer t", q.content_hash.hex(), "application/octet-stream", _out_of_range(mech, q))
    if code != 400 or "reasons" not in out or svc.status("Bearer a", q.content_hash.hex())[1]["accepted"] != 0:
        failures.append(f"ingest: a report out of the mechanism's range answered {code} or was stored")
    return failures


def _out_of_range(mech: Any, q: Query) -> bytes:
    """One envelope of ``mech``'s query whose report code is outside ``[0, d)``."""
    env = bytearray(seal([to_wire(mech, np.array([3]), tag=q.content_hash)])[0])
    env[-1] = 0xFF  # the report's last byte: a code far beyond d = 4
    return bytes(env)


# -- device fleets, the shuffler's inputs -------------------------------------------------------------
def fleet_checks(directory: Path) -> list:
    """A fleet built in code (the library API) refuses an empty or mismatched fleet, answers one
    envelope per device charged exactly ε, and a retry returns the kept envelopes; a deployed
    node whose data source now holds more devices than its ledger refuses ``ledger_mismatch``
    for every device, charging nothing."""
    failures: list = []
    d = directory / "fleets"
    d.mkdir(parents=True)
    _refused(lambda: DeviceFleet(d / "empty.sqlite", [], lifetime_cap=1), LDPParameterError, "at least one device", failures, "an empty fleet")
    _refused(lambda: DeviceFleet(d / "strings.sqlite", [0, 1], lifetime_cap=1, strings=["a"]), LDPParameterError, "one string per device", failures,
             "a fleet with fewer strings than devices")
    fleet = DeviceFleet(d / "code.sqlite", np.array([0, 1, 3]), lifetime_cap=Fraction(2))
    try:
        q = Query.for_mechanism("state/fleet", KRR(epsilon=1.0, d=4))
        first, again = fleet.respond(q.to_json()), fleet.respond(q.to_json())
        if (len(first["reports"]) != 3 or first["refused"] or first["retry"] or again["reports"] != first["reports"] or not again["retry"]
                or fleet.ledger.remaining_by_cohort() != [Fraction(2) - report_charge(q.mechanism())] * 3):
            failures.append("a fleet built in code does not answer one envelope per device, charged once, its retry kept")
    finally:
        fleet.close()
    cfg, node_config = _owner(directory, "grown")
    toml = Path(node_config[NODE_CONFIG_KEY])
    toml.write_text(toml.read_text().replace("devices = 3", "devices = 4"))
    reply = device_answer({"query": {"json": Query.for_mechanism("state/grown", KRR(epsilon=1.0, d=4)).to_json()}}, node_config)
    with Accountant(cfg.ledger) as acc:
        spent = acc.spent()
    if reply["refused"] != {"ledger_mismatch": 4} or reply["reports"] or spent != 0:
        failures.append(f"a node whose devices outgrew its ledger answered {reply['refused']} and spent {spent}")
    killed, killed_config = _owner(directory, "killed")  # a release that failed after its spend (the device died mid-produce)
    q = Query.for_mechanism("state/killed", KRR(epsilon=1.0, d=4))
    acc = Accountant(killed.ledger)
    try:
        acc.release(q.content_hash.hex(), Fraction(1), _died, cohorts=[0, 1, 2], mechanism="krr", params=q.to_dict())
    except RuntimeError:
        pass
    finally:
        acc.close()
    reply = device_answer({"query": {"json": q.to_json()}}, killed_config)
    with Accountant(killed.ledger) as acc:
        spent = acc.spent()
    if reply["refused"] != {"interrupted": 3} or not reply["retry"] or reply["reports"] or spent != 1:
        failures.append(f"a query whose release failed after its spend answered {reply['refused']} (spent {spent}): it must never randomize twice")
    return failures


def _died() -> dict:
    raise RuntimeError("the device stopped while producing its reports")


def shuffler_input_checks() -> list:
    """The permutation refuses a count outside ``[0, 2**32]`` naming ``n``; a reply that fails
    validation is that node's error and holds nothing."""
    failures: list = []
    for bad in (-1, True, 1.5, (1 << 32) + 1):
        _refused(lambda: permutation(bad), LDPParameterError, "n must be an integer in [0, 2**32]", failures, f"permutation({bad!r})")
    if permutation(0) != [] or permutation(1) != [0]:
        failures.append("the permutation of fewer than two items is not the identity")
    sh = Shuffler(Query.for_mechanism("state/shuffle", KRR(epsilon=1.0, d=4), min_batch=1))
    res = sh.add_reply({"devices": 1, "refused": "{" + SECRET, "retry": False, "reports": b""}, quota=1)
    if res["error"] != "bad_field" or sh.node_errors != {"bad_field": 1} or sh.count or SECRET in json.dumps(res):
        failures.append(f"a malformed reply to the shuffler gave {res} and held {sh.count}")
    return failures


# -- secure-sum queries, work limits ------------------------------------------------------------------
def secure_query_checks() -> list:
    """Each field of a secure-sum query out of its range is refused naming the field."""
    failures: list = []
    base = {"query_id": "state/secure", "option": "noise", "d": 4, "epsilon": "1", "delta": 1e-6, "nodes": 5, "min_participants": 3}
    bad = {"query_id": ("query_id", SECRET + " !"), "option": ("option", "shuffle"), "epsilon": ("epsilon must be exact", 1.0),
           "delta": ("delta", 2.0), "shares": ("shares", 9), "version": ("version", 7)}
    for field_, (says, value) in bad.items():
        _refused(lambda: SecureSumQuery(**{**base, field_: value}), (LDPParameterError, LDPInputError), says, failures, f"secure query {field_}")
    _refused(lambda: SecureSumQuery(**{**base, "epsilon": "60"}), LDPParameterError, "(0, 50]", failures, "secure query epsilon range")
    _refused(lambda: SecureSumQuery.from_json(json.dumps({**SecureSumQuery(**base).to_dict(), "version": 7})), LDPInputError, "version", failures,
             "secure query JSON of another version")
    _refused(lambda: SecureSumQuery.from_json(json.dumps({**base, "note": SECRET})), LDPInputError, "exactly the fields", failures,
             "secure query JSON with other fields")
    if SecureSumQuery.from_json(SecureSumQuery(**base).to_json()) != SecureSumQuery(**base):
        failures.append("a secure query does not round-trip through its JSON")
    sec = {"delta": 1e-6, "min_participants": 3}
    for what, args, says in (("mechanism", ("oue", "1", {"d": 4}, sec), "mechanism must be one of"),
                             ("secure table", ("skellam", "1", {"d": 4}, {"delta": 1e-6}), "delta and min_participants"),
                             ("params", ("skellam", "1", {"d": 4, "k": 2}, sec), "exactly {d = <bins>}"),
                             ("epsilon", ("skellam", None, {"d": 4}, sec), "needs an epsilon"),
                             ("min_count", ("skellam", "1", {"d": 4}, {**sec, "min_count": 0}), "min_count")):
        _refused(lambda: planned_secure_query("state/planned", args[0], args[1], args[2], args[3], 5), LDPParameterError, says, failures,
                 f"a planned secure query's {what}")
    q = planned_secure_query("state/planned", "skellam", "1", {"d": 4}, sec, 5)
    der = q.derive()
    if der.noise_release(der.threshold, q.delta) != der.charge:  # the charge is the noise present at the reconstruction threshold
        failures.append("a planned secure query's charge is not the noise release at its threshold")
    return failures


def work_checks() -> list:
    """A query whose timed dry run exceeds the owner's time limit is ``query_too_large``."""
    mech = KRR(epsilon=1.0, d=4)
    if work_refusal(mech, 10, DevicePolicy()) is not None:
        return ["work limits: a small query is refused"]
    if work_refusal(mech, 10**9, DevicePolicy(max_query_bytes=1 << 62, max_query_seconds=1)) != "query_too_large":
        return ["work limits: a query planned beyond the owner's seconds is not query_too_large"]
    return []


def state_layer(*, seed: int = 0, quick: bool = False, directory: Any = None, nonce_set: Callable = NonceSet) -> dict:
    """The layer's row (module docstring); ``seed`` changes nothing (every check is exact);
    ``nonce_set``: the replay guard under test."""
    t0 = time.perf_counter()
    directory = Path(directory)
    quiet, log = logging.NullHandler(), logging.getLogger("ldp_plugin.federated")  # a refusal's log line is the node operator's, not the verifier's
    log.addHandler(quiet)
    try:
        failures = _run_checks(directory, quick, nonce_set)
    finally:
        log.removeHandler(quiet)
    return {"layer": "federated-state", "failures": failures, "seconds": round(time.perf_counter() - t0, 2), "passed": not failures}


def _run_checks(directory: Path, quick: bool, nonce_set: Callable) -> list:
    failures = nonce_checks(quick=quick, nonce_set=nonce_set) + keystore_checks(directory / "keystore") + atomic_checks(directory) + ingest_checks(directory)
    return failures + fleet_checks(directory) + shuffler_input_checks() + secure_query_checks() + work_checks()
