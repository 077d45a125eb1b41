"""The executors layer: partitioned randomization and aggregation (:mod:`ldp_plugin.executors`) give
the release and the counts of the serial in-memory path, whatever runs them.

For a seeded run over three input partitions, with a mechanism aggregated through its histogram
columns (k-RR: a grouped scan of each file) and one aggregated batch by batch (OUE: packed rows):

* **the same release**: each report file :func:`~ldp_plugin.executors.privatize_files` writes
  (the local executor; in the full run also the Dask executor, on an in-process cluster reached by
  its scheduler address and by a client) equals, frame for frame, the serial path —
  :func:`ldp_plugin.adapters.privatize` of that partition with the same seed and partition index;
* **the same counts**: :func:`~ldp_plugin.executors.aggregate` (a directory, a glob, a list; each
  executor) equals the accumulator filled in memory from the serial reports (counts and ``n``),
  and incremental aggregation (a saved state, then the remaining files) equals the one-shot run;
* **one stream per partition**: two partitions holding the same values get different reports
  under one seed, and two runs without a seed (the OS CSPRNG) differ;
* **refusals that are clean and count nothing**: no file, a missing file, files of two mechanisms, a
  file of another mechanism than the one asked, a state of another mechanism, a file changed since
  the state took it, a release that did not complete (``allow_partial`` opts in), an output
  directory that already holds parts, an unknown executor, a malformed or unreachable scheduler
  address — each held to the one refusal check
  (:func:`~ldp_plugin.verification.refusals.refusal_problems`): a
  :class:`LDPInputError`/:class:`LDPParameterError` whose message names what is wrong (the file,
  the mechanism, the option) and never holds a user's value (the labels are distinctive strings the
  check looks for) nor raw engine text, and a saved state it was given counts nothing more.

Without ``distributed`` (and in the quick run) the Dask checks are not run (``dask: false``). Power:
the seeded bug ``one-stream-executor`` (an executor that hands every partition the index 0, so all
partitions reuse one seeded stream) fails the release check.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl

from .._errors import LDPInputError, LDPParameterError
from ..adapters import frame_to_reports, privatize
from ..executors import DaskExecutor, LocalExecutor, aggregate, aggregate_file, make_executor, privatize_files, resolve_paths
from ..mechanisms import KRR, OUE
from ..persist import INCOMPLETE_MARKER, mechanism_spec, spec_fingerprint, write_reports
from .production import env_value
from .refusals import refusal_problems

__all__ = ["executors_layer", "LABELS"]

#: the users' values: distinctive labels, so a message that echoes one is caught
LABELS = tuple(f"label-{c}-q7" for c in "abcdefg")
_ROWS = (700, 1, 450)


def _inputs(directory: Path, seed: int) -> list:
    rng = np.random.default_rng(seed)
    paths, start = [], 0
    for i, n in enumerate(_ROWS):
        p = directory / f"in-{i}.parquet"
        pl.DataFrame({"uid": np.arange(start, start + n), "v": [LABELS[j] for j in rng.integers(0, len(LABELS), n)]}).write_parquet(p)
        paths.append(str(p))
        start += n
    return paths


def _serial(paths: list, mech: Any, seed: int) -> tuple:
    """The serial path: each partition privatized in memory; the accumulator of all reports."""
    frames = [privatize(pl.scan_parquet(p), "v", mech, user_id="uid", seed=seed, partition=i) for i, p in enumerate(paths)]
    acc = mech.accumulator()
    for f in frames:
        acc.add(frame_to_reports(mech, f))
    return frames, acc


def _refused(failures: list, what: str, call: Callable, names: tuple, state: Any = None) -> None:
    """``call()`` must be refused (:func:`~ldp_plugin.verification.refusals.refusal_problems`): the
    library's error naming one of ``names``, never a user's value (:data:`LABELS`), and the saved
    ``state`` it was given (if any) counts nothing more after it."""
    unchanged = None if state is None else {"the saved state": lambda: (state.n, np.asarray(state.counts).tobytes())}
    failures.extend(f"{what}: {why}" for why in refusal_problems(call, names=names, values=LABELS, unchanged=unchanged))


def _same_state(a: Any, b: Any) -> bool:
    return a.n == b.n and np.array_equal(np.asarray(a.counts), np.asarray(b.counts))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_executors() -> tuple:
    """An in-process cluster (threads) and two executors on it: one reached by its scheduler
    address (owning its client), one given a client. ``(cluster, by_address, by_client, client)``."""
    from distributed import Client, LocalCluster  # the optional extra, imported only when installed

    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None, protocol="tcp")
    by_address = make_executor("dask", cluster.scheduler_address)
    client = Client(cluster)
    return cluster, by_address, DaskExecutor(client=client), client


def _check_mechanism(failures: list, tmp: Path, paths: list, mech: Any, seed: int, executors: dict) -> None:
    frames, acc = _serial(paths, mech, seed)
    outs = {}
    for name, ex in executors.items():
        out = tmp / f"{mech.name}-{name}"
        files = privatize_files(paths, "v", mech, out, executor=ex, seed=seed, user_id="uid")
        outs[name] = out
        if len(files) != len(paths) or not all(pl.read_parquet(f).equals(fr) for f, fr in zip(files, frames)):
            failures.append(f"{mech.name}, {name} executor: the report files differ from the serial release")
        for src in (str(out), str(out / "part-*.parquet"), files):
            try:
                state = aggregate(src, executor=ex)
            except (LDPInputError, LDPParameterError) as e:
                failures.append(f"{mech.name}, {name} executor: its own release refused ({type(e).__name__})")
                continue
            if not (state.n == acc.n == sum(_ROWS) and np.array_equal(np.asarray(state.counts), np.asarray(acc.counts))):
                failures.append(f"{mech.name}, {name} executor: aggregated counts differ from the in-memory accumulator")
    local = outs["local"]
    files = sorted(str(p) for p in local.glob("part-*.parquet"))
    whole = aggregate(files)
    part = aggregate(files[:2])
    if not _same_state(aggregate(files, state=part), whole) or aggregate(files, state=whole) is not whole:
        failures.append(f"{mech.name}: incremental aggregation differs from the one-shot run")
    if not _same_state(aggregate(files, mechanism=mech), whole):
        failures.append(f"{mech.name}: aggregation with the mechanism named differs")


def executors_layer(*, seed: int = 0, quick: bool = False, directory: Any = None, local: Any = None) -> dict:
    """The module's checks: ``{"layer", "passed", "failures", "dask", "seconds"}``. ``local``: a
    class to run in place of the local executor (a seeded bug); ``directory``: where the files go."""
    t0 = time.perf_counter()
    failures: list = []
    dask = not quick and importlib.util.find_spec("distributed") is not None
    with tempfile.TemporaryDirectory(prefix="ldp-executors-", dir=directory) as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "in").mkdir()
        paths = _inputs(tmp / "in", seed)
        krr, oue = KRR(epsilon=1.0, categories=LABELS), OUE(epsilon=2.0, categories=LABELS)
        executors: dict = {"local": make_executor("local") if local is None else local()}
        cluster = client = None
        try:
            if dask:
                cluster, executors["dask-address"], executors["dask-client"], client = _dask_executors()
            for mech in (krr, oue):
                _check_mechanism(failures, tmp, paths, mech, seed + 1, executors)
            for name, ex in executors.items():
                if isinstance(ex, DaskExecutor):
                    with ex as entered:  # the context manager closes only a client it started
                        _refused(failures, f"{name} executor: no sources", lambda: entered.map_reduce(len, []), ("sources",))
            _streams(failures, tmp, paths, oue)
            _refusals(failures, tmp, paths, krr, oue, dask)
        finally:
            for ex in executors.values():
                if isinstance(ex, DaskExecutor):
                    ex.close()
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
    return {"layer": "executors", "passed": not failures, "failures": failures, "dask": dask, "seconds": round(time.perf_counter() - t0, 2)}


def _streams(failures: list, tmp: Path, paths: list, mech: Any) -> None:
    """Two partitions holding the same users' values get different reports under one seed (each
    partition its own streams), and the default (no seed) draws fresh OS randomness on every run."""
    twin = tmp / "in" / "in-0-again.parquet"
    twin.write_bytes(Path(paths[0]).read_bytes())
    a, b = (pl.read_parquet(f) for f in privatize_files([paths[0], str(twin)], "v", mech, tmp / "streams-seeded", seed=5, user_id="uid"))
    if a.equals(b):
        failures.append("two partitions of the same values got the same reports under one seed (a shared stream)")
    first, second = (pl.read_parquet(privatize_files(paths[:1], "v", mech, tmp / f"streams-secure-{i}", user_id="uid")[0]) for i in range(2))
    if first.equals(second):
        failures.append("two unseeded runs gave the same reports (the OS CSPRNG was not drawn)")


def _refusals(failures: list, tmp: Path, paths: list, krr: Any, oue: Any, dask: bool) -> None:
    krr_dir = tmp / "refusals-krr"  # the library's own local executor (whatever executor was checked above)
    krr_files = privatize_files(paths, "v", krr, krr_dir, seed=3, user_id="uid")
    oue_files = privatize_files(paths, "v", oue, tmp / "refusals-oue", seed=3, user_id="uid")
    _refused(failures, "no sources", lambda: LocalExecutor().map_reduce(len, []), ("sources",))
    _refused(failures, "no matching file", lambda: resolve_paths(str(tmp / "none-*.parquet")), ("none-*.parquet",))
    _refused(failures, "a missing file", lambda: resolve_paths([str(tmp / "missing.parquet")]), ("missing.parquet",))
    _refused(failures, "two mechanisms", lambda: aggregate(krr_files + oue_files), ("another mechanism",))
    _refused(failures, "a file of another mechanism than the one named", lambda: aggregate(oue_files, mechanism=krr), ("another mechanism",))
    state = aggregate(krr_files[:1])
    _refused(failures, "a state of another mechanism", lambda: aggregate(oue_files, state=state), ("another mechanism",), state)
    _refused(failures, "an existing output directory", lambda: privatize_files(paths, "v", krr, krr_dir, seed=1, user_id="uid"), ("output directory",))
    _refused(failures, "an unknown executor", lambda: make_executor("spark"), ("executor",))
    marker = krr_dir / INCOMPLETE_MARKER
    marker.write_text("")
    _refused(failures, "an incomplete release", lambda: aggregate(krr_files), ("allow_partial",))
    if aggregate(krr_files, allow_partial=True).n != sum(_ROWS):
        failures.append("allow_partial did not aggregate the incomplete release")
    marker.unlink()
    stale = aggregate(krr_files[:2])  # then its second file changes
    changed = Path(krr_files[1])
    os.utime(changed, (changed.stat().st_atime, changed.stat().st_mtime + 5))
    _refused(failures, "a file changed since it was aggregated", lambda: aggregate(krr_files, state=stale), (changed.name,), stale)
    state_oue = aggregate(oue_files[:1])
    _refused(failures, "a state of another mechanism than the one named", lambda: aggregate(krr_files, mechanism=krr, state=state_oue),
             ("another mechanism",), state_oue)
    krr_spec = mechanism_spec(krr)
    _refused(failures, "a file of another mechanism, one file",
             lambda: aggregate_file(oue_files[0], spec=krr_spec, fingerprint=spec_fingerprint(krr_spec)), ("another mechanism",))
    first = pl.read_parquet(krr_files[0])
    tampered = write_reports(first.with_columns(pl.lit(len(LABELS)).cast(first.schema[c]).alias(c) for c in krr.histogram_columns),
                             tmp / "tampered" / "part-00000.parquet", krr)
    _refused(failures, "a file with reports outside the range", lambda: aggregate([str(tampered)]), ("range",))
    if dask:
        _refused(failures, "a malformed scheduler address", lambda: DaskExecutor("not an address"), ("--address",))
        _refused(failures, "an unreachable scheduler", lambda: DaskExecutor(f"tcp://127.0.0.1:{_closed_port()}"), ("--address",))
        for bad in ("soon", "0", "601"):
            with env_value("LDP_PLUGIN_DASK_TIMEOUT", bad):
                _refused(failures, f"LDP_PLUGIN_DASK_TIMEOUT={bad}", lambda: DaskExecutor(f"tcp://127.0.0.1:{_closed_port()}"),
                         ("LDP_PLUGIN_DASK_TIMEOUT",))

