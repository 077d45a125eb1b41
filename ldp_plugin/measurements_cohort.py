"""OpenDP measurements of the cohort oracles (O-RR, O-RAPPOR, CMS, HCMS, the count sketch): each ``ε``-LDP per user
through :func:`ldp_plugin.measurements.make_ldp`; the report is ``(cohort, value)``. Re-exported by
:mod:`ldp_plugin.measurements`."""

from __future__ import annotations

from typing import Optional, Sequence

import opendp.prelude as dp

from .measurements import make_ldp, then_ldp
from .mechanisms import CMS, HCMS, CountSketch, ORAPPOR, ORR
from .sampling import RNGLike

__all__ = ["make_orr", "then_orr", "make_orappor", "then_orappor", "make_cms", "then_cms", "make_hcms", "then_hcms", "make_count_sketch", "then_count_sketch"]


def make_orr(
    *, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """O-RR (paper 002 §5.1): k-RR over ``k`` hashed cells with ``cohorts`` hash cohorts;
    closed-alphabet permutations when ``d``/``categories`` are given. ``ε``-LDP per user; the
    report is ``(cohort, cell)`` with the cohort drawn uniformly (data-independent)."""
    return make_ldp(ORR(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def then_orr(*, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(ORR(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def make_orappor(
    *, epsilon: float, k: int, h: int = 1, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """O-RAPPOR (paper 002 §5.2): per-cohort Bloom filter (``h`` hashes into ``k`` bits), per-bit
    RR with ``ε/(2h)``. ``ε``-LDP per user; the report is ``(cohort, packed bits)``."""
    return make_ldp(ORAPPOR(epsilon=epsilon, k=k, h=h, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def then_orappor(*, epsilon: float, k: int, h: int = 1, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(ORAPPOR(epsilon=epsilon, k=k, h=h, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def make_cms(
    *, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """CMS (Apple, 2017): O-RAPPOR with one hash per cohort, per-bit RR with ``ε/2``. ``ε``-LDP per
    user; the report is ``(cohort, packed bits)``."""
    return make_ldp(CMS(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def then_cms(*, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(CMS(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def make_hcms(
    *, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """HCMS (Apple, 2017): one randomized-response ±1 Hadamard coefficient of the user's hashed
    cell per report. ``ε``-LDP per user; the report is ``(cohort, 2·row + bit)``."""
    return make_ldp(HCMS(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def then_hcms(*, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(HCMS(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def make_count_sketch(
    *, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None
) -> dp.Measurement:
    """The private count sketch (CountSketch's cell and sign hashes, one row per user; HCMS's local
    randomizer on the signed one-hot vector). ``ε``-LDP per user; the report is ``(cohort, 2·row + bit)``."""
    return make_ldp(CountSketch(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)


def then_count_sketch(*, epsilon: float, k: int, cohorts: int = 1, hash_seed: int = 0, d: Optional[int] = None, categories: Optional[Sequence] = None, unit: str = "user", rng: RNGLike = None):
    return then_ldp(CountSketch(epsilon=epsilon, k=k, cohorts=cohorts, hash_seed=hash_seed, d=d, categories=categories), unit=unit, rng=rng)
