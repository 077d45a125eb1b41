"""Discovery of frequent strings over unknown dictionaries (heavy hitters): prefix-tree protocols
(PEM, TreeHist), the string domain, and the diagnostics of the result."""

from .diagnostics import HeavyHitters, p_values, select
from .prefix import DEFAULT_ALPHABET, TERM, PrefixCodec, infer_domain
from .protocol import METHODS, ORACLES, DiscoveryAccumulator, PrefixDiscovery
from .sfp import SFP

__all__ = [
    "HeavyHitters", "p_values", "select", "DEFAULT_ALPHABET", "TERM", "PrefixCodec", "infer_domain", "METHODS", "ORACLES",
    "DiscoveryAccumulator", "PrefixDiscovery", "SFP",
]
