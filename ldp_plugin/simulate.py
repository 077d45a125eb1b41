"""Simulated collections: generate users from a true distribution, randomize, estimate, score.

Used by ``ldp simulate``, ``ldp demo``, the tests and the benchmarks. The users' values are drawn
with a seeded NumPy generator (data generation is not a privacy step); the *randomization* uses
the library's sampling layer: the OS CSPRNG unless a seed is given.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from ._errors import LDPParameterError
from .estimation import POSTPROCESS_CHOICES
from .sampling import SecureRandomSource, SeededRandomSource

__all__ = ["DISTRIBUTIONS", "true_distribution", "draw_users", "draw_sets", "simulate", "SimulationResult"]

DISTRIBUTIONS = ("dirichlet", "zipf", "geometric", "uniform")
TRUTHS = ("empirical", "population")


def true_distribution(kind: str, d: int, gen: np.random.Generator) -> np.ndarray:
    """A true distribution θ over d items: ``dirichlet`` (a fresh θ ~ Dirichlet(1), paper 001
    §5), ``zipf`` (θ_i ∝ 1/(i+1)^1.1), ``geometric`` (θ_i ∝ 0.8^i), ``uniform``."""
    if kind == "dirichlet":
        return gen.dirichlet(np.ones(d))
    if kind == "zipf":
        w = 1.0 / np.arange(1, d + 1) ** 1.1
    elif kind == "geometric":
        w = 0.8 ** np.arange(d)
    elif kind == "uniform":
        w = np.ones(d)
    else:
        raise LDPParameterError(f"distribution must be one of {DISTRIBUTIONS} (got {kind!r})")
    return w / w.sum()


def draw_users(theta: np.ndarray, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n users i.i.d. from θ: returns (values as codes, per-item counts)."""
    counts = gen.multinomial(n, theta)
    values = np.repeat(np.arange(theta.size, dtype=np.int64), counts)
    gen.shuffle(values)
    return values, counts


