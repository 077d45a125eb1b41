"""OpenDP measurements for the numeric-distribution, multi-attribute and key–value families.

Each goes through :func:`ldp_plugin.measurements.make_ldp` unchanged: one user's input (a number,
a tuple of attribute values, a list of key–value pairs) → one report; ``discrete_distance`` →
``max_divergence``, map ``0 if d_in == 0 else ε`` (``unit="population"``: a batch,
``hamming_distance``, ``d_in·ε`` rounded up). ``then_*`` are the chaining partials.
"""

from __future__ import annotations

from .measurements import make_ldp, then_ldp
from .mechanisms.distribution import BucketedOracle, SquareWave
from .mechanisms.multi_attribute import RSFD, SMP, SPL, SMPPairs
from .mechanisms.hierarchy import HierarchicalHistogram
from .mechanisms.key_value import PCKV
from .mechanisms.haar import HaarHRR
from .sampling import RNGLike

__all__ = ["make_square_wave", "then_square_wave", "make_bucketed", "then_bucketed"]


def make_square_wave(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, grid: int = 256, unit: str = "user", rng: RNGLike = None):
    """Square Wave (Li et al., SIGMOD 2020) as an OpenDP measurement: ε-LDP per user (one
    user's number replaced by any other in ``[lower, upper]``).

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_square_wave(epsilon=1.0, lower=0, upper=10, grid=16)
    >>> 0 <= m(3.5) < 16 + 2 * ldp.SquareWave(epsilon=1.0, grid=16).half_window, m.map(1)
    (True, 1.0)
    """
    return make_ldp(SquareWave(epsilon=epsilon, lower=lower, upper=upper, grid=grid), unit=unit, rng=rng)


