"""The analyses combined: the smallest certified central δ at an ε (:func:`central_delta`) and the
central (ε, δ) of ``n`` shuffled reports with every analysis's own bound (:func:`amplify`)."""

from __future__ import annotations

from typing import Any

from .._extras import require_extra
from .blanket import blanket_delta, blanket_epsilon, blanket_parameters
from .variation import generic_parameters, shuffle_delta, shuffle_epsilon, variation_parameters

__all__ = ["central_delta", "amplify"]


def _require_scipy() -> None:
    require_extra("scipy", "shuffle", "shuffle-model accounting needs SciPy")  # the binomial tails of both bounds


def central_delta(mechanism: Any, n: int, epsilon: float) -> float:
    """The smallest certified δ at ``epsilon`` over the analyses that apply (0 at ``ε >= ε0``:
    the shuffled batch stays ε0-DP)."""
    eps0 = float(mechanism.epsilon)
    if epsilon >= eps0:
        return 0.0
    e = max(float(epsilon), 0.0)
    best = min(shuffle_delta(e, variation_parameters(mechanism), n), shuffle_delta(e, generic_parameters(eps0), n))
    bp = blanket_parameters(mechanism)
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
    bp = blanket_parameters(mechanism)
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