def draw_sets(theta: np.ndarray, n: int, m: int, gen: np.random.Generator):
    """n users whose sets hold ``m`` distinct items drawn from θ without replacement (successive
    sampling, by the Gumbel-top-m trick), as a CSR :class:`ldp_plugin.sets.SetBatch`, and the true
    frequencies ``f_v`` = fraction of users holding ``v``."""
    from .sets import SetBatch

    d = theta.size
    if not 1 <= m <= d:
        raise LDPParameterError(f"m must be in [1, d] (got m={m}, d={d})")
    logt = np.log(np.maximum(theta, 1e-300))
    out = np.empty((n, m), dtype=np.int64)
    step = max(1, (1 << 22) // d)
    for lo in range(0, n, step):
        g = logt[None, :] + gen.gumbel(size=(min(step, n - lo), d))
        out[lo : lo + g.shape[0]] = np.argpartition(-g, m - 1, axis=1)[:, :m]
    f = np.bincount(out.ravel(), minlength=d) / n
    return SetBatch(out.ravel(), np.arange(0, n * m + 1, m, dtype=np.int64)), f


@dataclass(frozen=True)
class SimulationResult:
    mechanism: dict
    n: int
    repeats: int
    distribution: str
    postprocess: str
    truth: str
    secure_randomness: bool
    mean_l2_squared: float
    mean_l1: float
    mean_linf: float
    mean_l2_squared_raw: float
    analytic_mse: float
    randomize_seconds: float
    aggregate_seconds: float
    m: int = 1

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def simulate(
    mechanism: Any,
    *,
    n: int,
    repeats: int = 1,
    distribution: str = "dirichlet",
    postprocess: str = "projection",
    truth: str = "empirical",
    seed: Optional[int] = None,
) -> SimulationResult:
    """Run ``repeats`` simulated collections of ``n`` users.

    ``truth="empirical"``: errors against the users' empirical distribution (paper 001 §3 defines
    θ_j = #{i: x_i = X_j}/n); ``analytic_mse`` is then the fixed-population MSE of the raw
    estimator. ``truth="population"``: errors against the generating θ; ``analytic_mse`` adds the
    sampling term ``(1 − Σθ²)/n`` (paper 002 Prop. 3–4). Errors are those of the post-processed
    estimate; ``mean_l2_squared_raw`` is the raw estimator's, comparable with ``analytic_mse``.
    Times are totals over the repeats.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise LDPParameterError("n must be an integer >= 1")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise LDPParameterError("repeats must be an integer >= 1")
    if postprocess not in POSTPROCESS_CHOICES:
        raise LDPParameterError(f"postprocess must be one of {POSTPROCESS_CHOICES} (got {postprocess!r})")
    if truth not in TRUTHS:
        raise LDPParameterError(f"truth must be one of {TRUTHS} (got {truth!r})")
    if distribution not in DISTRIBUTIONS:
        raise LDPParameterError(f"distribution must be one of {DISTRIBUTIONS} (got {distribution!r})")
    from .sets import SampleOne

    gen = np.random.default_rng(seed)
    source = SeededRandomSource(int(gen.integers(0, 2**63))) if seed is not None else SecureRandomSource()
    is_set = isinstance(mechanism, SampleOne)
    native_set = hasattr(mechanism, "verification_inputs") and hasattr(mechanism, "_randomize_csr")
    base = mechanism.mechanism if is_set else mechanism
    d = base.d
    if d is None:
        raise LDPParameterError("simulate needs a closed-alphabet mechanism (give d)")
    m = mechanism.m if (is_set or native_set) else 1
    l2 = l1 = linf = l2raw = mse = 0.0
    t_rand = t_agg = 0.0
    for _ in range(repeats):
        theta = true_distribution(distribution, d, gen)
        if native_set:
            data, f = draw_sets(theta, int(n), m, gen) if m > 1 else draw_users(theta, int(n), gen)
            target = f if m > 1 else f / n
        elif is_set:
            data, f = draw_sets(theta, int(n), m, gen)
            target = f  # the true frequencies; the padded mechanism sees θ = f/m
        else:
            data, counts = draw_users(theta, int(n), gen)
            target = counts / n if truth == "empirical" else theta
        t0 = time.perf_counter()
        reports = mechanism.randomize(data, rng=source) if (is_set or native_set) else (
            mechanism._randomize_codes(data, source) if hasattr(mechanism, "_randomize_codes") else mechanism.randomize_encoded(data, rng=source)
        )
        t1 = time.perf_counter()
        acc = mechanism.accumulator().add(reports)
        est = mechanism.estimate_from(acc, postprocess=postprocess) if is_set else acc.estimate(postprocess=postprocess)
        t2 = time.perf_counter()
        t_rand += t1 - t0
        t_agg += t2 - t1
        err = est.estimate - target
        l2 += float(err @ err)
        l1 += float(np.abs(err).sum())
        linf += float(np.abs(err).max())
        rerr = est.raw - target
        l2raw += float(rerr @ rerr)
        if native_set:
            mse += mechanism.mse(int(n), target)
        else:
            mse += _analytic_mse(mechanism, int(n), theta, target if is_set else None, truth)
    r = float(repeats)
    return SimulationResult(
        mechanism=mechanism.params(),
        n=int(n),
        repeats=int(repeats),
        distribution=distribution,
        postprocess=postprocess,
        truth=truth,
        secure_randomness=source.secure,
        mean_l2_squared=l2 / r,
        mean_l1=l1 / r,
        mean_linf=linf / r,
        mean_l2_squared_raw=l2raw / r,
        analytic_mse=mse / r,
        randomize_seconds=t_rand,
        aggregate_seconds=t_agg,
        m=m,
    )


def _analytic_mse(mechanism, n: int, theta: np.ndarray, f: Optional[np.ndarray], truth: str) -> float:
    """The raw estimator's expected squared l2 error (fixed population; sets: ``m² ·`` the padded
    mechanism's per-item variances at ``θ = f/m``; cohort mechanisms: their prediction)."""
    from .sets import SampleOne

    if isinstance(mechanism, SampleOne):
        m, padded = mechanism.m, mechanism.padded
        if hasattr(padded, "variance"):
            # every user holds exactly m items and the sampled one is random: a holder of i
            # supports it with probability π₁ = q* + (p*−q*)/m
            p, q = padded.p_star, padded.q_star
            pi1 = q + (p - q) / m
            var = (f * pi1 * (1 - pi1) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)
            return float(m * m * var.sum())
        d = f.size + 1
        iid = padded.predicted_mse(n, S=d) + (1 - 1 / d) / n
        return float(m * m * iid * (d - 1) / d - float(np.sum(f * (1 - f))) / n)
    if hasattr(mechanism, "mse"):
        return mechanism.mse(n, theta, sampling="fixed" if truth == "empirical" else "iid")
    extra = 0.0 if truth == "empirical" else (1 - float(np.sum(theta**2))) / n
    return mechanism.predicted_mse(n) + extra


def parse_params(pairs: list[str]) -> Mapping[str, Any]:
    """``KEY=VALUE`` strings → dict (integers parsed as ints, floats as floats)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LDPParameterError(f"--param takes KEY=VALUE (got {pair!r})")
        for conv in (int, float):
            try:
                out[key] = conv(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out
