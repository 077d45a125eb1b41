"""The mechanism registry (installed as ``ldp_plugin.registry``).

One TOML declaration per mechanism in this folder: name, constructor import path, parameters
with types and ranges, the declared privacy map, the privacy unit, a citation and canonical
small instances. :func:`load_registry` validates every declaration and refuses duplicate names;
:func:`verify_exact` runs the exact layer of verification (full channel enumeration of every
canonical instance: rows sum to one, equal supports, worst-case ratio ``<= e^ε`` with zero
tolerance, and agreement with the ratio the constructor computed); :func:`verify` runs all three
layers (exact, goodness of fit, black-box audit: :mod:`ldp_plugin.verification`).
``names.lock`` pins what every name means; :func:`register` adds a user mechanism after it passes
verification.
"""

from ._loader import (
    ALL_LAYERS,
    KINDS,
    Declaration,
    build,
    from_spec,
    required_parameters,
    fingerprint,
    load_registry,
    parse_declaration,
    unregister_all,
)
from ._register import register
from ._verify import VerificationResult, edge_rows, verify, verify_exact, verify_instance, verify_name
from ._suite import seeded_declaration_bugs, self_test, wrapper_instances

__all__ = [
    "ALL_LAYERS",
    "KINDS",
    "Declaration",
    "VerificationResult",
    "build",
    "from_spec",
    "required_parameters",
    "fingerprint",
    "load_registry",
    "parse_declaration",
    "register",
    "unregister_all",
    "verify",
    "verify_exact",
    "verify_instance",
    "verify_name",
    "edge_rows",
    "self_test",
    "wrapper_instances",
    "seeded_declaration_bugs",
]
