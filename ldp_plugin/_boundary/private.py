"""Private files: what the library creates to hold secrets or budgets (device ledgers, keystores,
analyzer keys) is readable by its owner only — files mode 0600, the directories it creates for
them 0700 (the process's umask can only narrow these). SQLite gives a database's journal
(``-journal``) and WAL files (``-wal``, ``-shm``) the mode of the database file itself, so a ledger
created 0600 keeps every side file 0600 too. Directories that already exist are left as they are
(an owner may share one on purpose)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FILE_MODE", "DIR_MODE", "private_dirs", "create_private_file"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dirs(directory: str | Path) -> Path:
    """Create ``directory`` and its missing ancestors, each mode 0700 (existing ones untouched)."""
    d = Path(directory)
    missing = []
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    for p in reversed(missing):
        try:
            p.mkdir(mode=DIR_MODE)
        except FileExistsError:  # created concurrently: fine
            continue
    return Path(directory)


def create_private_file(path: str | Path) -> Path:
    """Create the empty file ``path`` exclusively with mode 0600 (``FileExistsError`` if it exists)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    return Path(path)

