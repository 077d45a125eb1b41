"""No float where a finite channel's thresholds are made (issue 32, item 2).

The client of every :class:`~ldp_plugin.mechanisms.extremal.FiniteChannel` searches cumulative
boundaries with one uniform 64-bit word. Those boundaries used to be built by
``np.cumsum([0] + list(T), dtype=object)``, which converts Python ints >= 2**63 to float64 first:
109 of 5,978 geometric/staircase instances realized ``ln(ratio) > ε`` (worst +3.5e−9). These
tests recompute, from the ``uint64`` boundaries the client searches (``_cum``; nothing the
constructor documents), the realized channel and its exact worst-case ratio, on every family,
``d <= 16`` and ε on a 0.02 grid up to the largest ε the constructor accepts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ldp_plugin import BinaryMechanism, GeometricMechanism, StaircaseMechanism
from ldp_plugin._errors import LDPParameterError
from ldp_plugin.exact import TWO64, ratio_within_exp
from ldp_plugin.mechanisms.extremal import FiniteChannel
from ldp_plugin.sampling import SeededRandomSource
from ldp_plugin.verification.sampling_path import RecordingSource, rebuilt_search_rows

#: instances the float boundaries broke (found by the scan before the fix)
BROKEN_BEFORE = [(3, 16.16), (3, 16.42), (4, 16.44), (6, 16.52), (16, 16.34)]


def _subclasses(cls) -> set:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def test_the_scan_covers_every_finite_channel_family():
    """A new FiniteChannel family must be added to the scans below."""
    shipped = {c for c in _subclasses(FiniteChannel) if c.__module__.startswith("ldp_plugin.mechanisms")}
    assert shipped == {BinaryMechanism, GeometricMechanism, StaircaseMechanism}


def client_channel(m) -> list:
    """The channel the client realizes, from the ``uint64`` boundaries it searches: row ``x``,
    output ``y`` with probability ``(B[x][y+1] − B[x][y]) / 2**64`` (last interval to 2**64)."""
    B = [[int(v) for v in row] for row in np.asarray(m._cum).tolist()]
    W = [[b - a for a, b in zip(row, row[1:] + [TWO64])] for row in B]
    assert all(row[0] == 0 and min(w) > 0 for row, w in zip(B, W)), "boundaries start at 0 and increase"
    return W


def client_ratio(W: list) -> Fraction:
    return max(Fraction(max(col), min(col)) for col in zip(*W))


def _check(m, eps: float) -> None:
    W = client_channel(m)
    assert all(sum(row) == TWO64 for row in W)
    r = client_ratio(W)
    assert ratio_within_exp(r, eps), (type(m).__name__, m.d, eps, math.log(float(r)) - eps)
    assert r == m.realized_ratio  # the constructor checked the same boundaries
    assert [list(t) for t in m.thresholds] == W


def _scan(make, d: int, grid: list) -> int:
    """Build every instance on the grid, check it; stop at the first ε the constructor refuses
    for needing probabilities below 2**-24 (every larger ε needs smaller ones)."""
    built = 0
    for eps in grid:
        try:
            m = make(eps, d)
        except LDPParameterError as e:
            if "2**-24" in str(e):
                break
            continue  # e.g. an LP that returns no vertex at this ε
        _check(m, eps)
        built += 1
    return built


def _grid(start: float = 0.02, stop: float = 17.0, step: float = 0.02) -> list:
    return [round(step * i, 2) for i in range(max(1, round(start / step)), round(stop / step) + 1)]


def _geometric(eps, d):
    return GeometricMechanism(epsilon=eps, d=d)


def _binary(eps, d):
    return BinaryMechanism(epsilon=eps, d=d, subset=tuple(range(d // 2)))


def _staircase(eps, d):
    return StaircaseMechanism(epsilon=eps, d=d)


@pytest.mark.parametrize("d, eps", BROKEN_BEFORE)
def test_instances_that_float_boundaries_broke_hold_exactly(d, eps):
    m = GeometricMechanism(epsilon=eps, d=d)
    _check(m, eps)
    # power: the old float accumulation of the same thresholds does exceed e^ε here
    T = [list(row) for row in m.thresholds]
    old = np.array([np.cumsum([0] + row[:-1], dtype=object) for row in T], dtype=object)
    old = [[int(c) for c in row] for row in old]
    W_old = [[b - a for a, b in zip(row, row[1:] + [TWO64])] for row in old]
    assert not ratio_within_exp(client_ratio(W_old), eps)


def test_fast_scan_near_the_largest_epsilon():
    """The top of the ε range (where probabilities are tiny and boundaries >= 2**63 are rounded
    most) for every family, a few domain sizes."""
    top = _grid(15.6)
    for d in (2, 3, 6, 16):
        assert _scan(_geometric, d, top) > 10
        assert _scan(_binary, d, top) > 10
    for d in (2, 4):
        assert _scan(_staircase, d, top) > 10


@pytest.mark.slow
@pytest.mark.parametrize("family", ["geometric", "binary"])
def test_full_scan_d_up_to_16(family):
    make = {"geometric": _geometric, "binary": _binary}[family]
    total = sum(_scan(make, d, _grid()) for d in range(2, 17))
    assert total > 15 * 700  # every d reaches ε > 14 before the 2**-24 floor


@pytest.mark.slow
def test_full_scan_staircase():
    """d <= 5 on the whole 0.02 grid above ε = 10 (where probabilities shrink towards 2**-24 and the
    boundaries are rounded most) and a 0.1 grid below; d = 6..12 (the LP has 2**d variables) on a
    1.0 grid plus a 0.1 grid over the top unit of the range, each scan reaching the refusal at the
    2**-24 floor; d = 13, 14 (0.3–0.5 s per LP, and the refusal's usable-range search re-solves it
    five times) at ε = 4, 16 and 16.5, next to the top of their range."""
    total = sum(_scan(_staircase, d, sorted(set(_grid(0.1, 10.0, 0.1)) | set(_grid(10.0))) ) for d in range(2, 6))
    for d in range(6, 13):
        total += _scan(_staircase, d, sorted(set(_grid(1.0, 17.0, 1.0)) | set(_grid(15.6, 17.0, 0.1))))
    for d in (13, 14):
        for eps in (4.0, 16.0, 16.5):
            _check(_staircase(eps, d), eps)
    assert total > 4 * 400 + 7 * 26


def test_the_client_searches_the_checked_boundaries_and_the_recording_layer_rebuilds_them():
    """The client's draws go through ``RandomSource.inverse_cdf`` on ``_cum``; the recording source
    sees every searched row, and the rows rebuilt from them are the declared channel."""
    for m in (GeometricMechanism(epsilon=16.34, d=16), BinaryMechanism(epsilon=3.1, d=5, subset=(0, 2)),
              StaircaseMechanism(epsilon=2.37, d=4)):
        ch = m.channel()
        for x in range(m.d):
            src = RecordingSource(x)
            out = m.randomize(np.full(50, x), rng=src)
            assert out.size == 50 and len(src.searches) == 1
            (row, probs), = rebuilt_search_rows(src.searches)
            assert row == x and probs == list(ch.matrix[x])
        # the same words give the same outputs as a direct search of the boundaries
        codes = np.arange(2000) % m.d
        got = m.randomize(codes, rng=SeededRandomSource(9))
        w = SeededRandomSource(9).words(codes.size)
        want = np.array([np.searchsorted(m._cum[c], w[i], side="right") - 1 for i, c in enumerate(codes)])
        assert np.array_equal(got.astype(np.int64), want)
