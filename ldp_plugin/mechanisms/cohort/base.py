"""The shape of cohort mechanisms (O-RR, O-RAPPOR; Kairouz, Bonawitz & Ramage (ICML 2016) §5): data-independent hash cohorts,
cohort reports, the mergeable cohort accumulator with the least-squares decoder."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Optional

import numpy as np

from ..base import MechanismBase
from ..protocol import ClosedDomain, Cohorted, Verifiable
from ..._errors import LDPInputError, LDPParameterError
from ...estimation import FrequencyEstimate, retarget
from ...exact import epsilon_of_ratio, ratio_within_exp
from ...hashing import check_seed, cohort_seeds, item_keys, keys_of_items, seeded_hash, seeded_permutation
from ...sampling import RNGLike, as_source
from ..usable_range import too_large
from ..channel import Channel
from ..domain import check_codes, check_domain, check_epsilon, encode_values
from ...theory import mse_cohort
from ...estimation.least_squares import normal_inverse
from .server import OTHER, CohortAccumulator
from .design import check_closed_design

__all__ = ["CohortReports", "CohortAccumulator", "report_batch_arrays", "report_batch_from_arrays", "OTHER", "MAX_K", "MAX_COHORTS", "MAX_TABLE"]


MAX_K = 1 << 24
MAX_COHORTS = 1 << 20
MAX_TABLE = 1 << 28  # entries of a closed-alphabet position table (C · h · S)


@dataclass(frozen=True)
class CohortReports:
    """A batch of cohort reports: ``cohort[i]`` and ``value[i]`` are user ``i``'s report.

    ``value`` is a ``uint32`` vector (O-RR: the randomized cell) or an ``(n, ceil(k/8))`` ``uint8``
    matrix of LSB-first packed bits (O-RAPPOR)."""

    cohort: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return int(self.cohort.shape[0])


@dataclass(frozen=True, kw_only=True)
class _CohortMechanism(MechanismBase, abc.ABC):
    capabilities = frozenset({Cohorted, ClosedDomain, Verifiable})
    name: ClassVar[str] = "abstract-cohort"
    takes_cohorts: ClassVar[bool] = True
    histogram_columns: ClassVar[Optional[tuple]] = None
    covariance: ClassVar[str] = "multinomial"
    hashes_per_item: ClassVar[int] = 1
    #: a sign hash ``g_c(v) ∈ {±1}`` besides the cell hash (the count sketch): the hash then has
    #: ``2k`` values, the cell ``pos >> 1`` and the sign bit ``pos & 1`` (:meth:`covers_of`)
    signed: ClassVar[bool] = False

    epsilon: float
    k: int
    cohorts: int = 1
    hash_seed: int = 0
    d: Optional[int] = None
    categories: tuple | list | None = None  # a list or tuple of labels; stored as a tuple
    #: opt-in to a design whose cells cannot identify every item (channel studies): construction
    #: then accepts it and an estimate warns (:class:`UnderdeterminedWarning`) and widens every
    #: interval to ``[0, total]`` instead of refusing (:mod:`.design`)
    underdetermined: bool = False
    p_exact: Fraction = field(init=False, repr=False, compare=False)
    q_exact: Fraction = field(init=False, repr=False, compare=False)
    realized_ratio: Fraction = field(init=False, repr=False, compare=False)
    _index: Optional[dict] = field(init=False, repr=False, compare=False)
    _table: Optional[np.ndarray] = field(init=False, repr=False, compare=False)
    _seeds: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        k, C = self.k, self.cohorts
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= int(k) <= MAX_K:
            raise LDPParameterError(f"k must be an integer in [2, 2**24] (got {k!r})")
        if isinstance(C, bool) or not isinstance(C, (int, np.integer)) or not 1 <= int(C) <= MAX_COHORTS:
            raise LDPParameterError(f"cohorts must be an integer in [1, 2**20] (got {C!r})")
        object.__setattr__(self, "k", int(k))
        object.__setattr__(self, "cohorts", int(C))
        object.__setattr__(self, "hash_seed", check_seed(self.hash_seed))
        if not isinstance(self.underdetermined, (bool, np.bool_)):
            raise LDPParameterError(f"underdetermined must be True or False (got type {type(self.underdetermined).__name__})")
        object.__setattr__(self, "underdetermined", bool(self.underdetermined))
        self._validate_extra()
        h = self.hashes_per_item
        object.__setattr__(self, "_seeds", cohort_seeds(self.hash_seed, self.cohorts * h).reshape(self.cohorts, h))
        if self.d is not None or self.categories is not None:
            d, cats = check_domain(self.d, self.categories)
            if self.cohorts * h * d > MAX_TABLE:
                raise LDPParameterError("closed alphabet: cohorts · hashes · d must be at most 2**28")
            object.__setattr__(self, "d", d)
            object.__setattr__(self, "categories", cats)
            object.__setattr__(self, "_index", None if cats is None else {c: i for i, c in enumerate(cats)})
            keys = keys_of_items(cats if cats is not None else range(d))
            table = np.empty((self.cohorts, h, d), dtype=np.int32)
            for c in range(self.cohorts):
                for t in range(h):
                    table[c, t] = self._closed_positions(seeded_permutation(keys, int(self._seeds[c, t])))
            table.setflags(write=False)
            object.__setattr__(self, "_table", table)
        else:
            object.__setattr__(self, "_index", None)
            object.__setattr__(self, "_table", None)
        p, q, ratio = self._realize()
        if not (0 < q < p < 1):
            raise LDPParameterError(too_large(self, eps, "its probabilities round to 0 or 1 in 64-bit thresholds"))
        if not ratio_within_exp(ratio, eps):  # pragma: no cover - the thresholds are chosen to pass
            raise LDPParameterError(f"{self.name}: the realized likelihood ratio exceeds e**epsilon")
        object.__setattr__(self, "p_exact", p)
        object.__setattr__(self, "q_exact", q)
        object.__setattr__(self, "realized_ratio", ratio)
        if self.closed and not self.underdetermined:
            check_closed_design(self)

    def _validate_extra(self) -> None:
        pass

    def _closed_positions(self, rank: np.ndarray) -> np.ndarray:
        """A closed alphabet's positions from a seeded permutation's ranks (Kairouz, Bonawitz & Ramage (ICML 2016) §5.4): cell
        ``π mod k`` (balanced), and for a :attr:`signed` mechanism the sign bit ``⌊π/k⌋ mod 2`` (the
        items sharing a cell alternate signs; with ``d <= k`` every item has a cell of its own)."""
        cell = rank % self.k
        return 2 * cell + (rank // self.k) % 2 if self.signed else cell

    @abc.abstractmethod
    def _realize(self) -> tuple[Fraction, Fraction, Fraction]:
        """Exact (P[cell reported | own], P[cell reported | not own], worst-case ratio)."""

    @abc.abstractmethod
    def _randomize_positions(self, positions: np.ndarray, source) -> np.ndarray:
        """Client on the users' cells (``(n, h)``)."""

    # -- description -------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._table is not None

    @property
    def known_total(self) -> bool:
        """Whether the decoders impose ``Σ θ = 1`` instead of estimating it: a closed alphabet's
        :attr:`signed` cells cancel the total (its signs alternate within every cell)."""
        return self.signed and self.closed

    @property
    def hash_range(self) -> int:
        """Values of the per-cohort hash: ``k`` cells, or ``2k`` (cell, sign) pairs when :attr:`signed`."""
        return 2 * self.k if self.signed else self.k

    @property
    def p(self) -> float:
        return float(self.p_exact)

    @property
    def q(self) -> float:
        return float(self.q_exact)

    @property
    def realized_epsilon(self) -> float:
        return epsilon_of_ratio(self.realized_ratio)

    @property
    def items(self) -> Optional[tuple]:
        if not self.closed:
            return None
        return self.categories if self.categories is not None else tuple(range(self.d))

    @classmethod
    def default_cells(cls, epsilon: float) -> int:
        """The hash range ``k`` over an open alphabet when none is given (heavy-hitter discovery):
        a sketch's width here; O-RR takes the randomized-response optimum."""
        return 1024

    def params(self) -> dict:
        out = {"mechanism": self.name, "epsilon": self.epsilon, "k": self.k, "cohorts": self.cohorts, "hash_seed": self.hash_seed}
        if self.closed:
            out["d"] = self.d
        if self.underdetermined:
            out["underdetermined"] = True
        out.update(self._extra_params())
        return out

    def spec(self) -> dict:
        out = super().spec()
        if not self.underdetermined:  # the default is not part of what a report's fingerprint names
            out["params"].pop("underdetermined", None)
        return out

    def _extra_params(self) -> dict:
        return {}

    # -- client ----------------------------------------------------------------------------------
    def encode(self, values: Any) -> np.ndarray:
        """Closed alphabet: item codes (``int64``); open alphabet: 64-bit item keys."""
        if self.closed:
            return encode_values(values, self.d, self.categories, self._index)
        return item_keys(_flat_items(values, "values"))

    def positions(self, encoded: np.ndarray, cohort: np.ndarray) -> np.ndarray:
        """``(n, h)`` cells of each user's item in their cohort."""
        if self.closed:
            return np.stack([self._table[cohort, t, encoded] for t in range(self.hashes_per_item)], axis=1).astype(np.int64)
        return np.stack(
            [seeded_hash(encoded, self._seeds[cohort, t], self.hash_range) for t in range(self.hashes_per_item)], axis=1
        )

    def check_cohorts(self, cohorts: Any, n: int) -> np.ndarray:
        arr = np.asarray(cohorts.to_numpy() if hasattr(cohorts, "to_numpy") else cohorts)
        if arr.ndim != 1 or arr.shape[0] != n or arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
            raise LDPInputError(f"cohorts must be a 1-d integer array with one cohort per value ({n})")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= self.cohorts):
            raise LDPInputError(f"cohorts must be integers in [0, {self.cohorts})")
        return arr.astype(np.int64, copy=False)

    def randomize(self, values: Any, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None) -> CohortReports:
        """Randomize a batch. ``cohorts``: one data-independent cohort per user (e.g. from
        :func:`ldp_plugin.hashing.assign_cohorts`); ``None`` draws them uniformly at random."""
        return self.randomize_encoded(self.encode(values), cohorts=cohorts, rng=rng, user_keys=user_keys)

    def randomize_encoded(self, encoded: np.ndarray, *, rng: RNGLike = None, cohorts: Any = None, user_keys: Any = None, offsets: Any = None) -> CohortReports:
        """:meth:`randomize` on already encoded items (codes, or keys for an open alphabet)."""
        self._check_client_arguments(user_keys=user_keys, offsets=offsets)
        encoded = check_codes(encoded, self.d) if self.closed else np.asarray(encoded)
        source = as_source(rng)
        n = encoded.shape[0]
        coh = source.uniform_int(self.cohorts, n).astype(np.int64) if cohorts is None else self.check_cohorts(cohorts, n)
        value = self._randomize_positions(self.positions(encoded, coh), source)
        return CohortReports(coh.astype(np.uint32), value)

    def randomize_one(self, value: Any, *, rng: RNGLike = None, user_key: Any = None, cohort: Optional[int] = None):
        """One user's report ``(cohort, value)``."""
        arr = np.array([value], dtype=object if isinstance(value, str) or self._index is not None else None)
        r = self.randomize(arr, cohorts=None if cohort is None else [cohort], rng=rng, user_keys=None if user_key is None else [user_key])
        v = r.value[0]
        return int(r.cohort[0]), (int(v) if np.ndim(v) == 0 else bytes(v))

    # -- reports -------------------------------------------------------------------------------------
    def _to_columns(self, reports: Any) -> dict:
        if not isinstance(reports, CohortReports):
            raise LDPInputError(f"{self.name} reports must be a CohortReports batch (cohort, value)")
        return {"cohort": np.asarray(reports.cohort), "report": np.asarray(reports.value)}

    def _from_columns(self, cols: dict) -> CohortReports:
        return CohortReports(np.asarray(cols["cohort"]), np.asarray(cols["report"]))

    # -- server ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def validate_reports(self, reports: Any) -> CohortReports:
        """Check a report batch has this mechanism's format."""

    @abc.abstractmethod
    def cell_counts(self, reports: CohortReports) -> np.ndarray:
        """``(C, k)`` int64 counts of reported cells per cohort."""

    def accumulator(self) -> "CohortAccumulator":
        return CohortAccumulator(self)

    def decoder_model(self) -> tuple:
        """``(p, q, covariance, noise)`` of the cell statistic the decoders read: ``E[(z_c/n_c −
        q)/(p − q)] = B_c θ`` (the cohort's cell masses), with the per-report covariance model
        ``covariance`` (``noise`` only for ``"hadamard"``)."""
        return self.p, self.q, self.covariance, None

    def cell_variance(self) -> float:
        """Variance per report of one light cell's read-out ``(z/n − q)/(p − q)`` when the cells are
        evenly filled: ``π(1−π)/(p−q)²``, ``π = q + (p−q)/k``."""
        pi = self.q + (self.p - self.q) / self.k
        return pi * (1 - pi) / (self.p - self.q) ** 2

    def cell_statistic(self, counts: np.ndarray, n_c: np.ndarray) -> tuple:
        """``(z, p, q, covariance, noise)`` from the accumulated ``(C, k)`` counts (see
        :meth:`decoder_model`): the counts themselves for O-RR/O-RAPPOR; HCMS transforms its ±1 sums."""
        return (counts, *self.decoder_model())

    def candidate_keys(self, candidates: Any = None) -> tuple[Optional[np.ndarray], tuple]:
        """``(keys, items)``: the items to decode and their 64-bit keys (``None`` for a closed
        alphabet, whose items are its codes)."""
        if self.closed:
            if candidates is not None:
                raise LDPParameterError("a closed-alphabet mechanism decodes over its whole domain; do not pass candidates")
            return None, self.items
        if candidates is None:
            raise LDPParameterError("an open-alphabet mechanism needs candidates= (the items to estimate)")
        if isinstance(candidates, (str, bytes)):
            raise LDPParameterError("candidates must be a sequence of items, not a single string")
        items = tuple(candidates.to_list() if hasattr(candidates, "to_list") else candidates)
        if len(items) == 0:
            raise LDPParameterError("candidates must not be empty")
        if len(set(items)) != len(items):
            raise LDPParameterError("candidates must be unique")
        return item_keys(np.asarray(_flat_items(list(items), "candidates"), dtype=object)), items

    def positions_of(self, keys: Optional[np.ndarray], idx: np.ndarray) -> np.ndarray:
        """``(C, h, len(idx))`` cells of candidates ``idx`` in every cohort (a cell hit twice by one item: -1)."""
        if keys is None:
            pos = np.asarray(self._table[:, :, idx], dtype=np.int64)
        else:
            kk = keys[idx]
            pos = np.stack([seeded_hash(kk[None, :], self._seeds[:, t, None], self.hash_range) for t in range(self.hashes_per_item)], axis=1)
        for t in range(1, pos.shape[1]):  # a cell hit twice by one item counts once
            dup = (pos[:, t : t + 1, :] == pos[:, :t, :]).any(axis=1)
            pos[:, t, :][dup] = -1
        return pos

    def covers_of(self, keys: Optional[np.ndarray], idx: np.ndarray) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """``(cells, signs)`` of candidates ``idx`` for the decoders: :meth:`positions_of`'s cells and
        ``None``, or for a :attr:`signed` mechanism the cells ``pos >> 1`` and the ``int8`` signs
        ``1 − 2·(pos & 1)`` (``B_c[j, s] = g_c(s)`` at the item's cell)."""
        pos = self.positions_of(keys, idx)
        if not self.signed:
            return pos, None
        return np.where(pos >= 0, pos >> 1, -1), (1 - 2 * (pos & 1)).astype(np.int8)

    def candidate_positions(self, candidates: Any = None) -> tuple[np.ndarray, tuple]:
        """``(C, h, S)`` cells of each candidate in each cohort (duplicates within an item: -1)."""
        keys, items = self.candidate_keys(candidates)
        return self.positions_of(keys, np.arange(len(items))), items

    def estimate(
        self,
        reports: Any,
        *,
        candidates: Any = None,
        other: bool = True,
        postprocess: str = "projection",
        confidence: float = 0.95,
        target: str = "sample",
        decoder: str = "auto",
    ) -> FrequencyEstimate:
        """Decode a report batch (see :meth:`CohortAccumulator.estimate` for ``decoder``)."""

        est = self.accumulator().add(reports).estimate(
            candidates=candidates, other=other, postprocess=postprocess, confidence=confidence, decoder=decoder
        )
        return retarget(est, target)

    # -- channel -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def _cell_channel(self, cells: tuple) -> tuple:
        """(outputs, P(output | the item covers `cells`)) for one cohort."""

    def channel(self, candidates: Any = None) -> Channel:
        """The exact channel over outputs ``(cohort, value)`` with uniformly drawn cohorts, for the
        closed domain or the given open-alphabet candidates (small instances only)."""
        pos, items = self.candidate_positions(candidates)
        outputs, rows = [], [[] for _ in items]
        for c in range(self.cohorts):
            outs = None
            for s in range(len(items)):
                cells = tuple(int(j) for j in pos[c, :, s] if j >= 0)
                o, probs = self._cell_channel(cells)
                outs = o
                rows[s].extend(pr / self.cohorts for pr in probs)
            outputs.extend((c, y) for y in outs)
        if len(outputs) > 1 << 16:
            raise LDPParameterError("channel enumeration is limited to 65536 outputs")
        return Channel(outputs=tuple(outputs), matrix=tuple(tuple(r) for r in rows))

    def output_index(self, reports: CohortReports) -> np.ndarray:
        """Column of each report in :meth:`channel` (cohort-major, then the value's index)."""
        r = self.validate_reports(reports)
        width, y = self._value_index(r.value)
        return r.cohort.astype(np.int64) * width + y

    @abc.abstractmethod
    def _value_index(self, value: np.ndarray) -> tuple[int, np.ndarray]:
        """(number of values per cohort, index of each value in ``_cell_channel`` order)."""

    # -- theory ----------------------------------------------------------------------------------
    def analytic_mse(self, n: int, *, theta: Any = None, f: Any = None, sampling: str = "fixed") -> float:
        extra = 0.0 if sampling == "fixed" else (1 - float(np.sum(np.asarray(theta) ** 2))) / n
        return self.predicted_mse(n) + extra

    def predicted_mse(self, n: int, S: Optional[int] = None) -> float:
        """Predicted ``E‖θ̂ − θ_emp‖²`` of the least-squares decoder for ``n`` users over ``S``
        candidates at a uniform θ: the exact trace on this instance's own hash partitions for a
        closed alphabet (any ``h``, O-RR and O-RAPPOR; :meth:`_exact_uniform_mse`), else the
        random-partition approximation :func:`ldp_plugin.theory.mse_cohort`."""

        S = self.d if S is None and self.closed else S
        if S is None:
            raise LDPParameterError("predicted_mse of an open-alphabet mechanism needs S (the number of candidates)")
        if self.closed and S == self.d and S * S * self.cohorts <= 2 * 10**8 and self.k * max(self.k, S) * self.cohorts <= 2 * 10**8:
            return self._exact_uniform_mse(n)
        p, q, cov, noise = self.decoder_model()
        return mse_cohort(S, n, self.k, self.cohorts, p, q, h=self.hashes_per_item, covariance=cov, closed=self.closed, noise=noise)

    def _exact_uniform_mse(self, n: int) -> float:
        """``E‖θ̂ − θ_emp‖²`` for a uniform population of ``n`` users spread evenly over the
        cohorts, on this instance's actual partitions, for any number ``h`` of hashes per item.

        Cohort ``c``: ``B_c[j, s] = 1`` iff ``j`` is one of item ``s``'s ``h`` cells;
        ``M = Σ_c n_c B_cᵀB_c``, ``G_c = B_c M⁺``, ``θ̂ = Σ_c n_c G_cᵀ b_c``. Each user (value ``x``
        uniform) reports ``r`` with ``E r = π_c = q + δ μ_c``, ``μ_c = B_c 1/S``; its covariance is
        ``diag π − ππᵀ`` for one cell per report (O-RR), ``noise·(I − J/k) − (I − J/k)μμᵀ(I − J/k)`` for HCMS (``δ = 1``, the all-ones row replaced by the known total), ``noise·I − μμᵀ`` for the count sketch (``B_c`` signed) and, for independent bits given ``x``
        (O-RAPPOR), ``diag π(1−π) + δ²(Cov_x B_c[:, x] − diag Var_x B_c[:, x])`` (bits share the
        user's value). So ``E‖θ̂ − θ‖² = Σ_c n_c tr(G_cᵀ Σ_c G_c)/δ²`` for i.i.d. users, and the
        population's own sampling error ``(1 − 1/S)/n`` is subtracted (the fixed-population MSE
        used everywhere here)."""
        S, C, k, h = self.d, self.cohorts, self.k, self.hashes_per_item
        table, signs = self.covers_of(None, np.arange(S))  # (C, h, S) cells and ±1 (or None)
        nc = n / C
        p, q, cov, noise = self.decoder_model()
        delta = p - q
        cols = np.arange(S)
        Bs = []
        M = np.zeros((S, S))
        for c in range(C):
            B = np.zeros((k, S))
            for t in range(h):
                ok = table[c, t] >= 0  # a cell hit twice by one item counts once (as the decoder and the report)
                B[table[c, t][ok], cols[ok]] = 1.0 if signs is None else signs[c, t][ok]
            Bs.append(B)
            M += nc * (B.T @ B)

        Mp = normal_inverse(M, known_total=self.known_total)[0]  # as the decoder
        total = 0.0
        for B in Bs:
            mu = B.sum(axis=1) / S
            pi = q + delta * mu
            G = B @ Mp  # (k, S)
            if cov == "hadamard":  # one ±1 coefficient per report (row 0: the known total), i.i.d. users
                J = np.full((k, k), 1.0 / k)
                e = np.eye(k) - J  # E y' = (I − J) μ; second moment noise·(I − J)
                m1 = e @ mu
                term = float(noise * (G * (e @ G)).sum() - ((m1 @ G) ** 2).sum())
            elif cov == "hadamard-signed":  # the signed one-hot's coefficient: noise·I − μμᵀ (μ signed)
                term = float(noise * (G * G).sum() - ((mu @ G) ** 2).sum())
            elif cov == "multinomial":
                term = float((G * G * pi[:, None]).sum() - ((pi @ G) ** 2).sum())
            else:
                cov_x = (B @ B.T) / S - np.outer(mu, mu)
                sigma = delta * delta * (cov_x - np.diag(np.diag(cov_x)))
                sigma[np.diag_indices(k)] = pi * (1 - pi)
                term = float((G * (sigma @ G)).sum())
            total += nc * term
        return float(max(total / (delta * delta) - (1 - 1 / S) / n, 0.0))


