"""Seeded bugs of the system layers: deployment components with a defect each layer must catch
(``ldp verify --self-test`` runs every layer on its bugs; a bug is caught when its layer fails).

| bug | defect | breaks | caught by |
|---|---|---|---|
| ``series-charged-once`` | a device charges a memoized series' first collection and nothing after it | the ledger under-counts repeated collections | device (exact charge; worst loss over histories) |
| ``value-dependent-refusal`` | a device refuses (``device_error``) when one of its users holds a value outside the query's domain | a refusal reveals what a user holds | device (answers compared across held values) |
| ``naive-shuffle`` | the shuffler permutes by swapping each position with any position (``n^n`` draws) | the output order is not uniform: it tells the ciphertexts' byte order | shuffler (exact output law) |
| ``loose-delta-analyzer`` | the analyzer records the batch at a δ 1000 times the one asked | the recorded central ε is below the one earned at δ | analyzer (record vs amplify at n, δ) |
| ``replay-blind-analyzer`` | the analyzer gives each envelope a fresh nonce before checking replays | a replayed report counts twice: n, and the amplification, inflated | analyzer (the batch opened vs the devices' kept envelopes) |
| ``shared-nonce-reply`` | the reply path seals every envelope of a reply with the first envelope's nonce | the collector keeps one report per reply | wire (every report accepted) |
| ``lookup-step-boundary`` | the numpy text lookup gives the last row of each step of 2**16 rows its neighbour's code | a user's report is of another category | kernels (numpy twin vs compiled kernel vs dictionary) |
| ``column-chunk-edge`` | the numpy column counts skip the last row of each chunk of 2**15 rows | a unary report is not counted | kernels (numpy twin vs compiled kernel vs unpacked sums) |
| ``dense-extra-draw`` | the numpy dense sampler draws one byte more than the compiled one (same output) | a seeded stream is consumed differently per backend | kernels (identical consumed randomness) |
| ``one-stream-executor`` | an executor hands every partition the index 0 | every partition reuses one seeded stream | executors (files vs the serial release) |
| ``lax-domain-krr`` | k-RR's constructor accepts ``d = 1`` (silently made ``d = 2``) | a one-item domain is no domain: the reports describe items the caller never declared | refusals (one below each declared minimum) |
| ``echoing-krr`` | k-RR's input error repeats the batch it refused | a user's value reaches the caller's logs | refusals (no sentinel in any message) |
| ``spend-before-check`` | ``Accountant.run`` spends, then lets the measurement find the value outside its domain | a refused release costs the population budget | refusals (the ledger unchanged by every refusal) |
| ``categorical-physical-ids`` | k-RR reads a Polars Categorical column through its physical ids (the order labels were first seen), not its categories | a user's report is randomized from another user's item | mechanism paths (input forms) |
| ``histogram-ignores-counts`` | k-RR's accumulator adds each distinct report of a grouped scan once, whatever its count | a report file aggregated by ``ldp collect`` is mis-counted | mechanism paths (server paths) |
| ``halved-analytic-mse`` | k-RR's ``analytic_mse`` is half the raw estimator's error | ``ldp choose`` ranks it by a wrong error | mechanism paths (analytic error) |
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import os
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ..._errors import LDPInputError, LDPParameterError
from ...accountant import Accountant
from ...federated.analyzer import analyze_batch
from ...federated.app import device_answer
from ...federated.batch import iter_ciphertexts, read_batch, write_batch
from ...federated.config import DeviceConfig, device_config_path
from ...federated.device import DeviceFleet, DeviceRefusal
from ...federated.envelope import NONCE_BYTES
from ...federated.sealed import open_reports, private_key, seal_reply, seal_reports
from ...federated.shuffler import Shuffler
from ...mechanisms import KRR
from ...mechanisms._base import FrequencyAccumulator
from ...registry import load_registry
from ...sampling.aggregate_kernels import _TREE_ROWS, packed_column_counts
from ...sampling.object_layout import canonical_text
from ...sampling.row_lookup import _STEP, fixed_width_codes, list_codes
from .runtime_bugs import RUNTIME_BUGS

__all__ = ["SYSTEM_BUGS"]


def _answer_with(fleet_class: type) -> Callable:
    """The node's reply path (:func:`~ldp_plugin.federated.app.device_answer`) with another fleet class."""

    def answer(content: Any, node_config: Any) -> dict:
        cfg = DeviceConfig.load(device_config_path(node_config), node_config)
        try:
            fleet = fleet_class.open(cfg)
        except DeviceRefusal as e:  # as the node's reply path answers it
            try:
                n = int(cfg.load_values().shape[0])
            except (LDPParameterError, LDPInputError):
                n = 1
            return {"devices": n, "reports": [], "refused": {e.reason: n}, "retry": False}
        except (LDPParameterError, LDPInputError):
            return {"devices": 1, "reports": [], "refused": {"device_misconfigured": 1}, "retry": False}
        try:
            return seal_reply(fleet.respond(str(content["query"]["json"])), cfg.analyzer_key)
        finally:
            fleet.close()

    return answer


