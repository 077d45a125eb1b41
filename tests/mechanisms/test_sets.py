"""Padding-and-sampling ("sample one item") for per-user sets: exact sampling, unbiased scaled
estimates with power checks, explicit handling of long sets, and input validation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

import ldp_plugin as ldp
from ldp_plugin import LDPInputError, LDPParameterError, SampleOne
from ldp_plugin.sampling import SeededRandomSource

ALPHA = 1e-6


def test_sample_is_uniform_over_padded_slots():
    s = SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=4)
    n = 80_000
    sampled, long = s.sample([[0, 3]] * n, rng=1)
    counts = np.bincount(sampled, minlength=6)
    assert long == 0 and counts[[1, 2, 4]].sum() == 0
    # item 0, item 3, PAD (code 5) with probabilities 1/4, 1/4, 1/2
    p = stats.chisquare(counts[[0, 3, 5]], f_exp=np.array([0.25, 0.25, 0.5]) * n).pvalue
    assert p > ALPHA
    assert stats.chisquare(counts[[0, 3, 5]], f_exp=np.array([0.27, 0.25, 0.48]) * n).pvalue < ALPHA  # power


@pytest.mark.slow
@pytest.mark.parametrize(
    "inner",
    [lambda: ldp.KRR(epsilon=2.0, d=6), lambda: ldp.OUE(epsilon=2.0, d=6), lambda: ldp.ORR(epsilon=2.0, k=4, cohorts=8, d=6)],
    ids=["krr", "oue", "orr-closed"],
)
def test_set_estimates_are_unbiased_with_power(inner):
    m = 3
    s = SampleOne(mechanism=inner(), m=m)
    base = [[0, 1, 2], [0, 1], [0], [3], [], [0, 4]]
    sets = base * 500  # f = fraction of users holding each item
    f = np.array([sum(i in b for b in base) / len(base) for i in range(6)])
    R = 200
    src = SeededRandomSource(11)
    est = np.array([s.estimate(s.randomize(sets, rng=src), postprocess="none").raw for _ in range(R)])
    se = s.estimate(s.randomize(sets, rng=src), postprocess="none").std_error
    zcrit = stats.norm.isf(ALPHA / 12)
    assert np.all(np.abs(est.mean(axis=0) - f) / (se / np.sqrt(R)) < zcrit)
    # power: forgetting the factor m (estimating θ instead of f) is detected
    assert np.any(np.abs(est.mean(axis=0) / m - f) / (se / np.sqrt(R)) >= zcrit)
    # projected estimates are frequencies in [0, 1] that sum to at most m
    e = s.estimate(s.randomize(sets, rng=src))
    assert np.all((e.estimate >= 0) & (e.estimate <= 1)) and e.estimate.sum() <= m + 1e-9


def test_open_alphabet_sets_and_polars_lists():
    s = SampleOne(mechanism=ldp.ORR(epsilon=4.0, k=16, cohorts=32), m=2)
    col = pl.Series([["maps", "mail"], ["mail"], [], ["chat", "maps"]] * 5000)
    r = s.randomize(col, rng=3)
    e = s.estimate(r, candidates=["maps", "mail", "chat"])
    assert e.items == ("maps", "mail", "chat", "<other>")
    truth = np.array([0.5, 0.5, 0.25, 0.0])
    assert np.all(np.abs(e.raw - truth) < 6 * e.std_error)
    with pytest.raises(LDPParameterError, match="candidates"):
        s.estimate(r)


def test_long_sets_error_or_explicit_sampling():
    s = SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2)
    with pytest.raises(LDPInputError, match="more than m=2") as e:
        s.randomize([[0], [0, 1, 2]])
    assert "position 1" in str(e.value)
    t = SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=5), m=2, on_long="sample")
    sampled, long = t.sample([[0, 1, 2]] * 30_000, rng=2)
    assert long == 30_000
    counts = np.bincount(sampled, minlength=6)
    assert counts[5] == 0 and stats.chisquare(counts[:3]).pvalue > ALPHA  # uniform over the set


def test_set_validation():
    s = SampleOne(mechanism=ldp.KRR(epsilon=1.0, categories=["a", "b"]), m=2)
    with pytest.raises(LDPInputError, match="repeat"):
        s.randomize([["a", "a"]])
    with pytest.raises(LDPInputError, match="position 1"):
        s.randomize([["a"], ["zzz-secret"]])
    with pytest.raises(LDPInputError, match="null"):
        s.randomize(pl.Series([["a", None]]))
    # a batch of single items is a batch of sets of one (a string is one item, never its characters)
    assert s.randomize(pl.Series(["a", "b"]), rng=3).tolist() == s.randomize([["a"], ["b"]], rng=3).tolist()


def test_sample_one_takes_a_plain_string_as_one_item():
    """Issue 21: with categories A, B, AB, O the input "AB" is the item AB, not A and B."""
    s = SampleOne(mechanism=ldp.KRR(epsilon=8.0, categories=["A", "B", "AB", "O"]), m=1)
    est = s.estimate(s.randomize(["AB"] * 4000, rng=0), postprocess="none")
    assert est.estimate[2] > 0.95 and abs(est.estimate[0]) < 0.05 and abs(est.estimate[1]) < 0.05
    assert s.randomize_one("AB", rng=1) in ("A", "B", "AB", "O", ldp.PAD)
    assert s.sample_labels(["AB", "O"], rng=2) in (["AB", "O"], ["AB", ldp.PAD], [ldp.PAD, "O"], [ldp.PAD, ldp.PAD])
    o = SampleOne(mechanism=ldp.ORR(epsilon=1.0, k=4), m=2)
    with pytest.raises(LDPInputError, match="PAD"):
        o.randomize([[ldp.PAD]])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(LDPParameterError, match="m"):
            SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=3), m=bad)
    with pytest.raises(LDPParameterError, match="on_long"):
        SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=3), m=2, on_long="drop")
    with pytest.raises(LDPParameterError, match="cohorts"):
        SampleOne(mechanism=ldp.KRR(epsilon=1.0, d=3), m=2).randomize([[0]], cohorts=[0])
    assert len(s.randomize([[], []], rng=0)) == 2  # empty sets report PAD


def test_csr_input_equals_lists():
    s = SampleOne(mechanism=ldp.OLH(epsilon=1.0, d=10), m=3)
    lists = [[1, 2], [], [9, 8, 7]]
    csr = (np.array([1, 2, 9, 8, 7]), np.array([0, 2, 2, 5]))
    assert np.array_equal(s.randomize(lists, rng=5), s.randomize(csr, rng=5))
    assert np.array_equal(s.randomize(lists, rng=5), s.randomize(pl.Series(lists), rng=5))
