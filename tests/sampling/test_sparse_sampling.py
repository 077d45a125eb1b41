"""The sparse (entropy-proportional) Bernoulli sampler: every table entry against the exact
cutoffs, the stage-3/4 decisions in exact integer arithmetic, both kernel paths bit for bit, and
the gap distribution against the geometric law with a power check (issue 23)."""

import math

import numpy as np
import pytest
from scipy import stats

from ldp_plugin.sampling import SecureRandomSource, SeededRandomSource
from ldp_plugin.sampling import sparse as S

ALPHA = 1e-6
TWO64 = 1 << 64


def q_threshold(eps):
    return int(TWO64 / (math.exp(eps) + 1))


# OUE ε = 4, RAPPOR ε = 4 (q = 1/(e^2+1)), a small q with two-byte stage 1, a "round" threshold
# (c_1 and c_2 are multiples of 2**-64: ties at interval edges) and a tiny q (M at its cap)
THRESHOLDS = [q_threshold(4.0), q_threshold(2.0), q_threshold(6.0), 1 << 59, (1 << 59) + (1 << 32), 12345]


def exact_floors(T, M, k):
    """floor(c_g · 2**k) and whether c_g · 2**k is an integer, for g = 1..M, from a**g exactly."""
    a = TWO64 - T
    num, fl, exact = 1, [], []
    for g in range(1, M + 1):
        num *= a  # c_g = num / 2**(64 g)
        sh = 64 * g - k
        fl.append(num >> sh)
        exact.append(num & ((1 << sh) - 1) == 0)
    return fl, exact


@pytest.mark.parametrize("T", THRESHOLDS)
def test_cutoffs_are_exact(T):
    M, L, frac = S._cutoffs(T)
    fl, exact = exact_floors(T, M, 64)
    assert [int(x) for x in L] == fl and [bool(f) for f in frac] == [not e for e in exact]
    assert M == S.M_CAP or (fl[-1] < 1 << (64 - S.TAIL_BITS) <= (fl[-2] if M > 1 else TWO64))


def reference_counts(T, M, k):
    """For every k-bit prefix P: #{g <= M : c_g >= (P+1)/2**k} if no cutoff lies strictly inside
    [P/2**k, (P+1)/2**k), else -1 — computed from exact floors, independently of the tables."""
    fl, exact = exact_floors(T, M, k)
    fl = np.array(fl, dtype=np.int64)
    P = np.arange(1 << k)
    count = (fl[None, :] >= P[:, None] + 1).sum(axis=1) if k <= 16 else None
    inside = np.zeros(1 << k, dtype=bool)
    for f, e in zip(fl, exact):
        if not e:
            inside[f] = True
    return count, inside


@pytest.mark.parametrize("T,s1", [(q_threshold(4.0), 1), (q_threshold(2.0), 1), (q_threshold(4.0), 2), (int(0.04 * TWO64), 2), (1 << 59, 1), ((1 << 59) + (1 << 32), 2)])
def test_every_table_entry_is_exact(T, s1):
    """Proof by exhaustion: a decided entry is constant on its whole interval, an open one has a
    cutoff strictly inside, on both stages (every 8·s1-bit prefix, every sub-table byte)."""
    M, L, frac = S._cutoffs(T)
    tb = S._build(T, s1, M, L, frac)
    k1 = 8 * s1
    count, inside = reference_counts(T, M, k1)
    t1 = tb.table1.astype(np.int64)
    open1 = t1 < 0
    assert np.array_equal(open1, inside)
    assert np.array_equal(S._counts(t1[~open1], M), count[~open1])
    # stage 2: the sub-table of open prefix j covers its 256 sub-intervals
    fl, exact = exact_floors(T, M, k1 + 8)
    fl = np.array(fl, dtype=np.int64)
    amb = np.flatnonzero(open1)
    assert np.array_equal(-t1[amb] - 1, np.arange(amb.size))
    sub = ((amb[:, None] << 8) | np.arange(256)[None, :]).ravel()
    ref = (fl[None, :] >= sub[:, None] + 1).sum(axis=1)
    inside2 = np.isin(sub, fl[~np.array(exact)])
    t2 = tb.table2.astype(np.int64)
    assert np.array_equal(t2 < 0, inside2)
    assert np.array_equal(S._counts(t2[t2 >= 0], M), ref[t2 >= 0])


