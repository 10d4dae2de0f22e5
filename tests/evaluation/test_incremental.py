"""An evaluation after the last run on unchanged evaluation inputs evaluates only the decisions the
new instants can change, and stores exactly what a full evaluation would (SPEC section 14)."""

import shutil
from datetime import datetime

import dagster as dg
import duckdb
import polars as pl
import pytest

from tests.incremental import forget_state, materialization_metadata, rows, run
from tradingmem_assets.defs.evaluation.incremental import VISIBLE_BY
from tradingmem_assets.defs.operations.runs import run_main_job
from tradingmem_assets.demo import write_demo_world
from tradingmem_assets.lib import tables

# a week, then two weeks with a promotion in the densest months of the demo's trading history
STEPS = ("2024-03-20T00:00:00Z", "2024-03-27T00:00:00Z", "2024-04-10T00:00:00Z")
EVALUATION_TABLES = (tables.EVALUATION_RUNS, tables.EVALUATION_PRIMARIES, tables.EVALUATION_COMPONENTS)


def _evaluation_metadata(instance, run_id) -> dict:
    return materialization_metadata(instance, run_id, "evaluation_runs")


def _stored_check_metadata(instance, db, landing) -> dict:
    """The stored evaluation_runs check, evaluated by warehouse_checks_job on ``db`` (the main job
    evaluates the check in its step; its stored twin re-reads the table in the checks job)."""
    checks = run_main_job(
        instance, database=str(db), landing_dir=str(landing), as_of=None, job_name="warehouse_checks_job"
    )
    for record in instance.all_logs(checks.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = record.dagster_event.event_specific_data
        if evaluation.check_name == "stored_evaluation_runs_invariants":
            assert evaluation.passed
            return {k: v.value for k, v in evaluation.metadata.items()}
    raise AssertionError("the stored evaluation_runs check did not run")


def _rows(db) -> dict[str, list]:
    return rows(db, EVALUATION_TABLES)


def _forget_evaluation_state(db):
    """Without the evaluation tables' recorded state, the next evaluation is a full one."""
    forget_state(db, "main.evaluation%")


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    root = tmp_path_factory.mktemp("incremental_landing")
    write_demo_world(root, scale=0.004, seed=11)
    return root


def test_an_incremental_evaluation_equals_a_full_one(tmp_path, landing, instance):
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    run(instance, incremental, landing, STEPS[0])
    shutil.copy(incremental, full)
    for as_of in STEPS[1:]:
        report = run(instance, incremental, landing, as_of)
        metadata = _evaluation_metadata(instance, report.run_id)
        assert metadata["evaluated"].startswith("incremental since run")
        _forget_evaluation_state(full)
        full_report = run(instance, full, landing, as_of)
        assert _evaluation_metadata(instance, full_report.run_id)["evaluated"].startswith("every executed")
        assert (
            _evaluation_metadata(instance, full_report.run_id)["appended_versions"]
            == metadata["appended_versions"]
        )
        assert metadata["appended_versions"] > 0
        assert _rows(incremental) == _rows(full)
    with duckdb.connect(str(incremental), read_only=True) as con:
        decisions = con.execute("SELECT count(*) FROM raw.trading_decisions").fetchall()[0][0]
        touched = int(metadata["evaluated"].split("only the ")[1].split(" ")[0])
    assert 0 < touched < decisions / 4


def _landing_until(source, target, until: str):
    """The landing folder as it stood at ``until``: the evaluation's rows stamped after it are not there yet."""
    target.mkdir(exist_ok=True)
    for path in source.iterdir():
        table = path.name.split(".")[0]
        column = VISIBLE_BY.get(table)
        if column is None:
            shutil.copy(path, target / path.name)
            continue
        frame = pl.read_parquet(path)
        cut = datetime.fromisoformat(until.replace("Z", "+00:00"))
        frame.filter(pl.col(column) <= cut).write_parquet(target / path.name)


def test_a_day_of_new_landing_rows_is_evaluated_incrementally_as_a_full_evaluation_would(
    tmp_path, landing, instance
):
    """Landing files that grew by the rows of one more week (the rows before unchanged) keep the
    basis; a corrected row from before the last evaluation does not."""
    incremental, full = tmp_path / "incremental.duckdb", tmp_path / "full.duckdb"
    _landing_until(landing, tmp_path / "day1", STEPS[0])
    run(instance, incremental, tmp_path / "day1", STEPS[0])
    shutil.copy(incremental, full)
    _landing_until(landing, tmp_path / "day2", STEPS[1])
    report = run(instance, incremental, tmp_path / "day2", STEPS[1])
    metadata = _evaluation_metadata(instance, report.run_id)
    assert metadata["evaluated"].startswith("incremental since run") and metadata["appended_versions"] > 0
    # the table valid before, its rewritten decisions validated as written: it is valid as a whole
    stored = _stored_check_metadata(instance, incremental, tmp_path / "day2")
    assert stored["validated_at_write_by_run"] == report.run_id
    _forget_evaluation_state(full)
    run(instance, full, tmp_path / "day2", STEPS[1])
    assert _rows(incremental) == _rows(full)
    # a fill before the last evaluation corrected: the past changed, everything is evaluated again
    fills = tmp_path / "day2" / "trade_fills.parquet"
    frame = pl.read_parquet(fills)
    frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.col("price") * 1.01)
        .otherwise(pl.col("price"))
        .alias("price")
    ).write_parquet(fills)
    report = run(instance, incremental, tmp_path / "day2", STEPS[2])
    assert _evaluation_metadata(instance, report.run_id)["evaluated"].startswith("every executed")


