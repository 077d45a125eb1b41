"""Generated CLI misuse cases: every leaf command of the ``ldp`` parser (read from argparse, so a
new command or option is covered the day it is added) × every option × hostile values chosen by
the option's declared type.

* typed options (``_int_in`` / ``float_in`` closures, raw ``float``, ``choices``): the range is
  read from the closure; values outside it, non-numbers, NaN/inf, ``1e308``, ``2**63``, empty;
* free-text options: by the role they play (:data:`ROLES`: a file read, a file or directory
  written, an exact ε, a mechanism name, …), with role-specific hostile values (missing,
  directory instead of file, a file under a file, paths under the ``/proc`` and ``/sys``
  pseudo-filesystems, garbage and non-UTF-8 bytes carrying the planted data value, existing
  outputs, unicode control text);
* every required option removed, and an unknown option.

Each case must be refused: exit 2, a message naming the option (or the file), no traceback, no
raw engine message, never the planted value, one JSON document under ``--json``, within the time
limit. A command whose free-text option has no role fails :func:`unclassified_options` (so the
table grows with the parser). ``{D}`` is the fixture directory (:func:`build_fixtures`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterator

from .harness import SENTINEL

#: a valid, cheap invocation of every leaf command (each case changes one option of it)
BASE: dict = {
    "mechanisms": [],
    "simulate": ["--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "200", "--seed", "1"],
    "collect": ["{D}/job_good.toml"],
    "choose": ["--d", "8", "--epsilon", "1", "--n", "1000"],
    "amplify": ["--mechanism", "krr", "--d", "4", "--epsilon", "1", "--n", "1000", "--delta", "1e-6"],
    "federated new": ["{D}/fresh-new"],
    "federated certs": ["{D}/fresh-certs", "--nodes", "1"],
    "federated device init": ["{D}/project/device.toml", "--node-config", "partition-id=0"],
    "federated device serve": ["{D}/project/device.toml", "--runtime-api", "127.0.0.1:9", "--node-config", "partition-id=0"],
    "federated device pin": ["{D}/project/device.toml", "{D}/project", "--node-config", "partition-id=0"],
    "federated device status": ["{D}/project/device.toml", "--node-config", "partition-id=0"],
    "federated device refusals": ["{D}/project/device.toml", "--node-config", "partition-id=0"],
    "federated app-digest": ["{D}/project"],
    "federated simulate": ["--nodes", "2", "--users-per-node", "10", "--mechanism", "krr", "--d", "4", "--epsilon", "1", "--device-cap", "4"],
    "federated analyzer-keys": ["{D}/fresh-ak"],
    "federated analyze": ["{D}/batch.bin", "--key", "{D}/ak/analyzer.key", "--ledger", "{D}/ledger.db", "--delta", "1e-6"],
    "longitudinal simulate": ["--mechanism", "l-grr", "--d", "4", "--epsilon-perm", "2", "--epsilon-1", "1", "--rounds", "2",
                              "--change-prob", "0.1", "--n", "200", "--seed", "1"],
    "mean simulate": ["--mechanism", "duchi", "--epsilon", "1", "--n", "200", "--repeats", "2", "--lower", "0", "--upper", "1"],
    "heavy-hitters simulate": ["--input", "{D}/good.csv", "--column", "app", "--epsilon", "1", "--top-k", "3", "--max-length", "4", "--seed", "1"],
    "verify": ["krr", "--quick"],
    "serve": ["--tokens", "{D}/tokens.json", "--add-client", "fresh-client"],
    "aggregate": ["{D}/reports", "--mechanism-from-metadata"],
    "budget init": ["{D}/fresh-ledger.db", "--population", "p", "--lifetime-cap", "5"],
    "budget show": ["{D}/ledger.db"],
    "budget history": ["{D}/ledger.db"],
    "budget spend-check": ["{D}/ledger.db", "--epsilon", "1"],
    "budget central": ["{D}/ledger.db", "--delta", "1e-6"],
    "budget backup": ["{D}/ledger.db", "{D}/fresh-backup.db"],
    "budget plot": ["{D}/ledger.db", "--out", "{D}/out/plot.png"],
    "report": ["{D}/ledger.db", "--out", "{D}/out/report.html"],
    "demo": ["--mechanism", "krr", "--epsilon", "1", "--n", "200", "--seed", "1"],
}

#: other modes of a command (a family, a collection mode): the options each sets are generated again
#: in that mode, where other checks apply
VARIANTS: dict = {
    ("choose", "mean"): ["--family", "mean", "--epsilon", "1", "--lower", "0", "--upper", "1", "--n", "1000"],
    ("choose", "longitudinal"): ["--family", "longitudinal", "--d", "8", "--epsilon-perm", "2", "--epsilon-1", "1", "--rounds", "5",
                                 "--change-prob", "0.1"],
    ("choose", "distribution"): ["--family", "distribution", "--epsilon", "1", "--buckets", "8", "--shape", "bimodal", "--prior", "1,2,3"],
    ("federated simulate", "shuffle"): ["--nodes", "2", "--users-per-node", "10", "--mechanism", "krr", "--d", "4", "--epsilon", "1",
                                        "--device-cap", "4", "--shuffle", "--delta", "1e-6", "--min-batch", "2"],
    ("federated simulate", "secure-sum"): ["--nodes", "3", "--users-per-node", "10", "--mechanism", "skellam", "--d", "4", "--epsilon", "1",
                                           "--device-cap", "4", "--secure-sum", "--delta", "1e-6", "--min-participants", "2", "--min-count", "2", "--min-batch", "1"],
    ("budget init", "period"): ["{D}/fresh-ledger.db", "--population", "p", "--lifetime-cap", "5", "--period-cap", "1", "--period", "day"],
}

#: a file the command reads: missing, a directory, pseudo-filesystems, devices, garbage with the
#: planted value and bytes that are not UTF-8, empty
_IN_FILE = ["{D}/nope.file", "{D}/adir", "/proc/ldp-misuse/none", "/sys/ldp-misuse", "/dev/zero", "/proc/self/status",
            "{D}/garbage.bin", "{D}/empty.csv", "{D}/afile/sub"]


def _out_file(ext: str) -> list:
    """A file the command writes: a directory, under a file, under missing folders, pseudo-filesystems."""
    return ["{D}/adir", "{D}/afile/sub" + ext, "{D}/no/such/dir/x" + ext, "/proc/ldp-misuse/x" + ext, "/sys/ldp-misuse/x" + ext]


#: a directory the command creates and fills
_OUT_DIR = ["{D}/afile", "{D}/afile/sub", "/proc/ldp-misuse/d", "/sys/ldp-misuse/d", "/proc/self"]

#: an exact ε text (a cap, a spend)
_EXACT = ["", "abc", "nan", "inf", "-inf", "-1", "0", "1e309", "1e308", "1/0", "1e99999999", "2**63", "\u202e1", "0x10"]

ROLES: dict = {
    "in-file": _IN_FILE,
    "in-ledger": _IN_FILE + ["{D}/notdb.db"],
    "in-app": ["{D}/nope.file", "/proc/ldp-misuse/none", "/dev/zero", "{D}/garbage.bin", "{D}/empty.csv"],
    "in-dir": ["{D}/nope.dir", "{D}/afile", "/proc/ldp-misuse/none"],
    "out-dir": _OUT_DIR,
    "out-new-file": _out_file(".db") + ["{D}/afile"],
    "out-png": _out_file(".png") + ["{D}/out/plot.txt"],
    "out-html": _out_file(".html") + ["{D}/out/report.txt"],
    "out-md": _out_file(".md"),
    "exact-epsilon": _EXACT,
    "mechanism": ["bogus", "", "sample-", "sample-bogus", "\u202ekrr", "krr\t"],
    "param": ["no_such=1", "=3", "k", "no_such=\u202e", "d=1e308"],
    "cohort-list": ["abc", "-1", "99", "1,abc", "", ",", "2**63", "nan"],
    "population": ["", " "],
    "host": ["", "a b", "-bad", "x" * 70, "\u202e"],
    "host-port": ["", "nohostport", "127.0.0.1:99999", "127.0.0.1:-1", "[::1", ":80"],
    "node-config": ["x", "=3", "a=1,=2"],
    "mechanism-name": ["bogus", "", "\u202ekrr"],
    "column": ["nope", ""],
    "alphabet": ["", "aa"],
    "prior": ["", "abc", "nan,1", "-1,1", "0,0", "inf", ",", "1e309"],
    "address": ["notanaddress", "", "tcp://", "tcp://127.0.0.1:99999"],
    "client-name": [""],
}

#: (command, option or positional dest) -> role; every free-text option must be listed (see
#: :func:`unclassified_options`); ``None`` marks an option with no value a user could get wrong
#: in a way the command can see (a free-form label)
OPTION_ROLES: dict = {
    ("simulate", "--mechanism"): "mechanism", ("simulate", "--param"): "param",
    ("collect", "job"): "in-file", ("collect", "--address"): "address",
    ("choose", "--prior"): "prior",
    ("amplify", "--mechanism"): "mechanism", ("amplify", "--param"): "param",
    ("federated new", "directory"): "out-dir", ("federated new", "--members"): None,
    ("federated certs", "directory"): "out-dir", ("federated certs", "--host"): "host",
    ("federated device init", "config"): "in-file", ("federated device init", "--node-config"): "node-config",
    ("federated device serve", "config"): "in-file", ("federated device serve", "--node-config"): "node-config",
    ("federated device serve", "--runtime-api"): "host-port", ("federated device serve", "--root-certificates"): "in-file",
    ("federated device pin", "config"): "in-file", ("federated device pin", "app"): "in-app",
    ("federated device pin", "--node-config"): "node-config",
    ("federated device status", "config"): "in-file", ("federated device status", "--node-config"): "node-config",
    ("federated device refusals", "config"): "in-file", ("federated device refusals", "--node-config"): "node-config",
    ("federated app-digest", "app"): "in-app",
    ("federated simulate", "--mechanism"): "mechanism", ("federated simulate", "--param"): "param",
    ("federated simulate", "--device-cap"): "exact-epsilon", ("federated simulate", "--max-epsilon"): "exact-epsilon",
    ("federated simulate", "--out"): "out-dir",
    ("federated analyzer-keys", "directory"): "out-dir",
    ("federated analyze", "batch"): "in-file", ("federated analyze", "--key"): "in-file", ("federated analyze", "--ledger"): "in-ledger",
    ("federated analyze", "--query-id"): None, ("federated analyze", "--out"): "out-dir",
    ("heavy-hitters simulate", "--input"): "in-file", ("heavy-hitters simulate", "--column"): "column",
    ("heavy-hitters simulate", "--alphabet"): "alphabet",
    ("verify", "names"): "mechanism-name", ("verify", "--report"): "out-md",
    ("serve", "--plan"): "in-file", ("serve", "--tokens"): "in-file", ("serve", "--tls-dir"): "out-dir", ("serve", "--cert"): "in-file",
    ("serve", "--key"): "in-file", ("serve", "--host"): "host", ("serve", "--static"): "in-dir", ("serve", "--add-client"): "client-name",
    ("aggregate", "reports"): "in-file", ("aggregate", "--address"): "address", ("aggregate", "--state"): "in-file",
    ("aggregate", "--candidates"): None,
    ("budget init", "ledger"): "out-new-file", ("budget init", "--population"): "population",
    ("budget init", "--lifetime-cap"): "exact-epsilon", ("budget init", "--period-cap"): "exact-epsilon",
    ("budget show", "ledger"): "in-ledger", ("budget history", "ledger"): "in-ledger",
    ("budget spend-check", "ledger"): "in-ledger", ("budget spend-check", "--epsilon"): "exact-epsilon",
    ("budget spend-check", "--cohorts"): "cohort-list",
    ("budget central", "ledger"): "in-ledger", ("budget central", "--cohorts"): "cohort-list",
    ("budget backup", "ledger"): "in-ledger", ("budget backup", "destination"): "out-new-file",
    ("budget plot", "ledger"): "in-ledger", ("budget plot", "--out"): "out-png",
    ("report", "source"): "in-file", ("report", "--out"): "out-html", ("report", "--ledger"): "in-ledger",
    ("demo", "--mechanism"): "mechanism", ("longitudinal simulate", "--param"): "param",
}

#: cases that are refused for a reason other than the option itself, or whose value is valid for
#: that command: (command, option, value) -> why (documented, not silently skipped)
NOT_HOSTILE: dict = {
    ("choose", "--n", str(2**63)): "a prediction at any population size is valid (nothing is simulated)",
    ("serve", "--tokens", "{D}/nope.file"): "--add-client creates a new tokens file",
    ("aggregate", "--state", "{D}/nope.file"): "a new accumulator state file is created",
}


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple = ()) -> Iterator[tuple]:
    """``(command words, parser)`` for every leaf command."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
    for s in subs:
        for name, sp in s.choices.items():
            yield from leaf_parsers(sp, path + (name,))


