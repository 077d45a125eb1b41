"""Simulations of repeated collections and of numeric means (``ldp longitudinal simulate``,
``ldp mean simulate``): seeded, so a run is reproducible; the real client and estimator run
unchanged (only the randomness and the users' keys are seeded — a device uses ``os.urandom``).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Optional

import numpy as np

from ._errors import LDPParameterError
from .workload import check_work
from .sampling.source import SeededRandomSource

__all__ = ["simulate_longitudinal", "simulate_mean", "zipf_distribution", "LONGITUDINAL_NAMES", "MEAN_NAMES", "build_longitudinal", "build_mean"]

LONGITUDINAL_NAMES = ("l-grr", "l-oue", "l-osue", "l-sue", "dbitflip", "loloha")
MEAN_NAMES = ("duchi", "piecewise", "hybrid", "one-bit-mean")


def build_longitudinal(name: str, *, d: int, epsilon_perm: float, epsilon_1: float, **params: Any):
    from .mechanisms.longitudinal import LGRR, LOLOHA
    from .mechanisms.longitudinal_unary import LOSUE, LOUE, LSUE, DBitFlipPM

    table = {"l-grr": LGRR, "l-oue": LOUE, "l-osue": LOSUE, "l-sue": LSUE, "dbitflip": DBitFlipPM, "loloha": LOLOHA}
    if name not in table:
        raise LDPParameterError(f"unknown longitudinal mechanism {name!r}; choose one of {', '.join(LONGITUDINAL_NAMES)}")
    return table[name](epsilon_perm=epsilon_perm, epsilon_1=epsilon_1, d=d, **params)


def build_mean(name: str, *, epsilon: float, **params: Any):
    from .mechanisms import numeric

    table = {"duchi": numeric.Duchi, "piecewise": numeric.Piecewise, "hybrid": numeric.Hybrid, "one-bit-mean": numeric.OneBitMean}
    if name not in table:
        raise LDPParameterError(f"unknown mean mechanism {name!r}; choose one of {', '.join(MEAN_NAMES)}")
    return table[name](epsilon=epsilon, **params)


def zipf_distribution(d: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, d + 1) ** s
    return w / w.sum()


def _sim_keys(seed: int, n: int) -> list:
    """Simulation-only user keys, reproducible from the seed (a device draws its key from the OS)."""
    base = hashlib.sha256(b"ldp-sim-keys" + int(seed).to_bytes(8, "little")).digest()
    return [hashlib.blake2b(i.to_bytes(8, "little"), key=base, digest_size=32).digest() for i in range(n)]


def simulate_longitudinal(mechanism: Any, *, rounds: int, change_prob: float, n: int, seed: int = 0, repeats: int = 1,
                          theta: Optional[np.ndarray] = None, progress: bool = False) -> dict:
    """``rounds`` collections from the same ``n`` users (values from ``theta``, default Zipf(1.1)
    over ``d``; before each round after the first, each user redraws the value with probability
    ``change_prob``), for ``repeats`` independent populations (own keys and data). Per round: the
    measured squared l2 error of the raw estimate against the users' true frequencies and its
    analytic value, averaged over the populations; per user: the exact lifetime charge.

    One population's rounds share its memoized reports, so their errors are correlated (for
    dBitFlipPM, which has no instantaneous layer, nearly identical): the measured MSE of a
    single population scatters by about ``sqrt(2/d)`` around the analytic one; ``repeats``
    averages independent populations."""
    from .mechanisms.longitudinal import LifetimeTracker

    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 10_000:
        raise LDPParameterError(f"rounds must be an integer in [1, 10000] (got {rounds!r})")
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 10**7:
        raise LDPParameterError(f"n must be an integer in [2, 10^7] (got {n!r})")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 1000:
        raise LDPParameterError(f"repeats must be an integer in [1, 1000] (got {repeats!r})")
    if isinstance(change_prob, bool) or not isinstance(change_prob, (int, float)) or not 0 <= change_prob <= 1:
        raise LDPParameterError(f"change_prob must be in [0, 1] (got {change_prob!r})")
    check_work(float(n) * rounds * repeats, rate=2e6, what=f"{repeats:,} populations of {n:,} users over {rounds:,} rounds",
               options="--n, --rounds or --repeats")
    d = mechanism.d
    theta = zipf_distribution(d) if theta is None else np.asarray(theta, dtype=np.float64)
    mse = np.zeros(rounds)
    amse = np.zeros(rounds)
    spends = []
    t0 = time.perf_counter()
    for rep in range(repeats):
        data = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, rep)))
        keys = _sim_keys(seed * 1000 + rep, n)
        values = data.choice(d, size=n, p=theta)
        tracker = LifetimeTracker(mechanism, n)
        for t in range(rounds):
            if t:
                change = data.random(n) < change_prob
                values[change] = data.choice(d, size=int(change.sum()), p=theta)
            tracker.observe(values, keys)
            reports = mechanism.randomize(values, keys, rng=SeededRandomSource(seed, stream=(2, rep, t)))
            est = mechanism.estimate(reports, postprocess="none")
            f = np.bincount(values, minlength=d) / n
            mse[t] += float(((est.raw - f) ** 2).sum()) / repeats
            amse[t] += mechanism.analytic_mse(n, theta=f) / repeats
            if progress:
                print(f"  population {rep + 1}/{repeats}, round {t + 1}/{rounds}", flush=True)
        spends.append(tracker.spend())
    spend = np.concatenate(spends)
    return {
        "mechanism": mechanism.spec(),
        "n": n, "rounds_count": rounds, "change_prob": change_prob, "seed": seed, "repeats": repeats,
        "max_user_spend": float(spend.max()),
        "mean_user_spend": float(spend.mean()),
        "spend_bound": float(mechanism.unit_bound() * mechanism.epsilon_perm),
        "mse": float(mse.mean()), "analytic_mse": float(amse.mean()), "mse_ratio": float(mse.mean() / amse.mean()),
        "rounds": [{"round": t + 1, "mse": float(mse[t]), "analytic_mse": float(amse[t])} for t in range(rounds)],
        "seconds": round(time.perf_counter() - t0, 3),
    }


def simulate_mean(mechanism: Any, *, n: int, repeats: int, seed: int = 0, confidence: float = 0.95) -> dict:
    """``repeats`` independent randomizations of one population of ``n`` numbers (Beta(2, 5) on
    ``[lower, upper]``): the measured MSE of the mean estimate, its analytic value, and how
    often the interval covered the true mean."""
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 10**8:
        raise LDPParameterError(f"n must be an integer in [2, 10^8] (got {n!r})")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 10**5:
        raise LDPParameterError(f"repeats must be an integer in [1, 10^5] (got {repeats!r})")
    check_work(float(n) * repeats, rate=2e7, what=f"{repeats:,} randomizations of {n:,} numbers", options="--n or --repeats")
    data = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    values = mechanism.lower + (mechanism.upper - mechanism.lower) * data.beta(2.0, 5.0, size=n)
    truth = float(values.mean())
    t0 = time.perf_counter()
    errs, covered = [], 0
    for r in range(repeats):
        est = mechanism.estimate(mechanism.randomize(values, rng=SeededRandomSource(seed, stream=(2, r))), confidence=confidence)
        errs.append((est.mean - truth) ** 2)
        covered += est.ci_lower <= truth <= est.ci_upper
    return {
        "mechanism": mechanism.spec(), "n": n, "repeats": repeats, "seed": seed, "true_mean": truth,
        "mse": float(np.mean(errs)), "analytic_mse": mechanism.analytic_mse(n, values=values),
        "coverage": covered / repeats, "confidence": confidence,
        "seconds": round(time.perf_counter() - t0, 3),
    }
