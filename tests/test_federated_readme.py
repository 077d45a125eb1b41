"""The federated walkthrough (docs/federated.md, "A deployment on one machine"), command by command: the
``ldp federated`` commands run as written (the CLI, in process, in a fresh directory); each
``flwr run`` line runs its plan — the app's run config with the line's ``--run-config`` overrides —
through the ServerApp's own round logic (``run_plan``) against the two SuperNodes' device side as
the walkthrough starts them (their ``--node-config``; real Flower messages, a loopback transport), in
order, with the SuperNode restart in between. Checked: every command succeeds and the results are
the ones the walkthrough states (frequency query, series across the restart, discovery, the budget).
``test_federated_deploy.py`` runs the walkthrough's SuperLink and SuperNode command lines as real processes
(:func:`readme_commands`)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

pytest.importorskip("flwr")

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

from ldp_plugin.cli import main as ldp_main  # noqa: E402
from ldp_plugin.federated import DeviceConfig, DeviceFleet  # noqa: E402
from ldp_plugin.federated.app import run_plan  # noqa: E402
from ldp_plugin.federated.plan import Plan  # noqa: E402
from tests.federated_deployment import command_argv, readme_commands  # noqa: E402
from tests.test_federated_server import LoopbackGrid, _honest, flower_task  # noqa: E402,F401


def _run_config(app: Path, overrides: list) -> dict:
    with open(app / "pyproject.toml", "rb") as f:
        cfg = dict(tomllib.load(f)["tool"]["flwr"]["app"]["config"])
    for text in overrides:  # Flower's `--run-config 'k=v'`: a TOML value
        cfg.update(tomllib.loads(text))
    return cfg


@pytest.mark.slow
def test_the_readme_newcomer_path_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pwd = str(tmp_path)
    cmds = readme_commands()
    assert [c for c, _ in cmds if c.startswith("flwr run")], "the walkthrough runs the app"
    nodes: dict = {}
    runs = []
    for line, bg in cmds:
        argv = command_argv(line, {"$PWD": pwd, "$FLWR_HOME": str(tmp_path / "my-app" / "flwr-home")})
        if argv[:4] == ["ldp", "federated", "device", "serve"]:  # the owner's runtime: this node's device side
            node_config = dict(item.split("=", 1) for item in shlex.split(argv[argv.index("--node-config") + 1]))
            nodes[int(node_config["partition-id"])] = str(Path(argv[4]).resolve())
        elif argv[0] == "ldp":
            assert ldp_main(argv[1:]) in (0, None), line
        elif argv[0] == "flower-supernode":  # runs no app code (--isolation process): the runtime above answers
            assert "--isolation" in argv and argv[argv.index("--isolation") + 1] == "process", line
        elif argv[:2] == ["flwr", "run"]:
            assert argv[2] == "my-app" and argv[3] == "ldp-tls"
            overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "--run-config"]
            plan = Plan.from_run_config(_run_config(tmp_path / "my-app", overrides))
            handlers = {100 + pid: _honest(Path(cfg).parent, pid) for pid, cfg in sorted(nodes.items())}
            runs.append(run_plan(LoopbackGrid(handlers), plan))
        else:  # the shell's own lines and the processes test_federated_deploy.py starts
            assert argv[0] in ("python3", "export", "mkdir", "flower-superlink", "flwr", "kill", "NODE1=$!"), line
    capsys.readouterr()
    assert len(runs) == 3 and len(nodes) == 2

    # 1. rounds 1 and 2: the frequency query and the series, every device of both nodes
    for summary in runs[0]:
        for row in summary["queries"]:
            assert row["status"] == "complete" and row["reports_accepted"] == 4000 and row["devices_refused"] == 0, row["query"]
            assert len(row["estimate"]) == 8
    # 2. after the restart: rounds 3 and 4, the OUE query charged again, the series at no charge
    assert [s["round"] for s in runs[1]] == [3, 4]
    for summary in runs[1]:
        assert all(row["status"] == "complete" and row["reports_accepted"] == 4000 for row in summary["queries"])
    # 3. the discovery: every device in exactly one group, the most frequent words found with intervals
    [disc] = runs[2][0]["queries"]
    assert disc["kind"] == "discovery" and disc["status"] == "complete", (disc.get("incomplete_reason"), disc["refused_by_reason"], disc["node_errors"])
    assert sum(g["reports_accepted"] for g in disc["groups"]) == 4000
    items = {r["item"]: r for r in disc["discovered"]["items"]}
    assert "maps" in items and items["maps"]["ci_lower"] <= items["maps"]["estimate"] <= items["maps"]["ci_upper"]
    summary_file = tmp_path / "my-app" / "results" / "discovery" / "round-0001.json"
    assert json.loads(summary_file.read_text())["queries"][0]["discovered"]["items"]
    # the budget: of every device's cap of 12, 0.18 is left (4.41 + 4.41 + 3 spent), so the next query is refused by all 4,000 devices
    for pid, cfg in nodes.items():
        fleet = DeviceFleet.open(DeviceConfig.load(cfg, {"partition-id": pid}))
        try:
            left = {round(float(x), 2) for x in fleet.ledger.remaining_by_cohort()}
            assert left == {0.18}, left
        finally:
            fleet.close()
    nxt = run_plan(LoopbackGrid({100 + pid: _honest(Path(cfg).parent, pid) for pid, cfg in nodes.items()}),
                   Plan.from_run_config(_run_config(tmp_path / "my-app", ["first-round=5"])))
    oue = nxt[0]["queries"][0]
    assert oue["status"] == "incomplete" and oue["refused_by_reason"] == {"budget_exhausted": 4000}