def _closure(fn) -> dict:
    cells = getattr(fn, "__closure__", None) or ()
    return {k: c.cell_contents for k, c in zip(fn.__code__.co_freevars, cells) if not callable(c.cell_contents)}


def _fmt(x) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e18 else repr(float(x))


def typed_values(action: argparse.Action) -> list:
    """Hostile values of a typed option (its range read from the argparse type's closure)."""
    t = action.type
    if action.choices is not None:
        first = sorted(action.choices)[0]
        return ["bogus", "", first.upper() + "X", " " + first]
    if t is float:
        return ["", "abc", "nan", "inf", "-inf", "1e309", "-1e309"]
    if t is None:
        return []
    c = _closure(t)
    name = t.__qualname__
    if name.startswith("_int_in"):
        lo, hi = c["lo"], c["hi"]
        out = ["", "abc", "nan", "inf", "1e308", "2.5", "0x10", "\u0663\u0663.5", str(lo - 1)]
        out.append(str(hi + 1) if hi is not None else str(2**63))
        return out
    if name.startswith("float_in"):
        lo, hi = c["lo"], c["hi"]
        out = ["", "abc", "nan", "inf", "-inf", "1e309", "-1e309"]
        if lo is not None:
            out += [_fmt(lo)] if c["lo_open"] else [_fmt(lo - 1)]
            out += ["-5e-324"] if lo == 0 else []
        if hi is not None:
            out += [_fmt(hi)] if c["hi_open"] else [_fmt(hi + 1)]
        return out
    # another parsing function (its range is its own): values no numeric option takes
    return ["", "abc", "nan", "inf", "-inf", "1e309", "-1", "0"] if "unit" in name or "delta" in action.dest else ["", "abc", "nan", "inf", "1e309"]


