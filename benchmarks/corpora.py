"""Seeded synthetic corpora for heavy-hitter discovery benchmarks (issue 36): one string per user.

* ``words``: English-like word frequencies. The head is a fixed list of common English function
  words in their usual order (short heavy words ``i``, ``a``, ``is``, ``it``, ``to`` that share
  prefixes with thousands of others, and contractions such as ``don't``, ``it's``); the tail is
  built from English-like syllables, so words share prefixes (``con-``, ``pre-``, ``-ing``), with
  lengths up to 20. Frequencies are Zipf-like (:func:`words`). Alphabet
  ``a-z`` and ``'``.
* ``urls``: URL-like strings of 10–30 characters over ``a-z0-9./-``: a few dozen shared hosts with
  Zipf-distributed paths (70% of users), and 30% of users holding a one-off random string.
* ``zipf``: Zipf(1.2) over 20,000 random words of 3–10 letters (the earlier benchmark's corpus).

Every corpus is a pure function of ``(n, seed)``: ``corpus(name, n, seed) -> (values, freq)`` with
``values`` a Polars String series and ``freq`` each distinct string's frequency among the users.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["corpus", "CORPORA", "ALPHABETS"]

#: Common English words, most frequent first (the head of the ``words`` corpus).
COMMON = (
    "the of and to a i in is you that it he was for on are as with his they at be this have from or one had by "
    "but not what all were we when your can said there use an each which she do how their if will up other about "
    "out many then them these so some her would make like him into time has look two more write go see number no "
    "way could people my than first water been call who its now find long down day did get come made may part "
    "don't it's i'm can't that's didn't i'll you're won't isn't there's let's"
).split()
_ONSETS = ("", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "w", "st", "pr", "tr", "ch", "sh", "th", "gr", "br", "cl")
_VOWELS = ("a", "e", "i", "o", "u", "ea", "ou", "io", "ai")
_CODAS = ("", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "nt")
_PREFIXES = ("", "", "", "con", "pre", "re", "un", "dis", "in", "inter", "over", "under", "trans", "com")
_SUFFIXES = ("", "", "", "ing", "ed", "s", "er", "ly", "tion", "ment", "ness", "able", "ers", "ings")
URL_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789./-"
ALPHABETS = {"words": "abcdefghijklmnopqrstuvwxyz'", "urls": URL_ALPHABET, "zipf": "abcdefghijklmnopqrstuvwxyz"}


def _syllable(rng) -> str:
    return rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)


def _vocabulary(rng, V: int, max_len: int = 20) -> list[str]:
    words = list(dict.fromkeys(COMMON))
    seen = set(words)
    while len(words) < V:
        w = rng.choice(_PREFIXES) + "".join(_syllable(rng) for _ in range(int(rng.integers(1, 5)))) + rng.choice(_SUFFIXES)
        if 2 <= len(w) <= max_len and w not in seen:
            seen.add(w)
            words.append(w)
    return words


def _draw(rng, items: list[str], weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    p = weights / weights.sum()
    x = rng.choice(len(items), size=n, p=p)
    return np.array(items, dtype=object)[x], x


def words(n: int, seed: int = 0, V: int = 30_000, head_boost: float = 1.4) -> tuple[pl.Series, dict]:
    """English-like words (module docstring): Zipf–Mandelbrot ``(rank + 1)^-1`` over ``V`` words,
    the 100 common words ``head_boost`` times heavier (function words are over-represented in
    speech and chat): ``the`` ≈ 6%, ``i`` ≈ 1.3%, about 23 words at ≥ 0.5%."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng, V)
    w = (np.arange(1, V + 1, dtype=np.float64) + 1.0) ** -1.0
    w[: len(COMMON)] *= head_boost
    vals, _ = _draw(rng, vocab, w, n)
    return _finish(vals)


def urls(n: int, seed: int = 0, hosts: int = 40, paths: int = 5_000, one_off: float = 0.3) -> tuple[pl.Series, dict]:
    """URL-like strings (module docstring): ``1 − one_off`` of users from Zipf-ranked
    host+path strings, the rest a string of their own."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    alnum = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    tlds = (".com", ".org", ".net", ".io")
    host_names = []
    while len(host_names) < hosts:
        h = "www." + "".join(rng.choice(letters, size=int(rng.integers(3, 9)))) + str(rng.choice(tlds))
        if h not in host_names:
            host_names.append(h)
    host_w = np.arange(1, hosts + 1, dtype=np.float64) ** -1.0
    host_w /= host_w.sum()
    pool: list[str] = []
    seen = set()
    while len(pool) < paths:
        h = host_names[int(rng.choice(hosts, p=host_w))]
        path = "" if rng.random() < 0.05 else "/" + "".join(rng.choice(alnum, size=int(rng.integers(1, 12))))
        if rng.random() < 0.3:
            path += "/" + "".join(rng.choice(alnum, size=int(rng.integers(1, 6))))
        u = (h + path)[:30]
        if 10 <= len(u) and u not in seen:
            seen.add(u)
            pool.append(u)
    m = int(round(one_off * n))
    head, _ = _draw(rng, pool, np.arange(1, paths + 1, dtype=np.float64) ** -1.1, n - m)
    chars = np.array(list(URL_ALPHABET))
    lens = rng.integers(10, 31, size=m)
    tail = np.array(["".join(rng.choice(chars, size=int(k))) for k in lens], dtype=object)
    vals = np.concatenate([head, tail])
    rng.shuffle(vals)
    return _finish(vals)


def zipf(n: int, seed: int = 0, V: int = 20_000) -> tuple[pl.Series, dict]:
    """Zipf(1.2) over ``V`` random words of 3–10 letters."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = list(dict.fromkeys("".join(rng.choice(letters, size=int(k))) for k in rng.integers(3, 11, size=3 * V)))[:V]
    vals, _ = _draw(rng, vocab, np.arange(1, V + 1, dtype=np.float64) ** -1.2, n)
    return _finish(vals)


def _finish(vals: np.ndarray) -> tuple[pl.Series, dict]:
    series = pl.Series("value", vals.tolist(), dtype=pl.String)
    counts = series.value_counts()
    freq = dict(zip(counts["value"].to_list(), (counts["count"] / series.len()).to_list()))
    return series, freq


CORPORA = {"words": words, "urls": urls, "zipf": zipf}


def corpus(name: str, n: int, seed: int = 0) -> tuple[pl.Series, dict]:
    """The named corpus (``words``, ``urls``, ``zipf``) for ``n`` users."""
    return CORPORA[name](n, seed)
