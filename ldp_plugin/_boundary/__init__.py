"""Error boundaries: the engines the library drives (Polars, SQLite, OpenDP, Dask, the file
system) fail with their own exceptions, whose messages quote the user's data (Polars prints the
value it could not parse and, for a bad quote, lines of the file), name internals (OpenDP's FFI
stack, SQLite's "too many SQL variables") or nothing the user typed. Each boundary here turns such
a failure into the library's own error (:class:`LDPInputError` for data and files,
:class:`LDPParameterError` for settings) naming the parameter or the file the user gave — never a
value or a line of the file.

* :func:`reading` — a ``with`` block around Polars reads of one user file (CSV/Parquet);
* :func:`translate` — any exception to the library error a user should see (the CLI's one error
  path uses it; ``None`` when it has nothing better than the exception itself).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Iterator, Optional

from .._errors import LDPInputError, LDPParameterError

__all__ = ["reading", "polars_error", "sqlite_error", "os_error", "opendp_error", "translate", "is_polars_error", "can_write_under",
           "read_small_file", "writable_directory", "SMALL_FILE_LIMIT"]


def is_polars_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by Polars (its exception module; Polars need not be imported)."""
    return any(c.__module__.startswith("polars") for c in type(exc).__mro__ if c.__module__ not in ("builtins",))


def _name(path: Any) -> str:
    return repr(str(path)) if path is not None else "the input"


def polars_error(exc: BaseException, path: Any = None, what: str = "input file") -> LDPInputError:
    """A Polars read failure of ``path`` as :class:`LDPInputError`: what went wrong, the file and,
    where Polars says it, the column and byte offset — never the value or a line of the file."""
    kind = type(exc).__name__
    text = str(exc)
    where = f"{what} {_name(path)}"
    p = Path(str(path)) if path is not None else None
    if p is not None and p.is_dir():
        return LDPInputError(f"{where} is a directory; give a file (or a glob such as 'dir/*.parquet' where a glob is accepted)")
    if kind == "NoDataError" or "empty CSV" in text:
        return LDPInputError(f"{where} is empty (no header row and no data)")
    if "parquet" in text.lower() and ("out of specification" in text or "magic" in text.lower() or "footer" in text.lower()):
        return LDPInputError(f"{where} is not a valid Parquet file (corrupt, truncated, or another format named .parquet)")
    col = re.search(r"at column '([^']{0,200})'", text)
    col_txt = f" in column {col.group(1)!r}" if col else ""
    off = re.search(r"current offset in the file is (\d+) bytes", text)
    off_txt = f" (near byte {off.group(1)})" if off else ""
    if "could not parse" in text:
        dtype = re.search(r"as dtype `([^`]{1,40})`", text)
        as_txt = f" as {dtype.group(1)}" if dtype else ""
        return LDPInputError(
            f"{where}: a value{col_txt} does not parse{as_txt}{off_txt} — a malformed CSV (e.g. an unclosed quote) "
            "or a column of mixed types; values are not shown"
        )
    if kind == "ColumnNotFoundError":
        m = re.search(r'unable to find column "([^"]{0,200})"', text) or re.search(r"column[s]? \"?'?([^\"'\n]{0,200})", text)
        colname = f" {m.group(1)!r}" if m else ""
        return LDPInputError(f"{where} has no column{colname}")
    if kind == "SchemaError" or kind == "SchemaFieldNotFoundError":
        return LDPInputError(f"{where}: its columns do not have the expected types{col_txt}")
    if "different file extensions" in text or "is a directory" in text.lower():
        return LDPInputError(f"{where} is a directory of mixed files; give one file or a glob such as 'dir/*.parquet'")
    if kind in ("ComputeError", "NoDataError", "ShapeError") and p is not None and p.suffix.lower() == ".csv":
        return LDPInputError(f"{where} is not a well-formed CSV file{col_txt}{off_txt}; values are not shown")
    return LDPInputError(f"{where} could not be read ({kind}){col_txt}{off_txt}; values are not shown")


@contextlib.contextmanager
def reading(path: Any, what: str = "input file") -> Iterator[None]:
    """Polars (and file-system) failures inside the block become :class:`LDPInputError` naming
    ``path``; the library's own errors pass through unchanged."""
    try:
        yield
    except (LDPInputError, LDPParameterError):
        raise
    except OSError as exc:
        raise os_error(exc, path) from None
    except Exception as exc:
        if is_polars_error(exc):
            raise polars_error(exc, path, what) from None
        raise


def sqlite_error(exc: sqlite3.Error, path: Any = None) -> LDPParameterError:
    """A SQLite failure on a ledger as :class:`LDPParameterError` naming the ledger."""
    text = str(exc)
    where = f"ledger {_name(path)}" if path is not None else "the ledger"
    if "too many SQL variables" in text:
        return LDPParameterError(f"{where}: a query touched more cohorts than one statement can bind; split it (fewer cohorts per query)")
    if "locked" in text or "busy" in text:
        return LDPParameterError(f"{where} is locked by another process (waited 60 s); retry when it is done")
    if "not a database" in text or "malformed" in text:
        return LDPParameterError(f"{where} is not a valid ldp ledger (not a SQLite database, or damaged); restore it from a backup")
    if "unable to open" in text:
        return LDPParameterError(f"{where} cannot be opened (a directory, or its folder does not exist or is not writable)")
    if "readonly" in text or "read-only" in text:
        return LDPParameterError(f"{where} is read-only; a spend needs write access")
    return LDPParameterError(f"{where}: the ledger database failed ({type(exc).__name__})")


