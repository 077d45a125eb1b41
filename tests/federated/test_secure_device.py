"""The device side of a secure sum without Flower's engine: every governance refusal happens
before any spend, reads no value, and a retried round returns the same vector."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ldp_plugin._errors import LDPParameterError
from ldp_plugin.federated.config import DeviceConfig
from ldp_plugin.federated.device import DeviceFleet
from ldp_plugin.federated.plan import Plan
from ldp_plugin.federated.secure_config import SecureSumConfigError
from ldp_plugin.federated.secure_device import SecureSumRefusal, contribute
from ldp_plugin.federated.secure_query import SecureSumQuery
from ldp_plugin.federated.secure_release import release_sum
from ldp_plugin.federated.secure_simulate import secure_device_toml


def _setup(cfg) -> dict:
    """What Flower's SecAgg+ setup stage stores for the node (secaggplus_mod's state keys)."""
    return {"sample_num": cfg.nodes, "share_num": cfg.shares, "threshold": cfg.threshold, "clipping_range": float(cfg.clipping_range),
            "target_range": cfg.quantization_range, "mod_range": cfg.modulus, "max_weight": 1.0}


def _fleet(tmp_path, users=3, min_participants=3, max_bins=16, cap="5", max_eps="4", allowed=None):
    text = secure_device_toml(users_per_node=users, d=8, seed="1", device_cap=cap, max_epsilon=max_eps, min_participants=min_participants)
    text = text.replace("secure_sum_max_bins = 8", f"secure_sum_max_bins = {max_bins}")
    if allowed is not None:
        text = text.replace("[data]", f"allowed_mechanisms = {allowed!r}\n\n[data]".replace("'", '"'))
    p = tmp_path / "device.toml"
    p.write_text(text)
    cfg = DeviceConfig.load(p, {"partition-id": 0})
    DeviceFleet.init(cfg)
    return DeviceFleet.open(cfg)


def _spent(fleet) -> Fraction:
    return sum((r.epsilon for r in fleet.ledger.history()), Fraction(0))


def _q(**kw):
    base = dict(query_id="p/q/r1", option="noise", d=8, epsilon="1", delta=1e-6, nodes=5, min_participants=3, site_bound=3)
    return SecureSumQuery(**{**base, **kw})


def test_noise_contribution_charged_once_and_kept(tmp_path):
    fleet = _fleet(tmp_path)
    q = _q()
    dv = q.derive()
    v = contribute(fleet, q.to_json(), _setup(dv.config))
    assert v.shape == (9,) and v[8] == 3
    assert dv.config.entry_low <= v[:8].min() and v[:8].max() <= dv.config.entry_high  # holds except with probability beta
    (rec,) = fleet.ledger.history()
    assert rec.epsilon == dv.charge.epsilon and rec.cohorts == (0, 1, 2) and rec.params["delta"] == 1e-6
    assert np.array_equal(contribute(fleet, q.to_json(), _setup(dv.config)), v)  # a retried round: the same vector, no new charge
    assert len(fleet.ledger.history()) == 1


def test_local_contribution_records_the_shuffle_bound(tmp_path):
    fleet = _fleet(tmp_path)
    q = _q(option="local", epsilon="2")
    dv = q.derive()
    v = contribute(fleet, q.to_json(), _setup(dv.config))
    assert v[:8].sum() == 3 and set(np.unique(v[:8])) <= {0, 1, 2, 3}
    (rec,) = fleet.ledger.history()
    assert rec.epsilon == Fraction(2)
    (claim,) = fleet.ledger.shuffle_records(rec.query_id)
    assert claim.n_min == 3 and claim.epsilon_central < 2


@pytest.mark.parametrize("case, reason", [
    ("nodes", "setup_mismatch"), ("modulus", "setup_mismatch"), ("shares", "setup_mismatch"), ("weight", "setup_mismatch"),
    ("owner_min", "below_min_participants"), ("bins", "too_many_bins"), ("site", "above_site_bound"),
    ("policy_eps", "epsilon_above_policy"), ("not_allowed", "mechanism_not_allowed"), ("budget", "budget_exhausted"), ("garbage", "malformed_query"),
])
def test_refusals_spend_nothing(tmp_path, case, reason):
    kw = {"owner_min": {"min_participants": 4}, "bins": {"max_bins": 4}, "site": {"users": 4}, "policy_eps": {"max_eps": "0.5"},
          "not_allowed": {"allowed": ["krr"]}, "budget": {"cap": "0.5", "max_eps": "0.5"}}.get(case, {})
    fleet = _fleet(tmp_path, **kw)
    q = _q(epsilon="0.4") if case == "budget" else _q()
    setup = _setup(q.derive().config)
    if case == "nodes":
        setup["sample_num"] = 6
    elif case == "modulus":
        setup["mod_range"] = 1 << 32
    elif case == "shares":
        setup["share_num"] = 4
    elif case == "weight":
        setup["max_weight"] = 1000.0
    text = "{not json" if case == "garbage" else q.to_json()
    if case == "budget":  # the first sum fits, the second does not
        contribute(fleet, text, setup)
        before = _spent(fleet)
        text, setup = _q(epsilon="0.4", query_id="p/q/r2").to_json(), _setup(_q(epsilon="0.4", query_id="p/q/r2").derive().config)
    else:
        before = Fraction(0)
    with pytest.raises(SecureSumRefusal) as e:
        contribute(fleet, text, setup)
    assert e.value.reason == reason
    assert _spent(fleet) == before


def test_measured_misconfigurations_refused_by_the_plan_before_any_round(tmp_path):
    """Flower's silent failures (clip, wrap, even shares, a minimum the protocol cannot hold)
    cannot be configured: the plan is refused when read."""
    def plan(secure, d=8, nodes=5, mech="skellam"):
        return Plan.from_dict({"name": "s", "mode": "secure-sum", "expected_nodes": nodes},
                              [{"name": "q", "mechanism": mech, "epsilon": "1", "params": {"d": d}, "secure": secure}], tmp_path)
    with pytest.raises(SecureSumConfigError, match="shares"):
        plan({"delta": 1e-6, "min_participants": 3, "shares": 4})
    with pytest.raises(SecureSumConfigError, match="below 2\\*\\*32"):
        plan({"delta": 1e-6, "min_participants": 3, "site_bound": 1 << 23}, nodes=1000)
    with pytest.raises(SecureSumConfigError, match="min_participants"):
        plan({"delta": 1e-6, "min_participants": 5})
    with pytest.raises(LDPParameterError, match="nodes"):
        plan({"delta": 1e-6, "min_participants": 2}, nodes=2)
    with pytest.raises(LDPParameterError, match="mechanism"):
        plan({"delta": 1e-6, "min_participants": 3}, mech="oue")
    with pytest.raises(LDPParameterError, match="secure table"):
        Plan.from_dict({"name": "s", "expected_nodes": 5}, [{"name": "q", "mechanism": "krr", "epsilon": "1", "params": {"d": 8},
                                                            "secure": {"delta": 1e-6, "min_participants": 3}}], tmp_path)


def test_release_accounts_for_who_was_summed_and_thresholds_small_counts():
    q = _q(site_bound=100)
    dv = q.derive()
    total = np.array([50, 3, 0, 10, 7, 1, 2, 27, 100])
    row = release_sum(q, total, [11, 12, 13, 14], min_count=5)
    assert row["status"] == "released" and row["nodes_summed"] == 4 and row["summed_node_ids"] == [11, 12, 13, 14]
    assert row["central"]["epsilon"] == pytest.approx(float(dv.noise_release(4, 1e-6).epsilon)) and row["central"]["epsilon"] < float(dv.charge.epsilon)
    sup = [e["suppressed"] for e in row["estimate"]]
    assert sup == [False, True, True, False, False, True, True, False]
    assert release_sum(q, total, [11, 12])["status"] == "below_minimum"



def test_a_value_outside_the_querys_bins_is_replaced_not_refused(tmp_path):
    """``d`` is the server's: a refusal on a value >= d would tell it the largest value a node's users
    hold. The value is replaced by the device's domain rule, and the node contributes."""
    fleet = _fleet(tmp_path)
    fleet.values = np.array([0, 1, 7])  # 7 is outside a 4-bin query's domain
    q = _q(option="noise", d=4)
    v = contribute(fleet, q.to_json(), _setup(q.derive().config))
    assert v.shape == (5,) and v[4] == 3 and len(fleet.ledger.history()) == 1
