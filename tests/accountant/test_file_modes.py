"""Ledgers, their SQLite side files, keystores and the directories the library creates for them are
private to their owner: files 0600, directories 0700 — under the usual umask 022, which would
otherwise leave them world-readable."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

import ldp_plugin as ldp
from ldp_plugin.federated import DeviceFleet, Query
from ldp_plugin.federated.config import DeviceConfig
from ldp_plugin.federated.keystore import Keystore

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def test_a_new_ledger_and_its_new_directories_are_private(tmp_path, umask_022):
    path = tmp_path / "a" / "b" / "ledger.sqlite"
    acc = ldp.Accountant.create(path, ldp.Population(name="p", lifetime_cap="4"), parents=True)  # asked: created 0700
    try:
        assert _mode(path) == 0o600
        assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
        # the rollback journal of a write transaction has the ledger's mode
        con = sqlite3.connect(str(path), isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO meta(key, value) VALUES ('probe', 'x')")
        journal = path.with_name(path.name + "-journal")
        assert journal.exists() and _mode(journal) == 0o600
        con.execute("ROLLBACK")
        con.close()
        # a backup is a copy of the budget: private too; switched to WAL, its -wal and -shm follow it
        copy = acc.backup(tmp_path / "copy.sqlite")
        assert _mode(copy) == 0o600
        wal = sqlite3.connect(str(copy), isolation_level=None)
        wal.execute("PRAGMA journal_mode = WAL")
        wal.execute("INSERT INTO meta(key, value) VALUES ('probe', 'x')")
        for side in ("-wal", "-shm"):
            assert _mode(copy.with_name(copy.name + side)) == 0o600
        wal.close()
    finally:
        acc.close()


def test_a_device_init_keeps_its_state_private(tmp_path, umask_022):
    (tmp_path / "device.toml").write_text(
        '[device]\nledger = "state/dev/ledger.sqlite"\nkeystore = "keys/dev/keystore.json"\n'
        '[policy]\nlifetime_cap = "4"\nmax_epsilon_per_query = "2"\n'
        '[data]\nsource = "ldp_plugin.federated.synthetic:zipf_values"\n[data.args]\ndevices = 5\nd = 4\nseed = "1"\n')
    cfg = DeviceConfig.load(tmp_path / "device.toml")
    DeviceFleet.init(cfg)
    for f in (cfg.ledger, cfg.keystore):
        assert _mode(f) == 0o600, f
    for d in (tmp_path / "state", tmp_path / "state" / "dev", tmp_path / "keys", tmp_path / "keys" / "dev"):
        assert _mode(d) == 0o700, d
    fleet = DeviceFleet.open(cfg)  # and it still works: a query is charged and answered
    try:
        r = fleet.respond(Query.for_mechanism("q", ldp.KRR(epsilon=1.0, d=4)).to_json())
        assert len(r["reports"]) == 5 and _mode(cfg.ledger) == 0o600 and _mode(cfg.keystore) == 0o600
    finally:
        fleet.close()


def test_a_keystore_refuses_to_open_when_others_can_read_it(tmp_path, umask_022):
    ks = Keystore.create(tmp_path / "k" / "keystore.json")
    assert _mode(ks.path) == 0o600 and _mode(tmp_path / "k") == 0o700
    os.chmod(ks.path, 0o644)
    with pytest.raises(ldp.LDPParameterError, match="0600"):
        Keystore.open(ks.path)
