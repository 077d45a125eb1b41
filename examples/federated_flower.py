"""Federated analytics on Flower: devices randomize and enforce their own budget.

Part 1 (no Flower needed) is one edge node's side: its owner writes a device TOML (data, ledger,
keystore, policy), initializes it once, and the node answers queries — refusing a query its policy
does not allow, or one that tries to carry a policy of its own. Part 2 runs the Flower app through
`flwr run` on a local simulation SuperLink (`ldp federated simulate`): 3 SuperNodes x 200 devices,
OUE over 8 apps at epsilon = 2 per round, lifetime cap 4, so round 3 is refused by every device.

Needs the flower extra: pip install 'ldp-plugin[flower]'. Run: python examples/federated_flower.py
The real deployment (TLS, SuperNode authentication, `flwr run`) is in docs/federated.md, "A deployment on one machine".
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import ldp_plugin as ldp
from ldp_plugin.federated import DeviceConfig, DeviceFleet, Query

with tempfile.TemporaryDirectory() as tmp:
    toml = Path(tmp) / "device.toml"
    toml.write_text("""
[device]
name = "phone-fleet"
ledger = "state/ledger.sqlite"
keystore = "state/keystore.json"

[policy]
lifetime_cap = "4"
max_epsilon_per_query = "2"
allowed_mechanisms = ["oue", "loloha"]

[data]
source = "ldp_plugin.federated.synthetic:zipf_values"
[data.args]
devices = 100
d = 8
""")
    cfg = DeviceConfig.load(toml)
    print("owner init:", DeviceFleet.init(cfg))
    fleet = DeviceFleet.open(cfg)  # what the SuperNode's ClientApp does for every message
    ok = fleet.respond(Query.for_mechanism("apps-1", ldp.OUE(epsilon=2.0, d=8)).to_json())
    print(f"OUE eps=2: {len(ok['reports'])} envelopes of {len(ok['reports'][0])} bytes, refused {ok['refused']}")
    print("OUE eps=5:", fleet.respond(Query.for_mechanism("apps-2", ldp.OUE(epsilon=5.0, d=8)).to_json())["refused"])
    print("KRR:", fleet.respond(Query.for_mechanism("apps-3", ldp.KRR(epsilon=1.0, d=8)).to_json())["refused"])
    forged = dict(json.loads(Query.for_mechanism("apps-4", ldp.OUE(epsilon=1.0, d=8)).to_json()), max_epsilon="100")
    print("a query carrying its own policy:", fleet.respond(json.dumps(forged))["refused"])
    print("spent per device:", float(fleet.ledger.spent()), "of", float(cfg.policy.lifetime_cap))
    fleet.close()

print("\nthe Flower app through `flwr run` on a simulation SuperLink:")
cmd = [sys.executable, "-m", "ldp_plugin.cli", "federated", "simulate", "--nodes", "3", "--users-per-node", "200", "--mechanism", "oue",
       "--d", "8", "--epsilon", "2", "--rounds", "3", "--device-cap", "4", "--seed", "3"]
sys.exit(subprocess.run(cmd).returncode)
