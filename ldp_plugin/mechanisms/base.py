"""The defaults of the mechanism protocol, in ONE base class: :class:`MechanismBase`.

Every registered mechanism and wrapper derives from it (directly or through a family base such as
:class:`~ldp_plugin.mechanisms._base.FrequencyOracle`). It implements the core of
:class:`~ldp_plugin.mechanisms.protocol.Mechanism` — ``spec``, the one client signature
(``randomize`` / ``randomize_encoded`` / ``randomize_one`` with keyword ``rng=``, ``cohorts=``,
``user_keys=``; ``offsets=`` for sets) with one argument check that names the right entry point,
the column hooks and ``estimate_from`` — plus the flags the capabilities read (``takes_cohorts``,
``needs_user_keys``, ``channel_is_client``, ...). The report codecs are free functions of
:mod:`.reports` (``report_schema(mech)``, ``to_wire(mech, reports)``, ``check_reports(mech, reports)``, ...);
a family adds row checks of its own through the one hook :meth:`MechanismBase._row_problems`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable, ClassVar, FrozenSet, Optional

import numpy as np

from .._errors import LDPArgumentError, LDPInputError, LDPParameterError
from ..estimation import retarget
from ..sampling import as_source
from .domain import check_codes
from .protocol import InputKind, Mechanism
from .tagged import check_accumulator_mechanism, check_origin, tag_reports

__all__ = ["MechanismBase", "json_value"]


def json_value(v: Any) -> Any:
    """A parameter as plain JSON (tuples → lists, numpy scalars → Python, a ``bytes`` label →
    ``{"bytes": hex}``, which :func:`ldp_plugin.registry.from_spec` reads back)."""
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": bytes(v).hex()}
    if isinstance(v, tuple):
        return [json_value(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if v is None or isinstance(v, (str, int, float, bool, list)):
        return v
    raise LDPParameterError(f"mechanism parameter of type {type(v).__name__} cannot be stored as data")



class _CheckedArguments(type(Mechanism)):
    """Constructing a mechanism with a missing, unknown or repeated keyword raises
    :class:`LDPArgumentError` (an ``LDPParameterError`` and a ``TypeError``) naming the parameter
    and what the constructor takes, instead of Python's ``__init__() missing 1 required
    keyword-only argument`` (a ``TypeError`` raised *inside* a constructor is not touched)."""

    @property
    def __signature__(cls) -> inspect.Signature:
        """``inspect.signature(cls)`` shows the constructor's keywords (not this ``__call__``)."""
        full = inspect.signature(cls.__init__)
        return full.replace(parameters=list(full.parameters.values())[1:])

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:  # the constructor's own signature (``inspect.signature(cls)`` would read this __call__)
            full = inspect.signature(cls.__init__)
        except (TypeError, ValueError):  # pragma: no cover - every mechanism has a signature
            return super().__call__(*args, **kwargs)
        sig = full.replace(parameters=list(full.parameters.values())[1:])
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise LDPArgumentError(_argument_message(cls, sig, args, kwargs, exc)) from None
        return super().__call__(*args, **kwargs)


