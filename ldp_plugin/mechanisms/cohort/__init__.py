"""The cohort mechanisms (Kairouz, Bonawitz & Ramage (ICML 2016) §5: O-RR, O-RAPPOR; Apple's CMS and HCMS; the private count
sketch): users fall into data-independent hash cohorts, the server decodes candidate items.

* :mod:`.base` — the shared client (cohorts, hashed cells, closed-alphabet permutations) and the
  report batch :class:`CohortReports`;
* :mod:`.oracles` — the five families;
* :mod:`.server` — the mergeable cell counts and the two decoders (least squares, streamed sketch).

One-way imports: ``oracles → base → server``.
"""

from .base import MAX_COHORTS, MAX_K, MAX_TABLE, CohortReports, _CohortMechanism, report_batch_arrays, report_batch_from_arrays
from .oracles import CMS, HCMS, ORAPPOR, ORR, CountSketch
from .server import DECODERS, MAX_DENSE, OTHER, CohortAccumulator
from .design import DENSE_LIMIT

__all__ = ["CohortReports", "CohortAccumulator", "ORR", "ORAPPOR", "CMS", "HCMS", "CountSketch", "OTHER", "DECODERS", "DENSE_LIMIT",
           "MAX_DENSE", "MAX_K", "MAX_COHORTS", "MAX_TABLE", "report_batch_arrays", "report_batch_from_arrays", "_CohortMechanism"]
