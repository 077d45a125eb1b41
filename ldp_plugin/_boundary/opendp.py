"""The OpenDP error boundary: a measurement of this library checks its argument *before* the FFI
call and raises the library's :class:`LDPInputError` (a value outside the domain, ``None``, a
list where one user's value belongs), and its privacy map checks ``d_in`` (``m.map(1.0)`` is an
:class:`LDPParameterError` naming ``d_in``, not OpenDP's "inferred type is f64, expected u32").
Without it, OpenDP wraps the error raised inside the user-defined function in its FFI stack trace.

:func:`checked` returns a :class:`CheckedMeasurement`: the same OpenDP object (a ``Measurement``
pointer to the same native measurement; it composes, chains and maps like any other — OpenDP's
type inference is told it is an ``AnyMeasurementPtr``) whose ``__call__``, ``invoke``, ``map``
and ``check`` validate first.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any, Callable, Optional

import opendp.prelude as dp
from opendp.mod import AnyMeasurement

from .._errors import LDPInputError, LDPParameterError

__all__ = ["CheckedMeasurement", "checked", "check_d_in", "reraise_opendp", "argument_check", "full_argument_check"]

_LDP_ERROR = re.compile(r"(LDPInputError|LDPParameterError|LDPArgumentError|PrivacyVerificationError): ([^\n]+)")


def check_d_in(d_in: Any) -> int:
    """``d_in`` of a privacy map: a non-negative Python int (users or changed entries)."""
    if isinstance(d_in, bool) or not isinstance(d_in, int):
        raise LDPParameterError(f"d_in must be a non-negative integer: the number of users (or changed entries) (got type {type(d_in).__name__})")
    if d_in < 0:
        raise LDPParameterError("d_in must be a non-negative integer: the number of users (or changed entries)")
    return d_in


def reraise_opendp(exc: BaseException, what: str) -> None:
    """Re-raise an OpenDP failure as the library error raised inside the measurement's function
    (its message never holds a value), else as an :class:`LDPInputError` naming ``what``."""
    text = str(exc)
    found = _LDP_ERROR.findall(text)
    if found:
        kind, message = found[-1]
        cls = LDPParameterError if kind != "LDPInputError" else LDPInputError
        raise cls(message.strip()) from None
    raise LDPInputError(f"{what} was refused by OpenDP ({getattr(exc, 'variant', None) or type(exc).__name__}); check its type and domain") from None


class CheckedMeasurement(dp.Measurement):
    """An OpenDP ``Measurement`` whose argument and ``d_in`` are checked before the FFI call."""

    _type_ = AnyMeasurement

    def _validate(self, arg: Any) -> None:
        check = getattr(self, "_ldp_check", None)
        if check is not None:
            check(arg)

    def __call__(self, arg: Any) -> Any:
        return self.invoke(arg)

    def check_argument(self, arg: Any) -> None:
        """Refuse (:class:`LDPInputError`) an argument the measurement would refuse, without
        running it: the whole domain check (every value of a batch), so a caller that must spend
        first (``Accountant.run``) refuses before the spend."""
        check = getattr(self, "_ldp_full_check", None) or getattr(self, "_ldp_check", None)
        if check is not None:
            check(arg)

    def invoke(self, arg: Any) -> Any:
        self._validate(arg)
        try:
            return super().invoke(arg)
        except (LDPInputError, LDPParameterError):
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("opendp"):
                reraise_opendp(exc, "the measurement's argument")
            raise

    def map(self, d_in: Any) -> Any:
        return super().map(check_d_in(d_in))

    def check(self, distance_in: Any, distance_out: Any, *args: Any, **kwargs: Any) -> Any:
        check_d_in(distance_in)
        if isinstance(distance_out, bool) or not isinstance(distance_out, (int, float)) or not distance_out >= 0:
            raise LDPParameterError("distance_out must be a number >= 0 (an epsilon)")
        return super().check(distance_in, float(distance_out), *args, **kwargs)

    def __del__(self) -> None:  # the native object belongs to the original pointer (kept in _ldp_owner)
        pass


def _register() -> bool:
    """Tell OpenDP's type inference that the subclass is a measurement pointer (it keys on the
    exact class); without this hook available, measurements are returned unwrapped."""
    try:
        from opendp import typing as dp_typing

        table = dp_typing._ELEMENTARY_TYPES
    except (ImportError, AttributeError):  # pragma: no cover - another OpenDP layout
        return False
    table.setdefault(CheckedMeasurement, table.get(dp.Measurement, "AnyMeasurementPtr"))
    return True


_REGISTERED = _register()


def checked(measurement: dp.Measurement, validate: Optional[Callable[[Any], None]],
            full: Optional[Callable[[Any], None]] = None) -> dp.Measurement:
    """``measurement`` with ``validate(arg)`` run before every call (and ``d_in`` checked);
    ``full(arg)`` (default ``validate``) is :meth:`CheckedMeasurement.check_argument`'s whole check."""
    if not _REGISTERED:  # pragma: no cover
        return measurement
    out = ctypes.cast(measurement, CheckedMeasurement)
    out._ldp_owner = measurement  # keeps the native measurement alive; it frees it once
    out._ldp_check = validate
    out._ldp_full_check = full
    return out


