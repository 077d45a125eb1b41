"""ldp-plugin: local differential privacy for OpenDP.

Verified, vectorized LDP mechanisms (frequency oracles, sets, numbers, series, several values per
user) as OpenDP measurements, with estimators that return standard errors and confidence intervals,
a persistent budget accountant and a Polars ``ldp`` namespace.

This module is the table of contents: :data:`__all__` lists the public names by role. Importing it
loads the errors and registers the Polars ``ldp`` namespace; every other name (and every submodule:
``ldp_plugin.mechanisms``, ``ldp_plugin.exact``, ...) is imported the first time it is used (PEP 562),
so ``import ldp_plugin`` loads neither the command line nor the federated runtime. The namespace's
implementation (:mod:`ldp_plugin.adapters.polars_namespace`) loads the first time a frame's ``.ldp``
is used.

>>> import ldp_plugin as ldp
>>> mech = ldp.KRR(epsilon=2.0, categories=["red", "green", "blue"])
>>> reports = mech.randomize(["red"] * 50 + ["blue"] * 50, rng=0)
>>> est = mech.estimate(reports)
>>> est.to_polars().columns
['item', 'estimate', 'std_error', 'ci_lower', 'ci_upper']
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from ._errors import LDPArgumentError, LDPInputError, LDPParameterError, PrivacyVerificationError, UnderdeterminedWarning
import polars as pl

from . import _deprecated

__version__ = "0.1.0"

__all__ = [
    # errors
    "LDPParameterError", "LDPInputError", "LDPArgumentError", "PrivacyVerificationError", "UnderdeterminedWarning",
    # frequency oracles: one category per user
    "KRR", "WarnerRR", "RAPPOR", "OUE", "THE", "RUE", "KSubset", "OLH", "HadamardResponse", "HadamardMechanism",
    "BinaryMechanism", "StaircaseMechanism", "GeometricMechanism", "FiniteChannel",
    "ORR", "ORAPPOR", "CMS", "HCMS", "CountSketch", "CohortReports", "CohortAccumulator",
    "Channel", "FrequencyOracle", "FrequencyAccumulator",
    # sets: up to m items per user
    "SampleOne", "Wheel", "RapporSet", "PrivSet", "PAD", "SetBatch", "as_set_batch",
    # numbers: means, distributions, ranges and quantiles
    "Duchi", "Piecewise", "Hybrid", "OneBitMean", "MeanEstimate",
    "SquareWave", "BucketedOracle", "DistributionEstimate", "HierarchicalHistogram", "HaarHRR",
    # series: repeated collections of the same users
    "LGRR", "LOUE", "LOSUE", "LSUE", "LOLOHA", "DBitFlipPM", "LifetimeTracker", "Memoized", "DistinctValueGuard", "new_user_key",
    # records: several values per user (attributes, key-value pairs)
    "SPL", "SMP", "RSFD", "SMPPairs", "MultiAttributeEstimate", "PCKV", "KeyValueBatch", "KeyValueEstimate",
    # estimation and choosing a mechanism
    "FrequencyEstimate", "estimate_pure", "project_simplex", "make_auto", "rank_mechanisms",
    # the budget accountant
    "Accountant", "Population", "BudgetExceededError", "LedgerError",
    # randomness
    "RandomSource", "SecureRandomSource", "SeededRandomSource",
    # OpenDP constructors: features, domains, the generic wrapper, sets, keyed series
    "enable_ldp_features", "category_domain", "batch_domain", "set_domain", "space_of",
    "make_ldp", "then_ldp", "make_sample_one", "make_set_ldp", "make_longitudinal",
    # OpenDP constructors: one make_X / then_X pair per registered name
    "make_krr", "then_krr", "make_warner", "then_warner", "make_rappor", "then_rappor", "make_oue", "then_oue",
    "make_the", "then_the", "make_rue", "then_rue", "make_k_subset", "then_k_subset", "make_olh", "then_olh",
    "make_hadamard", "then_hadamard", "make_hadamard_mechanism", "then_hadamard_mechanism",
    "make_binary", "then_binary", "make_staircase", "then_staircase", "make_geometric", "then_geometric",
    "make_orr", "then_orr", "make_orappor", "then_orappor", "make_cms", "then_cms", "make_hcms", "then_hcms",
    "make_count_sketch", "then_count_sketch", "make_wheel", "then_wheel", "make_rappor_set", "then_rappor_set",
    "make_privset", "then_privset", "make_duchi", "then_duchi", "make_piecewise", "then_piecewise",
    "make_hybrid", "then_hybrid", "make_one_bit_mean", "then_one_bit_mean",
    "make_square_wave", "then_square_wave", "make_bucketed", "then_bucketed",
    "make_hierarchical_histogram", "then_hierarchical_histogram", "make_haar_hrr", "then_haar_hrr",
    "make_spl", "then_spl", "make_smp", "then_smp", "make_rsfd", "then_rsfd", "make_smp_pairs", "then_smp_pairs",
    "make_pckv", "then_pckv",
]

#: the module each lazily loaded public name comes from; every other name of :data:`__all__` below the
#: errors is an OpenDP constructor of :mod:`ldp_plugin.measurements`
_HOMES = {
    ".mechanisms": (
        "KRR", "WarnerRR", "RAPPOR", "OUE", "THE", "RUE", "KSubset", "OLH", "HadamardResponse", "HadamardMechanism",
        "BinaryMechanism", "StaircaseMechanism", "GeometricMechanism", "FiniteChannel",
        "ORR", "ORAPPOR", "CMS", "HCMS", "CountSketch", "CohortReports", "CohortAccumulator",
        "Channel", "FrequencyOracle", "FrequencyAccumulator", "SampleOne", "Wheel", "RapporSet", "PrivSet",
        "Duchi", "Piecewise", "Hybrid", "OneBitMean", "MeanEstimate",
        "LGRR", "LOUE", "LOSUE", "LSUE", "LOLOHA", "DBitFlipPM", "LifetimeTracker",
    ),
    ".sets": ("PAD", "SetBatch", "as_set_batch"),
    ".mechanisms.distribution": ("SquareWave", "BucketedOracle", "DistributionEstimate"),
    ".mechanisms.hierarchy": ("HierarchicalHistogram",),
    ".mechanisms.haar": ("HaarHRR",),
    ".mechanisms.longitudinal": ("Memoized", "DistinctValueGuard", "new_user_key"),
    ".mechanisms.multi_attribute": ("SPL", "SMP", "RSFD", "SMPPairs", "MultiAttributeEstimate"),
    ".mechanisms.key_value": ("PCKV", "KeyValueBatch", "KeyValueEstimate"),
    ".estimation": ("FrequencyEstimate", "estimate_pure", "project_simplex"),
    ".choose": ("make_auto", "rank_mechanisms"),
    ".accountant": ("Accountant", "Population", "BudgetExceededError", "LedgerError"),
    ".sampling": ("RandomSource", "SecureRandomSource", "SeededRandomSource"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

if TYPE_CHECKING:  # the same names for type checkers and IDEs (at run time they load on first use)
    from .accountant import *  # noqa: F403
    from .choose import *  # noqa: F403
    from .estimation import *  # noqa: F403
    from .measurements import *  # noqa: F403
    from .mechanisms import *  # noqa: F403
    from .mechanisms.distribution import *  # noqa: F403
    from .mechanisms.haar import *  # noqa: F403
    from .mechanisms.hierarchy import *  # noqa: F403
    from .mechanisms.key_value import *  # noqa: F403
    from .mechanisms.longitudinal import *  # noqa: F403
    from .mechanisms.multi_attribute import *  # noqa: F403
    from .sampling import *  # noqa: F403
    from .sets import *  # noqa: F403


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562), or a submodule
    (``ldp_plugin.exact``, ``ldp_plugin.mechanisms``, ...); cached in the module's namespace."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
    elif name in __all__:
        value = getattr(importlib.import_module(".measurements", __name__), name)
    elif (__name__, name) in _deprecated.MOVED_NAMES:
        return _deprecated.moved_name(__name__, name)  # warned at every use, never cached
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


class _LDPNamespace:
    """The Polars ``ldp`` namespace as registered: constructing it for a frame imports the
    implementation (:class:`ldp_plugin.adapters.polars_namespace.LDPFrame` / ``LDPLazyFrame``) on
    first use and returns its instance, which Polars caches on the frame."""

    def __new__(cls, frame: Any) -> Any:
        impl = importlib.import_module(".adapters.polars_namespace", __name__)
        return impl.LDPLazyFrame(frame) if isinstance(frame, pl.LazyFrame) else impl.LDPFrame(frame)


pl.api.register_dataframe_namespace("ldp")(_LDPNamespace)
pl.api.register_lazyframe_namespace("ldp")(_LDPNamespace)
_deprecated.install()
