from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import epsilon_of_ratio, ratio_within_exp

__all__ = [
    "Declaration",
    "VerificationResult",
    "load_registry",
    "build",
    "from_spec",
    "required_parameters",
    "verify_exact",
    "verify",
    "register",
    "unregister_all",
    "fingerprint",
    "parse_declaration",
]

_REQUIRED = ("name", "summary", "constructor", "measurement", "privacy_unit", "privacy_map", "citation", "parameters", "canonical")
_HERE = Path(__file__).resolve().parent
#: the verification layers: the declared channel, the code that samples, and the black box
ALL_LAYERS = ("exact", "sampling-path", "goodness-of-fit", "rates", "joint", "audit")


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
    with (_HERE / "names.lock").open("rb") as f:
        return tomllib.load(f)


def _parse(path: Path) -> Declaration:
    with path.open("rb") as f:
        raw = tomllib.load(f)
    return parse_declaration(raw, path.name)


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
    if "epsilon" not in raw["parameters"]:
        raise LDPParameterError(f"registry declaration {path.name}: parameters must declare epsilon")
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
    )


_USER: dict[str, Declaration] = {}


def load_registry(directory: Path | None = None, *, include_user: bool = True) -> dict[str, Declaration]:
    """Load and validate every ``*.toml`` declaration; duplicate names are refused, and so is a
    built-in declaration whose meaning differs from its line in ``names.lock`` (a name never
    changes meaning). Mechanisms added with :func:`register` are included."""
    builtin = directory is None
    directory = Path(directory) if directory is not None else _HERE
    lock = _lock() if builtin else {}
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
    if include_user:
        for name, decl in _USER.items():
            if name in out:
                raise LDPParameterError(f"duplicate mechanism name {name!r}")
            out[name] = decl
    return out


def verify(
    decl: Declaration,
    *,
    seed: int = 0,
    quick: bool = False,
    alpha: float | None = None,
    layers: tuple = ALL_LAYERS,
) -> list[dict]:
    """All three verification layers on every canonical instance of ``decl``; one row each with
    ``name, instance, declared_epsilon, realized_epsilon, audit_epsilon_lower_bound,
    audit_samples, passed`` and the per-layer details. ``alpha`` is this declaration's share of
    the family-wise false-alarm rate (default ``10⁻⁶`` split over its instances)."""
    from ldp_plugin.verification.layers import FAMILY_ALPHA, audit_layer, exact_layer, gof_layer

    cls = decl.mechanism_class()
    a = (alpha if alpha is not None else FAMILY_ALPHA) / len(decl.canonical)
    rows = []
    for i, inst in enumerate(decl.canonical):
        mech = cls(**inst)
        rows.append(verify_instance(mech, name=decl.name, instance=dict(inst), seed=seed + 7919 * i, quick=quick, alpha=a, layers=layers))
    return rows


def verify_instance(mech, *, name: str, instance: dict, seed: int = 0, quick: bool = False, alpha: float = 1e-6, layers=ALL_LAYERS) -> dict:
    """The verification layers on one mechanism instance (also used for the seeded bugs):
    the declared channel (exact), the code that samples (sampling path, rates, joint) and the
    black-box layers (goodness of fit, audit)."""
    from ldp_plugin.verification.layers import audit_layer, exact_layer, gof_layer
    from ldp_plugin.verification.sampling_path import joint_layer, rate_layer, sampling_path_layer

    out = {"name": name, "instance": instance, "declared_epsilon": float(mech.epsilon)}
    passed = True
    if "exact" in layers:
        e = exact_layer(mech)
        out["realized_epsilon"] = e["realized_epsilon"]
        out["exact"] = e
        passed &= e["passed"]
    if "sampling-path" in layers:
        sp = sampling_path_layer(mech, seed=seed + 3)
        out["sampling_path"] = sp
        passed &= sp["passed"]
    if "rates" in layers:
        rt = rate_layer(mech, quick=quick, alpha=alpha / 6, seed=seed + 5)
        out["rates"] = rt
        passed &= rt["passed"]
    if "joint" in layers:
        jt = joint_layer(mech, n_pairs=5_000 if quick else 20_000, alpha=alpha / 6, seed=seed + 7)
        out["joint"] = jt
        passed &= jt["passed"]
    if "goodness-of-fit" in layers:
        g = gof_layer(mech, n_per_input=5_000 if quick else 20_000, alpha=alpha / 3, seed=seed)
        out["goodness_of_fit"] = g
        passed &= g["passed"]
    if "audit" in layers:
        a = audit_layer(
            mech, alpha=alpha / 3, seed=seed + 1, n_pilot=5_000 if quick else 20_000, max_samples=200_000 if quick else 20_000_000
        )
        out["audit_epsilon_lower_bound"] = a["audit_epsilon_lower_bound"]
        out["audit_samples"] = a["audit_samples"]
        out["audit"] = a
        passed &= a["passed"]
    out["passed"] = bool(passed)
    return out


