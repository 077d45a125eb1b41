"""The maximal-gain attack (MGA) of Cao, Jia and Gong, "Data Poisoning Attacks to Local
Differential Privacy Protocols", USENIX Security 2021 (MGA): ``m`` fake users send the well-formed
reports that maximize the estimated frequencies of chosen target items (the mechanism crafts them:
:class:`~ldp_plugin.mechanisms.protocol.MaxGainAttack`), and the gain is the change of the targets'
estimates, ``G = Σ_t E[f̃_t,after − f̃_t,before]`` (their eq. 2; here per target, measured on one run).

Used by the tests (the certified bound of :mod:`.bounds` against the measured gain) and the
benchmarks; an attack is a test instrument, never part of a collection."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._errors import LDPParameterError
from ..mechanisms.protocol import MaxGainAttack, has

__all__ = ["AttackResult", "fake_count", "max_gain_reports", "measure_gain"]


@dataclass(frozen=True)
class AttackResult:
    """The honest-only and the poisoned accumulators and estimates, and the per-target gain."""

    honest: Any
    poisoned: Any
    before: Any
    after: Any
    targets: np.ndarray
    gain: np.ndarray
    m: int
    fraction: float


def fake_count(n_honest: int, fraction: float) -> int:
    """``m`` fakes so that they are a fraction ``β`` of all ``n + m`` reports: ``round(β n/(1 − β))``."""
    if not 0 < fraction < 1:
        raise LDPParameterError("fraction must be in (0, 1)")
    return int(round(fraction * n_honest / (1 - fraction)))


def max_gain_reports(mechanism: Any, targets: Any, m: int, *, rng: Any = None) -> Any:
    """``m`` maximal-gain fake reports for ``targets`` (the mechanism's own crafting)."""
    if not has(mechanism, MaxGainAttack):
        raise LDPParameterError(f"{mechanism.name} declares no maximal-gain reports")
    return mechanism.max_gain_reports(targets, int(m), rng=rng)


def measure_gain(mechanism: Any, honest_reports: Any, targets: Any, *, fraction: Optional[float] = None, m: Optional[int] = None,
                 fake_reports: Any = None, rng: Any = None, postprocess: str = "none") -> AttackResult:
    """Aggregate ``honest_reports`` alone and with the fakes; the gain per target (``postprocess``
    applies to both estimates; ``"none"``: the raw estimates, as in Cao et al.)."""
    honest = mechanism.accumulator().add(honest_reports)
    t = np.asarray(targets).ravel()
    if fake_reports is None:
        m = fake_count(honest.n, fraction) if m is None else int(m)
        fake_reports = max_gain_reports(mechanism, t, m, rng=rng)
    poisoned = mechanism.accumulator().add(honest_reports).add(fake_reports)
    m = poisoned.n - honest.n
    before = mechanism.estimate_from(honest, postprocess=postprocess)
    after = mechanism.estimate_from(poisoned, postprocess=postprocess)
    idx = t.astype(np.int64)
    gain = np.asarray(after.estimate)[idx] - np.asarray(before.estimate)[idx]
    return AttackResult(honest, poisoned, before, after, t, gain, int(m), m / poisoned.n if poisoned.n else math.nan)
