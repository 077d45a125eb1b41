"""The device side: the randomizer runs where the value lives, and the device can refuse.

A :class:`DeviceFleet` is one device (``n_devices=1``: a phone, one SQLite file) or many devices
hosted by one edge node — each device is one cohort of the fleet's own ledger, so every device's
lifetime and per-period caps are enforced separately with the exact Fraction rules and crash
safety of :class:`ldp_plugin.Accountant` (a spend is committed before any report exists; a
retried query is charged once and answered with the kept reply, never a fresh randomization; a
killed device never under-counts and refuses the interrupted query rather than randomizing twice).

**Configured only by its owner.** A deployed fleet is opened with :meth:`DeviceFleet.open` from
a :class:`~ldp_plugin.federated.config.DeviceConfig` (the TOML its SuperNode's ``node_config``
names): data source, ledger, keystore and policy all come from there. :meth:`open` never creates
anything — the owner runs :meth:`DeviceFleet.init` (``ldp federated device init``) once — and the
ledger is checked against the keystore's anchor before every query
(:mod:`~ldp_plugin.federated.keystore`): a missing, replaced, truncated or edited ledger makes
every device refuse until the owner re-initializes it. A query carries no policy, no path and
no seed; :meth:`Query.from_json` refuses any field it does not define.

For each query the fleet checks, cheapest first and before any randomization: the query's
version and hash, its mechanism against the local policy (allowed names, a maximum and an
optional minimum ε per query, an optional number of charged queries per UTC day:
:mod:`~ldp_plugin.federated.policy`), every device's remaining budget, and the memory and time
the query plans (from its sizes and a dry run on inputs that are not values:
:mod:`~ldp_plugin.federated.work`); it maps every value into the query's domain by the rule fixed in
:mod:`~ldp_plugin.federated.domain_rule` (a random in-domain category, clipping, sampling to
``m``); then it spends once (one transaction) for the devices that fit, randomizes with the OS
CSPRNG, and returns one envelope (nonce + wire report, :mod:`~ldp_plugin.federated.envelope`) per
device or a refusal with a reason code. Raw values never leave it.

**Answers that depend on the value only through the mechanism.** Every check before the spend
reads the query, the policy and the ledger — never a value — so a refusal is the same for every
device whatever it holds; a value outside the query's domain is not an error but an input the
domain rule replaces (the report is still ε-LDP: a mixture of the mechanism's channels). No
exception text, position or count leaves the fleet: :meth:`DeviceFleet.respond` never raises, and
anything unexpected becomes the one code ``device_error`` for every device (after a spend, the
query stays charged and a retry is refused as ``interrupted``, never randomized twice). A reply
carries only the reports, the refusal codes of :data:`REFUSAL_REASONS` with device counts, the
``retry`` flag and the number of devices.

**Repeated collections** (a longitudinal mechanism: memoized by each device's key): a query of
the series is charged, on every device, the worst-case increment of the series' lifetime bound
at the device's collection number ``t`` (``mechanism.collection_cost(t)``: the increment of the
user-level bound, or of the value-level one if the series' spec names ``relation="value"``; see
:mod:`ldp_plugin.mechanisms.lifetime`) — a function of ``t`` only, never of the device's own
units, so a refusal reveals nothing about its values. An unbounded increment (dBitFlipPM's second
collection at the user level) is refused as ``budget_exhausted``. ``t`` is counted from the
device's own spends of queries with the same mechanism spec; devices at different ``t`` are
charged the largest of their increments (over-charging, never under-charging).
The device's key is a PRF of the keystore's secret, so it survives restarts. A series needs the
keystore: without it the devices refuse (``keystore_missing``) rather than start new permanent
reports, and after the owner's ``--rekey`` every series begun under the lost keys stays refused.
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPInputError, LDPParameterError
from ..accountant import Accountant, Population
from ..accountant.budget import LedgerError
from ..exact import charge_up
from ..mechanisms.charge import report_charge
from ..mechanisms.lifetime import UnboundedLossError
from ..mechanisms.protocol import Keyed, has
from ..mechanisms.reports import to_wire_each
from .config import DeviceConfig
from .discovery import DiscoveryLevel, collection_key, device_groups
from .domain_rule import in_domain
from .envelope import seal
from .keystore import Keystore
from .policy import DevicePolicy
from .query import Query
from .work import refusal as work_refusal

__all__ = ["DevicePolicy", "DeviceFleet", "DeviceRefusal", "REFUSAL_REASONS"]

#: every code a device answers with (the only text a refusal carries)
REFUSAL_REASONS = ("unsupported_version", "malformed_query", "mechanism_not_allowed", "relation_not_allowed", "epsilon_above_policy",
                   "epsilon_below_policy", "daily_query_limit", "query_too_large", "budget_exhausted", "interrupted",
                   "in_progress", "keystore_missing", "ledger_missing", "ledger_corrupted", "ledger_tampered", "ledger_mismatch",
                   "not_initialized", "device_misconfigured", "other_group", "already_answered", "device_error")


class DeviceRefusal(Exception):
    """The fleet cannot answer at all (its state needs its owner); ``reason`` is a refusal code."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(detail or reason)
        self.reason = reason


