"""A learning run that is not a replay still skips each landing table whose own inputs did not
change (same file content, code and settings; raw table and rejects as the last run left them),
says so in the materialization, and leaves the warehouse as a full ingestion would."""

import shutil
from datetime import datetime

import dagster as dg
import duckdb
import polars as pl
import pytest

from tests.incremental import expected_reads
from tests.operations.test_replay import AS_OF, _run
from tradingmem_assets.benchmark.days import landing_until, last_weekday
from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.operations.runs import landing_ingested, run_main_job
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.warehouse import sparse_tables

LATER = "2024-07-02T00:00:00Z"


def _landing_metadata(instance, run_id) -> dict[str, dict]:
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    out = {}
    for r in records:
        m = r.dagster_event.event_specific_data.materialization
        key = m.asset_key.to_user_string()
        if key.startswith("raw/"):
            out[key.removeprefix("raw/")] = {k: v.value for k, v in m.metadata.items()}
    return out


def _raw_rows(db) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        out = {t: sorted(map(repr, con.execute(f"SELECT * FROM raw.{t}").fetchall())) for t in LANDING_TABLES}
        out["raw_rejects"] = sorted(map(repr, con.execute(f"SELECT * FROM {tables.RAW_REJECTS}").fetchall()))
    return out


def _skipped(metadata: dict[str, dict]) -> set[str]:
    return {t for t, m in metadata.items() if "unchanged_since_run" in m}


@pytest.fixture
def world(tmp_path):
    write_demo_world(tmp_path / "landing", scale=0.002, seed=5)
    return tmp_path


def test_a_later_run_skips_unchanged_landing_files_and_says_why(world, instance, tmp_path_factory):
    first = _run(instance, world)
    later = _run(instance, world, as_of=LATER)
    metadata = _landing_metadata(instance, later.run_id)
    assert set(metadata) == set(LANDING_TABLES)  # every landing asset materialized ...
    assert _skipped(metadata) == set(LANDING_TABLES)  # ... without ingesting again
    for m in metadata.values():
        assert m["unchanged_since_run"] == first.run_id
        assert "not ingested again" in m["skipped"]
        assert m["rows_read"] == m["accepted"] + m["rejected"]
    assert metadata["trade_fills"]["accepted"] > 0
    # the same raw rows as one full ingestion at the later as_of
    fresh = tmp_path_factory.mktemp("fresh") / "w.duckdb"
    report = run_main_job(instance, database=str(fresh), landing_dir=str(world / "landing"), as_of=LATER)
    assert report.success, report.error
    assert _raw_rows(world / "w.duckdb") == _raw_rows(fresh)
    # and the chain holds: the next run skips again, since the run that skipped
    third = _run(instance, world, as_of="2024-07-03T00:00:00Z")
    assert {m["unchanged_since_run"] for m in _landing_metadata(instance, third.run_id).values()} == {
        later.run_id
    }


def test_a_changed_file_or_a_hand_edited_raw_table_or_rejects_is_ingested_again(world, instance):
    _run(instance, world)
    fills = world / "landing" / "trade_fills.parquet"
    pl.read_parquet(fills).head(-3).write_parquet(fills)  # other content
    with duckdb.connect(str(world / "w.duckdb")) as con:
        con.execute("UPDATE raw.trade_executions SET symbol = 'EDITED' WHERE rowid = 0")
        table, before = con.execute(
            f"SELECT table_name, count(*) FROM {tables.RAW_REJECTS} GROUP BY 1 ORDER BY 1 LIMIT 1"
        ).fetchall()[0]
        con.execute(
            f"DELETE FROM {tables.RAW_REJECTS} WHERE table_name = ? AND rowid IN "
            f"(SELECT min(rowid) FROM {tables.RAW_REJECTS} WHERE table_name = ?)",
            [table, table],
        )
    later = _run(instance, world, as_of=LATER)
    metadata = _landing_metadata(instance, later.run_id)
    ingested = set(LANDING_TABLES) - _skipped(metadata)
    assert ingested == {"trade_fills", "trade_executions", table}
    assert metadata["trade_fills"]["rows_read"] == pl.read_parquet(fills).height
    with duckdb.connect(str(world / "w.duckdb"), read_only=True) as con:
        assert con.execute(
            "SELECT count(*) FROM raw.trade_executions WHERE symbol = 'EDITED'"
        ).fetchall() == [(0,)]
        restored = con.execute(
            f"SELECT count(*) FROM {tables.RAW_REJECTS} WHERE table_name = ?", [table]
        ).fetchall()[0][0]
    assert restored == metadata[table]["rejected"] == before  # the deleted reject is back


def test_a_next_days_grown_files_are_read_from_their_new_rows_and_equal_a_full_ingest(
    world, instance, tmp_path_factory
):
    """A feed's files one day later: the same rows, then the day's. Each grown file is read from its
    first new row (one whose earlier rows changed, whole), and raw equals a full build's."""
    day, next_day = last_weekday(datetime.fromisoformat(AS_OF))
    landing = world / "feed"
    landing_until(world / "landing", world / "first_day", day)
    shutil.copytree(world / "first_day", landing)
    first = run_main_job(
        instance, database=str(world / "w.duckdb"), landing_dir=str(landing), as_of=day.isoformat()
    )
    assert first.success, first.error
    landing_until(world / "landing", world / "next_day", next_day)
    shutil.copytree(world / "next_day", landing, dirs_exist_ok=True)
    later = run_main_job(
        instance, database=str(world / "w.duckdb"), landing_dir=str(landing), as_of=next_day.isoformat()
    )
    assert later.success, later.error
    ingested = landing_ingested(instance, later.run_id)
    # a file that did not change is kept; one that starts with its earlier rows is read after them
    assert ingested == expected_reads(world / "first_day", world / "next_day")
    assert ingested["customer_transactions"] == "appended"
    # the deleted rows the run's writers left stored past their share were compacted as it ended
    with duckdb.connect(str(world / "w.duckdb"), read_only=True) as con:
        assert sparse_tables(con) == []
    fresh = tmp_path_factory.mktemp("fresh") / "w.duckdb"
    report = run_main_job(instance, database=str(fresh), landing_dir=str(landing), as_of=next_day.isoformat())
    assert report.success, report.error
    assert _raw_rows(world / "w.duckdb") == _raw_rows(fresh)
