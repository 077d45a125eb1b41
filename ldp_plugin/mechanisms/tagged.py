"""Report batches that carry the spec they were made under, and the one check every estimator makes.

A report batch is only meaningful under the mechanism *and the parameters* that produced it: the
same integers are a k-RR code, a PCKV code or a Square Wave output cell, and Square Wave reports
made on ``[0, 1000]`` decode on ``[0, 10]`` into a confident, wrong distribution. The wire format
and report files already carry the spec's fingerprint (:func:`.reports.wire_fingerprint`,
``persist.write_reports``); this module makes the **in-memory batch** carry it too:

* every client entry point (``randomize``, ``randomize_encoded``) returns its batch tagged with a
  :class:`ReportOrigin` — the producer's spec fingerprint (the mechanism called: a wrapper's own)
  and the fingerprint of its ``base`` (the mechanism whose report format the batch has);
  ``from_wire`` tags what it decoded (its fingerprint was checked);
* a numpy batch is a :class:`ReportArray` (an ``ndarray`` view: slices and boolean selections keep
  the tag, arithmetic gives a plain array), a tuple of columns a :class:`ReportTuple`, a dict of
  columns a :class:`ReportDict`, any other batch object gets the tag as an attribute;
* :func:`check_origin` refuses, with an :class:`LDPInputError` that names both mechanisms and the
  parameters that differ (never a report value), a batch tagged with another spec: a mechanism's
  ``estimate`` asks for the producer's spec, an accumulator's ``add`` for the base's (it counts
  the base's reports; a wrapper's ``estimate_from`` checks the accumulator's mechanism).

An untagged batch (built by hand) is accepted as before: nothing says what made it. A Polars reports
frame carries its spec in a column (:mod:`.frame_spec`); the batch read back from it is tagged.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._errors import LDPInputError

__all__ = ["ReportOrigin", "ReportArray", "ReportTuple", "ReportDict", "origin_of", "spec_origin", "tag_reports", "untagged",
           "check_origin", "check_accumulator_mechanism", "refuse_spec", "describe_spec"]


def _fingerprint(spec: dict) -> bytes:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()[:16]


@dataclass(frozen=True)
class ReportOrigin:
    """What made a report batch: the producer's spec and fingerprint, and its base's."""

    spec: dict
    fingerprint: bytes
    base_spec: dict
    base_fingerprint: bytes


_ORIGIN_CACHE = "_ldp_report_origin"


def spec_origin(mech: Any) -> ReportOrigin:
    """The :class:`ReportOrigin` of ``mech``'s batches (computed once per mechanism object)."""
    cached = getattr(mech, "__dict__", {}).get(_ORIGIN_CACHE)
    if cached is not None:
        return cached
    spec = mech.spec()
    base = mech.base
    base_spec = spec if base is mech else base.spec()
    out = ReportOrigin(spec, _fingerprint(spec), base_spec, _fingerprint(base_spec))
    try:
        object.__setattr__(mech, _ORIGIN_CACHE, out)
    except (AttributeError, TypeError):  # pragma: no cover - a slotted mechanism: recomputed each time
        pass
    return out


class ReportArray(np.ndarray):
    """A numpy report batch with its :class:`ReportOrigin` (``origin``). Views, slices and
    selections keep the origin; a ufunc's result (arithmetic, reductions) is a plain array."""

    origin: Optional[ReportOrigin]

    def __array_finalize__(self, obj: Any) -> None:
        self.origin = getattr(obj, "origin", None)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        inputs = tuple(x.view(np.ndarray) if isinstance(x, ReportArray) else x for x in inputs)
        out = kwargs.get("out")
        if out:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, ReportArray) else x for x in out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __reduce__(self) -> tuple:
        return (_rebuild_array, (self.view(np.ndarray).copy(), self.origin))


def _rebuild_array(a: np.ndarray, origin: Optional[ReportOrigin]) -> ReportArray:
    out = a.view(ReportArray)
    out.origin = origin
    return out


def _rebuild(cls: type, items: Any, origin: Optional[ReportOrigin]) -> Any:
    out = cls(items)
    out.origin = origin
    return out


class ReportTuple(tuple):
    """A report batch of columns as a tuple (e.g. SMP's ``(attribute, report)``) with its origin."""

    origin: Optional[ReportOrigin] = None

    def __reduce__(self) -> tuple:
        return (_rebuild, (ReportTuple, tuple(self), self.origin))


class ReportDict(dict):
    """A report batch of named columns (the tree mechanisms) with its origin."""

    origin: Optional[ReportOrigin] = None

    def __reduce__(self) -> tuple:
        return (_rebuild, (ReportDict, dict(self), self.origin))