def os_error(exc: OSError, path: Any = None) -> LDPInputError:
    """A file-system failure as :class:`LDPInputError` naming the file."""
    name = exc.filename if getattr(exc, "filename", None) is not None else path
    where = _name(name) if name is not None else "a file"
    if isinstance(exc, IsADirectoryError):
        return LDPInputError(f"{where} is a directory; give a file path")
    if isinstance(exc, NotADirectoryError):
        return LDPInputError(f"{where}: a part of the path is a file, not a directory")
    if isinstance(exc, FileNotFoundError):
        return LDPInputError(f"{where} does not exist (or its folder does not)")
    if isinstance(exc, FileExistsError):
        return LDPInputError(f"{where} already exists as a file; give a directory path that does not exist or is a directory")
    if isinstance(exc, PermissionError):
        return LDPInputError(f"{where} is not accessible (permission denied)")
    if exc.errno == errno.ENOSPC:
        return LDPInputError(f"no space left on the device while writing {where}")
    return LDPInputError(f"{where}: {exc.strerror or type(exc).__name__}")


def opendp_error(exc: BaseException, what: str = "the measurement's argument") -> LDPInputError:
    """An OpenDP failure (FFI) as :class:`LDPInputError`, without OpenDP's stack trace."""
    variant = getattr(exc, "variant", None) or type(exc).__name__
    return LDPInputError(f"{what} was refused by OpenDP ({variant}); check its type and domain")


def _is_opendp(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("opendp")


def translate(exc: BaseException) -> Optional[Exception]:
    """The library error a user should see for ``exc`` (``None``: keep ``exc``). Never echoes the
    engine's raw message."""
    if isinstance(exc, (LDPInputError, LDPParameterError)):
        return None
    if is_polars_error(exc):
        return polars_error(exc, None)
    if isinstance(exc, sqlite3.Error):
        return sqlite_error(exc)
    if isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, ConnectionError, TimeoutError)):
        return os_error(exc)
    if _is_opendp(exc):
        return opendp_error(exc)
    if isinstance(exc, UnicodeDecodeError):
        return LDPInputError("a file given is not UTF-8 text (it holds bytes that do not decode); its content is not shown")
    if isinstance(exc, json.JSONDecodeError):
        return LDPInputError(f"a file given is not valid JSON (line {exc.lineno}, column {exc.colno}); its content is not shown")
    if isinstance(exc, OverflowError):
        return LDPParameterError("a number is too large to compute with (overflow); use a smaller epsilon, size or count")
    if isinstance(exc, (MemoryError,)):
        return LDPParameterError("not enough memory for this size; use a smaller size or count")
    return None


def can_write_under(path: str | Path) -> bool:
    """True if a file can really be created in ``path``'s nearest existing directory (a file
    created and removed there: permission bits say nothing for root, nor on a pseudo-filesystem
    such as /proc or /sys, where creating anything fails after the check would have passed)."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return False
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError:
        return False
    return True


#: the largest configuration file (TOML, JSON, a key, a certificate) the library reads whole
SMALL_FILE_LIMIT = 16 << 20


def read_small_file(path: str | Path, what: str, *, text: bool = True, limit: int = SMALL_FILE_LIMIT) -> str | bytes:
    """The content of a small file the user named (a job, a device TOML, a tokens file, a key):
    refused with :class:`LDPParameterError` naming ``what`` and the file when it does not exist, is
    a directory, is not a regular file (a device such as ``/dev/zero``, a FIFO or a socket, which
    could be read forever), is larger than ``limit`` bytes (a pseudo-file is read at most that far),
    or (``text``) is not UTF-8 — never the engine's message, never a byte of the content."""
    p = Path(path)
    where = f"{what} {str(path)!r}"
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise LDPParameterError(f"{where} does not exist") from None
    except NotADirectoryError:
        raise LDPParameterError(f"{where}: a part of the path is a file, not a directory") from None
    except OSError as exc:
        raise LDPParameterError(f"{where} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise LDPParameterError(f"{where} is a directory; give the file")
    if not stat.S_ISREG(st.st_mode):
        raise LDPParameterError(f"{where} is not a regular file (a device, a pipe or a socket); give a file")
    if st.st_size > limit:
        raise LDPParameterError(f"{where} is larger than {limit >> 20} MiB; this is not a {what}")
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise LDPParameterError(f"{where} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > limit:
        raise LDPParameterError(f"{where} is larger than {limit >> 20} MiB; this is not a {what}")
    if not text:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LDPParameterError(f"{where} is not UTF-8 text (a byte at offset {exc.start} does not decode); its content is not shown") from None


def writable_directory(path: str | Path, what: str) -> Path:
    """``path`` as a directory the command may create or fill: refused (naming ``what``) when it is
    a file, lies under a file, or sits where nothing can be created (a pseudo-filesystem such as
    ``/proc`` or ``/sys``, a read-only mount) — checked before anything is written or spent."""
    p = Path(path)
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        which = "is a file" if probe == p else f"lies under a file ({str(probe)!r})"
        raise LDPParameterError(f"{what} {str(path)!r} {which}; give a directory")
    if not can_write_under(p):
        raise LDPParameterError(f"{what} {str(path)!r}: nothing can be created there (a pseudo-filesystem such as /proc or /sys, "
                                "or a read-only or unwritable directory)")
    return p
