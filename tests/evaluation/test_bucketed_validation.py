"""The run invariants validated in decision buckets (run ids in SQL) find exactly what one frame of the whole
table finds."""

import tempfile
import threading
from datetime import UTC, datetime

import duckdb
import pandera.polars as pa
import polars as pl
import pytest

from tradingmem_assets.defs.evaluation import invariants
from tradingmem_assets.defs.evaluation.invariants import (
    EVALUATION_RUNS_INVARIANTS,
    VALIDATED_COLUMNS,
    validate_runs,
)
from tradingmem_assets.lib.validation import buckets, validate, validate_beside

T = datetime(2024, 1, 2, tzinfo=UTC)


def _runs(n_decisions: int) -> pl.DataFrame:
    rows = []
    for d in range(n_decisions):
        for version, status in ((0, "pending"), (1, "complete")):
            rows.append(
                {
                    "run_id": f"er_{d:04d}_{version}",
                    "decision_id": f"d{d:04d}",
                    "execution_id": f"x{d:04d}",
                    "profile_id": "abs_7d",
                    "run_version": version,
                    "status": status,
                    "is_primary": version == 1,
                    "promoted_at": T if version == 1 else None,
                    "created_at": T,
                    "known_at": T if version == 1 else None,
                    "raw_return": 0.01 * d if version == 1 else None,
                    "benchmark_return": 0.005 if version == 1 else None,
                    "excess_return": 0.01 * d - 0.005 if version == 1 else None,
                }
            )
    return pl.DataFrame(rows).cast({"run_version": pl.Int64})


TAMPERS = {
    "clean": "SELECT 1",
    "a run id shared by two decisions": "UPDATE runs SET run_id = 'er_0000_1' WHERE run_id = 'er_0031_1'",
    "a run id repeated within a decision": "UPDATE runs SET run_id = 'er_0003_1' WHERE run_id = 'er_0003_0'",
    "a second primary run": "UPDATE runs SET is_primary = true, promoted_at = created_at WHERE run_id = 'er_0007_0'",
    "an unknown status": "UPDATE runs SET status = 'graded' WHERE run_id = 'er_0019_1'",
    "a duplicate version": "UPDATE runs SET run_version = 1, status = 'complete', known_at = created_at "
    "WHERE run_id = 'er_0023_0'",
    "an excess return edited by hand": "UPDATE runs SET excess_return = 0.5 WHERE run_id = 'er_0011_1'",
}


@pytest.mark.parametrize("tamper", list(TAMPERS), ids=list(TAMPERS))
def test_buckets_report_what_one_frame_reports(tamper, monkeypatch):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(40))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame")
    con.execute(TAMPERS[tamper])
    monkeypatch.setattr(invariants, "BUCKET_ROWS", 7)  # 80 rows: 12 buckets

    bucketed, rows = validate_runs(con, "runs")
    # one frame of every run, its run ids checked by Pandera as a unique column
    schema = EVALUATION_RUNS_INVARIANTS.add_columns({"run_id": pa.Column(pl.String, unique=True)})
    whole = validate(schema, con.sql(f"SELECT run_id, {VALIDATED_COLUMNS} FROM runs").pl())

    assert rows == 80
    assert bucketed.passed == whole.passed == (tamper == "clean")

    def found(v):
        return sorted(set(v.failure_cases.select("column", "check").rows()), key=str)

    assert found(bucketed) == found(whole)


def test_buckets_split_the_table_by_decision_keep_rows_without_one_and_leave_no_files(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(40))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame")
    con.execute("UPDATE runs SET decision_id = NULL WHERE run_id = 'er_0005_0'")
    with buckets(con, "runs", VALIDATED_COLUMNS, "decision_id", 7) as read:
        frames = list(read())
    assert len(frames) > 5
    owners: dict = {}
    for n, frame in enumerate(frames):
        assert frame.columns == [c.strip() for c in VALIDATED_COLUMNS.split(",")]
        for decision in frame.get_column("decision_id").unique().to_list():
            assert owners.setdefault(decision, n) == n, f"{decision} in two buckets"
    assert sum(f.height for f in frames) == 80
    assert list(tmp_path.iterdir()) == []  # the scratch files are gone


def test_an_empty_table_is_one_empty_frame_with_its_types():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(1))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame WHERE false")
    with buckets(con, "runs", VALIDATED_COLUMNS, "decision_id", 7) as read:
        (frame,) = read()
    assert frame.height == 0 and frame.schema["promoted_at"] == pl.Datetime("us", "UTC")
    assert validate_runs(con, "runs")[0].passed


def test_the_connection_works_beside_the_validation_and_an_error_there_waits_for_it(tmp_path, monkeypatch):
    """The connection finds the repeated run ids while Pandera reads the buckets in another thread."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(40))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame")
    con.execute(TAMPERS["a second primary run"])
    beside = []

    def meanwhile():
        con.execute("CREATE TABLE beside AS SELECT count(*) AS n FROM runs")
        beside.append(threading.current_thread() is threading.main_thread())

    with buckets(con, "runs", VALIDATED_COLUMNS, "decision_id", 7) as read:
        validation, rows = validate_beside(EVALUATION_RUNS_INVARIANTS, read, meanwhile)
    assert rows == 80 and beside == [True]
    assert "at_most_one_primary_per_decision" in validation.failure_cases.get_column("check").to_list()
    assert con.execute("SELECT n FROM beside").fetchall() == [(80,)]

    def fails():
        raise RuntimeError("the connection's work failed")

    with pytest.raises(RuntimeError, match="work failed"):
        with buckets(con, "runs", VALIDATED_COLUMNS, "decision_id", 7) as read:
            validate_beside(EVALUATION_RUNS_INVARIANTS, read, fails)
    assert list(tmp_path.iterdir()) == []  # the validation ended and its scratch files are gone
