"""No error message repeats a user's value: every registered family's client entry points and
every Polars adapter are fed a distinctive secret string and number (in a batch, in one report,
inside a set, a tuple, a key–value pair, a frame column) and must refuse with an LDP error whose
text contains neither — never a numpy / Python / Polars conversion message that quotes the data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
import ldp_plugin.adapters  # noqa: F401  (registers the ldp namespace)
from ldp_plugin._errors import LDPInputError, LDPParameterError

from .._helpers import registry_instances
from ..test_client_entry_points import KEYS, _values
from .harness import SENTINEL, SENTINEL_NUMBER

SECRET_NUMBER = SENTINEL_NUMBER * 1000 + 0.125  # outside every canonical range


def _assert_clean(fn):
    with pytest.raises((LDPInputError, LDPParameterError)) as info:
        fn()
    text = str(info.value)
    assert SENTINEL not in text and "98765" not in text, text


def _poisoned(mech, secret):
    """A valid batch of 4 users with user 2's value replaced by ``secret`` (in its own layout)."""
    good = list(_values(mech, 4))
    if mech.input_kind == "key-value":
        good[2] = [(0, secret)]
        out = np.empty(4, dtype=object)
        out[:] = good
        return out
    if mech.input_kind == "tuple":
        good[2] = (0,) * (len(mech.domains) - 1) + (secret,)
        return good
    if mech.input_kind == "set":
        good = [list(g) if isinstance(g, (list, tuple)) else [g] for g in good]
        good[2] = [secret]
        return good
    good[2] = secret
    return np.array(good, dtype=object)


@pytest.mark.parametrize("factory", [pytest.param(f, id=i) for i, f in registry_instances()])
@pytest.mark.parametrize("secret", [SENTINEL, SECRET_NUMBER], ids=["string", "number"])
def test_client_never_echoes(factory, secret):
    mech = factory()
    keys = KEYS[:4] if mech.needs_user_keys else None
    bad = _poisoned(mech, secret)
    _assert_clean(lambda: mech.randomize(bad, rng=0, user_keys=keys))
    one = bad[2]
    _assert_clean(lambda: mech.randomize_one(one, rng=0, user_key=None if keys is None else keys[0]))


NUMBER_MECHS = [ldp.SquareWave(epsilon=1.0, lower=0, upper=10, grid=16), ldp.BucketedOracle(epsilon=1.0, lower=0, upper=10, buckets=8),
                ldp.HaarHRR(epsilon=1.0, lower=0, upper=10, buckets=8), ldp.Piecewise(epsilon=1.0, lower=0, upper=10),
                ldp.HierarchicalHistogram(epsilon=1.0, lower=0, upper=10, buckets=8), ldp.Duchi(epsilon=1.0, lower=0, upper=10)]


@pytest.mark.parametrize("mech", NUMBER_MECHS, ids=[m.name for m in NUMBER_MECHS])
def test_number_adapters_never_echo(mech):
    for col in ([1.0, SECRET_NUMBER, 2.0], ["1.0", SENTINEL, "2"]):
        df = pl.DataFrame({"user": [1, 2, 3], "x": col})
        _assert_clean(lambda: df.ldp.privatize("x", mech, user_id="user"))
        _assert_clean(lambda: df.lazy().ldp.privatize("x", mech, user_id="user"))


def test_key_value_adapter_never_echoes():
    pckv = ldp.PCKV(epsilon=1.0, d=3, ell=2)
    frames = [
        (pl.DataFrame({"k": [[0, 1], [2]], "v": [["0.5", SENTINEL], ["0.1"]]}), "v"),
        (pl.DataFrame({"k": [["a", SENTINEL], ["b"]], "v": [[0.5, 0.1], [0.2]]}), "v"),
        (pl.DataFrame({"k": [[0, 1], [2]], "v": [[0.5, SECRET_NUMBER], [0.2]]}), "v"),
        (pl.DataFrame({"k": [[0, int(SENTINEL_NUMBER)], [2]], "v": [[0.5, 0.1], [0.2]]}), "v"),
        (pl.DataFrame({"kv": [[{"key": 0, "value": SENTINEL}], [{"key": 1, "value": "0.2"}]]}), None),
        (pl.DataFrame({"kv": [[{"key": 0, "value": SECRET_NUMBER}], [{"key": 1, "value": 0.2}]]}), None),
    ]
    for df, values in frames:
        keys = "kv" if values is None else "k"
        _assert_clean(lambda: df.ldp.privatize_key_values(keys, pckv, values=values))


def test_multi_attribute_adapter_never_echoes():
    smp = ldp.SMP(epsilon=1.0, domains=(3, 4))
    for b in ([0.0, SECRET_NUMBER], ["x", SENTINEL], [0, int(SENTINEL_NUMBER)]):
        df = pl.DataFrame({"a": [0, 1], "b": b})
        _assert_clean(lambda: df.ldp.privatize_attributes(["a", "b"], smp))


def test_set_and_item_adapters_never_echo():
    krr = ldp.KRR(epsilon=1.0, categories=["a", "b", "c"])
    df = pl.DataFrame({"user": [1, 2, 3], "x": ["a", SENTINEL, "b"]})
    _assert_clean(lambda: df.ldp.privatize("x", krr, user_id="user"))
    s1 = ldp.SampleOne(mechanism=krr, m=2)
    df = pl.DataFrame({"user": [1, 2], "x": [["a"], ["b", SENTINEL]]})
    _assert_clean(lambda: df.ldp.privatize("x", s1, user_id="user"))
