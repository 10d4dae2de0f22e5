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
from tradingmem_assets.lib.basis import digests as basis_digests
from tradingmem_assets.lib.basis import visible_rows
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


def _decisions(con: duckdb.DuckDBPyConnection, first_day: str) -> None:
    """raw.trading_decisions of three decisions, one a day from ``first_day``."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    con.execute(
        "CREATE TABLE raw.trading_decisions AS SELECT range AS id, "
        f"TIMESTAMPTZ '{first_day} 00:00:00+00' + to_days(range::INTEGER) AS decided_at FROM range(3)"
    )


def test_a_basis_digest_is_shared_by_the_steps_of_a_run_until_its_landing_forgets_it(tmp_path):
    visible = {"trading_decisions": visible_rows("raw.trading_decisions", "decided_at")}
    when = at(DAYS[0])
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        _decisions(con, "2024-03-19")
        known = RunDigests()
        first = basis_digests(con, visible, when, known)
        assert first == basis_digests(con, visible, when)  # the same as hashed without a memory
        con.execute("INSERT INTO raw.trading_decisions VALUES (9, TIMESTAMPTZ '2024-03-01 00:00:00+00')")
        # a later step of the run is told what an earlier one hashed: only a landing changes raw
        # tables, and it forgets its table (with every part of it) before it writes
        assert basis_digests(con, visible, when, known) == first
        assert basis_digests(con, visible, at(DAYS[1]), known) != first  # another as_of: hashed
        known.forget("raw.trading_decisions")
        assert basis_digests(con, visible, when, known) == basis_digests(con, visible, when) != first


@pytest.mark.parametrize("null_visible", [False, True])
def test_a_basis_digest_of_every_row_is_the_whole_tables_digest_the_run_knows(tmp_path, null_visible):
    visible = {
        "trading_decisions": visible_rows("raw.trading_decisions", "decided_at", null_visible=null_visible)
    }
    when = at(DAYS[0])
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        _decisions(con, "2024-03-10")
        hashed = basis_digests(con, visible, when)  # nothing known: the visible rows are hashed
        assert hashed["trading_decisions"] == rows_digest(con, "raw.trading_decisions")  # all visible
        # told the whole table's digest (by its landing), the run takes it without hashing: a
        # marker it could not have hashed shows which was used
        known = RunDigests()
        known.note("raw.trading_decisions", "3:marker")
        assert basis_digests(con, visible, when, known) == {"trading_decisions": "3:marker"}
        # a row stamped after as_of (or without a stamp, when that hides it): the visible rows are
        # hashed, never the whole table's digest taken
        for stamp in ("TIMESTAMPTZ '2024-03-30 00:00:00+00'", "NULL"):
            con.execute(f"INSERT INTO raw.trading_decisions VALUES (7, {stamp})")
            known = RunDigests()
            known.note("raw.trading_decisions", "4:marker")
            expected = rows_digest(con, f"({visible['trading_decisions'].sql})", {"as_of": when})
            if stamp == "NULL" and null_visible:
                assert basis_digests(con, visible, when, known) == {"trading_decisions": "4:marker"}
            else:
                assert basis_digests(con, visible, when, known) == {"trading_decisions": expected}
                assert expected.startswith("3:") and expected == hashed["trading_decisions"]
            con.execute("DELETE FROM raw.trading_decisions WHERE id = 7")


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
