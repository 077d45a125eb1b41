"""Exact budgets: the errors, exact ε parsing (:func:`as_fraction`), populations and their
periods, spend records. Pure: no I/O."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms import Mechanism
from ..mechanisms.charge import report_charge


PERIODS = ("day", "hour", "week")
SCHEMA_VERSION = 1


class BudgetExceededError(ValueError):
    """A query would exceed the budget; nothing was spent. Carries ``requested`` and
    ``remaining`` (exact Fractions) and the binding ``cap`` ("lifetime" or the period)."""

    def __init__(self, message: str, *, requested: Fraction, remaining: Fraction, cap: str):
        super().__init__(message)
        self.requested = requested
        self.remaining = remaining
        self.cap = cap


class LedgerError(ValueError):
    """The ledger file is missing, corrupted, or belongs to another population definition."""


#: the largest ε (or cap) a ledger tracks: beyond it no guarantee means anything, and a float
#: view of the value (reports, JSON) would overflow (``1e309`` is inf)
MAX_EPSILON = 10**6
_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,4})?$|^[+-]?\d+/\d+$")


def as_fraction(value: Any, name: str = "epsilon") -> Fraction:
    """The exact value of an ε or a cap: a Fraction, an int, a decimal string, or a float (its
    exact binary value). Must be finite, in ``[0, MAX_EPSILON]`` (> 0 for caps)."""
    if isinstance(value, str) and (len(value.strip()) > 100 or not _DECIMAL.match(value.strip())):
        raise LDPParameterError(
            f"{name} must be a finite number in [0, {MAX_EPSILON:.0e}] as decimal text ('0.1') or a fraction ('1/3')"
        )
    if isinstance(value, Fraction):
        f = value
    elif isinstance(value, bool):
        raise LDPParameterError(f"{name} must be a number (got a boolean)")
    elif isinstance(value, (int, np.integer)):
        f = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise LDPParameterError(f"{name} must be finite (got {value!r})")
        f = Fraction(float(value))
    elif isinstance(value, str):
        try:
            f = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise LDPParameterError(f"{name} must be a number or a decimal string (got {value!r})") from None
    else:
        raise LDPParameterError(f"{name} must be a number (got type {type(value).__name__})")
    if f < 0:
        raise LDPParameterError(f"{name} must be >= 0 (got {float(f)})")
    if f > MAX_EPSILON:
        raise LDPParameterError(f"{name} must be at most {MAX_EPSILON:.0e} (the allowed range is [0, {MAX_EPSILON:.0e}])")
    return f


def _frac_text(f: Fraction) -> str:
    return f"{f.numerator}/{f.denominator}"


def _text_frac(s: str) -> Fraction:
    num, _, den = s.partition("/")
    return Fraction(int(num), int(den or 1))


@dataclass(frozen=True)
class Population:
    """A population: ``name``, exact ``lifetime_cap``, optional ``period_cap`` per ``period``
    (``"day"``, ``"hour"`` or ``"week"``, UTC), and ``cohorts`` data-independent cohorts."""

    name: str
    lifetime_cap: Fraction | str | int  # exact: a Fraction, an int or decimal text; stored as a Fraction
    period_cap: Fraction | str | int | None = None  # stored as a Fraction
    period: Optional[str] = None
    cohorts: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise LDPParameterError("population name must be a non-empty string")
        cap = as_fraction(self.lifetime_cap, "lifetime_cap")
        if cap <= 0:
            raise LDPParameterError("lifetime_cap must be > 0")
        object.__setattr__(self, "lifetime_cap", cap)
        if (self.period_cap is None) != (self.period is None):
            raise LDPParameterError("give both period_cap and period (or neither)")
        if self.period_cap is not None:
            pc = as_fraction(self.period_cap, "period_cap")
            if pc <= 0 or pc > cap:
                raise LDPParameterError("period_cap must be in (0, lifetime_cap]: a period cap never replaces the lifetime bound")
            if self.period not in PERIODS:
                raise LDPParameterError(f"period must be one of {PERIODS} (got {self.period!r})")
            object.__setattr__(self, "period_cap", pc)
        c = self.cohorts
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= int(c) <= 1 << 20:
            raise LDPParameterError(f"cohorts must be an integer in [1, 2**20] (got {c!r})")
        object.__setattr__(self, "cohorts", int(c))

    def definition(self) -> dict:
        return {
            "name": self.name,
            "lifetime_cap": _frac_text(self.lifetime_cap),
            "period_cap": None if self.period_cap is None else _frac_text(self.period_cap),
            "period": self.period,
            "cohorts": self.cohorts,
        }

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.definition(), sort_keys=True).encode()).hexdigest()

    @classmethod
    def from_definition(cls, d: dict) -> "Population":
        return cls(
            name=d["name"],
            lifetime_cap=_text_frac(d["lifetime_cap"]),
            period_cap=None if d["period_cap"] is None else _text_frac(d["period_cap"]),
            period=d["period"],
            cohorts=int(d["cohorts"]),
        )

    def period_key(self, when: datetime) -> Optional[str]:
        if self.period is None:
            return None
        when = when.astimezone(timezone.utc)
        if self.period == "day":
            return when.strftime("%Y-%m-%d")
        if self.period == "hour":
            return when.strftime("%Y-%m-%dT%H")
        iso = when.isocalendar()
        return f"{iso[0]}-W{iso[1]:02d}"


@dataclass(frozen=True)
class SpendRecord:
    """One ledger row (frozen)."""

    seq: int
    query_id: str
    time: str
    period: Optional[str]
    mechanism: str
    params: dict
    epsilon: Fraction
    cohorts: tuple
    retried: bool = False

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "query_id": self.query_id,
            "time": self.time,
            "period": self.period,
            "mechanism": self.mechanism,
            "params": self.params,
            "epsilon": float(self.epsilon),
            "epsilon_exact": _frac_text(self.epsilon),
            "cohorts": list(self.cohorts),
            "retried": self.retried,
        }


def _cost_of(measurement: Any, d_in: int) -> tuple[Fraction, str, dict]:
    """Exact ε of an OpenDP measurement (max_divergence) or a plain number, plus a description."""
    if hasattr(measurement, "map") and hasattr(measurement, "output_measure"):
        if "MaxDivergence" not in str(measurement.output_measure):
            raise LDPParameterError(f"the accountant composes pure-ε measurements (max_divergence); got {measurement.output_measure}")
        eps = measurement.map(d_in)
        return as_fraction(float(eps)), "opendp-measurement", {"input_metric": str(measurement.input_metric)}

    if isinstance(measurement, Mechanism):  # its spec (categories and their order included); the one charge rule
        return as_fraction(report_charge(measurement)) * d_in, str(measurement.name), measurement.spec()
    return as_fraction(measurement) * d_in, "epsilon", {}
