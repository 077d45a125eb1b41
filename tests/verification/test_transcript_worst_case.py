"""The transcript layer's worst case is the worst case over **every** history.

* on small instances of every keyed mechanism (each registered keyed name's canonical instances, the
  memoized wrapper, a unit bound below the domain), the exact worst ratio equals an exhaustive
  enumeration — every pair of histories, every transcript, exact rationals — under both relations;
* every keyed mechanism's charge (``Σ collection_cost`` = ``lifetime_bound``) covers it, T <= 8;
* the L-GRR example (ε∞ = 2, ε₁ = 1, d = 3): the worst pair loses 7.45 at T = 7 and 8.54 at T = 8
  (named pairs only: 5.47 and 6.86), and a charge fitted between the two is refused.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

import ldp_plugin as ldp
from ldp_plugin.exact import epsilon_of_ratio
from ldp_plugin.registry import load_registry, wrapper_instances
from ldp_plugin.registry._loader import KINDS
from ldp_plugin.verification.histories import worst_cases
from ldp_plugin.verification.seeded_bugs import FittedChargeLGRR
from ldp_plugin.verification.transcript import _Column, exact_pair_loss, history_pair_count, transcript_layer


def _keyed_instances() -> list:
    out = []
    for name, decl in sorted(load_registry(kinds=KINDS).items()):
        cls = decl.mechanism_class()
        for inst in decl.canonical:
            m = cls(**inst)
            if hasattr(m, "transcript_model"):
                out.append(m)
    out += [m for _, m in wrapper_instances() if hasattr(m, "transcript_model")]
    out.append(ldp.Memoized(epsilon_permanent=3.0, epsilon_instantaneous=1.0, d=3, max_values=2))  # U < N, several units
    return out


KEYED = _keyed_instances()


def _heavy(m) -> bool:
    """Several columns over three or more units: the T <= 8 programme takes seconds."""
    model = m.transcript_model()
    return len(model.perm) > 1 and model.units >= 3


KEYED_MARKED = [pytest.param(m, marks=pytest.mark.slow) if _heavy(m) else m for m in KEYED]


def _id(m) -> str:
    return f"{m.name}-" + "-".join(f"{k}{v}" for k, v in m.spec()["params"].items() if k in ("d", "g", "d_bits", "max_values", "epsilon_perm", "epsilon_permanent"))


def test_every_registered_keyed_name_is_covered():
    names = {m.name for m in KEYED}
    assert {"l-grr", "loloha", "l-oue", "l-osue", "l-sue", "dbitflip", "memoized-krr"} <= names


# -- an exhaustive enumeration: every pair of histories, every transcript, exact ---------------------
def _histories(N: int, U: int, T: int) -> list:
    return [u for u in itertools.product(range(N), repeat=T) if len(set(u)) <= U]


def _pattern(u: tuple) -> tuple:
    first: dict = {}
    return tuple(first.setdefault(v, len(first)) for v in u)


def _exact_probs(perm, inst, u: tuple, T: int) -> list:
    """P(y | u) for every transcript y of one column, by the definition summed over the permanent
    entries of the units u uses (independent across units), in exact rationals."""
    O, S = len(inst[0]), len(inst)
    units = sorted(set(u))
    out = []
    for y in itertools.product(range(O), repeat=T):
        total = Fraction(0)
        for table in itertools.product(range(S), repeat=len(units)):
            b = dict(zip(units, table))
            term = math.prod((perm[v][b[v]] for v in units), start=Fraction(1))
            for t in range(T):
                term *= inst[b[u[t]]][y[t]]
            total += term
        out.append(total)
    return out


def _exhaustive(model, T: int, relation: str):
    """max over ordered pairs (u, w) of the relation of Π_c max_y P_c(y|u)/P_c(y|w) (None: infinite)."""
    H = _histories(model.units, min(model.unit_bound, model.units), T)
    probs = {u: [_exact_probs(p, i, u, T) for p, i in zip(model.perm, model.inst)] for u in H}
    best: Fraction | None = Fraction(0)
    for u in H:
        for w in H:
            if relation == "value" and _pattern(u) != _pattern(w):
                continue
            ratio: Fraction | None = Fraction(1)
            for pu, pw in zip(probs[u], probs[w]):
                col = Fraction(0)
                for a, b in zip(pu, pw):
                    if a == 0:
                        continue
                    if b == 0:
                        col = None
                        break
                    col = max(col, a / b)
                ratio = None if ratio is None or col is None else ratio * col
            if ratio is None:
                return None
            best = max(best, ratio)
    return best


def _small_T(model) -> int:
    """The largest T <= 4 whose exhaustive enumeration stays small (pairs × transcripts × tables)."""
    T = 1
    U = min(model.unit_bound, model.units)
    while T < 4:
        n = len(_histories(model.units, U, T + 1))
        work = n * n * sum(len(i[0]) ** (T + 1) for i in model.inst) * len(model.inst[0]) ** min(T + 1, U)
        if work > 400_000:
            break
        T += 1
    return T


@pytest.mark.parametrize("mech", KEYED, ids=_id)
def test_worst_case_equals_an_exhaustive_enumeration(mech):
    model = mech.transcript_model()
    T_ex = _small_T(model)
    assert T_ex >= 2
    worst = worst_cases(model, T_ex)
    for T in range(1, T_ex + 1):
        for relation in ("user", "value"):
            assert worst[(relation, T)].ratio == _exhaustive(model, T, relation), (relation, T)
            # the witness attains it, by the layer's own block factorization
            cols = [_Column(p, i, T) for p, i in zip(model.perm, model.inst)]
            wc = worst[(relation, T)]
            assert exact_pair_loss(cols, wc.u, wc.w) == wc.ratio
            if relation == "value":
                assert _pattern(wc.u) == _pattern(wc.w)
            assert all(len(set(h)) <= model.unit_bound for h in (wc.u, wc.w))


@pytest.mark.parametrize("mech", KEYED_MARKED, ids=_id)
def test_the_charge_covers_the_exact_worst_case(mech):
    """Every keyed mechanism, T <= 8: lifetime_bound (Σ collection_cost) >= the exact worst case
    over every pair of histories, under both relations (None: the ledger refuses the collection)."""
    r = transcript_layer(mech)
    assert r["applicable"] and r["T_max"] >= 6 and r["passed"], [x for x in r["rows"] if not x["passed"]]
    model = mech.transcript_model()
    for row in r["rows"]:
        assert row["witness_checked"]
        bound = mech.lifetime_bound(row["T"], relation=row["relation"])
        assert (bound is None) == (row["charged"] is None)
        if bound is not None:
            assert row["exact_loss"] <= float(bound) + 1e-12
        assert row["pairs"] == history_pair_count(model, row["T"], row["relation"])


def test_history_pair_count_counts_the_enumerated_pairs():
    for N, U, T in ((3, 3, 3), (4, 2, 3), (2, 2, 4)):
        H = _histories(N, U, T)
        model = type("M", (), {"units": N, "unit_bound": U})
        assert history_pair_count(model, T, "user") == len(H) ** 2
        assert history_pair_count(model, T, "value") == sum(_pattern(u) == _pattern(w) for u in H for w in H)


def test_lgrr_example_worst_pair_over_every_history():
    m = ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)
    worst = worst_cases(m.transcript_model(), 8)
    loss = {T: epsilon_of_ratio(worst[("user", T)].ratio) for T in (7, 8)}
    assert 7.44 < loss[7] < 7.46 and 8.53 < loss[8] < 8.54  # named pairs alone: 5.47 and 6.86
    assert loss[7] <= float(m.lifetime_bound(7)) and loss[8] <= float(m.lifetime_bound(8))  # 9.96, 11.46
    # the worst pairs use all three units in both histories
    assert all(len(set(h)) == 3 for T in (7, 8) for h in (worst[("user", T)].u, worst[("user", T)].w))


def test_a_charge_between_the_named_pairs_and_the_true_worst_is_refused():
    bug = FittedChargeLGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3)
    for quick in (True, False):
        r = transcript_layer(bug, quick=quick)
        failed = [x for x in r["rows"] if not x["passed"]]
        assert not r["passed"] and [(x["T"], x["relation"]) for x in failed] == [(6, "user")]
        assert failed[0]["exact_loss"] > failed[0]["charged"] == pytest.approx(6.54)
    assert transcript_layer(ldp.LGRR(epsilon_perm=2.0, epsilon_1=1.0, d=3), quick=True)["passed"]


def test_infinite_loss_is_exact_and_refused_only_where_the_ledger_refuses():
    m = ldp.DBitFlipPM(epsilon_perm=2.0, epsilon_1=1.0, d=4, d_bits=2)
    worst = worst_cases(m.transcript_model(), 4)
    assert worst[("user", 1)].ratio is not None and all(worst[("user", T)].ratio is None for T in (2, 3, 4))
    assert all(worst[("value", T)].ratio is not None for T in (1, 2, 3, 4))
    rows = transcript_layer(m, quick=True)["rows"]
    assert all(x["charged"] is None for x in rows if x["relation"] == "user" and x["T"] >= 2)
    assert all(x["exact_loss"] == math.inf for x in rows if x["relation"] == "user" and x["T"] >= 2)