_BATCHES = (list, tuple, set, frozenset, dict)


def _is_batch(value: Any) -> bool:
    import numpy as np

    return isinstance(value, _BATCHES + (np.ndarray,)) or type(value).__name__ in ("Series", "DataFrame", "LazyFrame")


def argument_check(mechanism: Any, unit: str) -> Optional[Callable[[Any], None]]:
    """The check a measurement of ``mechanism`` runs on its argument before the FFI call: for
    ``unit="user"`` one user's value of the mechanism's kind (a category of its domain, a number in
    ``[lower, upper]``, or a set), for ``"population"`` a batch. Asks the mechanism's declared
    ``input_kind``/``encode``/``lower``/``upper``; never echoes the value."""
    import numpy as np

    if mechanism.needs_user_keys:
        return None
    kind = mechanism.input_kind

    def user(value: Any) -> None:
        if value is None:
            raise LDPInputError("the measurement's argument is None; give one user's value (unit='user')")
        if kind == "set":
            if not isinstance(value, (list, tuple, set, frozenset)):
                raise LDPInputError(f"the measurement's argument must be one user's set (a list of items), got type {type(value).__name__}")
            return
        if kind == "tuple":  # several attributes: one code per attribute
            doms = tuple(mechanism.domains)
            if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != len(doms):
                raise LDPInputError(f"the measurement's argument must be one user's tuple of {len(doms)} attribute codes")
            for j, (v, k) in enumerate(zip(value, doms)):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < k:
                    raise LDPInputError(f"attribute {j} of the measurement's argument must be an integer code in [0, {k})")
            return
        if kind == "key-value":  # one user's set of (key, value) pairs; the mechanism checks each pair
            if not isinstance(value, (list, tuple)):
                raise LDPInputError(f"the measurement's argument must be one user's list of (key, value) pairs, got type {type(value).__name__}")
            mechanism.encode_pairs([list(value)])
            return
        if kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise LDPInputError(f"the measurement's argument must be one real number (got type {type(value).__name__})")
            lo, hi = float(mechanism.lower), float(mechanism.upper)
            if not lo <= float(value) <= hi:
                raise LDPInputError(f"the measurement's argument must be a number in [lower, upper] = [{lo!r}, {hi!r}]")
            return
        if _is_batch(value) and not (isinstance(value, tuple) and mechanism.categories is not None and value in mechanism.categories):
            raise LDPInputError(
                f"the measurement's argument must be one user's value, not a batch (got type {type(value).__name__}); "
                "for a batch use unit='population'"
            )
        arr = np.empty(1, dtype=object)
        arr[0] = value
        mechanism.encode(arr)  # the domain check (LDPInputError by position, never the value)

    def population(values: Any) -> None:
        if values is None or not _is_batch(values) or isinstance(values, (set, frozenset, dict)):
            raise LDPInputError(
                f"the measurement's argument must be a batch of users' values (a list, array or Series; got type "
                f"{type(values).__name__}); for one user's value use unit='user'"
            )

    return user if unit == "user" else population


def full_argument_check(mechanism: Any, unit: str) -> Optional[Callable[[Any], None]]:
    """:func:`argument_check` and, for a batch, the domain check of every value (the mechanism's
    ``encode``): what a caller that spends before the call (``Accountant.run``) asks first."""
    cheap = argument_check(mechanism, unit)
    if cheap is None or unit == "user":
        return cheap

    def population(values: Any) -> None:
        cheap(values)
        mechanism.encode(values)

    return population
