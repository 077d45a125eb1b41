"""Generated device values for demonstrations and simulations, a ``[data] source`` entry point
(``ldp_plugin.federated.synthetic:zipf_values``): run on the device, never sent."""

from __future__ import annotations

import numpy as np

__all__ = ["zipf_values", "zipf_frequencies", "zipf_words", "WORDS"]


def zipf_frequencies(d: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, int(d) + 1) ** float(s)
    return w / w.sum()


def zipf_values(devices: int, d: int, seed: int | str = 0, s: float = 1.1) -> np.ndarray:
    """``devices`` values in ``[0, d)`` drawn from a Zipf(s) law with a seeded generator (the data
    of a demonstration, not a randomizer: the randomization uses the OS CSPRNG)."""
    parts = [int(x) for x in str(seed).split("-") if x != ""]  # "3-1": data seed 3, node 1
    gen = np.random.default_rng(parts + [int(devices), int(d)])
    return gen.choice(int(d), size=int(devices), p=zipf_frequencies(d, s))


#: the vocabulary of :func:`zipf_words` (most frequent first)
WORDS = ("maps", "mail", "music", "news", "notes", "camera", "clock", "chat", "weather", "wallet", "photos", "phone", "books", "bank",
         "calendar", "contacts", "games", "gallery", "store", "search")


def zipf_words(devices: int, seed: int | str = 0, s: float = 1.1, words: int = len(WORDS)) -> np.ndarray:
    """``devices`` strings drawn from the first ``words`` of :data:`WORDS` by a Zipf(s) law with a
    seeded generator (a demonstration's data for heavy-hitter discovery, alphabet ``a-z``)."""
    idx = zipf_values(devices, int(words), seed, s)
    return np.asarray([WORDS[i] for i in idx], dtype=object)
