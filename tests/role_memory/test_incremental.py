"""Role cases after the last run on an unchanged past admit only the decisions the new instants can
change, and store exactly what a full admission would (SPEC section 14)."""

import shutil
from datetime import datetime, timedelta

import dagster as dg
import duckdb
import polars as pl
import pytest

from tradingmem_assets.benchmark.days import landing_until
from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables

# a week, then two weeks, in the densest months of the demo's trading history
STEPS = ("2024-03-20T00:00:00Z", "2024-03-27T00:00:00Z", "2024-04-10T00:00:00Z")
COMPARED = (tables.ROLE_CASES, "main.role_recall_index")


def _run(instance, db, landing, as_of):
    report = run_main_job(instance, database=str(db), landing_dir=str(landing), as_of=as_of)
    assert report.success, report.error
    return report


def _cases_metadata(instance, run_id) -> dict:
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        m = record.dagster_event.event_specific_data.materialization
        if m.asset_key == dg.AssetKey("role_cases"):
            return {k: v.value for k, v in m.metadata.items()}
    raise AssertionError("role_cases did not materialize")


def _touched(metadata) -> int:
    assert metadata["admitted"].startswith("incremental since run"), metadata["admitted"]
    return int(metadata["admitted"].split("only the ")[1].split(" ")[0])


def _rows(db) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in COMPARED}


def _forget_role_cases_state(db):
    """Without the role cases' recorded state, the next admission is a full one."""
    with duckdb.connect(str(db)) as con:
        con.execute(f"DELETE FROM {tables.RUN_TABLE_STATES} WHERE table_name = '{tables.ROLE_CASES}'")


def _at(as_of: str) -> datetime:
    return datetime.fromisoformat(as_of.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("role_cases_world")
    write_demo_world(root, scale=0.004, seed=23)
    return root


def test_incremental_role_cases_equal_a_full_admission(tmp_path, world, instance):
    """The same landing files at later instants: decisions are decided, executed, consumed,
    settled and evaluated since; every case equals the full admission's, updated_at included."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    _run(instance, incremental, world, STEPS[0])
    shutil.copy(incremental, full)
    changed = []
    for as_of in STEPS[1:]:
        metadata = _cases_metadata(instance, _run(instance, incremental, world, as_of).run_id)
        touched = _touched(metadata)
        _forget_role_cases_state(full)
        full_metadata = _cases_metadata(instance, _run(instance, full, world, as_of).run_id)
        assert full_metadata["admitted"].startswith("every decision")
        assert full_metadata["changed_rows"] == metadata["changed_rows"]
        assert _rows(incremental) == _rows(full)
        with duckdb.connect(str(incremental), read_only=True) as con:
            decisions = con.execute("SELECT count(*) FROM main.role_cases").fetchall()[0][0]
        assert 0 < metadata["changed_rows"] <= touched < decisions / 2
        changed.append(metadata["changed_rows"])
    assert len(changed) == 2


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
    late = _close_late(world, tmp_path / "world", _at(STEPS[0]) + timedelta(days=2))
    landing_until(tmp_path / "world", landing, _at(STEPS[0]))
    _run(instance, incremental, landing, STEPS[0])
    assert "not_settled" in _case_reasons(incremental, late)
    shutil.copy(incremental, full)
    before = pl.read_parquet(landing / "position_lifecycles.parquet")
    landing_until(tmp_path / "world", landing, _at(STEPS[1]))
    after = pl.read_parquet(landing / "position_lifecycles.parquet")
    closed_since = before.filter(pl.col("status") == "open").join(
        after.filter(pl.col("status") != "open"), on="position_id"
    )
    assert closed_since.height > 0  # rows that changed in the landing file, not only new ones
    report = _run(instance, incremental, landing, STEPS[1])
    assert _touched(_cases_metadata(instance, report.run_id)) > 0
    assert "not_settled" not in _case_reasons(incremental, late)  # settled by its closing alone
    _forget_role_cases_state(full)
    _run(instance, full, landing, STEPS[1])
    assert _rows(incremental) == _rows(full)
    # a preview before the last admission was withdrawn: the past changed, every decision is admitted
    previews = landing / "trade_previews.parquet"
    frame = pl.read_parquet(previews)
    frame.filter(pl.int_range(pl.len()) != 0).write_parquet(previews)
    metadata = _cases_metadata(instance, _run(instance, incremental, landing, STEPS[2]).run_id)
    assert metadata["admitted"].startswith("every decision")


def test_hand_edited_role_cases_are_admitted_in_full(tmp_path, world, instance):
    db = tmp_path / "w.duckdb"
    _run(instance, db, world, STEPS[0])
    with duckdb.connect(str(db)) as con:
        (case_id,) = con.execute(
            f"SELECT case_id FROM {tables.ROLE_CASES} WHERE status = 'ineligible' LIMIT 1"
        ).fetchone()
        con.execute(f"UPDATE {tables.ROLE_CASES} SET status = 'eligible' WHERE case_id = ?", [case_id])
    metadata = _cases_metadata(instance, _run(instance, db, world, STEPS[1]).run_id)
    assert metadata["admitted"].startswith("every decision")
    with duckdb.connect(str(db), read_only=True) as con:  # the edit is undone
        (status,) = con.execute(
            f"SELECT status FROM {tables.ROLE_CASES} WHERE case_id = ?", [case_id]
        ).fetchone()
    assert status == "ineligible"
