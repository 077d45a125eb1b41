"""Partitioned randomization and aggregation: accumulator state as data, Parquet reports with
their mechanism in the metadata, Local and Dask executors (bit-for-bit identical), worker loss."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import polars as pl
import pytest

import ldp_plugin as ldp
from ldp_plugin import LDPInputError, LDPParameterError
from ldp_plugin.adapters import frame_to_reports, privatize
from ldp_plugin.cli import main
from ldp_plugin.executors import DaskExecutor, LocalExecutor, aggregate, privatize_files
from ldp_plugin.persist import AccumulatorState, mechanism_from_spec, mechanism_spec, write_reports

MECHS = [
    ("krr", lambda: ldp.KRR(epsilon=1.0, d=12)),
    ("oue", lambda: ldp.OUE(epsilon=1.0, d=12)),
    ("orr", lambda: ldp.ORR(epsilon=1.0, k=4, cohorts=6, d=12)),
    ("hadamard", lambda: ldp.HadamardResponse(epsilon=1.0, d=12)),
    ("olh", lambda: ldp.OLH(epsilon=1.0, d=12)),
]


@pytest.fixture(scope="session")
def dask_executor():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True)  # any free port: a shared machine may hold 8787
    client = Client(cluster)
    yield DaskExecutor(client=client)
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    for i in range(3):
        pl.DataFrame({"uid": np.arange(i * 3000, (i + 1) * 3000), "v": rng.integers(0, 12, 3000)}).write_parquet(d / f"in-{i}.parquet")
    return d


def _in_memory(inputs, mech, seed):
    acc = mech.accumulator()
    for i in range(3):
        acc.add(frame_to_reports(mech, privatize(pl.scan_parquet(inputs / f"in-{i}.parquet"), "v", mech, user_id="uid", seed=seed, partition=i)))
    return acc


@pytest.mark.slow
@pytest.mark.parametrize("name,make", MECHS, ids=[m[0] for m in MECHS])
def test_local_dask_and_in_memory_agree_bit_for_bit(tmp_path, inputs, dask_executor, name, make):
    mech = make()
    local_files = privatize_files(str(inputs / "in-*.parquet"), "v", mech, tmp_path / "local", seed=9, user_id="uid")
    dask_files = privatize_files(str(inputs / "in-*.parquet"), "v", mech, tmp_path / "dask", seed=9, user_id="uid", executor=dask_executor)
    assert len(local_files) == len(dask_files) == 3
    for a, b in zip(local_files, dask_files):
        assert pl.read_parquet(a).equals(pl.read_parquet(b))
    s_local = aggregate(str(tmp_path / "local"))
    s_dask = aggregate(str(tmp_path / "local" / "*.parquet"), executor=dask_executor)
    mem = _in_memory(inputs, mech, 9)
    assert s_local.counts.dtype == np.int64
    assert np.array_equal(s_local.counts, s_dask.counts) and np.array_equal(s_local.counts, mem.counts)
    assert s_local.n == s_dask.n == mem.n == 9000
    e = s_local.estimate(postprocess="none")
    assert np.allclose(e.raw, mem.estimate(postprocess="none").raw)


@pytest.mark.slow
def test_worker_killed_mid_job_is_retried_never_double_counted(tmp_path, inputs, dask_executor):
    mech = ldp.KRR(epsilon=1.0, d=12)
    files = privatize_files(str(inputs / "in-*.parquet"), "v", mech, tmp_path / "r", seed=1)
    expected = aggregate(files).counts
    client = dask_executor.client

    def slow_count(path):
        import time as _t

        _t.sleep(0.2)
        return aggregate([path]).counts

    fut = client.submit(lambda: None)  # make sure workers are warm
    fut.result()
    import threading

    workers = list(client.scheduler_info()["workers"])

    def kill():
        try:  # the worker dies while answering: its connection closing is expected
            client.run(os._exit, 1, workers=[workers[0]])
        except Exception:
            pass

    killer = threading.Timer(0.1, kill)
    killer.start()
    total = dask_executor.map_reduce(slow_count, files * 2)
    killer.join()
    assert np.array_equal(total, 2 * expected)  # every partition counted exactly once


def test_state_files_incremental_and_refusals(tmp_path, inputs):
    mech = ldp.SampleOne(mechanism=ldp.ORR(epsilon=2.0, k=4, cohorts=3), m=2)
    assert mechanism_from_spec(mechanism_spec(mech)) == mech
    frames = [pl.DataFrame({"apps": [["a", "b"], ["c"], []] * (100 + i)}) for i in range(3)]
    paths = [write_reports(f.ldp.privatize("apps", mech, seed=i), tmp_path / f"r{i}.parquet", mech) for i, f in enumerate(frames)]
    st = aggregate(paths[:2])
    st.save(tmp_path / "state.json")
    back = AccumulatorState.load(tmp_path / "state.json")
    assert np.array_equal(back.counts, st.counts) and back.n == st.n == 603
    more = aggregate(paths, state=back)  # only the new file is read
    assert more.n == 909 and len(more.ingested) == 3
    assert aggregate(paths, state=more) is more  # nothing new
    full = aggregate(paths)
    assert np.array_equal(full.counts, more.counts)
    e = more.estimate(candidates=["a", "b", "c"], postprocess="none")
    assert e.items == ("a", "b", "c", "<other>")
    with pytest.raises(LDPParameterError, match="twice"):
        st + aggregate(paths[:1])
    other = ldp.SampleOne(mechanism=ldp.ORR(epsilon=2.0, k=4, cohorts=3, hash_seed=1), m=2)
    wrong = write_reports(frames[0].ldp.privatize("apps", other, seed=0), tmp_path / "w.parquet", other)
    with pytest.raises(LDPParameterError, match="same mechanism"):
        st + aggregate([wrong])
    with pytest.raises(LDPInputError, match="another mechanism"):
        aggregate([paths[0], wrong])
    os.utime(paths[0], ns=(1, 1))
    with pytest.raises(LDPInputError, match="changed"):
        aggregate(paths, state=back)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(LDPInputError, match="not an ldp-plugin"):
        AccumulatorState.load(tmp_path / "bad.json")
    pl.DataFrame({"report": [1, 2]}).write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(LDPInputError, match="no ldp-plugin mechanism metadata"):
        aggregate([tmp_path / "plain.parquet"])


def test_ldp_aggregate_cli_incremental(tmp_path, inputs, capsys):
    mech = ldp.KRR(epsilon=1.0, d=12)
    privatize_files(str(inputs / "in-*.parquet"), "v", mech, tmp_path / "r", seed=2)
    state = tmp_path / "state.json"
    args = ["aggregate", str(tmp_path / "r" / "part-0000[01].parquet"), "--mechanism-from-metadata", "--state", str(state), "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["n"] == 6000 and first["files_added"] == 2
    args[1] = str(tmp_path / "r" / "*.parquet")
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["n"] == 9000 and second["files_added"] == 1 and second["mechanism"]["name"] == "krr"
    assert [r["item"] for r in second["estimates"]] == list(range(12))
    assert main(["aggregate", str(tmp_path / "nothing-*.parquet"), "--mechanism-from-metadata", "--json"]) == 2


def test_collect_with_executor(tmp_path, inputs, capsys):
    job = tmp_path / "job.toml"
    job.write_text(f"""
[input]
path = "{inputs}/in-*.parquet"
column = "v"
user_id = "uid"
[mechanism]
name = "krr"
epsilon = 2.0
d = 12
[collection]
seed = 4
[output]
estimates = "est.parquet"
reports = "reports"
""")
    assert main(["collect", str(job), "--executor", "local", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["partitions"] == 3 and out["users"] == 9000
    assert pl.read_parquet(tmp_path / "est.parquet").height == 12
    assert aggregate(str(tmp_path / "reports")).n == 9000
