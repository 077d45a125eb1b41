"""Per-user sets: the public face of :mod:`ldp_plugin.mechanisms.sets` (CSR set batches, the
padding item) and :class:`SampleOne` (padding-and-sampling through any categorical mechanism)."""

from .mechanisms.sample_one import SampleOne
from .mechanisms.sets import ON_LONG, PAD, SetBatch, as_set_batch, gather_sets, is_item_batch, limit_sets, set_codes, subsets_up_to

__all__ = ["PAD", "SetBatch", "as_set_batch", "SampleOne", "set_codes", "limit_sets", "subsets_up_to", "gather_sets", "is_item_batch", "ON_LONG"]