def test_a_hand_edited_evaluation_table_is_evaluated_in_full(tmp_path, landing, instance):
    db = tmp_path / "w.duckdb"
    run(instance, db, landing, STEPS[0])
    with duckdb.connect(str(db)) as con:
        con.execute(f"DELETE FROM {tables.EVALUATION_PRIMARIES} WHERE rowid = 0")
    report = run(instance, db, landing, STEPS[1])
    assert _evaluation_metadata(instance, report.run_id)["evaluated"].startswith("every executed")
    with duckdb.connect(str(db), read_only=True) as con:  # the deleted interval is back
        (missing,) = con.execute(
            f"SELECT count(*) FROM {tables.EVALUATION_RUNS} r ANTI JOIN {tables.EVALUATION_PRIMARIES} p "
            "USING (run_id) WHERE r.is_primary"
        ).fetchall()[0]
    assert missing == 0


def test_a_rewritten_run_sharing_its_id_with_another_decisions_stored_run_is_a_violation():
    from tradingmem_assets.defs.evaluation.invariants import validate_runs

    con = duckdb.connect()
    row = (
        "SELECT 'er_1' AS run_id, '{d}' AS decision_id, 'x' AS execution_id, 'p' AS profile_id, "
        "1::BIGINT AS run_version, 'complete' AS status, false AS is_primary, NULL::TIMESTAMPTZ AS promoted_at, "
        "TIMESTAMPTZ '2024-01-01' AS created_at, TIMESTAMPTZ '2024-01-01' AS known_at, "
        "0.02::DOUBLE AS raw_return, 0.01::DOUBLE AS benchmark_return, "
        "0.02::DOUBLE - 0.01::DOUBLE AS excess_return, repeat('0', 64) AS inputs_hash"
    )
    con.execute(f"CREATE TABLE written AS {row.format(d='d2')}")
    con.execute(f"CREATE TABLE stored AS {row.format(d='d1')} UNION ALL SELECT * FROM written")
    assert validate_runs(con, "written")[0].passed  # alone, the rewritten runs are fine
    validation, _ = validate_runs(con, "written", stored="stored")
    assert validation.failure_cases.select("column", "check", "failure_case").rows() == [
        ("run_id", "field_uniqueness", "er_1")
    ]