class _ProduceFailed(Exception):
    """The produce step failed after the spend (told apart from a concurrent charge)."""


def _reply(n: int, reason: str, retry: bool = False) -> dict:
    return {"reports": [], "refused": {reason: n}, "retry": retry, "devices": n}


def _table_spec(spec: Any) -> Any:
    """A spec without its charging ``relation`` (which changes no report)."""
    if isinstance(spec, dict) and isinstance(spec.get("params"), dict):
        return {**spec, "params": {k: v for k, v in spec["params"].items() if k != "relation"}}
    return spec


class DeviceFleet:
    """``values[i]`` is device ``i``'s value (it never leaves the fleet); its budget is cohort ``i``
    of the ledger at ``ledger_path``; ``keys[i]`` its secret (memoized mechanisms): from
    ``keystore`` if given (persistent), else fresh CSPRNG keys held in memory (this process only).

    This constructor is the library API for an owner who builds a fleet in code (it creates the
    ledger if absent); a deployed SuperNode uses :meth:`open` (never creates) after :meth:`init`."""

    def __init__(self, ledger_path: str | Path, values: Sequence, *, lifetime_cap: Any, period_cap: Any = None, period: Optional[str] = None,
                 policy: Optional[DevicePolicy] = None, name: str = "devices", keystore: Optional[Keystore] = None,
                 strings: Optional[Sequence] = None):
        self.values = np.asarray(values) if not isinstance(values, np.ndarray) else values
        n = int(self.values.shape[0])
        if n < 1:
            raise LDPParameterError("a fleet needs at least one device")
        self.config = None
        self._strings = None if strings is None else np.asarray(list(strings), dtype=object)  # heavy-hitter discovery's values
        if self._strings is not None and self._strings.shape != (n,):
            raise LDPParameterError("strings must hold one string per device")
        self.policy = DevicePolicy() if policy is None else policy
        self.keystore = keystore
        self.keys = keystore.device_keys(n) if keystore is not None else [os.urandom(32) for _ in range(n)]
        self._series_ok = True
        self.ledger = Accountant.create(ledger_path, Population(name=name, lifetime_cap=lifetime_cap, period_cap=period_cap, period=period, cohorts=n),
                                        exist_ok=True)

    # -- owner-side lifecycle ------------------------------------------------------------------------
    @classmethod
    def init(cls, config: DeviceConfig, *, reset: bool = False, rekey: bool = False) -> dict:
        """The owner's explicit initialization: a keystore (kept if present: memoized series
        continue), a ledger with one cohort per device, and the anchor binding them. An existing
        ledger is never replaced unless ``reset`` (then it is moved aside, not deleted, and the
        devices start a new budget — the owner's decision, logged in the returned record)."""
        values = config.load_values()
        n = int(values.shape[0])
        moved = None
        if rekey:  # a lost keystore: a new secret for the existing ledger, its earlier series refused
            if reset or not config.ledger.exists() or config.keystore.exists():
                raise LDPParameterError("--rekey replaces a lost keystore of an existing ledger (the keystore must be missing; not with --reset)")
            Accountant(config.ledger, config.population(n)).close()  # the ledger must be this population's and consistent
            ks = Keystore.create(config.keystore)
            ks.anchor_ledger(config.ledger)
            ks.rekeyed_after = int(ks.anchor["spends"])
            ks.save()
            return {"devices": n, "ledger": str(config.ledger), "keystore": str(config.keystore), "previous_ledger": None,
                    "series_refused_before_spend": ks.rekeyed_after}
        if config.ledger.exists():
            if not reset:
                raise LDPParameterError(f"the device ledger {config.ledger.name!r} already exists; re-initializing starts a new budget and needs --reset")
            moved = config.ledger.with_name(f"{config.ledger.name}.replaced-{time.strftime('%Y%m%dT%H%M%S')}-{os.urandom(3).hex()}")
            shutil.move(str(config.ledger), str(moved))
        ks = Keystore.open(config.keystore) if config.keystore.exists() else Keystore.create(config.keystore)
        Accountant.create(config.ledger, config.population(n), parents=True).close()  # the owner's init creates its state directories (0700)
        ks.anchor_ledger(config.ledger)
        return {"devices": n, "ledger": str(config.ledger), "keystore": str(config.keystore), "previous_ledger": None if moved is None else str(moved)}

    @classmethod
    def open(cls, config: DeviceConfig) -> "DeviceFleet":
        """The fleet of a deployed node, from its owner's configuration only; never creates a
        ledger or a keystore. Raises :class:`DeviceRefusal` when the devices must refuse."""
        try:
            values = config.load_values()
        except (LDPParameterError, LDPInputError) as e:
            raise DeviceRefusal("device_misconfigured", str(e)) from None
        ks = None
        if config.keystore.exists():
            try:
                ks = Keystore.open(config.keystore)
            except LDPParameterError as e:
                raise DeviceRefusal("device_misconfigured", str(e)) from None
            reason = ks.verify_ledger(config.ledger)
            if reason is not None:
                raise DeviceRefusal(reason)
        elif config.ledger.exists():
            raise DeviceRefusal("keystore_missing", "the keystore is lost: its owner runs `ldp federated device init --rekey`")
        else:
            raise DeviceRefusal("not_initialized", "run `ldp federated device init` once")
        try:
            ledger = Accountant(config.ledger, config.population(int(values.shape[0])))
        except LedgerError as e:
            msg = str(e)
            raise DeviceRefusal("ledger_mismatch" if "another definition" in msg else "ledger_corrupted", msg) from None
        fleet = cls.__new__(cls)
        fleet.values, fleet.policy, fleet.keystore, fleet.ledger = values, config.policy, ks, ledger
        fleet.config, fleet._strings = config, None
        fleet.keys = ks.device_keys(int(values.shape[0])) if ks is not None else None
        fleet._series_ok = ks is not None
        return fleet

    @property
    def n_devices(self) -> int:
        return int(self.values.shape[0])

    # -- answering a query ---------------------------------------------------------------------------
    def respond(self, query_json: str) -> dict:
        """``{"reports": [envelope per accepting device], "refused": {reason: devices},
        "retry": bool, "devices": n}``. A retried query returns the kept envelopes (same nonces).
        Never raises: anything unexpected is ``{"device_error": n}`` (module docstring)."""
        try:
            return self._respond(query_json)
        except Exception:  # noqa: BLE001 - no text, position or count of any failure leaves the device
            return _reply(self.n_devices, "device_error")

    def _respond(self, query_json: str) -> dict:
        n = self.n_devices
        try:
            query = Query.from_json(query_json)
        except LDPInputError as e:
            return _reply(n, "unsupported_version" if "version" in str(e) else "malformed_query")
        except (LDPParameterError, TypeError, ValueError, RecursionError):
            return _reply(n, "malformed_query")
        name = query.spec.get("name") or query.spec.get("mechanism", {}).get("name")
        params = query.spec.get("params") if isinstance(query.spec.get("params"), dict) else {}
        disc = None
        if query.discovery is not None:  # one group's query of a heavy-hitter discovery: the policy names the protocol
            try:
                disc = DiscoveryLevel.from_field(query.discovery)
            except LDPParameterError:
                return _reply(n, "malformed_query")
            if disc.check_spec(query.spec) is not None or charge_up(disc.protocol.epsilon_per_user) != query.epsilon_exact:
                return _reply(n, "malformed_query")
            name, params = disc.method, {}
        reason = self.policy.refusal(name, query.epsilon_exact, params.get("relation"))
        if reason is not None:
            return _reply(n, reason)
        try:
            mech = query.mechanism()
        except MemoryError:
            return _reply(n, "query_too_large")
        except Exception:  # noqa: BLE001 - a spec the registry cannot build, whatever it raises
            return _reply(n, "malformed_query")
        qid = query.content_hash.hex()
        series = has(mech, Keyed)
        if series and (not self._series_ok or self._series_before_rekey(query)):
            return _reply(n, "keystore_missing")
        if self.keystore is not None:
            reason = self.keystore.verify_ledger(self.ledger.path)
            if reason is not None:
                return _reply(n, reason)
        status = self.ledger.release_status(qid)
        if status in ("started", "partial"):  # charged, then killed or failed: never randomize twice
            return _reply(n, "interrupted", retry=True)
        if status == "released":  # a retried query: the kept reply, charged once
            kept = self.ledger.kept_reports(qid)
            return {"reports": [bytes.fromhex(h) for h in kept["reports"]], "refused": kept["refused"], "retry": True, "devices": n}
        reason = self.policy.daily_refusal(self._charged_today())
        if reason is not None:
            return _reply(n, reason)
        if disc is not None:
            return self._respond_discovery(query, disc, mech, qid)
        eps = report_charge(mech)  # what the mechanism realizes, rounded up (the ledger's rule)
        if has(mech, Keyed):
            try:
                eps = self._series_charge(query, mech)  # the worst-case lifetime increment, not ε of one report
            except UnboundedLossError:  # e.g. dBitFlipPM's second collection at the user level
                return _reply(n, "budget_exhausted")
            if eps > self.policy.max_epsilon_per_query:
                return _reply(n, "epsilon_above_policy")
        remaining = self.ledger.remaining_by_cohort()
        fit = [i for i in range(n) if remaining[i] >= eps]
        refused = {"budget_exhausted": n - len(fit)} if len(fit) < n else {}
        if not fit:
            return {"reports": [], "refused": refused, "retry": False, "devices": n}
        reason = work_refusal(mech, n, self.policy)  # the work of every device: the same whatever the budgets left
        if reason is not None:
            return _reply(n, reason)
        tag = query.content_hash
        inputs = in_domain(mech, self.values[fit])  # the fixed out-of-domain rule, before the spend
        keys = [self.keys[i] for i in fit] if mech.needs_user_keys else None

        def produce() -> dict:
            try:
                reports = inputs.randomize(mech, user_keys=keys)  # the OS CSPRNG
                return {"reports": [b.hex() for b in seal(to_wire_each(mech, reports, tag=tag))], "refused": refused}
            except Exception:  # noqa: BLE001 - marked partial by the ledger; one code, no text
                raise _ProduceFailed() from None

        try:
            kept = self.ledger.release(qid, eps, produce, cohorts=fit, keep_reports=True, mechanism=name, params=query.to_dict())
        except _ProduceFailed:
            return _reply(n, "device_error")
        except LDPParameterError:  # the same query charged concurrently by another process, not yet released
            return _reply(n, "in_progress", retry=True)
        finally:
            if self.keystore is not None:
                self.keystore.anchor_ledger(self.ledger.path)
        return {"reports": [bytes.fromhex(h) for h in kept["reports"]], "refused": kept["refused"], "retry": False, "devices": n}

    def _respond_discovery(self, query: Query, disc: DiscoveryLevel, mech: Any, qid: str) -> dict:
        """One group's query of a discovery collection (:mod:`~ldp_plugin.federated.discovery`):
        the devices of this group (their keyed, data-independent assignment) that were not charged
        for the collection under another group and whose budget fits are charged ε once and answer;
        the others are counted (``other_group``, ``already_answered``, ``budget_exhausted``)."""
        n = self.n_devices
        if self.keys is None:
            return _reply(n, "keystore_missing")
        member = device_groups(self.keys, disc.key, disc.protocol.shares) == disc.level
        done = self._charged_in_collection(disc.key)
        refused: dict = {}
        if int((~member).sum()):
            refused["other_group"] = int((~member).sum())
        if int((member & done).sum()):
            refused["already_answered"] = int((member & done).sum())
        eps = report_charge(mech)
        remaining = self.ledger.remaining_by_cohort()
        fit = [int(i) for i in np.flatnonzero(member & ~done) if remaining[int(i)] >= eps]
        short = int((member & ~done).sum()) - len(fit)
        if short:
            refused["budget_exhausted"] = short
        if not fit:
            return {"reports": [], "refused": refused, "retry": False, "devices": n}
        reason = work_refusal(mech, n, self.policy)
        if reason is not None:
            return _reply(n, reason)
        try:
            strings = self.strings()
        except (LDPParameterError, LDPInputError):
            return _reply(n, "device_misconfigured")
        tag = query.content_hash

        def produce() -> dict:
            try:
                reports = mech.randomize_encoded(mech.encode(disc.items(strings[fit])))  # the OS CSPRNG
                return {"reports": [b.hex() for b in seal(to_wire_each(mech, reports, tag=tag))], "refused": refused}
            except Exception:  # noqa: BLE001 - marked partial by the ledger; one code, no text
                raise _ProduceFailed() from None

        try:
            kept = self.ledger.release(qid, eps, produce, cohorts=fit, keep_reports=True, mechanism=disc.method, params=query.to_dict())
        except _ProduceFailed:
            return _reply(n, "device_error")
        except LDPParameterError:
            return _reply(n, "in_progress", retry=True)
        finally:
            if self.keystore is not None:
                self.keystore.anchor_ledger(self.ledger.path)
        return {"reports": [bytes.fromhex(h) for h in kept["reports"]], "refused": kept["refused"], "retry": False, "devices": n}

    def _charged_today(self) -> int:
        """Queries charged since the start of the current UTC day (the policy's daily limit)."""
        if self.policy.max_queries_per_day is None:
            return 0
        now = datetime.now(timezone.utc)
        return self.ledger.spends_since(now.replace(hour=0, minute=0, second=0, microsecond=0))

    def strings(self) -> np.ndarray:
        """The devices' string values (heavy-hitter discovery): the owner's ``[strings]`` source, else the values."""
        if self._strings is None:
            src = self.config.load_strings() if self.config is not None else None
            self._strings = np.asarray([str(v) for v in (self.values if src is None else src)], dtype=object)
            if self._strings.shape != (self.n_devices,):
                raise LDPInputError("the device's [strings] source must give one string per device, as many as [data]")
        return self._strings

    def _charged_in_collection(self, key: str) -> np.ndarray:
        """Devices charged by any group's query of the discovery collection ``key``."""
        done = np.zeros(self.n_devices, dtype=bool)
        for rec in self.ledger.history():
            d = rec.params.get("discovery") if isinstance(rec.params, dict) else None
            if isinstance(d, dict) and isinstance(d.get("params"), dict) and collection_key(str(d.get("collection")), d["params"]) == key:
                done[list(rec.cohorts)] = True
        return done

    def _series_before_rekey(self, query: Query) -> bool:
        """A series with a spend made under a lost keystore's keys (refused for good)."""
        k = None if self.keystore is None else self.keystore.rekeyed_after
        if not k:
            return False
        return any(isinstance(r.params, dict) and r.params.get("spec") == query.spec for r in self.ledger.history()[:k])

    def _series_charge(self, query: Query, mech: Any) -> Fraction:
        """``max_i collection_cost(t_i)`` over the devices, ``t_i`` = 1 + device ``i``'s earlier
        collections of this series (its spends of a query with the same mechanism spec, whatever
        relation it names: both relations use the same keyed permanent table)."""
        done = np.zeros(self.n_devices, dtype=np.int64)
        for rec in self.ledger.history():
            if isinstance(rec.params, dict) and _table_spec(rec.params.get("spec")) == _table_spec(query.spec):
                done[list(rec.cohorts)] += 1
        return max(mech.collection_cost(int(t) + 1) for t in np.unique(done))

    def close(self) -> None:
        self.ledger.close()
