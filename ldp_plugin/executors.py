"""Scale past one machine: partitioned randomization and aggregation over Parquet report files.

Aggregation of LDP reports is a map plus a tiny reduce — each partition (file) becomes an
:class:`ldp_plugin.persist.AccumulatorState` (an int64 count vector and ``n``), and states add up —
so it needs no shuffle. An **executor** runs ``map_reduce(fn, sources)``:

* :class:`LocalExecutor` (the default): the files one after another, each read by Polars'
  streaming engine (bounded memory). Mechanisms whose support counts are a function of the
  histogram of report values (k-RR, Warner RR, Hadamard response and mechanism, O-RR) are
  aggregated by a Polars streaming ``group_by(...).len()``; the others (unary encodings, k-subset,
  OLH, O-RAPPOR) batch by batch with the mechanism's own vectorized counting.
* :class:`DaskExecutor` (``pip install 'ldp-plugin[dask]'``): ``client.map`` over the files and a
  sum of the gathered states; it connects to ``address``, ``$DASK_SCHEDULER_ADDRESS``, or starts
  a local cluster. A worker lost mid-job makes Dask re-run that file's task elsewhere (a task
  result is gathered exactly once, so a partition is never counted twice); a task that keeps
  failing fails the job loudly.

Randomization partitions the same way (:func:`privatize_files`): input file ``i`` is randomized
with the streams ``(seed, i, chunk)`` (or the OS CSPRNG) and written, with its mechanism in the
metadata, to ``out_dir/part-{i:05d}.parquet``.
"""

from __future__ import annotations

import functools
import glob as globlib
import operator
import os
import re
import socket
import uuid
from pathlib import Path
from typing import Any, Callable, Optional, Sequence


from ._extras import extra_module
from ._errors import LDPInputError, LDPParameterError
from ._boundary import reading
from .mechanisms.reports import frame_to_reports
from .persist import INCOMPLETE_MARKER, AccumulatorState, file_identity, mechanism_from_spec, mechanism_spec, read_report_spec, spec_fingerprint, write_reports
from .progress import progress
from .adapters import privatize

__all__ = ["LocalExecutor", "DaskExecutor", "make_executor", "aggregate", "aggregate_file", "privatize_files", "resolve_paths"]


class LocalExecutor:
    """Run the map in this process, one source after another (Polars streams each file)."""

    name = "local"

    def map_reduce(self, fn: Callable, sources: Sequence, combine: Callable = operator.add) -> Any:
        results = [fn(s) for s in progress(sources, total=len(sources), desc="ldp", unit="file")]
        if not results:
            raise LDPInputError("no sources to process")
        return functools.reduce(combine, results)


