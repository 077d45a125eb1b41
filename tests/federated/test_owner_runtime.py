"""A device answers only to its owner, on real processes (the README's TLS + SuperNode-auth
deployment, :mod:`tests.federated_deployment`): SuperNodes with ``--isolation process`` and each
owner's runtime (``ldp federated device serve``), a plan listing its members' public keys.

* Three hostile app bundles, uploaded with ``flwr run`` by someone holding only the CA certificate
  (their own Flower home), try to read the devices' values, read keystore bytes, and reset the
  ledger; a fourth is the genuine app's code with another plan. Every device refuses each one
  (``app_not_pinned``): no reply content, no ledger or keystore byte changed, one line per run in
  the owner's refusal record. Power: the same hostile ClientApps, called directly on a device
  (as Flower's default subprocess isolation would run them), do return values and key bytes.
* A third SuperNode, registered through the open Control API with its own key and a runtime that
  pinned the genuine app, is not in the plan's members: it is asked nothing and counted
  ``not_a_member``; the estimate holds the members' devices only.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from ldp_plugin.cli import main as ldp_main  # noqa: E402
from ldp_plugin.federated.certs import make_node_keys  # noqa: E402
from ldp_plugin.federated.deploy import Spawned, flower_tool, flwr_run, free_port  # noqa: E402
from tests.federated_deployment import Deployment, spends  # noqa: E402

DEVICES = 30

PLAN = """[plan]
name = "trust"
rounds = 1
min_batch = 20
out_dir = "results"
round_timeout = 45
max_devices_per_node = 1000
node_wait = 40
members = ["certs/nodes/node-0.pub", "certs/nodes/node-1.pub"]

[[query]]
name = "apps"
mechanism = "krr"
epsilon = "1"
params = {d = 4}
"""

DEVICE = """[device]
name = "edge-{partition-id}"
ledger = "state/{partition-id}/ledger.sqlite"
keystore = "state/{partition-id}/keystore.json"

[trust]
pins = "state/{partition-id}/pinned-apps"
member_key = "certs/nodes/node-{partition-id}"

[policy]
lifetime_cap = "6"
max_epsilon_per_query = "2"
allowed_mechanisms = ["krr"]

