"""Strings as prefixes: the public alphabet, the terminator, the level items and the candidates
one level's survivors extend to (the domain of prefix-tree heavy-hitter discovery).

A string ``w`` over the public ``alphabet`` with ``len(w) <= max_length`` is, at a level of
prefix length ``s``, the item ``w + TERM`` if ``len(w) <= s`` (it is **finished** there: a string
of exactly ``s`` symbols finishes at that level and never has to compete as a live prefix) and
``w[:s]`` otherwise (a live prefix: it stands for strings *longer* than ``s``). A finished string
carries one terminator and stays the same item at every later level. Everything here is a
function of public parameters and of the user's own value (no data-dependent choice)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import polars as pl

from .._errors import LDPInputError, LDPParameterError

__all__ = ["TERM", "PrefixCodec", "DEFAULT_ALPHABET", "infer_domain", "MAX_LENGTH", "INFERRED"]

#: The terminator of a finished string (never part of the alphabet).
TERM = "\x00"
#: The default public alphabet: lower-case ASCII letters and digits.
DEFAULT_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
MAX_LENGTH = 64


@dataclass(frozen=True)
class PrefixCodec:
    """The public string domain: ``alphabet`` (distinct characters, no NUL) and ``max_length``."""

    alphabet: str = DEFAULT_ALPHABET
    max_length: int = 10

    def __post_init__(self) -> None:
        a = self.alphabet
        if not isinstance(a, str) or not 1 <= len(a) <= 1024 or len(set(a)) != len(a) or TERM in a:
            raise LDPParameterError("alphabet must be a string of 1 to 1024 distinct characters without NUL")
        L = self.max_length
        if isinstance(L, bool) or not isinstance(L, int) or not 1 <= L <= MAX_LENGTH:
            raise LDPParameterError(f"max_length must be an integer in [1, {MAX_LENGTH}] (got {L!r})")

    @property
    def symbols(self) -> int:
        """Symbols a position can hold: the alphabet and the terminator."""
        return len(self.alphabet) + 1

    def check(self, values: pl.Series, name: str = "values") -> pl.Series:
        """The values as a String series; refuses nulls, values longer than ``max_length`` and
        characters outside the alphabet (counts only: values are never echoed)."""
        if not isinstance(values, pl.Series):
            values = pl.Series(name, list(values) if not hasattr(values, "tolist") else values.tolist(), dtype=pl.String, strict=False)
        if values.dtype in (pl.Categorical, pl.Enum):
            values = values.cast(pl.String)
        if values.dtype != pl.String:
            raise LDPInputError(f"{name} must be strings (got {values.dtype})")
        if values.null_count():
            raise LDPInputError(f"{name} has {values.null_count()} null value(s); heavy-hitter discovery needs one string per user")
        too_long = int((values.str.len_chars() > self.max_length).sum())
        if too_long:
            raise LDPInputError(f"{too_long} value(s) of {name} are longer than max_length={self.max_length}; raise max_length")
        allowed = "".join(sorted(self.alphabet))
        bad = int(values.str.contains(f"[^{_class_escape(allowed)}]").sum())
        if bad:
            raise LDPInputError(
                f"{bad} value(s) of {name} contain characters outside alphabet (size {len(self.alphabet)}); "
                "pass an alphabet= that covers every character"
            )
        return values

    def level_items(self, values: pl.Series, length: int) -> pl.Series:
        """Each value's item at prefix length ``length`` (see the module docstring)."""
        return (
            pl.select(
                pl.when(values.str.len_chars() > length).then(values.str.slice(0, length)).otherwise(values + TERM)
            ).to_series()
        )

    def extensions(self, step: int, *, root: bool = False, live: bool = True) -> list[str]:
        """The strings a live prefix grows by in ``step`` positions: ``1..step`` alphabet symbols
        and the terminator (``0..step`` for the ``root``, the empty prefix: a live prefix of
        length ``s`` stands for strings longer than ``s``), then, if ``live``, ``step`` symbols."""
        out = []
        for j in range(0 if root else 1, step + 1):
            out.extend("".join(t) + TERM for t in itertools.product(self.alphabet, repeat=j))
        if live:
            out.extend("".join(t) for t in itertools.product(self.alphabet, repeat=step))
        return out

    def extend(self, prefixes: Iterable[str], step: int, *, live: bool = True) -> list[str]:
        """Next level's candidates: a finished prefix stays itself, a live one gets every extension
        (``live=False`` at the last level: no string is longer than ``max_length``)."""
        ext, ext_root = self.extensions(step, live=live), None
        out: list[str] = []
        for p in prefixes:
            if p.endswith(TERM):
                out.append(p)
            elif p == "":
                ext_root = ext_root or self.extensions(step, root=True, live=live)
                out.extend(ext_root)
            else:
                out.extend(p + e for e in ext)
        return out

    @staticmethod
    def finished(item: str) -> bool:
        return item.endswith(TERM)

    @staticmethod
    def display(item: str) -> str:
        """The string an item stands for (its terminator removed)."""
        return item[:-1] if item.endswith(TERM) else item

    def lengths(self, step: int) -> tuple[int, ...]:
        """Prefix length of every level: ``step, 2·step, …, max_length``."""
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= self.max_length:
            raise LDPParameterError(f"step must be an integer in [1, max_length={self.max_length}] (got {step!r})")
        out = list(range(step, self.max_length, step)) + [self.max_length]
        return tuple(out)

    def extension_count(self, step: int) -> int:
        """Candidates one live prefix (or the root, at most one more) extends to in ``step`` positions."""
        a = len(self.alphabet)
        return sum(a**j for j in range(1, step + 1)) + a**step

    def finished_count(self, step: int) -> int:
        """Of :meth:`extension_count`, the finished ones (terminated)."""
        a = len(self.alphabet)
        return sum(a**j for j in range(1, step + 1))


