"""Collections that survive fake users: certified poisoning bounds (:mod:`.bounds`), detection of
implausible reports and nodes (:mod:`.detection`), robust aggregation across nodes
(:mod:`.aggregation`), and the maximal-gain attack they are measured against (:mod:`.attack`).

Reference: Cao, Jia and Gong, "Data Poisoning Attacks to Local Differential Privacy Protocols",
USENIX Security 2021."""

from .attack import AttackResult, fake_count, max_gain_reports, measure_gain
from .aggregation import RULES, RobustEstimate, combine, combine_accumulators, report_sd
from .bounds import PoisonBound, poison_bound, worst_case_gain
from .detection import IMPOSSIBLE_REASON, DetectionResult, NodeTest, detect, duplicate_nonces, node_consistency

__all__ = ["AttackResult", "fake_count", "max_gain_reports", "measure_gain", "PoisonBound", "poison_bound", "worst_case_gain",
           "RULES", "RobustEstimate", "combine", "combine_accumulators", "report_sd",
           "IMPOSSIBLE_REASON", "DetectionResult", "NodeTest", "detect", "duplicate_nonces", "node_consistency"]
