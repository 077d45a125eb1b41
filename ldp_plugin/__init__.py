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
from .measurements import (
    batch_domain,
    category_domain,
    enable_ldp_features,
    make_hadamard,
    make_binary,
    make_geometric,
    make_hadamard_mechanism,
    make_staircase,
    make_the,
    make_k_subset,
    make_olh,
    make_orappor,
    make_orr,
    make_sample_one,
    make_set_ldp,
    set_domain,
    make_krr,
    make_ldp,
    make_oue,
    make_randomized_response_warner,
    make_rappor,
    then_hadamard,
    then_binary,
    then_geometric,
    then_hadamard_mechanism,
    then_staircase,
    then_the,
    then_k_subset,
    then_olh,
    then_orappor,
    then_orr,
    then_krr,
    then_ldp,
    then_oue,
    then_randomized_response_warner,
    then_rappor,
)
from .mechanisms import THE, BinaryMechanism, FiniteChannel, GeometricMechanism, StaircaseMechanism, KRR, OLH, ORAPPOR, ORR, OUE, CohortAccumulator, CohortReports, HadamardMechanism, HadamardResponse, RAPPOR, Channel, FrequencyAccumulator, FrequencyOracle, KSubset, WarnerRR
from .sampling import RandomSource, SecureRandomSource, SeededRandomSource
from .sets import PAD, SampleOne, SetBatch, as_set_batch
from .accountant import Accountant, BudgetExceededError, LedgerError, Population
from .memo import DistinctValueGuard, Memoized, new_user_key
from .choose import make_auto, rank_mechanisms

__version__ = "0.1.0"

from . import adapters as _adapters  # noqa: E402  (registers the Polars `ldp` namespace)

__all__ = [
    "LDPInputError",
    "LDPParameterError",
    "PrivacyVerificationError",
    "FrequencyEstimate",
    "estimate_pure",
    "project_simplex",
    "batch_domain",
    "category_domain",
    "enable_ldp_features",
    "make_ldp",
    "then_ldp",
    "make_krr",
    "then_krr",
    "make_randomized_response_warner",
    "then_randomized_response_warner",
    "make_rappor",
    "then_rappor",
    "make_oue",
    "then_oue",
    "make_k_subset",
    "then_k_subset",
    "make_olh",
    "then_olh",
    "make_hadamard",
    "then_hadamard",
    "make_binary",
    "then_binary",
    "make_staircase",
    "then_staircase",
    "make_geometric",
    "then_geometric",
    "make_hadamard_mechanism",
    "then_hadamard_mechanism",
    "make_the",
    "then_the",
    "make_orr",
    "then_orr",
    "make_orappor",
    "then_orappor",
    "make_sample_one",
    "make_set_ldp",
    "set_domain",
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
    "ORR",
    "ORAPPOR",
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
]