def _key(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def _is_value_option(action: argparse.Action) -> bool:
    return not isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._StoreTrueAction, argparse._SubParsersAction))


def unclassified_options(parser: argparse.ArgumentParser) -> list:
    """Free-text options (no type, no choices) the generator has no role for, and leaf commands
    with no :data:`BASE` invocation."""
    missing = []
    for cmd, p in leaf_parsers(parser):
        if cmd not in BASE:
            missing.append((cmd, "<no BASE invocation>"))
        for a in p._actions:
            if _is_value_option(a) and a.type is None and a.choices is None and (cmd, _key(a)) not in OPTION_ROLES:
                missing.append((cmd, _key(a)))
    return missing


def _replace(base: list, action: argparse.Action, value: str, positionals: list) -> list:
    argv = list(base)
    if action.option_strings:
        opt = action.option_strings[0]
        if opt in argv:
            argv[argv.index(opt) + 1] = value
        else:
            argv += [opt, value]
        return argv
    i = positionals.index(action.dest)
    slots = [j for j, a in enumerate(argv) if not a.startswith("-") and (j == 0 or not argv[j - 1].startswith("-"))]
    argv[slots[i]] = value
    return argv


def _names(cmd: str, action: argparse.Action, value: str) -> list:
    """What the refusal must name: the option (or positional's dest/metavar), or the file given."""
    names = [_key(action)] if action.option_strings else [action.dest, (action.metavar or action.dest)]
    if action.option_strings:
        names.append(action.option_strings[0].lstrip("-").replace("-", "_"))
        names.append(action.option_strings[0].lstrip("-").replace("-", " "))
    if "/" in value:
        names += [value, Path(value).name]
    if cmd in ("budget init",) and action.option_strings == ["--lifetime-cap"]:
        names.append("lifetime_cap")
    if OPTION_ROLES.get((cmd, _key(action))) == "mechanism-name":
        names.append("mechanism")
    if value.endswith("empty.csv") and OPTION_ROLES.get((cmd, _key(action))) == "in-file":
        names += ["[device]", "[plan]", "[input]", "clients"]  # an empty TOML/JSON file: the first missing section or key is named
    return [n for n in names if n]