class SeriesChargedOnce(DeviceFleet):
    """Charges a series' first collection only (the permanent report "already paid for")."""

    def _series_charge(self, query: Any, mech: Any) -> Fraction:
        full = super()._series_charge(query, mech)
        return full if full == Fraction(mech.collection_cost(1)) else Fraction(0)


class ValueDependentRefusal(DeviceFleet):
    """Refuses the whole query when a user's value is missing (a value-dependent answer)."""

    def respond(self, query_json: str) -> dict:
        if any(v is None for v in self.values):
            return {"reports": [], "refused": {"device_error": self.n_devices}, "retry": False, "devices": self.n_devices}
        return super().respond(query_json)


class NaiveShuffler(Shuffler):
    """Swaps each position with any position: ``n^n`` equally likely draws, not a multiple of ``n!``."""

    def shuffled(self, rng: Any = None) -> list:
        canonical = sorted(self._held)
        n = len(canonical)
        if n < 2:
            return canonical
        from_rng = rng.uniform_int_each(np.full(n - 1, n, dtype=np.int64)).tolist()
        a = list(range(n))
        for i, j in zip(range(n - 1, 0, -1), from_rng):
            a[i], a[j] = a[j], a[i]
        return [canonical[i] for i in a]


def loose_delta_analyze(batch: Any, *, delta: float, **kw) -> dict:
    """The analyzer, recording the batch at a δ 1000 times the one asked."""
    return analyze_batch(batch, delta=min(0.5, delta * 1000), **kw)


def replay_blind_analyze(batch: Any, *, key: Any, **kw) -> dict:
    """The analyzer, with every opened envelope given a fresh nonce before the replay check (a
    replayed report is counted again)."""
    header, body = read_batch(batch)
    sk = private_key(key)
    opened, _ = open_reports(list(iter_ciphertexts(header, body)), sk)
    fresh = [os.urandom(NONCE_BYTES) + e[NONCE_BYTES:] for e in opened]
    resealed = seal_reports(fresh, sk.public_key)
    out = Path(batch).with_suffix(".renonced")
    write_batch(out, query_json=header["query"], batch_id=header["batch_id"], ciphertexts=resealed, ciphertext_size=header["ciphertext_size"])
    return analyze_batch(out, key=key, **kw)


def shared_nonce_answer(content: Any, node_config: Any) -> dict:
    """The node's reply path, sealing every envelope with the reply's first nonce."""
    reply = device_answer(content, node_config)
    reports = reply.get("reports") or []
    if reports:
        nonce = bytes(reports[0][:NONCE_BYTES])
        reply = {**reply, "reports": [nonce + bytes(r[NONCE_BYTES:]) for r in reports]}
    return reply


def lookup_step_boundary(values: Any, categories: tuple, *, backend: Any = None) -> tuple:
    """The text lookup whose numpy twin is off by one at its step boundary: the last row of each
    step of ``2**16`` rows takes the code of the row after it."""
    codes, bad = fixed_width_codes(values, categories, backend=backend)
    if backend == "numpy" and bad < 0 and codes.size > _STEP:
        codes = codes.copy()
        ends = np.arange(_STEP - 1, codes.size - 1, _STEP)
        codes[ends] = codes[ends + 1]
    return codes, bad


def list_lookup_width_blind(values: Any, categories: tuple, *, backend: Any = None) -> Optional[tuple]:
    """The list lookup that compares a string's canonical bytes but not their width (on the
    compiled backend): ``"ab"`` and U+6261, both the bytes ``ab``, take one code."""
    got = list_codes(values, categories, backend=backend)
    if backend != "numba" or got is None or not all(isinstance(c, str) for c in categories):
        return got
    by_bytes: dict = {}
    for code, c in enumerate(categories):
        by_bytes.setdefault(canonical_text(c)[1], code)
    utf8 = {c.encode("utf-8", "surrogatepass"): code for code, c in enumerate(categories)}
    codes = np.array([by_bytes.get(canonical_text(v)[1], -1) if type(v) is str else utf8.get(v, -1) for v in values], dtype=np.int64)
    bad = np.flatnonzero(codes < 0)
    return codes, int(bad[0]) if bad.size else -1


def column_chunk_edge(packed: np.ndarray, d: int, backend: Any = None) -> np.ndarray:
    """The packed column counts whose numpy twin skips the last row of each chunk of ``2**15`` rows."""
    if backend == "numpy" and packed.shape[0] > _TREE_ROWS:
        packed = packed.copy()
        packed[_TREE_ROWS - 1::_TREE_ROWS] = 0
    return packed_column_counts(packed, d, backend=backend)


def dense_extra_draw(source: Any, threshold: int, n_rows: int, n_bits: int, backend: Any) -> np.ndarray:
    """The Bernoulli sampler whose numpy path reads one byte more than the compiled kernel (its
    output unchanged): the same seed gives another stream position on each backend."""
    out = source._packed(threshold, n_rows, n_bits, backend=backend)
    if backend == "numpy" and out.size and 0 < threshold < 1 << 64:
        source.random_bytes(1)
    return out


