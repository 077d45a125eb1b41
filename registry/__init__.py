"""The mechanism registry (installed as ``ldp_plugin.registry``).

One TOML declaration per mechanism in this folder: name, constructor import path, parameters
with types and ranges, the declared privacy map, the privacy unit, a citation and canonical
small instances. :func:`load_registry` validates every declaration and refuses duplicate names;
:func:`verify_exact` runs the exact layer of verification (full channel enumeration of every
canonical instance: rows sum to one, equal supports, worst-case ratio ``<= e^ε`` with zero
tolerance, and agreement with the ratio the constructor computed).
"""

from ._loader import Declaration, VerificationResult, build, load_registry, verify_exact

__all__ = ["Declaration", "VerificationResult", "build", "load_registry", "verify_exact"]
