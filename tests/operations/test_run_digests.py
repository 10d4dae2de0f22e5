"""A run hashes a table once: the digests its steps tell each other (``RunDigests``) are exactly
what the tables hold, and a hand edit between runs is still seen by the next run."""

import duckdb
import pytest

from tests.incremental import at, materialization_metadata, run
from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.defs.operations import replay
from tradingmem_assets.defs.operations.runs import landing_ingested
from tradingmem_assets.defs.role_memory.chain import CHAIN_TABLES
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.validation import validated_by
from tradingmem_assets.lib.warehouse import RunDigests, rows_digest

DAYS = ("2024-03-20T00:00:00Z", "2024-03-27T00:00:00Z", "2024-04-03T00:00:00Z")  # a week each


def test_a_digest_is_remembered_only_when_told(tmp_path):
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("CREATE TABLE main.t AS SELECT range AS id FROM range(3)")
        digests = RunDigests()
        first = digests.of(con, "main.t")
        assert first == rows_digest(con, "main.t") and digests.get("main.t") is None
        con.execute("INSERT INTO main.t VALUES (3)")
        assert digests.of(con, "main.t") != first  # asked, not remembered: hashed again
        assert digests.written(con, "main.t") == rows_digest(con, "main.t")
        con.execute("INSERT INTO main.t VALUES (4)")
        assert digests.of(con, "main.t") != rows_digest(con, "main.t")  # told: trusted until forgotten
        digests.forget("main.t", ("main.t", "part"))
        assert digests.of(con, "main.t") == rows_digest(con, "main.t")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("digests_world")
    write_demo_world(root, scale=0.002, seed=31)
    return root


def test_what_a_run_records_is_what_its_tables_hold_and_a_hand_edit_is_seen(tmp_path, world, instance):
    db, landing = tmp_path / "w.duckdb", tmp_path / "landing"
    landing_until(world, landing, at(DAYS[0]))
    run(instance, db, landing, DAYS[0])
    landing_until(world, landing, at(DAYS[1]))
    report = run(instance, db, landing, DAYS[1])
    appended = [t for t, how in landing_ingested(instance, report.run_id).items() if how == "appended"]
    assert "trading_decisions" in appended  # its earlier rows checked against the run's digests
    with duckdb.connect(str(db), read_only=True) as con:
        recorded = replay.recorded_states(con, report.run_id)
        assert recorded and tables.ROLE_CASES in recorded and tables.EVALUATION_RUNS in recorded
        assert {name: state[1] for name, state in recorded.items()} == replay.table_contents(con)
        assert validated_by(con, tables.EVALUATION_RUNS) == report.run_id
        assert validated_by(con, tables.ROLE_CASES, CHAIN_TABLES, at(DAYS[1])) == report.run_id
    with duckdb.connect(str(db)) as con:  # a hand edit between runs: the next run hashes it anew
        con.execute("DELETE FROM raw.trading_decisions WHERE rowid = 0")
    landing_until(world, landing, at(DAYS[2]))
    edited = run(instance, db, landing, DAYS[2])
    assert (
        materialization_metadata(instance, edited.run_id, "raw/trading_decisions")["ingested"]
        == "whole: raw.trading_decisions or its rejects changed since the last ingest"
    )
    how = landing_ingested(instance, edited.run_id)
    assert [t for t in appended if t != "trading_decisions" and how.get(t) == "appended"]
    with duckdb.connect(str(db), read_only=True) as con:
        recorded = replay.recorded_states(con, edited.run_id)
        assert {name: state[1] for name, state in recorded.items()} == replay.table_contents(con)