[data]
source = "ldp_plugin.federated.synthetic:zipf_values"
[data.args]
devices = %d
d = 4
seed = "5-{partition-id}"
""" % DEVICES

# Hostile ClientApps: each reads what it can of the device its node_config names and returns it.
HOSTILE_CLIENT = {
    "thief": '''
        from pathlib import Path
        from flwr.app import ConfigRecord, Message, RecordDict
        from flwr.clientapp import ClientApp
        from ldp_plugin.federated.config import DeviceConfig, device_config_path

        client_app = ClientApp()

        @client_app.query()
        def _q(msg, context):
            cfg = DeviceConfig.load(device_config_path(context.node_config), context.node_config)
            values = [str(v) for v in cfg.load_values()[:20]]
            return Message(RecordDict({"loot": ConfigRecord({"values": values})}), reply_to=msg)
    ''',
    "keys": '''
        from pathlib import Path
        from flwr.app import ConfigRecord, Message, RecordDict
        from flwr.clientapp import ClientApp
        from ldp_plugin.federated.config import DeviceConfig, device_config_path

        client_app = ClientApp()

        @client_app.query()
        def _q(msg, context):
            cfg = DeviceConfig.load(device_config_path(context.node_config), context.node_config)
            return Message(RecordDict({"loot": ConfigRecord({"keystore": Path(cfg.keystore).read_bytes().hex()})}), reply_to=msg)
    ''',
    "reset": '''
        from flwr.app import ConfigRecord, Message, RecordDict
        from flwr.clientapp import ClientApp
        from ldp_plugin.federated.config import DeviceConfig, device_config_path
        from ldp_plugin.federated.device import DeviceFleet

        client_app = ClientApp()

        @client_app.query()
        def _q(msg, context):
            cfg = DeviceConfig.load(device_config_path(context.node_config), context.node_config)
            out = DeviceFleet.init(cfg, reset=True)
            return Message(RecordDict({"loot": ConfigRecord({"reset": str(out["ledger"])})}), reply_to=msg)
    ''',
}

# The hostile ServerApp: sends one message to every node and writes what came back.
HOSTILE_SERVER = '''
    import json, time
    from pathlib import Path
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.serverapp import ServerApp

    server_app = ServerApp()

    @server_app.main()
    def _main(grid, context):
        deadline = time.time() + 30
        nodes = list(grid.get_node_ids())
        while len(nodes) < 2 and time.time() < deadline:
            time.sleep(0.2)
            nodes = list(grid.get_node_ids())
        msgs = [Message(content=RecordDict({"query": ConfigRecord({"json": "{}"})}), message_type="query", dst_node_id=n, group_id="x")
                for n in nodes]
        out = []
        for rep in grid.send_and_receive(msgs, timeout=40):
            if rep.has_error():
                out.append({"error": str(rep.error.reason)})
            else:
                out.append({"content": {k: {kk: str(vv) for kk, vv in v.items()} for k, v in rep.content.config_records.items()}})
        Path(context.run_config["out"]).write_text(json.dumps({"nodes": len(nodes), "replies": out}))
'''


def _hostile_app(root: Path, name: str) -> Path:
    app = root / f"hostile-{name}"
    app.mkdir()
    (app / "pyproject.toml").write_text(textwrap.dedent(f'''
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "hostile-{name}"
        version = "1.0.0"
        license = "Apache-2.0"
        dependencies = []

        [tool.hatch.build.targets.wheel]
        packages = ["."]

        [tool.flwr.app]
        publisher = "someone-else"

        [tool.flwr.app.components]
        serverapp = "hostile_{name}_server:server_app"
        clientapp = "hostile_{name}_client:client_app"

        [tool.flwr.app.config]
        out = ""
    '''))
    (app / f"hostile_{name}_client.py").write_text(textwrap.dedent(HOSTILE_CLIENT[name]))
    (app / f"hostile_{name}_server.py").write_text(textwrap.dedent(HOSTILE_SERVER))
    return app


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refusals(dep: Deployment, pid: int) -> list:
    proc = subprocess.run([flower_tool("ldp"), "federated", "device", "refusals", str(dep.app / "device.toml"), "--node-config",
                           f"partition-id={pid}", "--json"], capture_output=True, text=True, cwd=dep.root, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["refusals"]


@pytest.fixture()
def flower_task():
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    yield
    TaskIdentity._run_id = TaskIdentity._task_id = TaskIdentity._node_id = None


def test_hostile_clientapps_do_read_a_device_when_run_as_flower_would(tmp_path, monkeypatch, flower_task):
    """Power of the deployment test below: the hostile ClientApps are not harmless code — run the way
    Flower's default isolation runs a bundle's ClientApp, each reads values, key bytes or resets the ledger."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "device.toml").write_text(DEVICE.replace("{partition-id}", "0").replace('member_key = "certs/nodes/node-0"\n', ""))
    assert ldp_main(["federated", "device", "init", "device.toml"]) in (0, None)
    keystore = (tmp_path / "state" / "0" / "keystore.json").read_bytes()  # before the reset re-anchors it
    ns: dict = {}
    loot = {}
    for name, src in HOSTILE_CLIENT.items():
        exec(compile(textwrap.dedent(src), f"hostile_{name}", "exec"), ns)  # noqa: S102 - the test's own hostile code
        ctx = Context(run_id=1, node_id=1, node_config={"device-config": str(tmp_path / "device.toml")}, state=RecordDict(), run_config={})
        msg = Message(content=RecordDict({"query": ConfigRecord({"json": "{}"})}), dst_node_id=1, message_type="query")
        rep = ns["client_app"](message=msg, context=ctx)
        loot[name] = dict(rep.content["loot"])
    assert len(loot["thief"]["values"]) == 20
    assert bytes.fromhex(loot["keys"]["keystore"]) == keystore
    assert "ledger.sqlite" in loot["reset"]["reset"] and list((tmp_path / "state" / "0").glob("ledger.sqlite.replaced-*"))


