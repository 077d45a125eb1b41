"""Simulated collections: generate users from a true distribution, randomize, estimate, score.

Used by ``ldp simulate``, ``ldp demo``, the tests and the benchmarks. The users' values are drawn
with a seeded NumPy generator (data generation is not a privacy step); the *randomization* uses
the library's sampling layer: the OS CSPRNG unless a seed is given.

Also the simulations of repeated collections and of numeric means (``ldp longitudinal simulate``,
``ldp mean simulate``; formerly ``series.py``): seeded, so a run is reproducible; the real client
and estimator run unchanged (only the randomness and the users' keys are seeded — a device uses
``os.urandom``).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import numpy as np

from ._errors import LDPParameterError
from .sampling.kernels import preload
from ._validation import check_choice, check_int, check_real
from ._boundary.workload import check_memory, check_work
from .estimation import POSTPROCESS_CHOICES
from .exact import float_up
from .progress import progress as progress_bar
from .mechanisms import numeric
from .mechanisms.longitudinal import LGRR, LOLOHA, LifetimeTracker
from .mechanisms.longitudinal import LOSUE, LOUE, LSUE, DBitFlipPM
from .mechanisms.reports import wire_size
from .mechanisms.sets import SetBatch
from .sampling import SecureRandomSource, SeededRandomSource

__all__ = ["DISTRIBUTIONS", "true_distribution", "draw_users", "draw_sets", "simulate", "SimulationResult", "simulate_longitudinal", "simulate_mean", "zipf_distribution", "LONGITUDINAL_NAMES", "MEAN_NAMES", "build_longitudinal", "build_mean"]

DISTRIBUTIONS = ("dirichlet", "zipf", "geometric", "uniform")
TRUTHS = ("empirical", "population")


def true_distribution(kind: str, d: int, gen: np.random.Generator) -> np.ndarray:
    """A true distribution θ over d items: ``dirichlet`` (a fresh θ ~ Dirichlet(1), Wang et al. (arXiv 2016)
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
    check_memory(16.0 * n, what=f"drawing n={n:,} users", options="--n")
    counts = gen.multinomial(n, theta)
    values = np.repeat(np.arange(theta.size, dtype=np.int64), counts)
    gen.shuffle(values)
    return values, counts


def draw_sets(theta: np.ndarray, n: int, m: int, gen: np.random.Generator):
    """n users whose sets hold ``m`` distinct items drawn from θ without replacement (successive
    sampling, by the Gumbel-top-m trick), as a CSR :class:`ldp_plugin.sets.SetBatch`, and the true
    frequencies ``f_v`` = fraction of users holding ``v``."""

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

    ``truth="empirical"``: errors against the users' empirical distribution (Wang et al. (arXiv 2016) §3 defines
    θ_j = #{i: x_i = X_j}/n); ``analytic_mse`` is then the fixed-population MSE of the raw
    estimator. ``truth="population"``: errors against the generating θ; ``analytic_mse`` adds the
    sampling term ``(1 − Σθ²)/n`` (Kairouz, Bonawitz & Ramage (ICML 2016) Prop. 3–4). Errors are those of the post-processed
    estimate; ``mean_l2_squared_raw`` is the raw estimator's, comparable with ``analytic_mse``.
    Times are totals over the repeats.
    """
    n = check_int("n", n, 1)
    repeats = check_int("repeats", repeats, 1)
    check_choice("postprocess", postprocess, POSTPROCESS_CHOICES)
    if truth not in TRUTHS:
        raise LDPParameterError(f"truth must be one of {TRUTHS} (got {truth!r})")
    if distribution not in DISTRIBUTIONS:
        raise LDPParameterError(f"distribution must be one of {DISTRIBUTIONS} (got {distribution!r})")
    check_memory(16.0 * n, what=f"a simulation of n={n:,} users", options="--n")
    check_work(float(n) * repeats + float(mechanism.domain_size or 0) * repeats, rate=2e7,
               what=f"{repeats:,} simulated collections of {n:,} users", options="--n or --repeats")
    gen = np.random.default_rng(seed)
    source = SeededRandomSource(int(gen.integers(0, 2**63))) if seed is not None else SecureRandomSource()
    is_set = mechanism.input_kind == "set"
    d = mechanism.domain_size
    if d is None:
        raise LDPParameterError("simulate needs a closed-alphabet mechanism (give d)")
    check_simulation_memory(mechanism, int(n))

    preload(int(n) * int(d))  # load the optional kernels now if they will be used: never counted in randomize_seconds
    m = mechanism.m if is_set else 1
    l2 = l1 = linf = l2raw = mse = 0.0
    t_rand = t_agg = 0.0
    for _ in progress_bar(range(repeats), total=repeats, desc="ldp simulate", unit="collection"):
        theta = true_distribution(distribution, d, gen)
        if is_set and m > 1:
            data, target = draw_sets(theta, int(n), m, gen)
        else:
            data, counts = draw_users(theta, int(n), gen)
            target = counts / n if (truth == "empirical" or is_set) else theta
        t0 = time.perf_counter()
        reports = mechanism.randomize(data, rng=source) if is_set else mechanism.randomize_encoded(data, rng=source)
        t1 = time.perf_counter()
        acc = mechanism.accumulator().add(reports)
        est = mechanism.estimate_from(acc, postprocess=postprocess)
        t2 = time.perf_counter()
        t_rand += t1 - t0
        t_agg += t2 - t1
        err = est.estimate - target
        l2 += float(err @ err)
        l1 += float(np.abs(err).sum())
        linf += float(np.abs(err).max())
        rerr = est.raw - target
        l2raw += float(rerr @ rerr)
        mse += mechanism.analytic_mse(int(n), theta=theta, f=target if is_set else None, sampling="fixed" if (truth == "empirical" or is_set) else "iid")
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


def check_simulation_memory(mechanism: Any, n: int, limit_bytes: int = 8 << 30) -> None:
    """Refuse, before allocating, a simulation whose per-item arrays or reports would not fit
    (d and n are checked against ``limit_bytes``; a clear error instead of being OOM-killed)."""
    d = mechanism.domain_size or 0
    report_bytes = wire_size(mechanism, n) if n else 0
    need = 48 * d + 2 * report_bytes + 24 * n
    if need > limit_bytes:
        raise LDPParameterError(
            f"this simulation needs about {need / 2**30:.1f} GiB (d={d}, n={n}); the limit is {limit_bytes / 2**30:.0f} GiB: "
            "use a smaller --d or --n"
        )


#: ``--param`` keys that are options of the commands themselves (given as ``--param`` they would
#: reach the builder twice)
OPTION_KEYS = {
    "epsilon": "--epsilon", "d": "--d", "m": "--m", "n": "--n", "categories": "--d or the job's categories",
    "epsilon_perm": "--epsilon-perm", "epsilon_1": "--epsilon-1", "seed": "--seed", "rng": "--seed", "on_long": "the job's on_long",
}


def parse_params(pairs: list[str], options: Optional[Iterable[str]] = None) -> Mapping[str, Any]:
    """``KEY=VALUE`` strings → dict (integers as ints, floats as floats, ``[a, b]`` as a JSON
    list, anything else as text). ``options``: the keys of :data:`OPTION_KEYS` that are options of
    the calling command (default: all); only those are refused as duplicates."""
    import json

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LDPParameterError(f"--param takes KEY=VALUE (got {pair!r})")
        if key in OPTION_KEYS and (options is None or key in options):
            opt = OPTION_KEYS[key]
            raise LDPParameterError(f"--param {key}=... duplicates the option {opt}; give {key} once, as {opt}")
        if key in out:
            raise LDPParameterError(f"--param {key} is given twice; give each parameter once")
        if value.strip().startswith("["):
            try:
                out[key] = json.loads(value)
            except ValueError:
                raise LDPParameterError(f"--param {key}=[...] must be a JSON list, e.g. {key}=[0.5,0.3,0.2]") from None
            continue
        for conv in (int, float):
            try:
                out[key] = conv(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


# -- repeated collections (longitudinal) and numeric means ------------------------------------------------
LONGITUDINAL_NAMES = ("l-grr", "l-oue", "l-osue", "l-sue", "dbitflip", "loloha")
MEAN_NAMES = ("duchi", "piecewise", "hybrid", "one-bit-mean")


def build_longitudinal(name: str, *, d: int, epsilon_perm: float, epsilon_1: float, **params: Any):
    table = {"l-grr": LGRR, "l-oue": LOUE, "l-osue": LOSUE, "l-sue": LSUE, "dbitflip": DBitFlipPM, "loloha": LOLOHA}
    if name not in table:
        raise LDPParameterError(f"unknown longitudinal mechanism {name!r}; choose one of {', '.join(LONGITUDINAL_NAMES)}")
    return table[name](epsilon_perm=epsilon_perm, epsilon_1=epsilon_1, d=d, **params)


def build_mean(name: str, *, epsilon: float, **params: Any):
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

    ``spend_bound`` / ``max_user_spend`` / ``mean_user_spend`` are the **user-level** charge after
    ``rounds`` collections (any two histories of one user; the same for every user, ``None`` when
    unbounded — dBitFlipPM from the second round); ``*_value_level`` beside them are the papers'
    value-level figures (same change pattern: ``min(units, U)·ε∞`` per user), which a deployment
    may charge only by naming ``relation="value"``. ``relation`` is the mechanism's own.

    One population's rounds share its memoized reports, so their errors are correlated (for
    dBitFlipPM, which has no instantaneous layer, nearly identical): the measured MSE of a
    single population scatters by about ``sqrt(2/d)`` around the analytic one; ``repeats``
    averages independent populations."""

    rounds = check_int("rounds", rounds, 1, 10_000)
    n = check_int("n", n, 2, 10**7)
    repeats = check_int("repeats", repeats, 1, 1000)
    change_prob = check_real("change_prob", change_prob, 0, 1)
    check_work(float(n) * rounds * repeats, rate=2e6, what=f"{repeats:,} populations of {n:,} users over {rounds:,} rounds",
               options="--n, --rounds or --repeats")
    d = mechanism.d
    theta = zipf_distribution(d) if theta is None else np.asarray(theta, dtype=np.float64)
    mse = np.zeros(rounds)
    amse = np.zeros(rounds)
    spends = []
    t0 = time.perf_counter()
    for rep in progress_bar(range(repeats), total=repeats, desc="ldp longitudinal simulate", unit="population"):
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
        spends.append(tracker.value_spend())
    value_spend = np.concatenate(spends)
    user = mechanism.lifetime_bound(rounds, relation="user")
    user_f = None if user is None else float_up(user)
    return {
        "mechanism": mechanism.spec(),
        "n": n, "rounds_count": rounds, "change_prob": change_prob, "seed": seed, "repeats": repeats,
        "relation": mechanism.relation,
        "max_user_spend": user_f,
        "mean_user_spend": user_f,
        "spend_bound": user_f,
        "max_user_spend_value_level": float(value_spend.max()),
        "mean_user_spend_value_level": float(value_spend.mean()),
        "spend_bound_value_level": float_up(mechanism.lifetime_bound(rounds, relation="value")),
        "mse": float(mse.mean()), "analytic_mse": float(amse.mean()), "mse_ratio": float(mse.mean() / amse.mean()),
        "rounds": [{"round": t + 1, "mse": float(mse[t]), "analytic_mse": float(amse[t])} for t in range(rounds)],
        "seconds": round(time.perf_counter() - t0, 3),
    }


def simulate_mean(mechanism: Any, *, n: int, repeats: int, seed: int = 0, confidence: float = 0.95) -> dict:
    """``repeats`` independent randomizations of one population of ``n`` numbers (Beta(2, 5) on
    ``[lower, upper]``): the measured MSE of the mean estimate, its analytic value, and how
    often the interval covered the true mean."""
    n = check_int("n", n, 2, 10**8)
    repeats = check_int("repeats", repeats, 1, 10**5)
    check_work(float(n) * repeats, rate=2e7, what=f"{repeats:,} randomizations of {n:,} numbers", options="--n or --repeats")
    data = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    values = mechanism.lower + (mechanism.upper - mechanism.lower) * data.beta(2.0, 5.0, size=n)
    truth = float(values.mean())
    t0 = time.perf_counter()
    errs, covered = [], 0
    for r in progress_bar(range(repeats), total=repeats, desc="ldp mean simulate", unit="repeat"):
        est = mechanism.estimate(mechanism.randomize(values, rng=SeededRandomSource(seed, stream=(2, r))), confidence=confidence)
        errs.append((est.mean - truth) ** 2)
        covered += est.ci_lower <= truth <= est.ci_upper
    return {
        "mechanism": mechanism.spec(), "n": n, "repeats": repeats, "seed": seed, "true_mean": truth,
        "mse": float(np.mean(errs)), "analytic_mse": mechanism.analytic_mse(n, values=values),
        "coverage": covered / repeats, "confidence": confidence,
        "seconds": round(time.perf_counter() - t0, 3),
    }