def origin_of(reports: Any) -> Optional[ReportOrigin]:
    """The origin a batch carries, or None (an untagged batch)."""
    return getattr(reports, "origin", None) if isinstance(reports, (ReportArray, ReportTuple, ReportDict)) else getattr(
        reports, _ORIGIN_CACHE, None)


def untagged(reports: Any) -> Any:
    """The same batch without its origin (for a family that hands its checked batch to an inner
    mechanism's accumulator, e.g. the bucketed oracle's k-RR or OUE)."""
    if isinstance(reports, ReportArray):
        return reports.view(np.ndarray)
    if isinstance(reports, ReportTuple):
        return tuple(reports)
    if isinstance(reports, ReportDict):
        return dict(reports)
    if _ORIGIN_CACHE in getattr(reports, "__dict__", {}):
        out = copy.copy(reports)
        object.__delattr__(out, _ORIGIN_CACHE)
        return out
    return reports


def tag_reports(mech: Any, reports: Any) -> Any:
    """``reports`` carrying ``mech``'s origin (a view or a shallow re-wrap: no copy of the data)."""
    origin = spec_origin(mech)
    if isinstance(reports, np.ndarray):
        out = reports.view(ReportArray)
        out.origin = origin
        return out
    if isinstance(reports, tuple) and not hasattr(reports, "_fields"):
        t = ReportTuple(reports)
        t.origin = origin
        return t
    if isinstance(reports, dict):
        d = ReportDict(reports)
        d.origin = origin
        return d
    try:
        object.__setattr__(reports, _ORIGIN_CACHE, origin)
    except (AttributeError, TypeError):  # an immutable scalar (one report): nothing to carry it
        pass
    return reports


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(spec: dict) -> str:
    if "name" in spec:
        return str(spec["name"])
    inner = spec.get("mechanism")
    return f"{spec.get('set', 'wrapper')}({_name(inner) if isinstance(inner, dict) else '?'})"


def _params(spec: dict) -> dict:
    """A spec's parameters, flat (a wrapper's own and its inner mechanism's, ``mechanism.*``)."""
    if "name" in spec:
        p = spec.get("params")
        return dict(p) if isinstance(p, dict) else {}
    out = {k: v for k, v in spec.items() if k not in ("set", "mechanism")}
    inner = spec.get("mechanism")
    if isinstance(inner, dict):
        out.update({f"mechanism.{k}": v for k, v in _params(inner).items()})
    return out


def describe_spec(spec: dict) -> str:
    """A spec in one short line: its name and parameters (each value cut at 40 characters)."""
    params = _params(spec)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in sorted(params.items())[:6])
    return f"{_name(spec)}({shown}{', ...' if len(params) > 6 else ''})"


def refuse_spec(made: dict, used: dict) -> None:
    """Refuse reports made under the spec ``made`` in an estimator of the spec ``used``: an
    :class:`LDPInputError` naming both mechanisms and up to four parameters that differ."""
    if _name(made) == _name(used):
        pa, pb = _params(made), _params(used)
        diff = sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))
        what = "; ".join(f"{k}={_short(pa.get(k))} in the reports, {_short(pb.get(k))} here" for k in diff[:4])
        why = f"{_name(made)} with other parameters ({what or 'the same parameters, another spec'})"
    else:
        why = f"{_name(made)}, not {_name(used)}"
    raise LDPInputError(f"these reports were made by {why}: estimate reports with the mechanism and parameters that made them")


def check_origin(mech: Any, reports: Any, *, base: bool = False) -> None:
    """Refuse a batch tagged with another spec than ``mech``'s (``base=True``: than ``mech.base``'s,
    what an accumulator counts). Untagged batches pass (module docstring)."""
    origin = origin_of(reports)
    if origin is None:
        return
    mine = spec_origin(mech)
    if base:
        if origin.base_fingerprint != mine.base_fingerprint:
            refuse_spec(origin.base_spec, mine.base_spec)
    elif origin.fingerprint != mine.fingerprint:
        refuse_spec(origin.spec, mine.spec)


def check_accumulator_mechanism(mech: Any, acc: Any) -> None:
    """Refuse an accumulator of another mechanism's (base) reports in ``mech.estimate_from``."""
    other = getattr(acc, "mechanism", None)
    if other is None or other is mech or other is getattr(mech, "base", mech):
        return
    try:
        theirs, mine = spec_origin(other), spec_origin(mech)
    except Exception:  # pragma: no cover - a foreign accumulator object: the estimator's own checks apply
        return
    if theirs.base_fingerprint != mine.base_fingerprint:
        refuse_spec(theirs.base_spec, mine.base_spec)
