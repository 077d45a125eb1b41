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

from typing import Any

from .blanket import BlanketParameters, blanket_delta, blanket_epsilon
from .measurement import make_shuffle_amplified
from .variation import (
    VariationParameters,
    _up,
    binary_rr_exact_lower,
    exact_variation_parameters,
    generic_parameters,
    shuffle_delta,
    shuffle_epsilon,
    variation_parameters,
)
from .._errors import LDPParameterError

__all__ = ["VariationParameters", "variation_parameters", "exact_variation_parameters", "generic_parameters",
           "shuffle_epsilon", "shuffle_delta", "binary_rr_exact_lower", "BlanketParameters", "blanket_delta",
           "blanket_epsilon", "central_delta", "make_shuffle_amplified", "amplify", "_up"]


def _require_scipy() -> None:
    import importlib.util

    if importlib.util.find_spec("scipy") is None:  # the binomial tails of both bounds

        raise LDPParameterError("shuffle-model accounting needs SciPy: pip install 'ldp-plugin[shuffle]'")


def central_delta(mechanism: Any, n: int, epsilon: float) -> float:
    """The smallest certified δ at ``epsilon`` over the analyses that apply (0 at ``ε >= ε0``:
    the shuffled batch stays ε0-DP)."""
    eps0 = float(mechanism.epsilon)
    if epsilon >= eps0:
        return 0.0
    e = max(float(epsilon), 0.0)
    best = min(shuffle_delta(e, variation_parameters(mechanism), n), shuffle_delta(e, generic_parameters(eps0), n))
    bp = mechanism.blanket_parameters()
    if bp is not None:
        best = min(best, blanket_delta(e, bp, n))
    return best


def amplify(mechanism: Any, n: int, delta: float) -> dict:
    """Central (ε, δ) of ``n`` shuffled reports of ``mechanism``: the upper bound (the smallest
    of the analyses that apply, never above ε0), the exact lower bound where it applies, each
    analysis's own ε, and the parameters."""
    _require_scipy()
    vp = variation_parameters(mechanism)
    generic = generic_parameters(mechanism.epsilon)
    specific_eps = shuffle_epsilon(vp, n, delta)
    generic_eps = shuffle_epsilon(generic, n, delta)
    bp = mechanism.blanket_parameters()
    blanket_eps = None if bp is None else blanket_epsilon(bp, n, delta, epsilon0=float(mechanism.epsilon))
    candidates = {"variation-ratio (Wang et al., VLDB 2024), parameters " + vp.method: specific_eps,
                  "variation-ratio, generic parameters (any eps0-LDP randomizer)": generic_eps}
    if blanket_eps is not None:
        candidates[bp.method] = blanket_eps
    method = min(candidates, key=candidates.get)
    return {
        "epsilon": min(min(candidates.values()), float(mechanism.epsilon)),  # each an upper bound of its analysis
        "epsilon_lower": shuffle_epsilon(vp, n, delta, upper=False),
        "epsilon_specific": specific_eps,
        "epsilon_generic": generic_eps,
        "epsilon_blanket": blanket_eps,
        "epsilon_local": mechanism.epsilon,
        "delta": delta,
        "n": int(n),
        "p": vp.p,
        "beta": vp.beta,
        "q": vp.q,
        "gamma": None if bp is None else bp.gamma,
        "method": method,
        "assumption": f"a trusted shuffler releases batches of at least n={int(n)} reports without identities or order",
    }