def _argument_message(cls: Any, sig: inspect.Signature, args: tuple, kwargs: dict, exc: TypeError) -> str:
    name = cls.name if isinstance(getattr(cls, "name", None), str) else cls.__name__
    params = sig.parameters
    takes = ", ".join(p for p in params)
    unknown = sorted(k for k in kwargs if k not in params)
    if unknown:
        return f"{name} has no parameter(s) {unknown}; it takes {takes}"
    missing = [p.name for p in params.values() if p.default is inspect.Parameter.empty and p.name not in kwargs
               and p.kind is not inspect.Parameter.VAR_KEYWORD and p.kind is not inspect.Parameter.VAR_POSITIONAL]
    positional = [p for p in params.values() if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if args and len(args) > len(positional):
        return f"{name} takes keyword arguments only ({takes}); e.g. {cls.__name__}(epsilon=1.0, ...)"
    if missing:
        return f"{name} needs the parameter(s) {missing}; it takes {takes}"
    return f"{name}: invalid arguments; it takes {takes}"


def _strict_call(fn: Callable, what: str) -> tuple:
    """``fn``'s signature without ``self`` and a binder that turns a bad call (a misspelt or
    unknown keyword, a missing argument) into :class:`LDPArgumentError` naming what it takes."""
    sig = inspect.signature(fn)
    sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    takes = ", ".join(p.name for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD)

    def bind(self: Any, args: tuple, kwargs: dict) -> None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError:
            name = self.name if isinstance(getattr(self, "name", None), str) else type(self).__name__
            unknown = sorted(k for k in kwargs if k not in sig.parameters)
            which = f"has no parameter(s) {unknown}" if unknown else "was called with invalid arguments"
            raise LDPArgumentError(f"{name}.{what} {which}; it takes {takes}") from None
    return sig, bind


def _check_batch_shape(mech: Any, entry: str, batch: Any) -> None:
    """One user per element: a batch of codes (or numbers) with more than one dimension is
    refused, never flattened into more users than there are (tuples: one row per user)."""
    if entry == "randomize" and mech.input_kind != "number":
        return  # items, sets and pairs: each family's encode knows its own layout
    try:
        dims = np.ndim(batch) if isinstance(batch, (np.ndarray, list)) else 1
    except ValueError:  # a ragged nested list: numpy cannot give it a shape
        raise LDPInputError(f"{mech.name}.{entry} takes one value per user; got a ragged nested batch: it is never flattened") from None
    want = 2 if mech.input_kind == "tuple" else 1
    if dims != want:
        what = ("an n × A array of attribute codes" if want == 2 else "a 1-d batch of item codes (flat, with offsets=)"
                if mech.input_kind == "set" else "a 1-d batch (one value per user)")
        raise LDPInputError(f"{mech.name}.{entry} takes {what}; got an array with {dims} dimension(s): it is never flattened")


def _tagging(fn: Callable) -> Callable:
    """A client entry point whose batch carries the mechanism's spec (:mod:`.tagged`); a bad call
    (a misspelt or unknown keyword) is refused with :class:`LDPArgumentError` as ``estimate`` is,
    and the batch's shape is checked first (:func:`_check_batch_shape`)."""
    entry = fn.__name__
    _, bind = _strict_call(fn, entry)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        bind(self, args, kwargs)
        if args:
            _check_batch_shape(self, entry, args[0])
        return tag_reports(self, fn(self, *args, **kwargs))
    wrapper._ldp_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _strict(fn: Callable) -> Callable:
    """``randomize_one`` with a strict signature: a misspelt or unknown keyword is refused with
    :class:`LDPArgumentError` (as ``randomize`` refuses it), never Python's ``TypeError``."""
    _, bind = _strict_call(fn, fn.__name__)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        bind(self, args, kwargs)
        return fn(self, *args, **kwargs)
    wrapper._ldp_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _mse_checked(fn: Callable) -> Callable:
    """``analytic_mse`` that refuses a number of users that is no integer ``>= 1`` and an unknown
    ``sampling`` before any formula divides by it (never a ``ZeroDivisionError``, never an
    "error" for a negative population)."""

    @functools.wraps(fn)
    def wrapper(self: Any, n: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or int(n) < 1:
            raise LDPParameterError(f"n (the number of users) must be an integer >= 1 (got {n!r})")
        if kwargs.get("sampling", "fixed") not in ("fixed", "iid"):
            raise LDPParameterError("sampling must be 'fixed' (the users' own values) or 'iid' (a population they are drawn from)")
        return fn(self, n, *args, **kwargs)
    wrapper._ldp_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _checking(fn: Callable, what: str) -> Callable:
    """``estimate`` / ``estimate_from`` with a strict signature that refuses reports (an
    accumulator) of another spec before any work (:func:`.tagged.check_origin`)."""
    _, bind = _strict_call(fn, what)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        bind(self, args, kwargs)
        if args:
            if what == "estimate":
                check_origin(self, args[0])
            else:
                check_accumulator_mechanism(self, args[0])
        return fn(self, *args, **kwargs)
    wrapper._ldp_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _checked(what: str) -> Callable:
    return lambda fn: _checking(fn, what)


class MechanismBase(Mechanism, metaclass=_CheckedArguments):
    """The defaults of every mechanism and wrapper, in one class (see the module docstring).
    Subclasses supply ``report_fields``, ``encode``, the client (``_randomize_codes`` or their own
    ``randomize_encoded``), ``accumulator`` and, if their native batch is not one array,
    ``_to_columns`` / ``_from_columns``; they *declare* the capabilities they have in
    ``capabilities`` (a frozenset of the protocols of :mod:`.protocol`, read only by
    :func:`~.protocol.has`), and a family's own row checks in :meth:`_row_problems`."""

    _mechanism_defaults: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every client entry point a class defines tags its batch with the spec; every
        ``estimate`` / ``estimate_from`` has a strict signature and refuses reports of another
        spec (:mod:`.tagged`) — for every family, without each writing the check."""
        super().__init_subclass__(**kwargs)
        for name in ("randomize", "randomize_encoded", "randomize_one", "estimate", "estimate_from", "analytic_mse"):
            fn = inspect.getattr_static(cls, name, None)  # a mixin's (SetInput, AccumulatedEstimate) too
            if inspect.isfunction(fn) and not getattr(fn, "_ldp_wrapped", False):
                setattr(cls, name, _strict(fn) if name == "randomize_one" else _mse_checked(fn) if name == "analytic_mse"
                        else _tagging(fn) if name.startswith("randomize") else _checking(fn, name))

    name: ClassVar[str] = "abstract"
    input_kind: ClassVar[InputKind] = InputKind.VALUE
    #: the declared capabilities (protocols of :mod:`.protocol`); a subclass extends its base's
    capabilities: ClassVar[FrozenSet[type]] = frozenset()
    #: ``ldp choose``'s cost columns: big-O of one client report, of the server over ``n`` reports
    client_cost: ClassVar[str] = "-"
    server_cost: ClassVar[str] = "-"

    @classmethod
    def default_parameters(cls, given: dict, *, epsilon: float, d: Optional[int], n: int, closed: bool = True) -> dict:
        """Parameters the builders (``registry.build``, ``ldp collect``) derive when ``given`` lacks
        them, for ``d`` items (None: unknown) and ``n`` users; none here."""
        return {}

    @classmethod
    def choose_variants(cls, *, epsilon: float, d: int, n: int, m: int) -> tuple:
        """The parameter choices ``ldp choose`` ranks for this mechanism: constructor keywords beside
        ``epsilon`` and ``d`` (and ``m`` for set mechanisms), for ``d`` items (a value mechanism under
        sample-one: the padded domain), ``n`` users holding ``m`` items each. None: not a candidate
        (the registry is the one list ``ldp choose`` reads; a family opts in here)."""
        return ()
    takes_cohorts: ClassVar[bool] = False
    # the client needs each user's secret key (memoized mechanisms: ``randomize_encoded(..., user_keys=)``)
    needs_user_keys: ClassVar[bool] = False
    # report columns a grouped (histogram) aggregation may use; None: aggregate batch by batch
    histogram_columns: ClassVar[Optional[tuple]] = None
    # fields left out of spec() (e.g. warner's fixed domain)
    spec_omits: ClassVar[tuple] = ()

    # -- description ---------------------------------------------------------------------------
    @property
    def base(self) -> "Mechanism":
        """The mechanism that produces the reports (a wrapper's inner, padded mechanism)."""
        return self

    categories: Optional[tuple] = None  # the declared item labels (a dataclass field where declared)

    @property
    def closed(self) -> bool:
        return True

    @property
    def domain_size(self) -> Optional[int]:
        """Number of items of a closed alphabet (None for an open one)."""
        return getattr(self, "d", None)

    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        """Expected squared l2 error of the raw estimator for ``n`` users: ``theta`` is the item
        distribution, ``f`` the set-item frequencies of set mechanisms; ``sampling="fixed"``
        measures against the users' own values, ``"iid"`` against a population they are drawn from."""
        raise LDPParameterError(f"{self.name} has no analytic error formula")

    def spec(self) -> dict:
        """``{"name": registry name, "params": {...}}``: enough to rebuild this exact mechanism."""
        params = {f.name: json_value(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init and f.name not in self.spec_omits}
        return {"name": self.name, "params": params}

    # -- client: ONE signature for every mechanism and wrapper ---------------------------------------
    # keyed mechanisms (``needs_user_keys``: the memoized longitudinal protocols) take ``user_keys=``
    # (one secret per user) and refuse to randomize without them; every other mechanism refuses them

    def _check_no_cohorts(self, cohorts: Any) -> None:
        if cohorts is not None and not self.takes_cohorts:
            raise LDPParameterError(f"cohorts= applies only to cohort mechanisms (orr, orappor), not {self.name}")

    def _check_client_arguments(self, *, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> None:
        """Refuse a client argument this mechanism does not take, naming the right entry point."""
        self._check_no_cohorts(cohorts)
        if user_keys is None and self.needs_user_keys:
            raise LDPParameterError(
                f"{self.name} is a keyed (memoized) mechanism: randomize(values, user_keys=...) needs one secret key "
                "per user; make_longitudinal(...) builds its OpenDP measurement"
            )
        if user_keys is not None and not self.needs_user_keys:
            raise LDPParameterError(f"user_keys= applies only to keyed (memoized) mechanisms, not {self.name}")
        if offsets is not None and self.input_kind != "set":
            raise LDPParameterError(f"offsets= applies only to set mechanisms, not {self.name} (input kind {self.input_kind!r})")

    @_tagging
    def randomize(self, values: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None):
        """Randomize a batch: element ``i`` of the result is user ``i``'s report. ``rng=None``
        (default) draws from the OS CSPRNG; an integer seeds a reproducible, *non-secure* source."""
        return self.randomize_encoded(self.encode(values), rng=rng, cohorts=cohorts, user_keys=user_keys)

    @_tagging
    def randomize_encoded(self, codes: Any, *, rng: Any = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None):
        """The client on already encoded values (:meth:`encode`); the path every caller uses."""
        self._check_client_arguments(cohorts=cohorts, user_keys=user_keys, offsets=offsets)
        if self.input_kind == "value" and self.domain_size is not None:  # codes of a closed domain: never past it
            return self._randomize_codes(check_codes(codes, int(self.domain_size)), as_source(rng))
        return self._randomize_codes(np.asarray(codes), as_source(rng))

    @_strict
    def randomize_one(self, value: Any, *, rng: Any = None, user_key: Any = None):
        """One user's report (the same exact sampler on a batch of one)."""
        keys = None if user_key is None else [user_key]
        return self._report_of_one(self.randomize(self._batch_of_one(value), rng=rng, user_keys=keys))

    def _batch_of_one(self, value: Any) -> Any:
        return np.array([value], dtype=object if getattr(self, "categories", None) is not None else None)

    def _report_of_one(self, reports: Any) -> Any:
        if isinstance(reports, tuple):  # several report columns (dBitFlipPM: buckets, bits): one row of each
            return tuple(r[0] for r in reports)
        return reports[0]

    def _refuse_frequency_options(self, candidates: Any, postprocess: Any) -> None:
        """``candidates=`` / ``postprocess=`` are the frequency oracles' options: a family whose
        estimator has neither refuses them (never ignores them) with what it does take."""
        for key, value in (("candidates", candidates), ("postprocess", postprocess)):
            if value is not None:
                raise LDPArgumentError(f"{self.name}'s estimate has no {key}= option (it applies to frequency oracles); "
                                       f"see help({type(self).__name__}.estimate) for what it takes")

    def with_categories(self, categories: Any) -> "Mechanism":
        """The same mechanism over the labels ``categories`` (instead of codes ``0..d-1``)."""
        return dataclasses.replace(self, d=None, categories=tuple(categories))

    # -- verification and shuffle amplification read these (the Verifiable capability) --------------
    #: ``channel()`` is the real client's channel (False where it enumerates a fixed set of
    #: verification seeds instead of the client's random 64-bit seeds)
    channel_is_client: ClassVar[bool] = True
    #: the channel family whose closed forms apply (SupportRates): "randomized-response", "unary", "subset"
    channel_shape: ClassVar[Optional[str]] = None

    # -- verification (ldp_plugin.verification drives the real client through these) ----------------
    def verification_input_count(self) -> int:
        """How many inputs the exact channel has (items; every set of up to ``m`` for sets)."""
        inputs = getattr(self, "verification_inputs", None)
        if inputs is not None:
            return len(inputs())
        d = self.domain_size
        if d is None:
            raise LDPParameterError("verification needs a closed-domain instance (give d)")
        return int(d)

    def sample_verification_outputs(self, x: int, n: int, source: Any) -> np.ndarray:
        """``n`` outputs of the real client on input ``x``, as column indices of :meth:`channel`
        (mechanisms with per-user seeds draw them from their verification seed set)."""
        codes = np.full(n, x, dtype=np.int64)
        return self.output_index(self._verification_randomize(codes, source))

    def _verification_randomize(self, codes: Any, source: Any) -> Any:
        """The real client on a batch of verification input codes (a mechanism whose inputs are
        not its codes — sets, tuples, keyed reports — maps them here)."""
        return self.randomize_encoded(codes, rng=source)

    def verification_layers(self) -> tuple:
        """``(name, channel, sample(x, n, source), ...)`` of each layer of a layered client checked
        on its own (the longitudinal protocols' permanent and instantaneous layers); none here."""
        return ()

    def params(self) -> dict:
        """The public parameters (a family adds its derived ones)."""
        return self.spec()["params"]

    # -- reports -----------------------------------------------------------------------------------
    def report_fields(self) -> tuple:
        """The report columns (:class:`ReportField`); every concrete mechanism declares its own
        (the protocol contract suite checks each registered one)."""
        raise NotImplementedError(f"{type(self).__name__} must declare report_fields()")  # pragma: no cover

    def _to_columns(self, reports: Any) -> dict:
        return {"report": np.asarray(reports)}

    def _from_columns(self, cols: dict) -> Any:
        return cols["report"]

    def to_columns(self, reports: Any) -> dict:
        """The report batch as named arrays (views, no copies), one per :meth:`report_fields` entry."""
        return self.base._to_columns(reports)

    def from_columns(self, cols: dict) -> Any:
        """The native report batch of named arrays (the inverse of :meth:`to_columns`)."""
        return self.base._from_columns(cols)

    def _row_problems(self, columns: dict) -> dict:
        """The family's row checks beyond each field's own: ``{reason: boolean mask}`` over the
        rows of ``columns`` (this mechanism's report columns, shapes and dtypes already checked;
        a row a field check rejected may hold any value, so the masks are computed on every row
        without raising). Read only by :func:`ldp_plugin.mechanisms.reports.check_reports`, the one
        row-check path of the wire decoders, the collector and the accumulators."""
        return {}

    # -- server --------------------------------------------------------------------------------------
    @_checked("estimate")
    def estimate(self, reports: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample"):
        """Aggregate a report batch and estimate (see :meth:`estimate_from`)."""
        return self.estimate_from(self.accumulator().add(reports), candidates=candidates, postprocess=postprocess, confidence=confidence, target=target)

    @_checked("estimate_from")
    def estimate_from(self, acc: Any, *, candidates: Any = None, postprocess: str = "projection", confidence: float = 0.95, target: str = "sample"):
        """The estimate of an accumulator of this mechanism's reports (one signature everywhere).
        ``target="population"`` widens the intervals to cover the frequencies of a population the
        users are an i.i.d. sample of (:func:`ldp_plugin.estimation.retarget`)."""

        return retarget(acc.estimate(candidates=candidates, postprocess=postprocess, confidence=confidence), target)
