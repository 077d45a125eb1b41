"""Federated analytics on Flower: devices randomize and enforce their own budget.

Runs the device and server apps of ldp_plugin.federated on Flower's simulation engine: 3
SuperNodes, each hosting 200 simulated devices. Every round publishes one query (OUE over 8
apps, epsilon = 2 per device); each device checks its policy and its own budget ledger (lifetime
cap 4) *before* randomizing, so the third round is refused by every device. One node forwards
malformed reports, which the collector rejects and counts. The server never sees a raw value.

Needs the flower extra: pip install 'ldp-plugin[flower]'. Run: python examples/federated_flower.py

On a real deployment the same apps run under Flower's SuperLink and SuperNodes:

    flower-superlink --insecure
    flower-supernode --insecure --superlink 127.0.0.1:9092   # on each device / edge node
    flwr run .                                                # a Flower app whose client_app /
                                                              # server_app are make_client_app()
                                                              # and make_server_app(...)

Each SuperNode then reads its devices' values and its ledger path from local configuration
(the simulation carries them in a record instead). What the server learns: per report, only the
mechanism's randomized output under the query's hash; what the device enforces: its policy (the
mechanisms it allows, a maximum epsilon per query) and its lifetime/period caps, in a SQLite file
on the device that a crash never under-counts.
"""

import logging
import tempfile

import ldp_plugin as ldp
from ldp_plugin.federated.flower import simulate

logging.getLogger("flwr").setLevel(logging.ERROR)


def show(row):
    print(f"round {row['round']}: {row['reports_accepted']} reports accepted, {row['reports_rejected']} rejected "
          f"{row['rejected_by_reason']}, {row['devices_refused']} devices refused")


with tempfile.TemporaryDirectory() as ledgers:
    out = simulate(nodes=3, users_per_node=200, mechanism=ldp.OUE(epsilon=2.0, d=8), rounds=3, device_cap="4",
                   malformed_nodes=1, seed=3, ledger_dir=ledgers, on_round=show)
est = out["rounds"][0]["estimate"]
print("\nround 1 estimate (item, estimate, 95% CI, truth):")
for e in est:
    print(f"  {e['item']}: {e['estimate']:.3f} [{e['ci_lower']:.3f}, {e['ci_upper']:.3f}]  truth {e['truth']:.3f}")