_NESTED = (list, tuple, set, frozenset, dict, np.ndarray)


def _flat_items(values: Any, name: str) -> Any:
    """An open alphabet's batch as given if it holds one item per user; a nested batch (a list of
    lists, a 2-d array: sets, not items) is refused instead of being flattened into more users."""
    if type(values).__module__.startswith("polars") or isinstance(values, (str, bytes)):
        return values
    if isinstance(values, (list, tuple)):
        nested = any(isinstance(v, _NESTED) for v in values)
    else:
        arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
        nested = arr.ndim > 1 or (arr.dtype == object and any(isinstance(v, _NESTED) for v in arr.reshape(-1).tolist()))
    if nested:
        raise LDPInputError(
            f"{name} must be a 1-d batch of items (integers, strings or bytes), one per user; got a nested batch "
            "(for a set of items per user use SampleOne or a set mechanism)"
        )
    return values


def _check_cohort_column(cohort: Any, n: int, C: int) -> np.ndarray:
    c = np.asarray(cohort)
    if c.ndim != 1 or c.shape[0] != n or c.dtype.kind not in "iu":
        raise LDPInputError("report cohorts must be a 1-d integer array, one per report")
    if c.size and (int(c.min()) < 0 or int(c.max()) >= C):
        raise LDPInputError(f"report cohorts must be in [0, {C})")
    return c


def report_batch_arrays(reports: Any) -> Optional[dict]:
    """A native report batch that is not one array (cohort reports) as named arrays, with its
    kind under ``"__kind__"``; None for a plain array. Used to store kept reports as data."""
    if isinstance(reports, CohortReports):
        return {"__kind__": "cohort", "cohort": np.asarray(reports.cohort), "value": np.asarray(reports.value)}
    return None


def report_batch_from_arrays(kind: str, arrays: Any) -> Any:
    """The inverse of :func:`report_batch_arrays`."""
    if kind == "cohort":
        return CohortReports(arrays["cohort"], arrays["value"])
    raise LDPInputError(f"unknown kept report kind {kind!r}")
