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
from .mechanisms.longitudinal import DistinctValueGuard, Memoized, new_user_key
from .choose import make_auto, rank_mechanisms
from .measurements import make_duchi, make_hybrid, make_one_bit_mean, make_piecewise, make_rue
from .measurements import make_longitudinal
from .mechanisms.distribution import BucketedOracle, DistributionEstimate, SquareWave
from .measurements import make_bucketed, make_square_wave, then_bucketed, then_square_wave
from .mechanisms.multi_attribute import RSFD, SMP, SPL, MultiAttributeEstimate
from .measurements import make_rsfd, make_smp, make_spl, then_rsfd, then_smp, then_spl
from .mechanisms.hierarchy import HierarchicalHistogram
from .measurements import make_hierarchical_histogram, then_hierarchical_histogram
from .mechanisms.key_value import PCKV, KeyValueBatch, KeyValueEstimate
from .measurements import make_pckv, then_pckv
from .mechanisms.haar import HaarHRR
from .measurements import make_haar_hrr, then_haar_hrr
from .mechanisms.multi_attribute import SMPPairs
from .measurements import make_smp_pairs, then_smp_pairs
from ._errors import LDPArgumentError, UnderdeterminedWarning
from . import adapters as _adapters  # registers the Polars `ldp` namespace
from . import _compat  # noqa: F401  (old module paths of moved modules; removed next round)

__version__ = "0.1.0"

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

# numeric distributions (issue 37): Square Wave + EMS, the bucketed oracle

__all__ += ["SquareWave", "BucketedOracle", "DistributionEstimate", "make_square_wave", "then_square_wave", "make_bucketed", "then_bucketed"]

# several attributes per user (issue 37): SPL, SMP, RS+FD

__all__ += ["SPL", "SMP", "RSFD", "MultiAttributeEstimate", "make_spl", "then_spl", "make_smp", "then_smp", "make_rsfd", "then_rsfd"]

# ranges and quantiles on a fine grid (issue 37): the hierarchical histogram

__all__ += ["HierarchicalHistogram", "make_hierarchical_histogram", "then_hierarchical_histogram"]

# key-value sets (issue 37): PCKV-GRR

__all__ += ["PCKV", "KeyValueBatch", "KeyValueEstimate", "make_pckv", "then_pckv"]

# ranges with the Haar wavelet (issue 37): HaarHRR

__all__ += ["HaarHRR", "make_haar_hrr", "then_haar_hrr"]

# two-way marginals (issue 37): SMP over attribute pairs

__all__ += ["SMPPairs", "make_smp_pairs", "then_smp_pairs"]

__all__ += ["LDPArgumentError", "UnderdeterminedWarning"]