@pytest.mark.slow
def test_only_pinned_apps_are_answered_and_only_members_are_asked(tmp_path):
    dep = Deployment(tmp_path, plan=PLAN, device=DEVICE)
    state = dep.app / "state"
    hostile = {name: _hostile_app(tmp_path, name) for name in HOSTILE_CLIENT}
    extra_node = None
    try:
        dep.start()
        # a third node: its key registered through the open Control API, its runtime pinned the genuine app
        keys = make_node_keys(tmp_path / "intruder", "node-2")
        reg = subprocess.run([flower_tool("flwr"), "supernode", "register", keys["public"], "ldp-tls"], env=dep.env, capture_output=True,
                             text=True, timeout=90, cwd=tmp_path)
        assert reg.returncode == 0, reg.stdout + reg.stderr
        (tmp_path / "intruder" / "device.toml").write_text(DEVICE.replace("{partition-id}", "2").replace("certs/nodes/node-2", "node-2"))
        assert ldp_main(["federated", "device", "init", str(tmp_path / "intruder" / "device.toml")]) in (0, None)
        assert ldp_main(["federated", "device", "pin", str(tmp_path / "intruder" / "device.toml"), str(dep.app)]) in (0, None)
        port = free_port()
        node = Spawned([flower_tool("flower-supernode"), "--superlink", f"127.0.0.1:{dep.port}", "--root-certificates",
                        str(dep.app / "certs" / "ca.pem"), "--auth-supernode-private-key", keys["private"], "--port", str(port),
                        "--isolation", "process"], env=dep.env, log=tmp_path / "intruder.log", cwd=tmp_path)
        runtime = Spawned([flower_tool("ldp"), "federated", "device", "serve", str(tmp_path / "intruder" / "device.toml"), "--runtime-api",
                           f"127.0.0.1:{port}"], env=dep.env, log=tmp_path / "intruder-runtime.log", cwd=tmp_path)
        extra_node = [runtime, node]  # stopped in this order: the runtime while its SuperNode still answers
        dep.wait(lambda: "SuperNode ID" in (tmp_path / "intruder.log").read_text(errors="replace"), 60, "the intruder SuperNode")

        # the genuine, pinned app: members answer; the intruder is asked nothing
        dep.run()
        row = dep.wait_summary(dep.summary("trust", 1), 180)
        q = row["queries"][0]
        assert row["nodes_connected"] == 3 and row["nodes_registered"] == 2
        assert row["registration_errors"] == {"not_a_member": 1}
        assert q["status"] == "complete" and q["reports_accepted"] == 2 * DEVICES and q["nodes_asked"] == 2
        assert spends(tmp_path / "intruder" / "state" / "2" / "ledger.sqlite") == 0  # never asked a query

        before = {p: _digest(p) for p in sorted(state.glob("*/ledger.sqlite")) + sorted(state.glob("*/keystore.json"))}
        spent = [spends(state / str(i) / "ledger.sqlite") for i in range(2)]

        # an outsider with only the CA certificate: its own Flower home, its own bundles
        outsider = tmp_path / "outsider-home"
        outsider.mkdir()
        (outsider / "config.toml").write_text(f'[superlink]\ndefault = "x"\n\n[superlink.x]\naddress = "127.0.0.1:{dep.port}"\n'
                                              f'root-certificates = "{dep.app / "certs" / "ca.pem"}"\n')
        env = {**dep.env, "FLWR_HOME": str(outsider)}
        runs = {}
        for name, app in hostile.items():
            out = tmp_path / f"loot-{name}.json"
            runs[name] = (flwr_run(app, "x", env=env, run_config={"out": str(out)}), out)
        # the genuine code with another plan is another bundle: refused as well (submitted with the
        # hostile runs: each device answers one task at a time, whatever the order)
        impostor = tmp_path / "impostor"
        assert ldp_main(["federated", "new", str(impostor), "--nodes", "2"]) in (0, None)
        imp_run = flwr_run(impostor, "x", env=env, run_config={"out-dir": str(tmp_path / "impostor-results")})
        for name, (run_id, out) in runs.items():
            dep.wait(out.exists, 180, f"the hostile ServerApp {name} to write what it received")
            got = json.loads(out.read_text())
            assert got["nodes"] == 3 and len(got["replies"]) == 3, got
            assert all(r == {"error": "app_not_pinned"} for r in got["replies"]), got  # no content from any device

        imp = dep.wait_summary(tmp_path / "impostor-results" / "demo" / "round-0001.json", 180)
        assert imp["nodes_registered"] == 0 and imp["registration_errors"] == {"app_not_pinned": 3}
        assert all(qq["reports_accepted"] == 0 and qq["status"] == "incomplete" for qq in imp["queries"])

        after = {p: _digest(p) for p in before}
        assert after == before  # no ledger or keystore byte changed
        assert [spends(state / str(i) / "ledger.sqlite") for i in range(2)] == spent
        assert not list(state.glob("*/ledger.sqlite.replaced-*"))
        for pid in range(2):
            recs = _refusals(dep, pid)
            assert sorted(r["run_id"] for r in recs) == sorted([r for r, _ in runs.values()] + [imp_run])
            assert {r["reason"] for r in recs} == {"app_not_pinned"}
            assert all(len(r["fab_hash"]) == 64 for r in recs)

        # and the genuine app still runs on the same budget (nothing was reset)
        dep.run(**{"first-round": 2})
        q2 = dep.wait_summary(dep.summary("trust", 2), 180)["queries"][0]
        assert q2["status"] == "complete" and q2["reports_accepted"] == 2 * DEVICES
        assert [spends(state / str(i) / "ledger.sqlite") for i in range(2)] == [s + 1 for s in spent]
    finally:
        for p in extra_node or []:
            p.stop()
        dep.stop()