class DaskExecutor:
    """Run the map on a Dask cluster (``client.map`` + gather + a local sum).

    :param address: a scheduler address; default ``$DASK_SCHEDULER_ADDRESS``; without either a
        local cluster is started (and closed with :meth:`close`).
    :param client: an existing ``distributed.Client`` to use instead.
    :param retries: extra attempts per task when a worker dies or a task raises.
    """

    name = "dask"

    #: seconds to wait for a scheduler before giving up (``$LDP_PLUGIN_DASK_TIMEOUT`` overrides)
    CONNECT_TIMEOUT = 10.0

    def __init__(self, address: Optional[str] = None, *, client: Any = None, retries: int = 2):
        Client = extra_module("distributed", "dask", "the Dask executor needs dask.distributed").Client
        self._own = client is None
        if client is None:
            address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
            client = self._connect(Client, address) if address else Client(n_workers=2, threads_per_worker=1, dashboard_address=None)
        self.client = client
        self.retries = int(retries)

    @classmethod
    def _connect(cls, Client: Any, address: str) -> Any:
        """A client of the scheduler at ``address``, waiting a bounded time (said up front), or
        :class:`LDPParameterError` naming the address and the option."""
        import sys

        try:
            timeout = float(os.environ.get("LDP_PLUGIN_DASK_TIMEOUT", cls.CONNECT_TIMEOUT))
        except ValueError:
            raise LDPParameterError("LDP_PLUGIN_DASK_TIMEOUT must be a number of seconds") from None
        if not (timeout > 0 and timeout <= 600):
            raise LDPParameterError("LDP_PLUGIN_DASK_TIMEOUT must be in (0, 600] seconds")
        print(f"ldp: connecting to the Dask scheduler at {address} (waiting up to {timeout:g} s)", file=sys.stderr)
        m = re.fullmatch(r"(?:tcp|tls)://\[?([^\]/]+?)\]?:(\d{1,5})/?", address.strip())
        if m is None and "://" not in address:
            raise LDPParameterError(f"--address {address!r} is not a scheduler address; use tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
        try:  # a bare TCP probe first: an unroutable host fails here, bounded, before Dask's own retries
            if m is not None:
                socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout).close()
            return Client(address, timeout=timeout)
        except Exception as exc:
            why = f" ({type(exc).__name__})" if isinstance(exc, OSError) else ""
            raise LDPParameterError(
                f"--address {address!r}: no Dask scheduler answered within {timeout:g} s{why}; check the "
                "address (tcp://HOST:PORT) and that the scheduler runs, or omit --address for a local cluster"
            ) from None

    def map_reduce(self, fn: Callable, sources: Sequence, combine: Callable = operator.add) -> Any:
        sources = list(sources)
        if not sources:
            raise LDPInputError("no sources to process")
        job = uuid.uuid4().hex[:12]
        futures = self.client.map(fn, sources, key=[f"ldp-{job}-{i}" for i in range(len(sources))], retries=self.retries, pure=False)
        results = self.client.gather(futures)  # raises if any task failed after its retries
        return functools.reduce(combine, results)

    def close(self) -> None:
        if self._own:
            self.client.close()

    def __enter__(self) -> "DaskExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def make_executor(kind: str = "local", address: Optional[str] = None) -> Any:
    if kind == "local":
        return LocalExecutor()
    if kind == "dask":
        return DaskExecutor(address)
    raise LDPParameterError(f"executor must be 'local' or 'dask' (got {kind!r})")


def resolve_paths(sources: Any) -> list[str]:
    """A glob, a directory (its ``*.parquet``), a path, or a list of those → sorted file paths."""
    if isinstance(sources, (str, Path)):
        s = str(sources)
        if os.path.isdir(s):
            paths = sorted(globlib.glob(os.path.join(s, "*.parquet")))
        elif any(ch in s for ch in "*?["):
            paths = sorted(globlib.glob(s))
        else:
            paths = [s]
    else:
        paths = [p for src in sources for p in resolve_paths(src)]
    paths = [p for p in paths if not p.endswith(".tmp")]
    if not paths:
        raise LDPInputError(f"no report files match {str(sources)!r}")
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise LDPInputError(f"report file {missing[0]!r} does not exist")
    return paths


def aggregate_file(path: str, *, spec: dict, fingerprint: str) -> AccumulatorState:
    """The map: one report file → its accumulator state (the file's mechanism must match).
    Polars and file-system failures name the file, never a value (:func:`ldp_plugin._boundary.reading`)."""
    with reading(path, "report file"):
        return _aggregate_file(path, spec=spec, fingerprint=fingerprint)


def _aggregate_file(path: str, *, spec: dict, fingerprint: str) -> AccumulatorState:
    import polars as pl

    _, fp = read_report_spec(path)
    if fp != fingerprint:
        raise LDPInputError(f"{path!r} holds reports of another mechanism or parameters (fingerprint {fp[:12]}…, expected {fingerprint[:12]}…)")
    mech = mechanism_from_spec(spec)
    base = mech.base
    acc = mech.accumulator()
    lf = pl.scan_parquet(path)
    cols = base.histogram_columns
    if cols:  # few distinct reports: a grouped scan, then counts from the histogram
        h = lf.group_by(*cols).len().collect(engine="streaming")
        try:
            acc.add_histogram({c: h[c].cast(pl.Int64).to_numpy() for c in cols}, h["len"].cast(pl.Int64).to_numpy())
        except LDPInputError:
            raise LDPInputError(f"{path!r} has reports outside the mechanism's range") from None
    else:
        for batch in lf.collect_batches(chunk_size=1 << 17, engine="streaming"):
            acc.add(frame_to_reports(mech, batch))
    return AccumulatorState.from_accumulator(mech, acc, [file_identity(path)])


