"""Mechanism families: one module each, all sharing :mod:`._base`."""

from .channel import Channel
from ._base import FrequencyAccumulator, FrequencyOracle
from .cohort import CMS, HCMS, CountSketch, ORAPPOR, ORR, CohortAccumulator, CohortReports
from .extremal import BinaryMechanism, FiniteChannel, GeometricMechanism, StaircaseMechanism
from .hadamard import HadamardMechanism, HadamardResponse
from .set_baselines import PrivSet, RapporSet, SetAccumulator
from .wheel import Wheel
from .base import MechanismBase
from .protocol import Mechanism
from .reports import ReportField
from .sample_one import SampleOne
from .local_hashing import OLH
from .randomized_response import KRR, WarnerRR
from .subset import KSubset
from .unary import OUE, RAPPOR, RUE, THE, UnaryEncoding
from .numeric import Duchi, Hybrid, MeanEstimate, OneBitMean, Piecewise
from .longitudinal import LGRR, LOLOHA, LifetimeTracker
from .longitudinal import LOSUE, LOUE, LSUE, DBitFlipPM

__all__ = ["Mechanism", "MechanismBase", "ReportField", "SampleOne", "Channel", "FrequencyAccumulator", "FrequencyOracle", "KRR", "WarnerRR", "KSubset", "OLH", "HadamardResponse", "HadamardMechanism", "THE", "BinaryMechanism", "FiniteChannel", "GeometricMechanism", "StaircaseMechanism", "Wheel", "RapporSet", "PrivSet", "SetAccumulator", "ORR", "ORAPPOR", "CMS", "HCMS", "CountSketch", "CohortReports", "CohortAccumulator", "OUE", "RAPPOR", "RUE", "UnaryEncoding", "Duchi", "Piecewise", "Hybrid", "OneBitMean", "MeanEstimate", "LGRR", "LOUE", "LOSUE", "LSUE", "LOLOHA", "DBitFlipPM", "LifetimeTracker"]