def exact_count(T, M, U, bits):
    """#{g <= M : U / 2**bits < c_g}, exactly."""
    a = TWO64 - T
    return sum(1 for g in range(1, M + 1) if U << (64 * g) < pow(a, g) << bits)


@pytest.mark.parametrize("T", [q_threshold(4.0), (1 << 59) + (1 << 32)])
def test_stage_four_ties_are_decided_exactly(T):
    tb = S.sparse_tables(T)
    rng = np.random.default_rng(5)
    tied = [g for g in range(1, tb.M + 1) if tb.frac[g - 1]][:: max(1, tb.M // 12)]
    for g in tied:
        u64 = int(tb.L[g - 1])
        for w in (0, TWO64 - 1, int(rng.integers(0, 2**63))):
            words = [w, int(rng.integers(0, 2**63))]
            used = []

            def draw(n):
                assert n == 8
                used.append(words[len(used)])
                return np.frombuffer(used[-1].to_bytes(8, "big"), dtype=np.uint8)

            got = S.resolve_tie(tb, u64, draw)
            U = u64
            for x in used:
                U = (U << 64) | x
            # decided from the words read: the same count at both ends of U's remaining interval
            b = 64 * (1 + len(used))
            assert got == exact_count(T, tb.M, U, b) == exact_count(T, tb.M, ((U + 1) << 64) - 1, b + 64)


def craft_tie_block(tb, g, tail_seed=1, n_draws=64):
    """A block whose first draw reaches stage 4 on cutoff g, followed by random draws."""
    u = int(tb.L[g - 1]).to_bytes(8, "big")
    rng = np.random.default_rng(tail_seed)
    n1, n2, n3 = S._layout(tb, n_draws)
    r1 = rng.integers(0, 256, n1, dtype=np.uint8)
    r2 = rng.integers(0, 256, n2, dtype=np.uint8)
    r3 = rng.integers(0, 256, n3, dtype=np.uint8)
    r1[: tb.s1] = np.frombuffer(u[: tb.s1], dtype=np.uint8)
    r2[0] = u[tb.s1]
    r3[: tb.len3] = np.frombuffer(u[tb.s1 + 1 :], dtype=np.uint8)
    return np.concatenate([r1, r2, r3]), (n1, n2, n3)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_segment_resolves_a_stage_four_tie_on_both_paths(backend, monkeypatch):
    if backend == "numba":
        pytest.importorskip("numba")
    from ldp_plugin.sampling import kernels as _kernels

    monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
    kernel = _kernels.compiled("sparse_runs")
    T = q_threshold(4.0)
    tb = S.sparse_tables(T)
    g = next(g for g in range(3, tb.M + 1) if tb.frac[g - 1])
    block, sizes = craft_tie_block(tb, g)
    results = []
    for w in (0, TWO64 - 1):  # the next word decides U < c_g (count g) or U >= c_g (count g − 1)
        out = np.zeros((4, 8), dtype=np.uint8)
        seg = S.SparseSegment(4 * 64, 64, out, tb, kernel)
        seg.sizes = sizes
        seg.first(block.copy())
        assert seg.status == 2 and seg.tie == int(tb.L[g - 1])
        tail = np.random.default_rng(9)
        extra = [w.to_bytes(8, "big")]

        def draw(n):  # the tie's word first, then fresh random blocks
            data = extra.pop(0) if extra else tail.integers(0, 256, n, dtype=np.uint8).tobytes()
            assert len(data) == n
            return np.frombuffer(data, dtype=np.uint8)

        seg.settle(draw)
        assert not extra
        bits = np.unpackbits(out, axis=1, bitorder="little").ravel()
        first_one = int(np.argmax(bits))
        expect = exact_count(T, tb.M, (int(tb.L[g - 1]) << 64) | w, 128)
        assert first_one == expect  # the first 1 comes after exactly `count` zeros
        results.append(out.copy())
    assert not np.array_equal(results[0], results[1])


def test_both_kernel_paths_give_the_same_bits(monkeypatch):
    """Same seeded stream → same matrix on the compiled kernel and the numpy twin: several
    thresholds (both stage-1 widths, the complement path), widths that are not whole bytes,
    several segments and forced top-up blocks."""
    pytest.importorskip("numba")
    import ldp_plugin.sampling.bernoulli as B

    monkeypatch.setattr(B, "_SEG_EVENTS", 20_000)
    cases = [(q_threshold(4.0), 700, 1024), (q_threshold(2.0), 999, 13), (TWO64 - q_threshold(3.0), 300, 77), (q_threshold(6.0), 64, 4096), (7, 3, 5)]
    for small in (False, True):
        if small:  # tiny blocks: every segment continues on top-up blocks
            layout = S._layout
            monkeypatch.setattr(S, "_layout", lambda tb, draws: layout(tb, min(draws, 3)))
        got = {}
        for backend in ("numpy", "numba"):
            monkeypatch.setenv("LDP_PLUGIN_KERNELS", backend)
            got[backend] = [SeededRandomSource(21).bernoulli_packed(T, n, d) for T, n, d in cases]
        for (T, n, d), x, y in zip(cases, got["numpy"], got["numba"]):
            assert S.use_sparse(min(T, TWO64 - T)) and np.array_equal(x, y), (T, n, d, small)
            if d % 8:
                assert not (x[:, -1] >> (d % 8)).any()


def gap_test(sample_T, model_T, n_events=3_000_000, seed=3):
    """χ² p-value of the gaps between 1s (flattened rows) against the geometric law of model_T."""
    out = SeededRandomSource(seed).bernoulli_packed(sample_T, n_events // 1000, 1000)
    ones = np.flatnonzero(np.unpackbits(out, axis=1, bitorder="little").ravel())
    gaps = np.diff(ones) - 1
    q = model_T / 2**64
    # 24 bins of about equal probability under the model: P(G >= e) = (1 − q)**e
    edges = np.unique(np.ceil(np.log(np.linspace(1, 0, 25)[1:-1]) / math.log1p(-q)).astype(np.int64))
    obs = np.bincount(np.searchsorted(edges, gaps, side="right"), minlength=edges.size + 1)
    tail = (1 - q) ** np.concatenate([[0], edges]).astype(np.float64)  # P(G >= lower edge)
    p = tail - np.append(tail[1:], 0.0)
    return stats.chisquare(obs, p * gaps.size).pvalue


def test_gaps_are_geometric_with_power():
    T = q_threshold(4.0)
    assert gap_test(T, T) > ALPHA
    assert gap_test(int(T * 1.04), T) < ALPHA  # a 4% wrong rate is caught by the same test


def test_rate_per_column_and_complement():
    """Every column has rate q (the row/column mapping of the flattened stream) — tested on the
    rare-1 and the rare-0 (complement) paths, with the binomial tolerance."""
    for T in (q_threshold(3.0), TWO64 - q_threshold(3.0)):
        n, d = 40_000, 50
        bits = np.unpackbits(SeededRandomSource(8).bernoulli_packed(T, n, d), axis=1, count=d, bitorder="little")
        q = T / 2**64
        col = bits.sum(axis=0)
        chi = ((col - n * q) ** 2 / (n * q * (1 - q))).sum()
        assert stats.chi2.sf(chi, d) > ALPHA


def test_bernoulli_rows_own_positions_and_secure_path():
    src = SecureRandomSource()
    n, d = 60_000, 64
    T_q, T_p = q_threshold(4.0), TWO64 // 2
    pos = np.stack([np.arange(n) % d, (np.arange(n) * 7) % d], axis=1)  # h = 2, some equal
    bits = np.unpackbits(src.bernoulli_rows(T_q, n, d, pos, T_p), axis=1, bitorder="little")
    listed = np.zeros((n, d), dtype=bool)
    listed[np.arange(n), pos[:, 0]] = True
    listed[np.arange(n), pos[:, 1]] = True
    for mask, pr in ((listed, 0.5), (~listed, T_q / 2**64)):
        m, k = int(mask.sum()), int(bits[mask].sum())
        assert abs(k - m * pr) / math.sqrt(m * pr * (1 - pr)) < stats.norm.isf(ALPHA / 2)
    with pytest.raises(Exception, match=r"\[0, n_bits\)"):
        src.bernoulli_rows(T_q, 2, 8, np.array([[0], [8]]), T_p)


def test_sparse_costs_fewer_bits_where_it_is_used():
    for eps in (2.0, 4.0, 6.0, 8.0):
        tb = S.sparse_tables(q_threshold(eps))
        assert S.use_sparse(q_threshold(eps)) and tb.bits_per_event < 1.5
    assert not S.use_sparse(TWO64 // 4)  # q = 1/4: the dense decoder's 2 bits per event win