def check_complete(paths: list, allow_partial: bool = False) -> None:
    """Refuse report files from a release that did not complete (its directory still holds
    :data:`INCOMPLETE_MARKER`) unless ``allow_partial``: a partial release is not the population."""
    if allow_partial:
        return
    for d in sorted({os.path.dirname(os.path.abspath(p)) for p in paths}):
        if os.path.exists(os.path.join(d, INCOMPLETE_MARKER)):
            raise LDPInputError(
                f"the reports in {d!r} are from a release that did not complete (it failed or was killed after the spend); "
                "aggregate them anyway with allow_partial=True (`ldp aggregate --allow-partial`)"
            )


def aggregate(
    sources: Any,
    *,
    mechanism: Any = None,
    executor: Any = None,
    state: Optional[AccumulatorState] = None,
    allow_partial: bool = False,
) -> AccumulatorState:
    """Aggregate report files (a glob, directory or list) into an accumulator state.

    The mechanism comes from the files' metadata (all must agree) unless given. With ``state``
    (e.g. :meth:`AccumulatorState.load`), files it already ingested are skipped — a file that
    changed since is an error — and the new ones are added: incremental aggregation.
    """
    paths = resolve_paths(sources)
    check_complete(paths, allow_partial)
    specs = {}
    for p in paths:
        spec, fp = read_report_spec(p)
        specs.setdefault(fp, (spec, p))
    if mechanism is not None:
        spec = mechanism_spec(mechanism)
        fp = spec_fingerprint(spec)
    elif state is not None:
        spec, fp = state.spec, state.fingerprint
    else:
        fp, (spec, _) = next(iter(specs.items()))
    others = [p for f, (_, p) in specs.items() if f != fp]
    if others:
        raise LDPInputError(f"{others[0]!r} holds reports of another mechanism or parameters than the others")
    if state is not None and state.fingerprint != fp:
        raise LDPParameterError("the saved accumulator state belongs to another mechanism or parameters")
    todo = paths
    if state is not None:
        seen = {i["path"]: i for i in state.ingested}
        todo = []
        for p in paths:
            ident = file_identity(p)
            old = seen.get(ident["path"])
            if old is None:
                todo.append(p)
            elif old != ident:
                raise LDPInputError(f"report file {p!r} changed since it was aggregated (size or mtime differ)")
        if not todo:
            return state
    executor = executor or LocalExecutor()
    result = executor.map_reduce(functools.partial(aggregate_file, spec=spec, fingerprint=fp), todo)
    return result if state is None else state + result


def _privatize_one(item: tuple, *, column: str, spec: dict, out_dir: str, seed: Any, user_id: Optional[str], cohorts: Any, unknown: str) -> str:
    import polars as pl


    index, path = item
    mech = mechanism_from_spec(spec)
    with reading(path, "input partition"):
        lf = pl.scan_parquet(path) if str(path).endswith(".parquet") else pl.scan_csv(path)
        reports = privatize(lf, column, mech, user_id=user_id, cohorts=cohorts, seed=seed, unknown=unknown, partition=index)
    return str(write_reports(reports, Path(out_dir) / f"part-{index:05d}.parquet", mech))


def privatize_files(
    inputs: Any,
    column: str,
    mechanism: Any,
    out_dir: str | Path,
    *,
    executor: Any = None,
    seed: Any = None,
    user_id: Optional[str] = None,
    cohorts: Any = None,
    unknown: str = "error",
) -> list[str]:
    """Randomize every input file (partition) into ``out_dir/part-{i:05d}.parquet``.

    Partition ``i`` uses the seeded streams ``(seed, i, chunk)`` or, without a seed, the OS CSPRNG
    of the worker. User ids are checked for nulls and duplicates *within* each partition; keep a
    user in one partition (partition by user id) so one report per user per query holds overall.
    """
    paths = resolve_paths(inputs) if not isinstance(inputs, (list, tuple)) else [str(p) for p in inputs]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("part-*.parquet")):
        raise LDPParameterError(f"output directory {str(out)!r} already holds report parts: use a new directory")
    fn = functools.partial(
        _privatize_one, column=column, spec=mechanism_spec(mechanism), out_dir=str(out), seed=seed, user_id=user_id, cohorts=cohorts, unknown=unknown
    )
    executor = executor or LocalExecutor()
    return sorted(executor.map_reduce(_Listed(fn), list(enumerate(paths))))


class _Listed:
    """Wrap a function so its result is a one-element list (list concatenation is the reduce)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, item):
        return [self.fn(item)]
