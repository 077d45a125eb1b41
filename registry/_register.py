"""Registering a user mechanism: a validated declaration that passes every verification layer
on each of its canonical instances (above both the loader and the verification driver)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ldp_plugin._errors import LDPParameterError, PrivacyVerificationError

from ._loader import _USER, Declaration, _lock, _parse, load_registry, parse_declaration
from ._verify import failed_layers, verify_name

__all__ = ["register"]


def register(declaration: Mapping[str, Any] | str | Path, *, seed: int = 0, quick: bool = True) -> Declaration:
    """Register a user mechanism: validate the declaration, refuse a taken name, run what
    ``ldp verify --quick NAME`` runs (:func:`~ldp_plugin.registry.verify_name`: every layer on every
    canonical instance, and the random parameter draws; ``quick=False``: the full run), and refuse
    it if any instance fails (:class:`ldp_plugin.PrivacyVerificationError`, naming the layers).
    Registered mechanisms then appear in :func:`load_registry`, ``ldp mechanisms``, ``build`` and
    ``ldp verify`` (this process)."""
    if isinstance(declaration, (str, Path)):
        decl = _parse(Path(declaration))
    else:
        decl = parse_declaration(declaration)
    taken = load_registry()
    if decl.name in taken or decl.name in _lock():
        raise LDPParameterError(f"mechanism name {decl.name!r} is taken; a name never changes meaning")
    rows = verify_name(decl, seed=seed, quick=quick)
    failed = [r for r in rows if not r["passed"]]
    if failed:
        where = "random parameter draw" if failed[0].get("random_draw") else "canonical instance"
        raise PrivacyVerificationError(
            f"mechanism {decl.name!r} failed verification on {len(failed)} instance(s), e.g. the {where} "
            f"{failed[0]['instance']} (layers: {', '.join(failed_layers(failed[0])) or 'none'})"
        )
    _USER[decl.name] = decl
    return decl
