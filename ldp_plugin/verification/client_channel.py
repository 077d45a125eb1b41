"""The realized channel of the real client, rebuilt from the values it compares uniform words
against — not from the thresholds a mechanism documents.

:func:`client_channel_row` runs the real client's verification entry point
(``sample_verification_outputs``) for **one** user on input ``x`` under the enumerating source of
:mod:`.positions` in replay mode (:func:`.positions.replay_client`; one outcome model serves both
layers): every call of the sampling API is answered, in turn, with each of its possible outcomes
and its exact weight (a Bernoulli with threshold ``T``: ``T/2**64`` and ``1 − T/2**64``; a uniform
integer on ``[0, r)``: ``1/r`` each; an inverse-CDF search on boundaries ``B``: one outcome per
interval, of weight ``(B[j+1] − B[j])/2**64``; a uniform subset or ordered prefix: one over their
number). Replaying the client once per leaf of that tree of outcomes (depth first) and adding each
leaf's weight (exact rationals) to the output the client returned gives the client's exact output
distribution — the row of the channel it realizes, built only from the integers it passed to the
source and from what it did with the outcomes. A threshold used in the wrong place (swapped,
complemented, another layer's) changes this row, whatever the thresholds the mechanism documents.
The positions layer runs the same source, vectorized over one user per combination of outcomes,
on the production entry point, and covers keyed clients by replicates; this check is exact only.

The sampler primitives themselves (that ``bernoulli(T)`` is ``W < T`` for a uniform word) are
checked bit for bit by the sampling layer's own tests. Clients that read raw words or bytes
(per-user seeds, secret keys of the longitudinal protocols) or sample by rejection (an unbounded
tree) cannot be enumerated: :class:`NotEnumerable` is raised and the caller reports the family as
such.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .channels import declared_channel

from .positions import NotEnumerable, OutsideChannel, replay_client

__all__ = ["NotEnumerable", "client_channel_row", "client_channel", "client_channel_check"]


def client_channel_row(mech: Any, x: int, *, max_leaves: int = 50_000) -> dict:
    """``{output column: probability}`` (nonzero entries) of the real client on input ``x`` (module
    docstring). Raises :class:`NotEnumerable`, or :class:`OutsideChannel` for an output the
    declared channel does not have."""
    row, _ = _row(mech, x, max_leaves, len(declared_channel(mech).outputs))
    return {j: p for j, p in enumerate(row) if p}


def _row(mech: Any, x: int, max_leaves: int, width: int) -> tuple:
    return replay_client(lambda n, src: mech.sample_verification_outputs(x, n, src), width, max_leaves=max_leaves)


def client_channel(mech: Any, *, max_leaves: int = 50_000, total_leaves: int | None = None, declared: Any = None) -> list:
    """Every input's :func:`client_channel_row`, as dense rows over the declared channel's
    columns (an output outside the declared channel adds a column, so the rows cannot match).
    ``total_leaves`` bounds the replays over all inputs (:class:`NotEnumerable` beyond).
    ``declared``: the declared channel when the caller has it (the instance's, :func:`.channels.declared_channel`,
    otherwise)."""
    width = len((declared if declared is not None else declared_channel(mech)).outputs)
    rows = []
    budget = total_leaves
    for x in range(mech.verification_input_count()):
        try:
            row, leaves = _row(mech, x, max_leaves if budget is None else min(max_leaves, budget), width)
        except OutsideChannel:
            rows.append([Fraction(0)] * width + [Fraction(1)])
            continue
        if budget is not None:
            budget -= leaves
            if budget <= 0:
                raise NotEnumerable(f"more than {total_leaves} outcome paths over all inputs")
        rows.append(row)
    return rows


def client_channel_check(mech: Any, *, total_leaves: int = 20_000) -> dict:
    """The sampling-path layer's rebuild (``ldp verify``): ``client_channel`` is ``"equal"`` when the
    channel rebuilt from the client's sampler calls is the declared one, ``"differs"`` (failed)
    otherwise, or ``"not enumerable: …"`` (keyed clients, rejection loops, too many paths)."""
    declared = declared_channel(mech)
    try:
        rows = client_channel(mech, total_leaves=total_leaves, declared=declared)
    except NotEnumerable as e:
        return {"client_channel": f"not enumerable: {e}", "client_channel_passed": True}
    equal = rows == [list(r) for r in declared.matrix]
    return {"client_channel": "equal" if equal else "differs", "client_channel_passed": bool(equal)}
