"""Verification of registry declarations: all layers on every canonical instance
(:func:`verify`, :func:`verify_instance`) and the exact layer alone (:func:`verify_exact`)."""

from __future__ import annotations

from dataclasses import dataclass

from ldp_plugin.exact import epsilon_of_ratio, ratio_within_exp
from ldp_plugin.verification.client_channel import client_channel_check
from ldp_plugin.verification.draws import DRAW_LAYERS, DRAWS_FULL, DRAWS_QUICK, edge_instances, random_instances
from ldp_plugin.verification.entry_points import entry_points_layer
from ldp_plugin.verification.estimators import estimator_layer
from ldp_plugin.verification.layers import FAMILY_ALPHA, audit_layer, exact_layer, gof_layer
from ldp_plugin.verification.positions import positions_layer
from ldp_plugin.verification.production import production_layer
from ldp_plugin.verification.rates import rates_layer
from ldp_plugin.verification.joint import joint_layer
from ldp_plugin.verification.sampling_path import rate_layer, sampling_path_layer
from ldp_plugin.verification.surfaces import surfaces_layer
from ldp_plugin.verification.transcript import transcript_layer
from ldp_plugin.mechanisms.protocol import Keyed, has

from ._loader import ALL_LAYERS, Declaration

__all__ = ["verify", "verify_name", "edge_rows", "verify_instance", "verify_exact", "VerificationResult", "LAYER_KEYS", "failed_layers"]

#: each layer's name and the key of its result in a row of :func:`verify_instance`
LAYER_KEYS = (("exact", "exact"), ("sampling-path", "sampling_path"), ("goodness-of-fit", "goodness_of_fit"),
              ("rates", "rates"), ("joint", "joint"), ("audit", "audit"), ("transcript", "transcript"),
              ("production", "production"), ("positions", "positions"), ("entry-points", "entry_points"),
              ("surfaces", "surfaces"), ("estimators", "estimators"))


def failed_layers(row: dict) -> list:
    """The layers a row of :func:`verify_instance` failed."""
    return [layer for layer, key in LAYER_KEYS if key in row and not row[key]["passed"]]


def verify_name(decl: Declaration, *, seed: int = 0, quick: bool = False, alpha: float | None = None) -> list[dict]:
    """What ``ldp verify [--quick] NAME`` runs on one declaration — every layer on every canonical
    instance and the random parameter draws (:data:`DRAWS_QUICK` / :data:`DRAWS_FULL`) — and what
    :func:`ldp_plugin.registry.register` runs before it accepts a mechanism: one function, so a
    mechanism ``ldp verify`` would flag is refused at registration."""
    return verify(decl, seed=seed, quick=quick, alpha=alpha, draws=DRAWS_QUICK if quick else DRAWS_FULL)


def verify(
    decl: Declaration,
    *,
    seed: int = 0,
    quick: bool = False,
    alpha: float | None = None,
    layers: tuple = ALL_LAYERS,
    draws: int = 0,
) -> list[dict]:
    """All three verification layers on every canonical instance of ``decl``; one row each with
    ``name, instance, declared_epsilon, realized_epsilon, audit_epsilon_lower_bound,
    audit_samples, passed`` and the per-layer details. ``alpha`` is this declaration's share of
    the family-wise false-alarm rate (default ``10⁻⁶`` split over its instances). ``draws``: the edges
of every declared parameter domain first (:func:`edge_rows`: the exact layer inside, refusal just
outside), then that many random parameter draws (:mod:`ldp_plugin.verification.draws`, seeded by
``seed``), checked by the exact and sampling-path layers (rows with ``random_draw: True``).
The estimator layer runs on the first canonical instance (every data shape of its input kind; one in
the quick run) and on the first random draw (one shape)."""
    cls = decl.mechanism_class()
    a = (alpha if alpha is not None else FAMILY_ALPHA) / len(decl.canonical)
    rows = []
    for i, inst in enumerate(decl.canonical):
        mech = cls(**inst)
        rows.append(verify_instance(mech, name=decl.name, instance=dict(inst), seed=seed + 7919 * i, quick=quick, alpha=a, layers=layers, rates_target=i == 0,
                                    estimator_shapes=(1 if quick else None) if i == 0 else 0))
    if draws:  # the edges of every declared domain first, then random draws beyond the canonical instances
        # the full run also drives the public surfaces (namespace, measurements, refusals) at every edge
        rows += edge_rows(decl, layers=("exact",) if quick or "surfaces" not in layers else ("exact", "surfaces")) if "exact" in layers else []
        for j, (inst, mech) in enumerate(random_instances(decl, seed=seed, count=draws)):
            server = ("estimators",) if j == 0 and "estimators" in layers else ()
            r = verify_instance(mech, name=decl.name, instance=inst, seed=seed + 104_729 * (j + 1), quick=quick, alpha=a,
                                layers=tuple(x for x in DRAW_LAYERS if x in layers) + server, estimator_shapes=1)
            r["random_draw"] = True
            rows.append(r)
    return rows


def edge_rows(decl: Declaration, *, layers: tuple = ("exact",)) -> list[dict]:
    """The edges of each declared parameter domain (:func:`~ldp_plugin.verification.draws.edge_instances`):
    every instance at an end of a domain through ``layers`` (the exact layer; the full run adds the
    surfaces layer), and every value just outside one, which the constructor must refuse (rows with
    ``edge``; ``random_draw`` so reports group them)."""
    inside, outside = edge_instances(decl)
    rows = []
    for inst, mech, edge in inside:
        r = verify_instance(mech, name=decl.name, instance=inst, layers=layers)
        r.update({"random_draw": True, "edge": edge})
        rows.append(r)
    for inst, edge, refusal in outside:
        eps = inst.get("epsilon", inst.get("epsilon_perm"))
        rows.append({"name": decl.name, "instance": inst, "declared_epsilon": float(eps) if isinstance(eps, (int, float)) else float("nan"),
                     "realized_epsilon": float("nan"), "random_draw": True, "edge": edge, "refusal": refusal, "passed": bool(refusal["refused"])})
    return rows


