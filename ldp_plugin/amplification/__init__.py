"""Shuffle-model accounting: the central (ε, δ) of a shuffled batch of n ε0-LDP reports.

**Trust assumption.** The bound holds only if a shuffler the users trust removes identities and
order from a batch of at least ``n`` reports (after dropouts) before the analyst sees it; the
local ε0 stays the enforced budget, the central (ε, δ) is reported beside it
(:meth:`ldp_plugin.accountant.Accountant.record_shuffle` records it, and
:meth:`~ldp_plugin.accountant.Accountant.central_epsilon` composes the records with dp_accounting's
privacy-loss-distribution accountant).

Two certified upper bounds, the smaller is reported (each is an upper bound on its own):

* :mod:`.variation` — the variation-ratio analysis of Wang et al. (VLDB 2024), for every
  randomizer, with ``(p, β, q)`` from the mechanism's closed form or its exact realized channel,
  and the generic Feldman–McMillan–Talwar parameters as a cross-check;
* :mod:`.blanket` — the privacy-blanket analysis (Balle et al., CRYPTO 2019) for randomized
  response (k-RR, binary RR), tight to a few digits against the exact divergence of a concrete
  neighbouring pair.

And the matching exact lower bound where one exists (a concrete neighbouring pair's exact
divergence: :func:`.variation.shuffle_epsilon` with ``upper=False``,
:func:`.variation.binary_rr_exact_lower`), so users see the gap.
"""

from __future__ import annotations

from .blanket import BlanketParameters, blanket_delta, blanket_epsilon, blanket_parameters
from .analysis import amplify, central_delta
from .measurement import make_shuffle_amplified
from .variation import (
    VariationParameters,
    _up,
    binary_rr_exact_lower,
    exact_variation_parameters,
    mechanism_variation_parameters,
    generic_parameters,
    shuffle_delta,
    shuffle_epsilon,
    variation_parameters,
)

__all__ = ["VariationParameters", "variation_parameters", "exact_variation_parameters", "generic_parameters",
           "shuffle_epsilon", "shuffle_delta", "binary_rr_exact_lower", "BlanketParameters", "blanket_delta",
           "blanket_epsilon", "blanket_parameters", "mechanism_variation_parameters", "central_delta", "make_shuffle_amplified", "amplify", "_up"]