def then_square_wave(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, grid: int = 256, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_square_wave` (``transformation >> then_square_wave(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(SquareWave(epsilon=epsilon, lower=lower, upper=upper, grid=grid), unit=unit, rng=rng)


def make_bucketed(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 16, oracle: str = "auto", unit: str = "user", rng: RNGLike = None):
    """The bucketed frequency oracle as an OpenDP measurement (ε-LDP per user)."""
    return make_ldp(BucketedOracle(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets, oracle=oracle), unit=unit, rng=rng)


def then_bucketed(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 16, oracle: str = "auto", unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_bucketed` (``transformation >> then_bucketed(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(BucketedOracle(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets, oracle=oracle), unit=unit, rng=rng)


# -- several attributes per user (one tuple in, one report out) ---------------------------------------------
def make_spl(*, epsilon: float, domains, unit: str = "user", rng: RNGLike = None):
    """SPL (k-RR at ε/A per attribute) as an OpenDP measurement: ε-LDP per user, the whole tuple
    being the user's record.

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_spl(epsilon=2.0, domains=(3, 4))
    >>> len(m((2, 1))), m.map(1)
    (2, 2.0)
    """
    return make_ldp(SPL(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def then_spl(*, epsilon: float, domains, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_spl` (``transformation >> then_spl(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(SPL(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def make_smp(*, epsilon: float, domains, unit: str = "user", rng: RNGLike = None):
    """SMP (one sampled attribute, k-RR at ε; the report is ``(attribute, value)``) as an OpenDP
    measurement: ε-LDP per user (whole tuple)."""
    return make_ldp(SMP(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def then_smp(*, epsilon: float, domains, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_smp` (``transformation >> then_smp(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(SMP(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def make_rsfd(*, epsilon: float, domains, unit: str = "user", rng: RNGLike = None):
    """RS+FD[GRR] as an OpenDP measurement: ε-LDP per user (whole tuple; see
    :class:`ldp_plugin.RSFD` for the paper's per-attribute configuration)."""
    return make_ldp(RSFD(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def then_rsfd(*, epsilon: float, domains, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_rsfd` (``transformation >> then_rsfd(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(RSFD(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


__all__ += ["make_spl", "then_spl", "make_smp", "then_smp", "make_rsfd", "then_rsfd"]


# -- ranges and quantiles on a fine grid ----------------------------------------------------------------------
def make_hierarchical_histogram(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 1024, fanout="auto",
                                unit: str = "user", rng: RNGLike = None):
    """The hierarchical histogram (Cormode et al., VLDB 2019) as an OpenDP measurement: ε-LDP per
    user (one user's number replaced by any other in ``[lower, upper]``).

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_hierarchical_histogram(epsilon=1.0, buckets=16)
    >>> int(m(0.3)["level"][0]) in (1, 2), m.map(1)
    (True, 1.0)
    """
    return make_ldp(HierarchicalHistogram(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets, fanout=fanout), unit=unit, rng=rng)


def then_hierarchical_histogram(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 1024, fanout="auto", unit=None,
                                rng: RNGLike = None):
    """The chaining form of :func:`make_hierarchical_histogram` (``transformation >> then_hierarchical_histogram(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(HierarchicalHistogram(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets, fanout=fanout), unit=unit, rng=rng)


__all__ += ["make_hierarchical_histogram", "then_hierarchical_histogram"]


# -- key-value sets --------------------------------------------------------------------------------------------
def make_pckv(*, epsilon: float, d: int, ell: int = 1, unit: str = "user", rng: RNGLike = None):
    """PCKV-GRR (Gu et al., USENIX Security 2020) as an OpenDP measurement: ε-LDP per user (one
    user's whole key–value set replaced by any other). Input: one user's list of ``(key, value)``.

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_pckv(epsilon=1.0, d=4, ell=2)
    >>> 0 <= m([(1, 0.5)]) < 12, m.map(1)
    (True, 1.0)
    """
    return make_ldp(PCKV(epsilon=epsilon, d=d, ell=ell), unit=unit, rng=rng)


def then_pckv(*, epsilon: float, d: int, ell: int = 1, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_pckv` (``transformation >> then_pckv(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(PCKV(epsilon=epsilon, d=d, ell=ell), unit=unit, rng=rng)


__all__ += ["make_pckv", "then_pckv"]


def make_haar_hrr(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 1024, unit: str = "user", rng: RNGLike = None):
    """HaarHRR (Cormode et al., VLDB 2019) as an OpenDP measurement: ε-LDP per user (one user's
    number replaced by any other in ``[lower, upper]``).

    >>> import ldp_plugin as ldp
    >>> m = ldp.make_haar_hrr(epsilon=1.0, buckets=16)
    >>> sorted(m(0.3)), m.map(1)
    (['bit', 'level', 'row'], 1.0)
    """
    return make_ldp(HaarHRR(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets), unit=unit, rng=rng)


def then_haar_hrr(*, epsilon: float, lower: float = 0.0, upper: float = 1.0, buckets: int = 1024, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_haar_hrr` (``transformation >> then_haar_hrr(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(HaarHRR(epsilon=epsilon, lower=lower, upper=upper, buckets=buckets), unit=unit, rng=rng)


__all__ += ["make_haar_hrr", "then_haar_hrr"]


def make_smp_pairs(*, epsilon: float, domains, unit: str = "user", rng: RNGLike = None):
    """SMP over attribute pairs (two-way marginals) as an OpenDP measurement: ε-LDP per user
    (whole tuple); the report is ``(pair, joint value)``."""
    return make_ldp(SMPPairs(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


def then_smp_pairs(*, epsilon: float, domains, unit=None, rng: RNGLike = None):
    """The chaining form of :func:`make_smp_pairs` (``transformation >> then_smp_pairs(...)``): the same
    mechanism, parameters and ε-LDP guarantee per user; ``unit`` defaults to the chain's unit."""
    return then_ldp(SMPPairs(epsilon=epsilon, domains=domains), unit=unit, rng=rng)


__all__ += ["make_smp_pairs", "then_smp_pairs"]