def register(declaration: Mapping[str, Any] | str | Path, *, seed: int = 0, quick: bool = True) -> Declaration:
    """Register a user mechanism: validate the declaration, refuse a taken name, run all three
    verification layers on every canonical instance, and refuse it if any fails
    (:class:`ldp_plugin.PrivacyVerificationError`). Registered mechanisms then appear in
    :func:`load_registry`, ``ldp mechanisms``, ``build`` and ``ldp verify`` (this process)."""
    from ldp_plugin._errors import PrivacyVerificationError

    if isinstance(declaration, (str, Path)):
        decl = _parse(Path(declaration))
    else:
        decl = parse_declaration(declaration)
    taken = load_registry()
    if decl.name in taken or decl.name in _lock():
        raise LDPParameterError(f"mechanism name {decl.name!r} is taken; a name never changes meaning")
    rows = verify(decl, seed=seed, quick=quick)
    failed = [r for r in rows if not r["passed"]]
    if failed:
        raise PrivacyVerificationError(
            f"mechanism {decl.name!r} failed verification on {len(failed)} canonical instance(s), e.g. {failed[0]['instance']}"
        )
    _USER[decl.name] = decl
    return decl


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
    reg = registry if registry is not None else load_registry()
    wrap = False
    if isinstance(name, str) and name.startswith("sample-") and name[len("sample-"):] in reg:
        name, wrap = name[len("sample-"):], True
    if name not in reg:
        raise LDPParameterError(f"unknown mechanism {name!r}; registered: {', '.join(sorted(reg))}")
    decl = reg[name]
    if epsilon is None:
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
        if isinstance(categories, (str, bytes)):
            raise LDPParameterError("categories must be a list of labels, not a single string")
        categories = tuple(categories)
    if name == "orr" and "k" not in params:
        S = len(categories) if categories is not None else d
        if S is None:
            raise LDPParameterError(
                "mechanism 'orr' needs k (int in [2, 2^24]) and cohorts, or the domain size d/categories to choose them "
                "(on the command line: --d D, or --param k=K --param cohorts=C)"
            )
        from ldp_plugin.theory import choose_orr

        chosen = choose_orr(int(S) + (1 if wrap else 0), float(epsilon), int(n) if n else 100_000)
        params.setdefault("k", chosen["k"])
        params.setdefault("cohorts", chosen["cohorts"])
    missing = [p for p in required_parameters(decl) if p not in params]
    if missing:
        hints = ", ".join(_param_hint(decl, p) for p in missing)
        cli = " ".join(f"--param {p}=VALUE" for p in missing)
        raise LDPParameterError(f"mechanism {name!r} needs {hints}; on the command line: {cli}")
    kwargs = dict(epsilon=epsilon, **params)
    if decl.fixed_d is not None:
        if d is not None and d != decl.fixed_d:
            raise LDPParameterError(f"mechanism {name!r} has d fixed at {decl.fixed_d} (got d={d})")
        if categories is not None:
            kwargs["categories"] = categories
    elif "d" in decl.parameters or categories is not None:
        kwargs.update(d=d, categories=categories)
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
        from ldp_plugin.mechanisms import SampleOne

        return SampleOne(mechanism=mech, m=m, on_long=on_long)
    return mech


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def from_spec(spec: Any):
    """Rebuild a mechanism from its :meth:`spec` (a dict or its JSON text) — only registered
    constructors (and the SampleOne / memoized wrappers around them) are ever built."""
    import json

    from ldp_plugin._errors import LDPInputError

    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except ValueError:
            raise LDPInputError("the mechanism spec is not valid JSON") from None
    if not isinstance(spec, dict):
        raise LDPInputError("a mechanism spec is a JSON object")
    if spec.get("set") == "sample-one":
        from ldp_plugin.mechanisms import SampleOne

        return SampleOne(mechanism=from_spec(spec.get("mechanism")), m=spec.get("m"), on_long=spec.get("on_long", "error"))
    params = {k: _tuples(v) for k, v in dict(spec.get("params") or {}).items()}  # JSON lists -> the tuples mechanisms hold
    name = spec.get("name")
    if name == "memoized-krr":
        from ldp_plugin.memo import Memoized

        return Memoized(**params)
    reg = load_registry()
    if name not in reg:
        raise LDPInputError(f"the mechanism spec names {name!r}, which is not registered here")
    try:
        return reg[name].mechanism_class()(**params)
    except TypeError:
        raise LDPInputError(f"the mechanism spec of {name!r} has parameters its constructor does not take") from None


@dataclass(frozen=True)
class VerificationResult:
    name: str
    instance: dict
    declared_epsilon: float
    realized_epsilon: float
    rows_sum_to_one: bool
    equal_supports: bool
    ratio_matches_constructor: bool
    passed: bool

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def verify_exact(decl: Declaration) -> list[VerificationResult]:
    """Exact layer: enumerate each canonical instance's full realized channel."""
    results = []
    cls = decl.mechanism_class()
    for inst in decl.canonical:
        mech = cls(**inst)
        ch = mech.channel()
        rows_ok = ch.rows_sum_to_one()
        supp_ok = ch.equal_supports()
        ratio = ch.max_ratio() if supp_ok else None
        within = ratio is not None and ratio_within_exp(ratio, mech.epsilon)
        matches = ratio is not None and ratio == mech.realized_ratio
        results.append(
            VerificationResult(
                name=decl.name,
                instance=dict(inst),
                declared_epsilon=mech.epsilon,
                realized_epsilon=epsilon_of_ratio(ratio) if ratio is not None else float("inf"),
                rows_sum_to_one=rows_ok,
                equal_supports=supp_ok,
                ratio_matches_constructor=matches,
                passed=bool(rows_ok and supp_ok and within and matches),
            )
        )
    return results
