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

__all__ = ["Declaration", "VerificationResult", "load_registry", "build", "verify_exact"]

_REQUIRED = ("name", "summary", "constructor", "measurement", "privacy_unit", "privacy_map", "citation", "parameters", "canonical")
_HERE = Path(__file__).resolve().parent


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


def _parse(path: Path) -> Declaration:
    with path.open("rb") as f:
        raw = tomllib.load(f)
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise LDPParameterError(f"registry declaration {path.name} lacks {missing}")
    if raw["privacy_unit"] != "user":
        raise LDPParameterError(f"registry declaration {path.name}: privacy_unit must be 'user'")
    if not raw["canonical"]:
        raise LDPParameterError(f"registry declaration {path.name} needs at least one canonical instance")
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


def load_registry(directory: Path | None = None) -> dict[str, Declaration]:
    """Load and validate every ``*.toml`` declaration; duplicate names are refused."""
    directory = Path(directory) if directory is not None else _HERE
    out: dict[str, Declaration] = {}
    for path in sorted(directory.glob("*.toml")):
        decl = _parse(path)
        if decl.name in out:
            raise LDPParameterError(f"duplicate mechanism name {decl.name!r} in the registry ({path.name})")
        out[decl.name] = decl
    return out


def build(name: str, *, epsilon: float, d: int | None = None, registry: Mapping[str, Declaration] | None = None, **params: Any):
    """Construct the mechanism registered under ``name``."""
    reg = registry if registry is not None else load_registry()
    if name not in reg:
        raise LDPParameterError(f"unknown mechanism {name!r}; registered: {sorted(reg)}")
    decl = reg[name]
    unknown = set(params) - set(decl.parameters)
    if unknown:
        raise LDPParameterError(f"mechanism {name!r} has no parameter(s) {sorted(unknown)}; it takes {sorted(decl.parameters)}")
    cls = decl.mechanism_class()
    if decl.fixed_d is not None:
        if d is not None and d != decl.fixed_d:
            raise LDPParameterError(f"mechanism {name!r} has d fixed at {decl.fixed_d}")
        return cls(epsilon=epsilon, **params)
    return cls(epsilon=epsilon, d=d, **params)


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
