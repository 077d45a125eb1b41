"""The privacy of **repeated collections** of a memoized (keyed) mechanism: the lifetime bound a
ledger and a device charge, under a named neighbouring relation, and its proof.

Setting (every keyed mechanism: L-GRR, L-OUE, L-OSUE, L-SUE, LOLOHA, dBitFlipPM, ``Memoized``).
Collection ``t`` of one user maps the user's value to a **memoized unit** ``u_t`` in a unit
domain ``[N]`` (the value itself; LOLOHA: its hash under the user's public seed; dBitFlipPM: the
pattern), at most ``U`` distinct units per user (the protocol's unit bound). The user's secret key
fixes a **permanent table** ``B = (B[v])_{v ∈ [N]}`` over *all* units: independent entries,
``B[v] ~ PRR(· | v)``, the permanent layer, ``E``-LDP in ``v`` (``E = ε∞``). Report ``t`` is
``y_t ~ IRR(· | B[u_t])`` with fresh randomness; ``IRR`` is ``I``-LDP over *its whole input*
(any two permanent states; ``I = ε_inst``, for a unary report ``d`` times the per-bit ε). One
report alone is ``ε₁``-LDP (the composed channel, ``ε₁ <= min(E, I)``). So

    P(y | u) = E_B [ Π_t IRR(y_t | B[u_t]) ],

and ``B`` has the same distribution whatever the user's history is (LOLOHA: conditioned on the
public seed, which is independent of the data; dBitFlipPM: on the public buckets).

**Neighbouring relations** (a privacy claim names one):

* **user level** — any two histories ``h, h'`` of one user over the same ``T`` collections (at
  most ``U`` distinct units each). This is the default (``relation="user"``).
* **value level** — the papers' relation: two histories with the **same change pattern** (the same
  collections share a memoized unit: ``u' = π ∘ u`` for a bijection ``π`` of the units), differing
  in the values held. The transcript reveals *when* a value changes and comes back; only the user
  level hides that. A deployment opts in by naming it (``relation="value"``).

**Theorem** (user level). For every ``T >= 1`` and every pair of histories,
``|ln P(y | h) / P(y | h')| <= user_bound(T)`` for every transcript ``y``, with

    user_bound(T) = min( ε₁ + (T − 1)·I ,  (N − 1)/N · (K·E + T·I) ,  K·E + (K − 1)/K · T·I ),

``K = min(T, U)``, ``N >= 2``.

*Lemma 1 (same table).* ``P(y|u) <= e^{I·D(u,u')} P(y|u')`` with ``D`` the Hamming distance of the
unit sequences: for each fixed ``B`` the products differ only at the ``D`` collections with
``u_t ≠ u'_t``, each factor by at most ``e^I``; take the expectation over ``B`` (same law).

*Lemma 2 (chain rule).* ``P(y|u) = Π_t P(y_t | y_{<t}, u)``; ``P(y_1 | u)`` is the one-report
channel (ratio ``<= e^{ε₁}``); for ``t >= 2``, ``P(y_t | y_{<t}, u) = Σ_b P(B[u_t] = b | y_{<t}, u)
IRR(y_t | b)`` lies in ``[min_b IRR(y_t|b), max_b IRR(y_t|b)]``, so the ratio is ``<= e^I``.
Hence ``L <= ε₁ + (T − 1)·I`` (it also shows that one report, *conditioned on any past reports of
the same key*, is ``I``-LDP — the map of :func:`ldp_plugin.make_longitudinal`).

*Lemma 3 (same pattern; the papers' bound).* If ``u' = π ∘ u`` with ``π`` a bijection, then
``P(y|u) <= e^{E·m} P(y|u')``, ``m = #{distinct units v of u : π(v) ≠ v} <= min(T, U)``: with
``v_1..v_k`` the distinct units of ``u`` and ``j(t)`` the block of ``t``, ``P(y|u) = Σ_c Π_j
PRR(c_j | v_j) · G_y(c)`` with ``G_y(c) = Π_t IRR(y_t | c_{j(t)})`` the *same* function under
``u'`` (where ``c_j = B[π(v_j)]``, still independent because ``π`` is injective); replace each
factor ``PRR(c_j | v_j) <= e^{E[π(v_j) ≠ v_j]} PRR(c_j | π(v_j))``.

*Triangle and averaging.* For ``s ∈ Z_N`` let ``σ_s(v) = v + s mod N`` (a bijection of the units),
``u^s = σ_s ∘ u``. By Lemma 3 then Lemma 1, ``L(u, u') <= k·E·[s ≠ 0] + I·D(u^s, u')`` for every
``s`` (``k = #distinct units of u <= K = min(T, U)``). Each ``t`` has exactly one ``s`` with
``σ_s(u_t) = u'_t``, so ``Σ_s D(u^s, u') = T(N − 1)`` and, with ``D_0 = D(u, u')``,
``min_{s ≠ 0} D(u^s, u') <= T − D_0/(N − 1)``. Thus ``L <= max_{0 <= D_0 <= T} min(I·D_0,
K·E + I·T − I·D_0/(N − 1))``: the minimum of an increasing and a decreasing line, maximal where
they cross (``D_0 = (N − 1)(K·E + I·T)/(N·I)``) or at ``D_0 = T``, i.e.
``L <= min(I·T, (N − 1)/N·(K·E + I·T))``.

*Pairing.* Let ``A`` (``k`` units) and ``A'`` (``k'`` units) be the units of ``u`` and ``u'``,
``m = max(k, k') <= K``; pad both to ``m`` distinct units (``N >= m``) and list them
``a_0..a_{m−1}``, ``a'_0..a'_{m−1}``. For ``s ∈ Z_m`` let ``π_s`` be a bijection of ``[N]`` with
``π_s(a_i) = a'_{i+s mod m}``. Each ``t`` (``u_t = a_i``, ``u'_t = a'_j``) has exactly one ``s``
with ``π_s(u_t) = u'_t``, so ``Σ_s D(π_s ∘ u, u') = T(m − 1)`` and some ``s`` has
``D <= T(m − 1)/m``; by Lemma 3 (cost ``<= k·E``) and Lemma 1, ``L <= K·E + (K − 1)/K·T·I``
(this one wins when ``U < N``). Taking the smallest of the
three bounds gives the theorem; it depends on ``T`` only (never on the user's values), so a device's refusal point
reveals nothing, and it is non-decreasing in ``T`` (each collection's charge is ``>= 0``).

Without an instantaneous layer (dBitFlipPM, ``I = ∞``) two reports of one key are equal unless
the pattern changed: ``user_bound(1) = ε₁`` and ``user_bound(T >= 2) = ∞`` (exactly: the pair
"same pattern twice" vs "pattern changed" has a transcript of probability 0 under one and > 0
under the other).

**Value level**: ``value_bound(T) = min(min(T, U)·E, user_bound(T))`` (Lemma 3, and the value
relation is contained in the user relation).

All bounds are exact rationals (``Fraction``) from rounded-up ε's (``E``, ``ε₁``: the mechanism's
declared ε's, which its realized ratios satisfy exactly; ``I``: the realized instantaneous ratio's
ε rounded up, :func:`ldp_plugin.exact.epsilon_of_ratio`). A ledger charges collection ``t`` the
increment ``bound(t) − bound(t − 1)``.

:class:`TranscriptModel` describes the table and the layers exactly (per independent column), so
the transcript layer of ``ldp verify`` (:mod:`ldp_plugin.verification.transcript`) can compute
the exact loss of every transcript and compare it with these bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from .._errors import LDPParameterError

__all__ = ["RELATIONS", "check_relation", "user_bound", "value_bound", "bound", "increment", "TranscriptModel", "UnboundedLossError"]

#: the neighbouring relations a repeated collection can be charged under (default first)
RELATIONS = ("user", "value")


class UnboundedLossError(LDPParameterError):
    """The charge of a collection is unbounded under the named relation (dBitFlipPM at user
    level, second collection onward): a ledger or a device refuses it."""


def check_relation(relation: object) -> str:
    if relation not in RELATIONS:
        raise LDPParameterError(f"relation must be 'user' (any two histories of one user, the default) or 'value' "
                                f"(the papers' same-change-pattern relation) (got {relation!r})")
    return str(relation)


def _check_t(t: object, low: int) -> int:
    if isinstance(t, bool) or not isinstance(t, int) or t < low:
        raise LDPParameterError(f"t must be an int >= {low} (got {t!r})")
    return t


def user_bound(t: int, *, eps_one: Fraction, eps_inst: Optional[Fraction], eps_perm: Fraction, units: int, unit_bound: int) -> Optional[Fraction]:
    """The theorem's ``user_bound(t)`` (``None``: unbounded). ``eps_inst=None``: no instantaneous
    layer; ``units`` = ``N``; ``unit_bound`` = ``U``."""
    t = _check_t(t, 0)
    if t == 0:
        return Fraction(0)
    if eps_inst is None:
        return Fraction(eps_one) if t == 1 else None
    chain = Fraction(eps_one) + (t - 1) * Fraction(eps_inst)
    if units < 2:  # one unit: every history is the same unit sequence
        return Fraction(0)
    k = min(t, unit_bound, units)
    tri = Fraction(units - 1, units) * (k * Fraction(eps_perm) + t * Fraction(eps_inst))
    pairing = k * Fraction(eps_perm) + Fraction(k - 1, k) * t * Fraction(eps_inst)
    return min(chain, tri, pairing)


def value_bound(t: int, *, eps_one: Fraction, eps_inst: Optional[Fraction], eps_perm: Fraction, units: int, unit_bound: int) -> Fraction:
    """``min(min(t, U)·E, user_bound(t))``: the same-change-pattern relation."""
    t = _check_t(t, 0)
    papers = min(t, unit_bound) * Fraction(eps_perm)
    user = user_bound(t, eps_one=eps_one, eps_inst=eps_inst, eps_perm=eps_perm, units=units, unit_bound=unit_bound)
    return papers if user is None else min(papers, user)


def bound(relation: str, t: int, **params) -> Optional[Fraction]:
    """The lifetime bound after ``t`` collections under ``relation`` (``None``: unbounded)."""
    check_relation(relation)
    return user_bound(t, **params) if relation == "user" else value_bound(t, **params)


def increment(relation: str, t: int, **params) -> Fraction:
    """What collection ``t`` (1-based) adds: ``bound(t) − bound(t − 1)``; raises
    :class:`UnboundedLossError` when ``bound(t)`` is unbounded."""
    _check_t(t, 1)
    hi = bound(relation, t, **params)
    if hi is None:
        raise UnboundedLossError(
            f"collection {t} has unbounded privacy loss at the {relation} level (no instantaneous layer: a second report "
            "of the same key reveals whether the memoized unit changed); only relation='value' bounds it")
    return hi - bound(relation, t - 1, **params)


@dataclass(frozen=True)
class TranscriptModel:
    """The exact law of one user's transcript as independent **columns** (one for a k-ary report,
    one per bit for unary reports): column ``c`` has a permanent table ``perm[c][v][b] =
    P(B_c[v] = b)`` over the ``units`` memoized units (independent across units and columns)
    and an instantaneous channel ``inst[c][b][y] = P(y | b)`` (the identity when there is no
    instantaneous layer). ``P(y | u) = Π_c Π_{blocks (v, S) of u} Σ_b perm[c][v][b]
    Π_{t ∈ S} inst[c][b][y_{c,t}]``."""

    units: int
    unit_bound: int
    perm: tuple
    inst: tuple

    @property
    def columns(self) -> int:
        return len(self.perm)
