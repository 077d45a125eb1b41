"""What every ``ldp`` command shares: the argument types (one message format naming the option and
its range), the parser class with the one usage-error path, the registry and the builder, and
:func:`emit`, the one renderer (one JSON document under ``--json``, else text lines)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, Optional

from ..simulate import parse_params
from ..registry import load_registry, required_parameters, KINDS, build
from .._errors import LDPParameterError


def float_in(lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False, hi_open: bool = False, note: str = ""):
    """A finite float in the interval ``lo``..``hi`` (open or closed ends; ``None``: unbounded)."""
    if lo is None and hi is None:
        what = "a finite number"
    elif hi is None:
        what = f"a finite number {'>' if lo_open else '>='} {lo:g}"
    elif lo is None:
        what = f"a number {'<' if hi_open else '<='} {hi:g}"
    else:
        what = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    what += note

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
        bad = not math.isfinite(v)
        if lo is not None:
            bad |= v <= lo if lo_open else v < lo
        if hi is not None:
            bad |= v >= hi if hi_open else v > hi
        if bad:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})")
        return v

    return parse


EPSILON = float_in(0, 700, lo_open=True, note=" (e**epsilon must be a finite float)")


UNIT_OPEN = float_in(0, 1, lo_open=True, hi_open=True)


PROBABILITY = float_in(0, 1)


FINITE = float_in()


#: set by :func:`ldp_plugin.cli.main`: argparse errors as JSON when --json was given
JSON_ERRORS = [False]


class _Parser(argparse.ArgumentParser):
    """argparse with one error path: exit 2 and a message naming the option (JSON under --json)."""

    def error(self, message: str):  # type: ignore[override]
        if JSON_ERRORS[0]:
            print(json.dumps({"error": "UsageError", "message": f"{self.prog}: {message}"}))
        else:
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def given_options(argv) -> frozenset:
    """The long options present in ``argv`` (``--x`` and ``--x=v``), as typed."""
    return frozenset(a.split("=", 1)[0] for a in argv if isinstance(a, str) and a.startswith("--"))


def refuse_unused(args, options, why: str) -> None:
    """Refuse (naming it) an option the user gave that this invocation would not use: an ignored
    option is a silent wrong answer (the user believes it took effect)."""
    given = sorted(o for o in options if o in getattr(args, "given", ()))
    if given:
        raise LDPParameterError(f"{given[0]} is not used {why}; remove it")


def _int_in(lo: int, hi: Optional[int] = None, what: str = "an integer"):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
        if v < lo or (hi is not None and v > hi):
            rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise argparse.ArgumentTypeError(f"must be {what} {rng} (got {v})")
        return v

    return parse


def _mechanism_help() -> str:
    try:

        reg = load_registry()
        parts = []
        for name, decl in sorted(reg.items()):
            req = required_parameters(decl)
            parts.append(name + (" (needs " + ", ".join(f"--param {r}=..." for r in req) + ")" if req else ""))
        return "a registered mechanism: " + "; ".join(parts) + "; sample-NAME wraps NAME in pad-and-sample for sets (with --m)"
    except Exception:  # pragma: no cover - help text only
        return "a registered mechanism (see `ldp mechanisms`)"


SEED = _int_in(0, 2**63 - 1, "an integer seed")


POSITIVE = _int_in(1, None, "an integer")


DOMAIN = _int_in(2, 2**31, "an integer domain size")


def registry(all_kinds: bool = False):
    """The registered mechanisms (the frequency oracles; every kind with ``all_kinds``)."""

    return load_registry(kinds=KINDS) if all_kinds else load_registry()


#: the command that simulates each non-frequency kind (guidance that names a real command)
KIND_COMMANDS = {
    "mean": "ldp mean simulate --mechanism {name} --epsilon E --lower L --upper U",
    "longitudinal": "ldp longitudinal simulate --mechanism {name} --epsilon-perm E --epsilon-1 E1 --d D",
}


def require_frequency(name: Any, command: str) -> None:
    """``ldp simulate`` / ``amplify`` / ``federated simulate`` take a frequency oracle: another
    registered kind is refused with the command (or the Python class) that takes it."""
    base = name[len("sample-"):] if isinstance(name, str) and name.startswith("sample-") else name
    decl = registry(all_kinds=True).get(base) if isinstance(base, str) else None
    if decl is None or decl.kind == "frequency":
        return
    head = f"`ldp {command}` takes a frequency oracle; {base!r} is a {decl.kind} mechanism"
    if decl.kind in KIND_COMMANDS:
        raise LDPParameterError(f"{head}: use `{KIND_COMMANDS[decl.kind].format(name=base)}`")
    raise LDPParameterError(f"{head} with no command-line simulation: use it from Python (ldp_plugin.{decl.mechanism_class().__name__}; "
                            "`ldp mechanisms` lists its parameters)")


def _build(args):
    """The mechanism of ``--mechanism`` / ``--d`` / ``--epsilon`` / ``--m`` / ``--param`` (the
    registry is the only builder: missing parameters are named there)."""

    require_frequency(args.mechanism, "simulate")
    params = dict(parse_params(args.param))
    return build(args.mechanism, epsilon=args.epsilon, d=args.d, m=getattr(args, "m", None), n=getattr(args, "n", None), **params)


def emit(args, doc, text_lines=None, *, indent: int = 2, default=None) -> None:
    """The one renderer: ``doc`` as one JSON document under ``--json``, else ``text_lines`` (an
    iterable of lines; default: ``key: value`` per entry of ``doc``)."""
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=indent, default=default))
        return
    for line in (text_lines if text_lines is not None else (f"{k:>22}: {v}" for k, v in doc.items())):
        print(line)
