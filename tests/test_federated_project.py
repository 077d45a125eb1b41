"""Issue 34, the app project `ldp federated new` writes: Flower's own loader accepts it (components,
run config naming the plan), the plan it ships parses and builds, the device TOML it ships
initializes; plans from the run config (flat keys or a job file) are validated."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ldp_plugin as ldp
from ldp_plugin.federated.cli import new_project
from ldp_plugin.federated.config import DeviceConfig
from ldp_plugin.federated.device import DeviceFleet
from ldp_plugin.federated.plan import Plan


@pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning")  # pathspec, inside Flower's FAB builder
def test_new_writes_a_project_flower_accepts(tmp_path):
    flwr_config = pytest.importorskip("flwr.cli.config_utils")
    proc = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "federated", "new", str(tmp_path / "app")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    config, warnings = flwr_config.load_and_validate(tmp_path / "app" / "pyproject.toml")
    assert config is not None, warnings
    comps = config["tool"]["flwr"]["app"]["components"]
    assert comps == {"serverapp": "ldp_plugin.federated.app:server_app", "clientapp": "ldp_plugin.federated.app:client_app"}
    run_config = config["tool"]["flwr"]["app"]["config"]
    plan = Plan.from_run_config(run_config)
    assert plan.name == "demo" and [q.name for q in plan.queries] == ["apps", "daily-app"]
    assert plan.out_dir == (tmp_path / "app" / "results").resolve()
    assert [q.build().name for q in plan.queries] == ["oue", "loloha"]
    disc = Plan.from_toml(tmp_path / "app" / "discovery.toml")  # the discovery job the walkthrough runs
    assert [(q.name, q.mechanism) for q in disc.queries] == [("words", "pem")] and disc.out_dir == plan.out_dir
    again = subprocess.run([sys.executable, "-m", "ldp_plugin.cli", "federated", "new", str(tmp_path / "app")], capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "--force" in again.stderr  # never overwrites silently
    cfg = DeviceConfig.load(tmp_path / "app" / "device.toml", {"partition-id": 1})
    assert DeviceFleet.init(cfg)["devices"] == 2000
    # the bundle `flwr run` ships to the SuperLink and every SuperNode holds no device state, key or result
    import io
    import zipfile

    from flwr.cli.build import build_fab_from_disk

    app = tmp_path / "app"
    for extra in ("results/demo/round-0001.json", "flwr-home/apps/x/y.json", "certs/nodes/node-0.pub"):
        (app / extra).parent.mkdir(parents=True, exist_ok=True)
        (app / extra).write_text("{}")
    names = zipfile.ZipFile(io.BytesIO(build_fab_from_disk(app))).namelist()
    assert (app / "state" / "node-1" / "keystore.json").exists() and "plan.toml" in names
    assert not [n for n in names if n.split("/")[0] in ("state", "certs", "results", "flwr-home", "device.toml")], names


def test_plans_from_the_run_config_are_validated(tmp_path):
    flat = Plan.from_run_config({"mechanism": "krr", "epsilon": "1", "params": "d=4", "rounds": 2, "first-round": 5, "min-batch": 10})
    assert list(flat.round_numbers()) == [5, 6] and flat.queries[0].build().name == "krr"
    with pytest.raises(ldp.LDPParameterError, match="unknown plan key"):
        Plan.from_dict({"name": "x", "ledger": "/elsewhere"}, [{"name": "q", "mechanism": "oue"}], tmp_path)
    with pytest.raises(ldp.LDPParameterError, match="rounds"):
        Plan.from_run_config({"mechanism": "krr", "epsilon": "1", "params": "d=4", "rounds": 0})
    with pytest.raises(ldp.LDPParameterError, match="unique"):
        Plan.from_dict({}, [{"name": "q", "mechanism": "oue"}, {"name": "q", "mechanism": "oue"}], tmp_path)
    with pytest.raises(ldp.LDPParameterError, match="does not exist"):
        Plan.from_run_config({"job": str(tmp_path / "missing.toml")})
