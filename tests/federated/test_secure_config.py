"""The derived SecAgg+ configuration sums exactly through Flower's own arithmetic, and every
configuration that would clip, wrap or zero is refused.

``_flower_sum`` replays, line for line, the arithmetic of Flower 1.41's ``secaggplus_mod``
(``_collect_masked_vectors``: weight factor, ``quantize``, ``factor_combine``, masks, ``mod``) and
``SecAggPlusWorkflow.unmask_stage`` (sum, ``mod``, ``factor_extract``, ``dequantize``, offset,
ratio) with Flower's own functions; the masks are random vectors that cancel modulo ``M``, as the
pairwise and private masks do once unmasked.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from flwr.common.secure_aggregation.ndarrays_arithmetic import (
    factor_combine, factor_extract, parameters_addition, parameters_mod, parameters_multiply)
from flwr.common.secure_aggregation.quantization import dequantize, quantize
from flwr.server.workflow import SecAggPlusWorkflow

from ldp_plugin.federated.secure_config import SecureSumConfig, SecureSumConfigError, derive_config, exact_sum


def _flower_sum(vectors: list, cfg: SecureSumConfig, num_examples: float = 1.0, rng=None) -> np.ndarray:
    rng = np.random.default_rng(0) if rng is None else rng
    C, Q, M = float(cfg.clipping_range), cfg.quantization_range, cfg.modulus
    n = len(vectors)
    masks = [rng.integers(0, M, size=len(vectors[0]) + 1, dtype=np.int64) for _ in range(n - 1)]
    masks.append((-np.sum(masks, axis=0)) % M)
    sent = []
    for x, m in zip(vectors, masks):
        ratio = num_examples / cfg.max_weight
        q_ratio = round(ratio * Q)
        params = parameters_multiply([np.asarray(x, dtype=np.float64)], q_ratio / Q)
        qp = factor_combine(q_ratio, quantize(params, C, Q))
        flat = np.concatenate([np.asarray(a, dtype=np.int64).ravel() for a in qp])
        sent.append([(flat + m)])
        sent[-1] = parameters_mod(sent[-1], M)
    total = sent[0]
    for s in sent[1:]:
        total = parameters_addition(total, s)
    total = parameters_mod(total, M)[0]
    q_total, rest = factor_extract([total[:1], total[1:]])
    agg = dequantize(rest, C, Q)[0]
    agg += -(n - 1) * C
    agg *= Q / q_total
    return agg


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 60), d=st.integers(1, 40), lo=st.integers(-5000, 0), width=st.integers(0, 20000), seed=st.integers(0, 2**32 - 1))
def test_derived_config_sums_exactly_through_flower(n, d, lo, width, seed):
    hi = lo + width
    try:
        cfg = derive_config(nodes=n, entry_low=lo, entry_high=hi)
    except SecureSumConfigError:
        assert n * 2 * (1 << max(0, (max(abs(lo), abs(hi), 1) - 1).bit_length())) >= 2**32
        return
    rng = np.random.default_rng(seed)
    vectors = [rng.integers(lo, hi + 1, size=d) for _ in range(n)]
    vectors[0][:] = lo  # the extremes are in every draw
    vectors[-1][:] = hi
    mean = _flower_sum(vectors, cfg, rng=rng)
    assert np.array_equal(exact_sum(mean, n), np.sum(vectors, axis=0))
    SecAggPlusWorkflow(**cfg.workflow_kwargs())  # Flower accepts it as given


def test_largest_exact_configuration_still_exact():
    cfg = derive_config(nodes=3, entry_low=-(1 << 29), entry_high=1 << 29)
    assert cfg.quantization_range == 1 << 30 and cfg.modulus == 1 << 32
    vecs = [np.array([1 << 29, -(1 << 29), 7]), np.array([1 << 29, -(1 << 29), -3]), np.array([1 << 29, 5, 0])]
    assert np.array_equal(exact_sum(_flower_sum(vecs, cfg), 3), np.sum(vecs, axis=0))


def test_each_refused_condition_really_breaks_flowers_sum():
    """What each refusal prevents: the same vectors through Flower with the condition broken."""
    vecs = [np.array([3, 0, 1]), np.array([2, 1, 0]), np.array([4, 0, 0])]
    good = derive_config(nodes=3, entry_low=0, entry_high=4)
    assert np.array_equal(exact_sum(_flower_sum(vecs, good), 3), [9, 1, 1])
    # clip: C below an entry
    small = object.__new__(SecureSumConfig)
    object.__setattr__(small, "__dict__", {**good.to_dict(), "clipping_range": 2, "quantization_range": 4})
    assert not np.allclose(_flower_sum(vecs, small) * 3, [9, 1, 1])
    # wrap: n · Q >= M
    wrap = object.__new__(SecureSumConfig)
    object.__setattr__(wrap, "__dict__", {**good.to_dict(), "modulus": 16})
    assert not np.allclose(_flower_sum(vecs, wrap) * 3, [9, 1, 1])
    # weights: num_examples below max_weight rescales and rounds
    assert not np.allclose(_flower_sum(vecs, good, num_examples=0.3) * 3, [9, 1, 1])
    # refused, each by name
    base = good.to_dict()
    for change, word in [({"clipping_range": 2, "quantization_range": 4}, "clipping_range"), ({"modulus": 16}, "below modulus"),
                         ({"quantization_range": 24}, "quantization_range"), ({"shares": 2}, "shares"), ({"threshold": 3}, "threshold"),
                         ({"max_weight": 1000.0}, "max_weight"), ({"modulus": 1 << 33}, "modulus"), ({"nodes": 2}, "nodes")]:
        with pytest.raises(SecureSumConfigError, match=word):
            SecureSumConfig(**{**base, **change})


def test_derive_refusals_name_the_parameter():
    with pytest.raises(SecureSumConfigError, match="nodes"):
        derive_config(nodes=2, entry_low=0, entry_high=1)
    with pytest.raises(SecureSumConfigError, match="below 2\\*\\*32"):
        derive_config(nodes=10**6, entry_low=0, entry_high=4096)
    with pytest.raises(SecureSumConfigError, match="shares"):
        derive_config(nodes=10, entry_low=0, entry_high=1, shares=4)
    with pytest.raises(SecureSumConfigError, match="min_participants"):
        derive_config(nodes=5, entry_low=0, entry_high=1, min_participants=5)
    cfg = derive_config(nodes=6, entry_low=0, entry_high=1, min_participants=4)
    assert (cfg.shares, cfg.threshold, cfg.dropouts_tolerated) == (5, 4, 1)


def test_device_compares_flowers_setup():
    cfg = derive_config(nodes=5, entry_low=-10, entry_high=10)
    setup = {"sample_num": 5, "share_num": 5, "threshold": 3, "clipping_range": 16.0, "target_range": 32, "mod_range": 256, "max_weight": 1.0}
    assert cfg.matches_setup(setup)
    for k, v in [("sample_num", 4), ("share_num", 4), ("threshold", 2), ("clipping_range", 8.0), ("mod_range", 2**32), ("max_weight", 1000.0)]:
        assert not cfg.matches_setup({**setup, k: v})
    assert SecureSumConfig.from_dict(cfg.to_dict()) == cfg


def test_exact_sum_refuses_non_integers():
    with pytest.raises(SecureSumConfigError, match="not an integer sum"):
        exact_sum(np.array([1.0, 2.4 / 3]), 3)
