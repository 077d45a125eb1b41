from __future__ import annotations

import functools
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ldp_plugin._errors import LDPParameterError, LDPInputError
from ldp_plugin.mechanisms import SampleOne
from ldp_plugin.mechanisms.domain import check_labels
from ldp_plugin.mechanisms.longitudinal import Memoized

__all__ = [
    "Declaration",
    "load_registry",
    "build",
    "from_spec",
    "required_parameters",
    "unregister_all",
    "fingerprint",
    "parse_declaration",
]

_REQUIRED = ("name", "summary", "constructor", "measurement", "privacy_unit", "privacy_map", "citation", "parameters", "canonical")
_HERE = Path(__file__).resolve().parent
#: the verification layers: the declared channel, the code that samples, the black box, the public surfaces and the server
ALL_LAYERS = ("exact", "sampling-path", "goodness-of-fit", "rates", "joint", "audit", "transcript", "production", "positions", "entry-points",
              "surfaces", "estimators")
#: what a declaration's ``kind`` may be: frequency oracles (the default, what ``load_registry()``
#: returns), numeric means, longitudinal protocols (``epsilon_perm``/``epsilon_1`` instead of
#: ``epsilon``; their clients need each user's secret key)
KINDS = ("frequency", "mean", "longitudinal", "distribution", "multi-attribute", "key-value")


@dataclass(frozen=True)
class Declaration:
    name: str
    summary: str
    constructor: str
    measurement: str
    privacy_unit: str
    privacy_map: str
    population_map: str
    citation: str
    report: str
    parameters: Mapping[str, Mapping[str, str]]
    canonical: tuple
    fixed_d: int | None = None
    kind: str = "frequency"

    def mechanism_class(self):
        module, _, attr = self.constructor.partition(":")
        return getattr(importlib.import_module(module), attr)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "summary": self.summary,
            "parameters": {k: dict(v) for k, v in self.parameters.items()},
            "privacy_unit": self.privacy_unit,
            "privacy_map": self.privacy_map,
            "population_map": self.population_map,
            "citation": self.citation,
            "report": self.report,
            "constructor": self.constructor,
            "measurement": self.measurement,
            "kind": self.kind,
        }


def fingerprint(decl: "Declaration") -> str:
    """What a name means: constructor, measurement, privacy map, privacy unit, parameter names."""
    import hashlib
    import json

    meaning = {
        "constructor": decl.constructor,
        "measurement": decl.measurement,
        "privacy_map": decl.privacy_map,
        "privacy_unit": decl.privacy_unit,
        "parameters": sorted(decl.parameters),
    }
    return hashlib.sha256(json.dumps(meaning, sort_keys=True).encode()).hexdigest()[:32]


