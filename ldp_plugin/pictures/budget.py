"""A ledger's spend over time: one panel per population, one step line per group of cohorts that
were charged alike (their cumulative ε after each spend), the lifetime cap as a dashed line. A
group is labelled by its cohort ranges (``0-999``), never by thousands of ids."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .._errors import LDPParameterError
from .axes import new_figure

__all__ = ["spend_over_time"]


def spend_over_time(populations: Sequence[dict], *, title: Optional[str] = None) -> Any:
    """``populations``: ``[{"name", "lifetime_cap", "groups": [{"label", "times", "cumulative"}]}]``
    (``times`` datetimes of each spend, ``cumulative`` the group's total ε after it). Returns the
    Figure."""
    if not populations:
        raise LDPParameterError("a budget plot needs at least one ledger")
    fig = new_figure(8.0, 3.2 * len(populations))
    axes = fig.subplots(len(populations), 1, squeeze=False)[:, 0]
    for ax, pop in zip(axes, populations):
        cap = float(pop["lifetime_cap"])
        groups = [g for g in pop["groups"] if len(g["times"])]
        for g in groups:
            if len(g["times"]) != len(g["cumulative"]):
                raise LDPParameterError("each cohort group needs one time per cumulative spend")
        if groups:  # every line runs from the ledger's first spend (at 0) to its last (at its total)
            start = min(g["times"][0] for g in groups)
            end = max(g["times"][-1] for g in groups)
        for g in groups:
            times = [start, *g["times"], end]
            cum = np.concatenate([[0.0], np.asarray(g["cumulative"], dtype=np.float64), [float(g["cumulative"][-1])]])
            ax.step(times, cum, where="post", marker="o", ms=3, markevery=list(range(1, len(times) - 1)), label=g["label"])
        ax.axhline(cap, color="black", ls="--", lw=1, label=f"lifetime cap {cap:g}")
        ax.set_ylim(0, cap * 1.08 if cap > 0 else 1)
        ax.set_ylabel("ε spent")
        ax.set_xlabel("time of spend (UTC)")
        ax.set_title(f"population {pop['name']}" + ("" if groups else " (no spend yet)"))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        for label in ax.get_xticklabels():
            label.set_rotation(20)
    if title:
        fig.suptitle(title)
    return fig
