"""One file written whole or not at all: a private temporary file in the same directory (created
exclusively, mode 0600), written, fsync'ed, then renamed over the target (``os.replace`` is atomic
on POSIX). A reader sees the old file or the new one, never half of one; a failure leaves no
temporary file behind. The directories it creates are 0700
(:func:`ldp_plugin._boundary.private.private_dirs`)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .._boundary.private import private_dirs

__all__ = ["write_atomic"]


def write_atomic(path: str | Path, *chunks: bytes) -> Path:
    """Write ``chunks`` (in order) to ``path`` atomically; the file's mode is 0600."""
    p = Path(path)
    private_dirs(p.parent)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return p
