"""Role cases after the last run on an unchanged past admit only the decisions the new instants can
change, and store exactly what a full admission would (SPEC section 14)."""

import shutil
from datetime import datetime, timedelta

import duckdb
import polars as pl
import pytest

from tests.incremental import at, forget_state, materialization_metadata, rows, run, touched_count
from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables

# a week, then two weeks, in the densest months of the demo's trading history
STEPS = ("2024-03-20T00:00:00Z", "2024-03-27T00:00:00Z", "2024-04-10T00:00:00Z")
ASSET = "role_cases"
COMPARED = (tables.ROLE_CASES, "main.role_recall_index")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("role_cases_world")
    write_demo_world(root, scale=0.004, seed=23)
    return root


def test_incremental_role_cases_equal_a_full_admission(tmp_path, world, instance):
    """The same landing files at later instants: decisions are decided, executed, consumed,
    settled and evaluated since; every case equals the full admission's, updated_at included."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    run(instance, incremental, world, STEPS[0])
    shutil.copy(incremental, full)
    for as_of in STEPS[1:]:
        metadata = materialization_metadata(instance, run(instance, incremental, world, as_of).run_id, ASSET)
        touched = touched_count(metadata, "admitted")
        forget_state(full, tables.ROLE_CASES)
        full_metadata = materialization_metadata(instance, run(instance, full, world, as_of).run_id, ASSET)
        assert full_metadata["admitted"].startswith("every decision")
        assert full_metadata["changed_rows"] == metadata["changed_rows"]
        assert rows(incremental, COMPARED) == rows(full, COMPARED)
        with duckdb.connect(str(incremental), read_only=True) as con:
            decisions = con.execute("SELECT count(*) FROM main.role_cases").fetchall()[0][0]
        assert 0 < metadata["changed_rows"] <= touched < decisions / 2


def _close_late(world, target, closes_at: datetime) -> str:
    """A copy of the world where one position, settled long before, closes only at ``closes_at``:
    nothing else about its decision (its evaluation reads no position) happens then."""
    shutil.copytree(world, target)
    path = target / "position_lifecycles.parquet"
    positions = pl.read_parquet(path)
    (position_id,) = (
        positions.filter(
            (pl.col("status") == "closed") & (pl.col("closed_at") < closes_at - timedelta(days=10))
        )
        .sort("position_id")
        .get_column("position_id")
        .head(1)
    )
    late = pl.col("position_id") == position_id
    positions.with_columns(
        pl.when(late).then(pl.lit(closes_at)).otherwise(pl.col("closed_at")).alias("closed_at")
    ).write_parquet(path)
    return position_id


def _case_reasons(db, position_id) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        ((reasons,),) = con.execute(
            f"SELECT rc.reasons FROM {tables.ROLE_CASES} rc JOIN raw.position_lifecycles p "
            "USING (execution_id) WHERE p.position_id = ?",
            [position_id],
        ).fetchall()
    return reasons


def test_a_day_of_new_landing_rows_is_admitted_incrementally_as_a_full_admission_would(
    tmp_path, world, instance
):
    """Landing files that grew by a week of rows, with positions that were open then closed since
    (their rows rewritten), keep the basis; a corrected row from before the last admission does not."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    landing = tmp_path / "landing"
    late = _close_late(world, tmp_path / "world", at(STEPS[0]) + timedelta(days=2))
    landing_until(tmp_path / "world", landing, at(STEPS[0]))
    run(instance, incremental, landing, STEPS[0])
    assert "not_settled" in _case_reasons(incremental, late)
    shutil.copy(incremental, full)
    before = pl.read_parquet(landing / "position_lifecycles.parquet")
    landing_until(tmp_path / "world", landing, at(STEPS[1]))
    after = pl.read_parquet(landing / "position_lifecycles.parquet")
    closed_since = before.filter(pl.col("status") == "open").join(
        after.filter(pl.col("status") != "open"), on="position_id"
    )
    assert closed_since.height > 0  # rows that changed in the landing file, not only new ones
    report = run(instance, incremental, landing, STEPS[1])
    assert touched_count(materialization_metadata(instance, report.run_id, ASSET), "admitted") > 0
    assert "not_settled" not in _case_reasons(incremental, late)  # settled by its closing alone
    forget_state(full, tables.ROLE_CASES)
    run(instance, full, landing, STEPS[1])
    assert rows(incremental, COMPARED) == rows(full, COMPARED)
    # a preview before the last admission was withdrawn: the past changed, every decision is admitted
    previews = landing / "trade_previews.parquet"
    frame = pl.read_parquet(previews)
    frame.filter(pl.int_range(pl.len()) != 0).write_parquet(previews)
    metadata = materialization_metadata(instance, run(instance, incremental, landing, STEPS[2]).run_id, ASSET)
    assert metadata["admitted"].startswith("every decision")


def test_hand_edited_role_cases_are_admitted_in_full(tmp_path, world, instance):
    db = tmp_path / "w.duckdb"
    run(instance, db, world, STEPS[0])
    with duckdb.connect(str(db)) as con:
        (case_id,) = con.execute(
            f"SELECT case_id FROM {tables.ROLE_CASES} WHERE status = 'ineligible' LIMIT 1"
        ).fetchone()
        con.execute(f"UPDATE {tables.ROLE_CASES} SET status = 'eligible' WHERE case_id = ?", [case_id])
    metadata = materialization_metadata(instance, run(instance, db, world, STEPS[1]).run_id, ASSET)
    assert metadata["admitted"].startswith("every decision")
    with duckdb.connect(str(db), read_only=True) as con:  # the edit is undone
        (status,) = con.execute(
            f"SELECT status FROM {tables.ROLE_CASES} WHERE case_id = ?", [case_id]
        ).fetchone()
    assert status == "ineligible"
    with duckdb.connect(str(db), read_only=True) as con:  # written again, still declared with ZSTD
        (declared,) = con.execute(
            "SELECT sql FROM duckdb_tables() WHERE table_name = 'role_cases'"
        ).fetchone()
    assert "provenance JSON USING COMPRESSION ZSTD" in declared