def generated_cases(parser: argparse.ArgumentParser) -> list:
    """``(id, command, option, argv, names)`` for every leaf command × option × hostile value,
    plus each required option removed and an unknown option."""
    cases = []
    for cmd, p in leaf_parsers(parser):
        if cmd not in BASE:
            continue
        base = list(BASE[cmd])
        words = cmd.split()
        positionals = [a.dest for a in p._actions if not a.option_strings]
        for a in p._actions:
            if not _is_value_option(a):
                continue
            key = _key(a)
            if a.type is None and a.choices is None:
                role = OPTION_ROLES.get((cmd, key))
                values = list(ROLES[role]) if role else []
            else:
                values = typed_values(a)
            for v in values:
                if (cmd, key, v) in NOT_HOSTILE:
                    continue
                argv = words + _replace(base, a, v, positionals)
                cases.append((f"{cmd.replace(' ', '-')}{key if key.startswith('-') else ':' + key}={v!r}", cmd, key, argv, _names(cmd, a, v)))
            if a.required and a.option_strings:
                i = base.index(a.option_strings[0]) if a.option_strings[0] in base else None
                if i is not None:
                    argv = words + base[:i] + base[i + 2:]
                    cases.append((f"{cmd.replace(' ', '-')}{key}-missing", cmd, key, argv, [key]))
        cases.append((f"{cmd.replace(' ', '-')}-unknown-option", cmd, "--no-such-option", words + base + ["--no-such-option", "1"],
                      ["--no-such-option", "unrecognized"]))
    parsers = dict(leaf_parsers(parser))
    for (cmd, mode), base in VARIANTS.items():
        p = parsers[cmd]
        for a in p._actions:
            if not _is_value_option(a) or not a.option_strings or a.option_strings[0] not in base or a.option_strings[0] == "--family":
                continue
            key = _key(a)
            role = OPTION_ROLES.get((cmd, key))
            values = (list(ROLES[role]) if role else []) if a.type is None and a.choices is None else typed_values(a)
            for v in values:
                if (cmd, key, v) in NOT_HOSTILE:
                    continue
                cases.append((f"{cmd.replace(' ', '-')}[{mode}]{key}={v!r}", cmd, key, cmd.split() + _replace(base, a, v, []), _names(cmd, a, v)))
    return cases


def build_fixtures(d: Path) -> None:
    """The files :data:`BASE` and :data:`ROLES` point at (beside :mod:`.cli_fixtures`' ones)."""
    from . import cli_fixtures
    from .harness import run_cli

    cli_fixtures.build(d)
    (d / "garbage.bin").write_bytes(b"\xff\xfe\x00\x80" + SENTINEL.encode() + b"\xc3\x28\xa0\xa1" * 64 + b"\n=[{\n")
    (d / "job_good.toml").write_text('[input]\npath = "good.csv"\ncolumn = "app"\n\n[mechanism]\nname = "krr"\nepsilon = 1.0\n'
                                     'categories = ["maps", "mail", "chat"]\n\n[output]\nestimates = "out/est.parquet"\n')
    assert run_cli(["federated", "new", str(d / "project")])[0] == 0
    assert run_cli(["federated", "analyzer-keys", str(d / "ak")])[0] == 0
    (d / "batch.bin").write_bytes(b"\x00" * 64)