#: How a result states an inferred domain (``domain_source``).
INFERRED = "inferred from the data (a simulation convenience, not private: a deployment fixes alphabet and max_length in advance)"


def infer_domain(values: Any, *, alphabet: Optional[str] = None, max_length: Optional[int] = None, cap: int = MAX_LENGTH) -> tuple[str, int]:
    """``(alphabet, max_length)`` for ``values`` (strings; a list column's elements): each one
    given is kept, the other read from the data — the alphabet as the sorted set of characters
    (Unicode code points, so UTF-8 text needs no byte mode), the longest string's length (at least
    1). Reading the raw data is **not** private: this is for simulations; a deployment publishes
    both in advance. Refuses (naming the cap, never a value) a string longer than ``cap`` and
    an alphabet of more than 1024 characters or with NUL."""
    s = values if isinstance(values, pl.Series) else pl.Series("values", list(values), dtype=pl.String, strict=False)
    if isinstance(s.dtype, pl.List):
        s = s.explode()
    if s.dtype in (pl.Categorical, pl.Enum):
        s = s.cast(pl.String)
    if s.dtype != pl.String:
        raise LDPInputError(f"values must be strings (got {s.dtype})")
    s = s.drop_nulls()
    if max_length is None:
        longest = int(s.str.len_chars().max() or 0)
        if longest > cap:
            raise LDPInputError(
                f"{int((s.str.len_chars() > cap).sum())} value(s) are longer than {cap} characters, the cap on max_length; "
                "shorten them (e.g. truncate to a prefix) before discovery"
            )
        max_length = max(1, longest)
    if alphabet is None:
        chars = sorted(set("".join(s.unique().to_list())))
        if TERM in chars:
            raise LDPInputError("values contain the NUL character, which discovery reserves as the terminator")
        if len(chars) > 1024:
            raise LDPInputError(f"values use {len(chars)} distinct characters; discovery supports at most 1024")
        alphabet = "".join(chars) or "a"
    return alphabet, max_length


def _class_escape(chars: str) -> str:
    """Escape characters for a regex character class."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in chars)


def display_all(items: Sequence[Any]) -> list[str]:
    return [PrefixCodec.display(i) for i in items]
