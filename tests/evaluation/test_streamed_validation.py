"""The run invariants validated as the runs stream by (row rules in batches, the primary runs
apart, run ids and keys in SQL) find exactly what Pandera finds over one frame of the whole table."""

import threading
from datetime import UTC, datetime

import duckdb
import pandera.polars as pa
import polars as pl
import pytest

from tradingmem_assets.defs.evaluation import invariants
from tradingmem_assets.defs.evaluation.invariants import (
    EVALUATION_RUNS_INVARIANTS,
    PRIMARY_RUNS_RULES,
    validate_runs,
)
from tradingmem_assets.lib.validation import named_checks, stream_validated, validate

T = datetime(2024, 1, 2, tzinfo=UTC)

# every invariant of the runs over one frame: what the streamed validation must find
WHOLE = pa.DataFrameSchema(
    EVALUATION_RUNS_INVARIANTS.columns,
    name="evaluation_runs",
    unique=EVALUATION_RUNS_INVARIANTS.unique,
    checks=[*EVALUATION_RUNS_INVARIANTS.checks, *named_checks(PRIMARY_RUNS_RULES)],
)


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
                    "inputs_hash": f"{d:060d}{version:04d}",
                }
            )
    return pl.DataFrame(rows).cast({"run_version": pl.Int64})


TAMPERS = {
    "clean": "SELECT 1",
    "a run id shared by two decisions": "UPDATE runs SET run_id = 'er_0000_1' WHERE run_id = 'er_0031_1'",
    "a run id repeated within a decision": "UPDATE runs SET run_id = 'er_0003_1' WHERE run_id = 'er_0003_0'",
    "a second primary run": "UPDATE runs SET is_primary = true, promoted_at = created_at "
    "WHERE run_id = 'er_0007_0'",
    "an unknown status": "UPDATE runs SET status = 'graded' WHERE run_id = 'er_0019_1'",
    "a duplicate version": "UPDATE runs SET run_version = 1, status = 'complete', known_at = created_at "
    "WHERE run_id = 'er_0023_0'",
    "an excess return edited by hand": "UPDATE runs SET excess_return = 0.5 WHERE run_id = 'er_0011_1'",
    "two primaries far apart": "UPDATE runs SET is_primary = true, promoted_at = created_at "
    "WHERE run_id IN ('er_0002_0', 'er_0038_0')",
    "a primary run without its promotion": "UPDATE runs SET promoted_at = NULL WHERE run_id = 'er_0013_1'",
    # columns no row rule reads: their nulls are found in SQL
    "an execution id nulled": "UPDATE runs SET execution_id = NULL WHERE run_id = 'er_0017_0'",
    "a decision id and an inputs hash nulled": "UPDATE runs SET decision_id = NULL, inputs_hash = NULL "
    "WHERE run_id = 'er_0029_1'",
    "a run id nulled": "UPDATE runs SET run_id = NULL WHERE run_id = 'er_0033_1'",
}


def _table(con, tamper: str = "clean") -> None:
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(40))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame")
    con.execute(TAMPERS[tamper]).fetchall()


@pytest.mark.parametrize("tamper", list(TAMPERS), ids=list(TAMPERS))
def test_streamed_validation_reports_what_one_frame_reports(tamper, monkeypatch):
    con = duckdb.connect()
    _table(con, tamper)
    monkeypatch.setattr(invariants, "RUN_BATCH_ROWS", 7)  # 80 rows: 12 batches, a decision's runs apart

    streamed, rows = validate_runs(con, "runs")
    whole = validate(WHOLE, con.sql("SELECT * FROM runs").pl())

    assert rows == 80
    assert streamed.passed == whole.passed == (tamper == "clean")

    def found(v):
        return sorted(set(v.failure_cases.select("column", "check").rows()), key=str)

    def named(v):  # a unique column's repeated values, and the decisions the other cases name
        cases = v.failure_cases
        values = cases.filter(pl.col("check") == "field_uniqueness").select("column", "failure_case").rows()
        runs = cases.get_column("failure_case").str.extract_all(r'"run_id":"er_(\d{4})').explode()
        decisions = cases.get_column("failure_case").str.extract_all(r'"decision_id":"d(\d{4})"').explode()
        return sorted(set(values)), sorted(
            {*runs.drop_nulls().str.slice(-4).to_list(), *decisions.drop_nulls().str.slice(-5, 4).to_list()}
        )

    # the same checks, on the same values and decisions (a frame-wide check's case is the row as
    # Pandera saw it: the streamed one names its run, the whole frame's its run and decision)
    assert found(streamed) == found(whole)
    assert named(streamed) == named(whole)


def test_a_repeated_run_key_is_spelled_as_pandera_spells_it():
    con = duckdb.connect()
    _table(con, "a duplicate version")
    cases = validate_runs(con, "runs")[0].failure_cases
    key = cases.filter(pl.col("check") == "multiple_fields_uniqueness")
    assert key.rows() == [
        (
            "evaluation_runs",
            "multiple_fields_uniqueness",
            '{"decision_id":"d0023","profile_id":"abs_7d","run_version":1}',
            None,
        )
    ]


def test_batches_are_validated_beside_the_connection_which_reads_each_row_once():
    con = duckdb.connect()
    _table(con, "an unknown status")
    seen, then_ran = [], []

    def spy(data: pa.PolarsData) -> pl.LazyFrame:
        frame = data.lazyframe.collect()
        seen.append((threading.current_thread() is threading.main_thread(), frame.height))
        return frame.lazy().select(pl.lit(True).alias("ok"))

    schema = pa.DataFrameSchema(
        EVALUATION_RUNS_INVARIANTS.columns,
        name="evaluation_runs",
        checks=[*EVALUATION_RUNS_INVARIANTS.checks, pa.Check(spy, name="spy")],
    )

    def then():
        con.execute("CREATE TABLE beside AS SELECT count(*) AS n FROM runs")
        then_ran.append(threading.current_thread() is threading.main_thread())
        return []

    validation, rows = stream_validated(con, schema, "SELECT * FROM runs", 9, then)
    assert rows == 80 and then_ran == [True]
    # every row once, in batches of at most 9, none validated on the connection's thread
    assert sum(n for _, n in seen) == 80 and max(n for _, n in seen) <= 9
    assert not any(main for main, _ in seen)
    assert validation.failure_cases.select("column", "failure_case").rows() == [("status", "graded")]
    assert con.execute("SELECT n FROM beside").fetchall() == [(80,)]


def test_an_error_on_the_connection_waits_for_the_batches_and_is_raised():
    con = duckdb.connect()
    _table(con)

    def fails():
        raise RuntimeError("the connection's work failed")

    with pytest.raises(RuntimeError, match="work failed"):
        stream_validated(con, EVALUATION_RUNS_INVARIANTS, "SELECT * FROM runs", 9, fails)


def test_an_empty_table_is_one_empty_frame_whose_types_are_checked():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _runs(1))
    con.execute("CREATE TABLE runs AS SELECT * FROM frame WHERE false")
    assert validate_runs(con, "runs")[0].passed
    con.execute("CREATE TABLE wrong AS SELECT * REPLACE (run_version::VARCHAR AS run_version) FROM runs")
    validation, rows = validate_runs(con, "wrong")
    assert rows == 0 and not validation.passed
    assert "run_version" in validation.failure_cases.get_column("column").to_list()