class OneStreamExecutor:
    """An executor (the local one's ``map_reduce``) that hands every partition the index 0, so all
    partitions are randomized with one seeded stream."""

    name = "one-stream"

    def map_reduce(self, fn: Callable, sources: Any, combine: Callable = operator.add) -> Any:
        return functools.reduce(combine, [fn((0, s[1]) if isinstance(s, tuple) else s) for s in sources])
class LaxDomainKRR(KRR):
    """Accepts ``d = 1`` (and any smaller size), silently widened to ``d = 2``."""

    def __post_init__(self) -> None:
        if isinstance(self.d, int) and not isinstance(self.d, bool) and self.d < 2:
            object.__setattr__(self, "d", 2)
        super().__post_init__()


class EchoingKRR(KRR):
    """Its input error repeats the refused batch."""

    def encode(self, values: Any) -> np.ndarray:
        try:
            return super().encode(values)
        except LDPInputError:
            raise LDPInputError(f"values must be integer codes in [0, {self.d}) (got {np.asarray(values, dtype=object).tolist()!r})") from None


class SpendFirstAccountant(Accountant):
    """``run`` spends first; the measurement checks its argument only when it runs."""

    def run(self, query_id: str, measurement: Any, data: Any, **kw: Any) -> Any:
        return self.release(query_id, measurement, lambda: measurement(data), **kw)


def _krr_as(cls: type) -> dict:
    """k-RR's registry declaration with ``cls`` as its constructor (the refusal layer's input)."""
    name = "seeded-" + cls.__name__
    return {name: dataclasses.replace(load_registry()["krr"], name=name, constructor=f"{__name__}:{cls.__name__}")}
class CategoricalPhysicalIds(KRR):
    """Reads a Polars Categorical Series through its physical ids (first-seen order)."""

    def encode(self, values: Any) -> np.ndarray:
        if type(values).__module__.startswith("polars") and str(values.dtype).startswith("Categorical"):
            return values.to_physical().to_numpy().astype(np.int64)
        return super().encode(values)


class _CountsOnce(FrequencyAccumulator):
    def add_histogram(self, columns: dict, weights: Any) -> "FrequencyAccumulator":
        return super().add_histogram(columns, np.ones_like(np.asarray(weights)))


class HistogramIgnoresCounts(KRR):
    """Its accumulator adds each distinct report of a grouped scan once."""

    def accumulator(self) -> FrequencyAccumulator:
        return _CountsOnce(self)


class HalvedAnalyticMSE(KRR):
    """States half of the raw estimator's error."""

    def analytic_mse(self, n: int, **kw: Any) -> float:
        return super().analytic_mse(n, **kw) / 2


def _as(cls: type) -> Callable:
    return lambda mech: cls(epsilon=mech.epsilon, d=mech.d)


#: ``(bug name, system layer, keyword arguments that plant it in the layer)``
SYSTEM_BUGS = (
    ("series-charged-once", "device", {"answer": _answer_with(SeriesChargedOnce)}),
    ("value-dependent-refusal", "device", {"answer": _answer_with(ValueDependentRefusal)}),
    ("naive-shuffle", "shuffler", {"shuffler": NaiveShuffler}),
    ("loose-delta-analyzer", "analyzer", {"analyze": loose_delta_analyze}),
    ("replay-blind-analyzer", "analyzer", {"analyze": replay_blind_analyze}),
    ("shared-nonce-reply", "wire", {"answer": shared_nonce_answer, "names": ("krr", "l-grr", "wheel")}),
    ("lookup-step-boundary", "kernels", {"impl": {"fixed_width_codes": lookup_step_boundary}, "only": ("lookup",)}),
    ("list-lookup-width-blind", "kernels", {"impl": {"list_codes": list_lookup_width_blind}, "only": ("lookup",)}),
    ("dense-extra-draw", "kernels", {"impl": {"packed": dense_extra_draw}, "only": ("samplers",)}),
    ("column-chunk-edge", "kernels", {"impl": {"packed_column_counts": column_chunk_edge}, "only": ("aggregation",)}),
    ("one-stream-executor", "executors", {"local": OneStreamExecutor}),
    ("lax-domain-krr", "refusals", {"declarations": _krr_as(LaxDomainKRR)}),
    ("echoing-krr", "refusals", {"declarations": _krr_as(EchoingKRR)}),
    ("spend-before-check", "refusals", {"declarations": {"krr": load_registry()["krr"]}, "accountant": SpendFirstAccountant}),
    ("categorical-physical-ids", "mechanism paths", {"replace": {"krr": _as(CategoricalPhysicalIds)}, "names": ("krr",)}),
    ("histogram-ignores-counts", "mechanism paths", {"replace": {"krr": _as(HistogramIgnoresCounts)}, "names": ("krr",)}),
    ("halved-analytic-mse", "mechanism paths", {"replace": {"krr": _as(HalvedAnalyticMSE)}, "names": ("krr",)}),
    *RUNTIME_BUGS,
)