def _lock() -> dict:
    path = _HERE / "names.lock"
    st = path.stat()
    return dict(_lock_cached(str(path), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=4)
def _lock_cached(path: str, mtime_ns: int, size: int) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _parse(path: Path) -> Declaration:
    """One declaration file, parsed once per (path, modification time, size): the CLI builds its
    help from the registry several times per call."""
    st = path.stat()
    return _parse_cached(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=512)
def _parse_cached(path: str, mtime_ns: int, size: int) -> Declaration:
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    return parse_declaration(raw, Path(path).name)


def parse_declaration(raw: Mapping[str, Any], origin: str = "<declaration>") -> Declaration:
    """Validate a declaration (a TOML table as a dict) and return it."""

    class _P:  # keeps the error messages' "path.name" wording for both files and dicts
        name = origin

    path = _P
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise LDPParameterError(f"registry declaration {path.name} lacks {missing}")
    if raw["privacy_unit"] != "user":
        raise LDPParameterError(f"registry declaration {path.name}: privacy_unit must be 'user'")
    if not raw["canonical"]:
        raise LDPParameterError(f"registry declaration {path.name} needs at least one canonical instance")
    for key in ("name", "summary", "constructor", "measurement", "privacy_map", "citation"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise LDPParameterError(f"registry declaration {path.name}: {key} must be a non-empty string")
    if ":" not in raw["constructor"] or ":" not in raw["measurement"]:
        raise LDPParameterError(f"registry declaration {path.name}: constructor and measurement are 'module:attribute' paths")
    kind = raw.get("kind", "frequency")
    if kind not in KINDS:
        raise LDPParameterError(f"registry declaration {path.name}: kind must be one of {KINDS} (got {kind!r})")
    eps_params = ("epsilon_perm", "epsilon_1") if kind == "longitudinal" else ("epsilon",)
    if any(e not in raw["parameters"] for e in eps_params):
        raise LDPParameterError(f"registry declaration {path.name}: parameters must declare {' and '.join(eps_params)}")
    for pname, spec in raw["parameters"].items():
        if not isinstance(spec, Mapping) or "type" not in spec or "range" not in spec:
            raise LDPParameterError(f"registry declaration {path.name}: parameter {pname!r} needs a type and a range")
    for inst in raw["canonical"]:
        unknown = set(inst) - set(raw["parameters"])
        if unknown:
            raise LDPParameterError(f"registry declaration {path.name}: canonical instance uses undeclared {sorted(unknown)}")
    return Declaration(
        name=raw["name"],
        summary=raw["summary"],
        constructor=raw["constructor"],
        measurement=raw["measurement"],
        privacy_unit=raw["privacy_unit"],
        privacy_map=raw["privacy_map"],
        population_map=raw.get("population_map", ""),
        citation=raw["citation"],
        report=raw.get("report", ""),
        parameters=raw["parameters"],
        canonical=tuple(raw["canonical"]),
        fixed_d=raw.get("fixed_d"),
        kind=kind,
    )


_USER: dict[str, Declaration] = {}


def _load_directory(directory: Path, *, lock: Mapping | None) -> dict:
    builtin = lock is not None
    out: dict[str, Declaration] = {}
    for path in sorted(directory.glob("*.toml")):
        decl = _parse(path)
        if decl.name in out:
            raise LDPParameterError(f"duplicate mechanism name {decl.name!r} in the registry ({path.name})")
        if builtin:
            if decl.name not in lock:
                raise LDPParameterError(f"mechanism {decl.name!r} ({path.name}) is not in registry/names.lock: add its line")
            if lock[decl.name] != fingerprint(decl):
                raise LDPParameterError(f"mechanism {decl.name!r} changed meaning (its fingerprint differs from names.lock); use a new name")
        out[decl.name] = decl
    return out


@functools.lru_cache(maxsize=4)
def _builtin(lock: tuple) -> tuple:
    """The built-in declarations, parsed and checked against ``lock`` (``names.lock``, re-read on
    every call) once per lock content: the TOML files are package data."""
    return tuple(_load_directory(_HERE, lock=dict(lock)).items())


def load_registry(directory: Path | None = None, *, include_user: bool = True, kinds: tuple = ("frequency",)) -> dict[str, Declaration]:
    """Load and validate every ``*.toml`` declaration; duplicate names are refused, and so is a
    built-in declaration whose meaning differs from its line in ``names.lock`` (a name never
    changes meaning). Mechanisms added with :func:`register` are included. ``kinds``: which
    declarations to return (default the frequency oracles; :data:`KINDS` for all)."""
    out = dict(_builtin(tuple(sorted(_lock().items())))) if directory is None else _load_directory(Path(directory), lock=None)
    out = {k: v for k, v in out.items() if v.kind in kinds}
    if include_user:
        for name, decl in _USER.items():
            if name in out:
                raise LDPParameterError(f"duplicate mechanism name {name!r}")
            out[name] = decl
    return out


def unregister_all() -> None:
    """Forget the mechanisms registered in this process (tests)."""
    _USER.clear()


def _param_hint(decl: "Declaration", pname: str) -> str:
    spec = decl.parameters.get(pname, {})
    return f"{pname} ({spec.get('type', '?')} in {spec.get('range', '?')})"


def required_parameters(decl: "Declaration") -> list:
    """Constructor parameters without a default (besides epsilon and the domain)."""
    import dataclasses

    cls = decl.mechanism_class()
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in ("epsilon", "d", "categories")
    ]


def takes_open_alphabet(decl: "Declaration") -> bool:
    return "d" in decl.parameters and "none" in str(decl.parameters["d"].get("type", ""))


def build(
    name: str,
    *,
    epsilon: Any = None,
    d: Any = None,
    categories: Any = None,
    m: Any = None,
    on_long: str = "error",
    n: Any = None,
    registry: Mapping[str, Declaration] | None = None,
    **params: Any,
):
    """Construct the mechanism registered under ``name`` — the one builder every layer uses (the
    CLI, collect jobs, Parquet metadata, verification, the federated runtime).

    Checks the parameters against the declaration before constructing: an unknown or missing
    parameter raises :class:`LDPParameterError` naming it, its type and range, and how to give it
    on the command line (``--param k=...``). ``m`` wraps a categorical mechanism in
    :class:`ldp_plugin.SampleOne` (a native set mechanism takes ``m`` itself); ``sample-NAME`` is
    NAME wrapped in SampleOne. O-RR without ``k`` picks ``(k, cohorts)`` with
    :func:`ldp_plugin.theory.choose_orr` for the domain size and ``n`` (default 10^5) — the one
    place that default lives."""
    reg = registry if registry is not None else load_registry(kinds=KINDS)
    wrap = False
    if isinstance(name, str) and name.startswith("sample-") and name[len("sample-"):] in reg:
        name, wrap = name[len("sample-"):], True
    if name not in reg:
        raise LDPParameterError(f"unknown mechanism {name!r}; registered: {', '.join(sorted(reg))}")
    decl = reg[name]
    if decl.kind == "longitudinal":
        if epsilon is not None:
            raise LDPParameterError(
                f"mechanism {name!r} is a longitudinal protocol: it takes epsilon_perm and epsilon_1, not epsilon "
                f"(on the command line: ldp longitudinal simulate --mechanism {name})"
            )
    elif epsilon is None:
        raise LDPParameterError(f"mechanism {name!r} needs epsilon (a number > 0; on the command line: --epsilon E)")
    unknown = set(params) - set(decl.parameters)
    if unknown:
        raise LDPParameterError(f"mechanism {name!r} has no parameter(s) {sorted(unknown)}; it takes {sorted(decl.parameters)}")
    native_set = "m" in decl.parameters
    if native_set:
        if m is not None:
            params["m"] = m
        if on_long != "error":
            params["on_long"] = on_long
        wrap = False
    elif m is not None:
        wrap = True
    if wrap and m is None:
        m = 1
    if categories is not None:
        categories = check_labels(categories, "categories")  # ordered, one type, no None/NaN/duplicates
    S = len(categories) if categories is not None else d
    derived = decl.mechanism_class().default_parameters(params, epsilon=epsilon, d=None if S is None else int(S) + (1 if wrap else 0),
                                                        n=int(n) if n else 100_000)
    for key, value in derived.items():
        params.setdefault(key, value)
    missing = [p for p in required_parameters(decl) if p not in params]
    if missing:
        hints = ", ".join(_param_hint(decl, p) for p in missing)
        cli = " ".join(f"--param {p}=VALUE" for p in missing)
        raise LDPParameterError(f"mechanism {name!r} needs {hints}; on the command line: {cli}")
    kwargs = dict(params) if decl.kind == "longitudinal" else dict(epsilon=epsilon, **params)
    if decl.fixed_d is not None:
        if d is not None and d != decl.fixed_d:
            raise LDPParameterError(f"mechanism {name!r} has d fixed at {decl.fixed_d} (got d={d})")
        if categories is not None:
            kwargs["categories"] = categories
    elif "d" in decl.parameters or categories is not None:
        kwargs["d"] = d
        if categories is not None:
            kwargs["categories"] = categories
    elif d is not None and decl.kind == "mean":  # a frequency command asked for a mean mechanism
        raise LDPParameterError(
            f"mechanism {name!r} has no parameter 'd': it estimates the mean of numbers, not frequencies over d items; "
            f"use `ldp mean simulate --mechanism {name} --lower L --upper U`"
        )
    elif d is not None:  # never silently dropped
        raise LDPParameterError(f"mechanism {name!r} has no parameter 'd'; it takes {sorted(decl.parameters)}")
    cls = decl.mechanism_class()
    try:
        mech = cls(**kwargs)
    except TypeError as exc:  # a wrong type reaching the constructor: name it, never a traceback
        raise LDPParameterError(f"mechanism {name!r}: invalid parameters ({exc})") from None
    except LDPParameterError as exc:
        if str(exc).startswith("give the domain size d"):
            rng = decl.parameters.get("d", {}).get("range", "?")
            raise LDPParameterError(f"mechanism {name!r} needs the domain: d (int in {rng}; on the command line: --d D) or categories") from None
        raise
    if wrap:

        return SampleOne(mechanism=mech, m=m, on_long=on_long)
    return mech


def _tuples(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"bytes"} and isinstance(v["bytes"], str):  # a bytes label (json_value)
        try:
            return bytes.fromhex(v["bytes"])
        except ValueError:
            raise LDPInputError("a bytes label of the mechanism spec is not hexadecimal text") from None
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def from_spec(spec: Any):
    """Rebuild a mechanism from its :meth:`spec` (a dict or its JSON text) — only registered
    constructors (and the SampleOne / memoized wrappers around them) are ever built."""
    import json


    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except ValueError:
            raise LDPInputError("the mechanism spec is not valid JSON") from None
    if not isinstance(spec, dict):
        raise LDPInputError("a mechanism spec is a JSON object")
    if spec.get("set") == "sample-one":

        return SampleOne(mechanism=from_spec(spec.get("mechanism")), m=spec.get("m"), on_long=spec.get("on_long", "error"))
    params = {k: _tuples(v) for k, v in dict(spec.get("params") or {}).items()}  # JSON lists -> the tuples mechanisms hold
    name = spec.get("name")
    if name == "memoized-krr":

        return Memoized(**params)
    reg = load_registry(kinds=KINDS)
    if name not in reg:
        raise LDPInputError(f"the mechanism spec names {name!r}, which is not registered here")
    try:
        return reg[name].mechanism_class()(**params)
    except TypeError:
        raise LDPInputError(f"the mechanism spec of {name!r} has parameters its constructor does not take") from None
