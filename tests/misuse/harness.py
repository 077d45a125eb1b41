"""In-process runners for the misuse tables: the CLI's ``main`` with captured output and a time
limit (SIGALRM), and the assertions every case makes (clear error, no traceback, names the
parameter or file, never the planted data value, ``--json`` is one JSON document)."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import time
from typing import Any, Callable, Optional, Sequence

#: a data value planted in files and inputs: no output may contain it
SENTINEL = "SENTINEL-Q7391"
SENTINEL_NUMBER = 98765.4321


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`CaseTimeout` in the main thread after ``seconds`` (a hang fails the case)."""

    def handler(signum, frame):
        raise CaseTimeout(f"the case took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: Sequence[str], seconds: float = 20.0) -> tuple[int, str, str, float]:
    """``ldp_plugin.cli.main(argv)`` in this process: (exit code, stdout, stderr, seconds)."""
    from ldp_plugin.cli import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with time_limit(seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # main returns its code; a stray exit still counts
            code = e.code if isinstance(e.code, int) else 2
    return int(code or 0), out.getvalue(), err.getvalue(), time.perf_counter() - t0


def assert_clear_cli(argv: Sequence[str], names: Sequence[str], *, seconds: float = 20.0, code: int = 2) -> str:
    """The case fails cleanly: exit ``code``, no traceback, the message names one of ``names``,
    never the sentinel; under ``--json`` stdout is exactly one JSON document with an error."""
    rc, out, err, _ = run_cli(argv, seconds)
    text = out + err
    assert rc == code, f"exit {rc} (expected {code}) for {list(argv)}: {text[-800:]}"
    assert "Traceback" not in text, f"traceback for {list(argv)}: {text[-800:]}"
    assert SENTINEL not in text and str(SENTINEL_NUMBER) not in text, f"echoed a data value for {list(argv)}: {text[-800:]}"
    if "--json" in argv:
        try:
            doc = json.loads(out)
        except ValueError:
            raise AssertionError(f"--json stdout is not one JSON document for {list(argv)}: {out[-500:]!r}") from None
        assert isinstance(doc, dict) and "error" in doc and "message" in doc, doc
        message = str(doc["message"])
    else:
        message = err if err.strip() else out
    low = message.lower()
    assert any(n.lower() in low for n in names), f"message does not name any of {list(names)} for {list(argv)}: {message[-600:]}"
    for raw in ("got multiple values for keyword", "unexpected keyword argument", "object has no attribute", "float division by zero",
                "math range error", "could not parse `", "inferred type is", "too many sql variables", "Errno"):
        assert raw.lower() not in low, f"a raw library message for {list(argv)}: {message[-600:]}"
    return message


def assert_clear_api(fn: Callable[[], Any], names: Sequence[str], *, errors: tuple = (), seconds: float = 10.0) -> str:
    """The call raises one of the library's errors (``ValueError`` subclasses from
    ``ldp_plugin._errors`` or ``errors``) naming one of ``names``, never echoing the sentinel."""
    from ldp_plugin._errors import LDPInputError, LDPParameterError, PrivacyVerificationError

    allowed = (LDPParameterError, LDPInputError, PrivacyVerificationError) + tuple(errors)
    with time_limit(seconds):
        try:
            fn()
        except allowed as exc:
            message = str(exc)
        except Exception as exc:  # pragma: no cover - the failure being reported
            raise AssertionError(f"raw {type(exc).__name__}: {str(exc)[:400]}") from None
        else:
            raise AssertionError("accepted silently (no error)")
    assert SENTINEL not in message and str(SENTINEL_NUMBER) not in message, f"echoed a data value: {message}"
    low = message.lower()
    assert any(n.lower() in low for n in names), f"message does not name any of {list(names)}: {message}"
    assert "Traceback" not in message and "FFI(" not in message, message
    return message