def verify_instance(mech, *, name: str, instance: dict, seed: int = 0, quick: bool = False, alpha: float = 1e-6, layers=ALL_LAYERS, rates_target: bool = True,
                    estimator_shapes: int | None = 0) -> dict:
    """The verification layers on one mechanism instance (also used for the seeded bugs):
    the declared channel (exact), the code that samples (sampling path, rates, joint), the
    black-box layers (goodness of fit, audit) and the server (estimators: bias, stated variance,
    coverage, spec refusal on ``estimator_shapes`` data shapes; None: all of them; 0, the default:
    not run — :func:`verify` runs it on a declaration's first canonical instance and first draw).
    ``rates_target``: the rates layer is sized for a 0.5% relative error (a family's canonical
    instance; smaller samples otherwise)."""
    out = {"name": name, "instance": instance, "declared_epsilon": float(mech.epsilon)}
    passed = True
    if "exact" in layers:
        e = exact_layer(mech)
        out["realized_epsilon"] = e["realized_epsilon"]
        out["exact"] = e
        passed &= e["passed"]
    if "sampling-path" in layers:
        sp = sampling_path_layer(mech, seed=seed + 3)
        sp.update(client_channel_check(mech))  # the channel rebuilt from the client's sampler calls
        sp["passed"] = bool(sp["passed"] and sp["client_channel_passed"])
        out["sampling_path"] = sp
        passed &= sp["passed"]
    if "rates" in layers:
        pure = rate_layer(mech, quick=quick, alpha=alpha / 12, seed=seed + 5)
        rt = rates_layer(mech, quick=quick, alpha=alpha / 12, seed=seed + 11, target=rates_target)  # every family
        rt = {**rt, "pure_oracle": pure, "passed": bool(rt["passed"] and pure["passed"])}
        out["rates"] = rt
        passed &= rt["passed"]
    if "joint" in layers:
        jt = joint_layer(mech, n_pairs=5_000 if quick else 20_000, alpha=alpha / 6, seed=seed + 7, inputs=2 if quick else 3)
        out["joint"] = jt
        passed &= jt["passed"]
    if "positions" in layers:
        po = positions_layer(mech, quick=quick, alpha=alpha / 6, seed=seed + 11)
        out["positions"] = po
        passed &= po["passed"]
    if "entry-points" in layers:
        ep = entry_points_layer(mech, quick=quick, alpha=alpha / 6, seed=seed + 13)
        out["entry_points"] = ep
        passed &= ep["passed"]
    if "surfaces" in layers and (rates_target or not quick):  # the Polars namespace, the OpenDP measurements, the refusals (quick: a name's first instance)
        out["surfaces"] = surfaces_layer(mech, quick=quick, seed=seed + 17)
        passed &= out["surfaces"]["passed"]
    if "production" in layers:
        pr = production_layer(mech, quick=quick, alpha=alpha / 6)
        out["production"] = pr
        passed &= pr["passed"]
    if "goodness-of-fit" in layers:
        g = gof_layer(mech, n_per_input=5_000 if quick else 20_000, alpha=alpha / 6, seed=seed)
        out["goodness_of_fit"] = g
        passed &= g["passed"]
    if "audit" in layers:
        a = audit_layer(
            mech, alpha=alpha / 6, seed=seed + 1, n_pilot=5_000 if quick else 20_000, max_samples=200_000 if quick else 20_000_000
        )
        out["audit_epsilon_lower_bound"] = a["audit_epsilon_lower_bound"]
        out["audit_samples"] = a["audit_samples"]
        out["audit"] = a
        passed &= a["passed"]
    if "estimators" in layers and estimator_shapes != 0:
        es = estimator_layer(mech, quick=quick, alpha=alpha / 6, seed=seed + 17, shapes=estimator_shapes, name=name)
        out["estimators"] = es
        passed &= es["passed"]
    if "transcript" in layers and has(mech, Keyed):  # keyed mechanisms: repeated collections
        tr = transcript_layer(mech, quick=quick)
        out["transcript"] = tr
        passed &= tr["passed"]
    out["passed"] = bool(passed)
    return out


@dataclass(frozen=True)
class VerificationResult:
    name: str
    instance: dict
    declared_epsilon: float
    realized_epsilon: float
    rows_sum_to_one: bool
    equal_supports: bool
    ratio_matches_constructor: bool
    passed: bool

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def verify_exact(decl: Declaration) -> list[VerificationResult]:
    """Exact layer: enumerate each canonical instance's full realized channel."""
    results = []
    cls = decl.mechanism_class()
    for inst in decl.canonical:
        mech = cls(**inst)
        ch = mech.channel()
        rows_ok = ch.rows_sum_to_one()
        supp_ok = ch.equal_supports()
        ratio = ch.max_ratio() if supp_ok else None
        within = ratio is not None and ratio_within_exp(ratio, mech.epsilon)
        matches = ratio is not None and ratio == mech.realized_ratio
        results.append(
            VerificationResult(
                name=decl.name,
                instance=dict(inst),
                declared_epsilon=mech.epsilon,
                realized_epsilon=epsilon_of_ratio(ratio) if ratio is not None else float("inf"),
                rows_sum_to_one=rows_ok,
                equal_supports=supp_ok,
                ratio_matches_constructor=matches,
                passed=bool(rows_ok and supp_ok and within and matches),
            )
        )
    return results
