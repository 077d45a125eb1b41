"""ldp-plugin: local differential privacy for OpenDP.

Verified, vectorized frequency oracles (Warner RR, k-RR, k-RAPPOR, OUE, k-subset) as OpenDP
measurements, with one shared estimator that returns standard errors and confidence intervals.

>>> import ldp_plugin as ldp
>>> mech = ldp.KRR(epsilon=2.0, categories=["red", "green", "blue"])
>>> reports = mech.randomize(["red"] * 50 + ["blue"] * 50, rng=0)
>>> est = mech.estimate(reports)
>>> est.to_polars().columns
['item', 'estimate', 'std_error', 'ci_lower', 'ci_upper']
"""

from ._errors import LDPInputError, LDPParameterError, PrivacyVerificationError
from .estimation import FrequencyEstimate, estimate_pure, project_simplex
from . import measurements as _measurements
from .measurements import *  # noqa: F401,F403  (the OpenDP constructors: make_*/then_*, domains)
from .mechanisms import RUE, THE, PrivSet, RapporSet, Wheel, BinaryMechanism, FiniteChannel, GeometricMechanism, StaircaseMechanism, KRR, OLH, CMS, HCMS, CountSketch, ORAPPOR, ORR, OUE, CohortAccumulator, CohortReports, HadamardMechanism, HadamardResponse, RAPPOR, Channel, FrequencyAccumulator, FrequencyOracle, KSubset, WarnerRR
from .sampling import RandomSource, SecureRandomSource, SeededRandomSource
from .sets import PAD, SetBatch, as_set_batch
from .mechanisms import SampleOne
from .mechanisms import Duchi, Hybrid, MeanEstimate, OneBitMean, Piecewise, LGRR, LOUE, LOSUE, LSUE, LOLOHA, DBitFlipPM, LifetimeTracker
from .accountant import Accountant, BudgetExceededError, LedgerError, Population
from .memo import DistinctValueGuard, Memoized, new_user_key
from .choose import make_auto, rank_mechanisms
from .measurements_series import make_duchi, make_hybrid, make_longitudinal, make_one_bit_mean, make_piecewise, make_rue

__version__ = "0.1.0"

from . import adapters as _adapters  # noqa: E402  (registers the Polars `ldp` namespace)

__all__ = [
    "LDPInputError",
    "LDPParameterError",
    "PrivacyVerificationError",
    "FrequencyEstimate",
    "estimate_pure",
    "project_simplex",
    "KRR",
    "WarnerRR",
    "RAPPOR",
    "OUE",
    "KSubset",
    "OLH",
    "HadamardResponse",
    "HadamardMechanism",
    "THE",
    "BinaryMechanism",
    "FiniteChannel",
    "GeometricMechanism",
    "StaircaseMechanism",
    "Wheel",
    "RapporSet",
    "PrivSet",
    "ORR",
    "ORAPPOR",
    "CMS",
    "HCMS",
    "CountSketch",
    "CohortReports",
    "CohortAccumulator",
    "Channel",
    "FrequencyAccumulator",
    "FrequencyOracle",
    "RandomSource",
    "SecureRandomSource",
    "SeededRandomSource",
    "PAD",
    "SampleOne",
    "SetBatch",
    "as_set_batch",
    "Accountant",
    "BudgetExceededError",
    "LedgerError",
    "Population",
    "Memoized",
    "DistinctValueGuard",
    "new_user_key",
    "make_auto",
    "rank_mechanisms",
    "Duchi", "Piecewise", "Hybrid", "OneBitMean", "MeanEstimate",
    "LGRR", "LOUE", "LOSUE", "LSUE", "LOLOHA", "DBitFlipPM", "LifetimeTracker",
    "RUE", "make_rue",
    "make_duchi", "make_piecewise", "make_hybrid", "make_one_bit_mean", "make_longitudinal",

]
__all__ += _measurements.__all__
from ._errors import LDPArgumentError, UnderdeterminedWarning  # noqa: E402  (issue 38: argument errors, underdetermined designs)

__all__ += ["LDPArgumentError", "UnderdeterminedWarning"]
