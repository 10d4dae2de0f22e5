"""``validate_query`` checks each rule where it costs least (Pandera on the streamed columns a rule
reads, types on the empty frame, nulls and unique columns from hashes and flags in the same stream,
then SQL) and finds exactly what Pandera finds over one frame of the whole query, however the rows
are batched and whether the keys' hashes are held or grouped in SQL."""

from datetime import UTC, datetime

import duckdb
import pandera.polars as pa
import polars as pl
import pytest

from tradingmem_assets.defs.role_memory.invariants import (
    DECISION_COVERAGE_INVARIANTS,
    ROLE_CASES_INVARIANTS,
)
from tradingmem_assets.lib import whole_query
from tradingmem_assets.lib.validation import row_rule, validate, validate_query
from tradingmem_assets.lib.whole_query import StreamedChecks, whole_query_failures

T = datetime(2024, 3, 4, 15, 30, tzinfo=UTC)


def _cases(n: int) -> pl.DataFrame:
    """``n`` valid cases with their chain's facts: eligible, pending and ineligible in turn."""
    rows = []
    for i in range(n):
        kind = ("eligible", "pending", "ineligible")[i % 3]
        rows.append(
            {
                "case_id": f"rc_{i:03d}",
                "decision_id": f"d{i:03d}",
                "role_id": "swing_trader",
                "symbol": "GOOG",
                "scenario": None if i % 4 else "breakout",
                "direction": "long",
                "account_id": "acct_1",
                "market": "us_equity",
                "execution_id": None if kind == "ineligible" else f"x{i:03d}",
                "primary_run_id": f"er_{i:03d}" if kind == "eligible" else None,
                "decision_text": f"buy on the breakout, case {i}",
                "outcome": "win" if kind == "eligible" else None,
                "status": kind,
                "reasons": {"eligible": [], "pending": ["not_settled"], "ineligible": ["no_execution"]}[kind],
                "quarantined": False,
                "scoring_eligible": kind == "eligible",
                "provenance": '{"decision": "d"}',
                "created_at": T,
                "known_at": T if kind == "eligible" else None,
                "updated_at": T,
                "chain_source": None if kind == "ineligible" else "manual_agent",
                "chain_automation_flag": None if kind == "ineligible" else False,
                "chain_source_verified": None if kind == "ineligible" else True,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"reasons": pl.List(pl.String)})


TAMPERS = {
    "clean": "SELECT 1",
    "a case id twice": "UPDATE cases SET case_id = 'rc_004' WHERE case_id = 'rc_027'",
    "a decision with two cases": "UPDATE cases SET decision_id = 'd001' WHERE decision_id = 'd020'",
    "a role nobody reads, nulled": "UPDATE cases SET role_id = NULL WHERE case_id IN ('rc_002', 'rc_017')",
    "the provenance nulled": "UPDATE cases SET provenance = NULL WHERE case_id = 'rc_011'",
    "a text nobody checks, nulled where allowed": "UPDATE cases SET decision_text = NULL",
    "an eligible case from automation": "UPDATE cases SET chain_automation_flag = true "
    "WHERE case_id = 'rc_009'",
    "an unknown reason": "UPDATE cases SET reasons = ['looks_fine'], status = 'ineligible', "
    "scoring_eligible = false WHERE case_id = 'rc_012'",
    "an unknown outcome": "UPDATE cases SET outcome = 'draw' WHERE case_id = 'rc_015'",
    "a status nulled": "UPDATE cases SET status = NULL WHERE case_id = 'rc_005'",
    "several at once": "UPDATE cases SET symbol = NULL, case_id = 'rc_000', quarantined = true "
    "WHERE case_id = 'rc_021'",
}


def _table(con, tamper: str = "clean") -> None:
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", _cases(30))
    con.execute("CREATE TABLE cases AS SELECT * FROM frame")
    con.execute(TAMPERS[tamper]).fetchall()


def _found(v) -> list:
    return sorted(set(v.failure_cases.select("column", "check").rows()), key=str)


def _values(v) -> list:  # the failing values of the column checks (a frame-wide case is a whole row)
    cases = v.failure_cases.filter(pl.col("column") != v.schema_name)
    return sorted(set(cases.select("column", "failure_case").rows()), key=str)


@pytest.mark.parametrize("hashes_max", [None, 5], ids=["keys_hashed_in_the_stream", "keys_grouped_in_sql"])
@pytest.mark.parametrize("batch_rows", [4, 1000])
@pytest.mark.parametrize("tamper", list(TAMPERS), ids=list(TAMPERS))
def test_the_query_is_validated_as_one_frame_would_be(tamper, batch_rows, hashes_max, monkeypatch):
    if hashes_max is not None:  # more rows than hashes are held for: SQL looks for repeated keys
        monkeypatch.setattr(whole_query, "KEY_HASHES_MAX_ROWS", hashes_max)
    con = duckdb.connect()
    _table(con, tamper)
    query = "SELECT * FROM cases"

    found = validate_query(con, ROLE_CASES_INVARIANTS, query, batch_rows=batch_rows)[0]
    whole = validate(ROLE_CASES_INVARIANTS, con.sql(query).pl())

    assert found.passed == whole.passed == (tamper in ("clean", "a text nobody checks, nulled where allowed"))
    assert _found(found) == _found(whole)
    assert _values(found) == _values(whole)


def test_only_the_columns_a_rule_reads_reach_pandera():
    con = duckdb.connect()
    _table(con)
    seen: list[set[str]] = []

    def spy(data: pa.PolarsData) -> pl.LazyFrame:
        seen.append(set(data.lazyframe.collect_schema().names()))
        return data.lazyframe.select(pl.lit(True).alias("ok"))

    # a rule that does not say what it reads: every column streams
    unnamed = pa.DataFrameSchema(
        ROLE_CASES_INVARIANTS.columns,
        name="role_cases",
        checks=[*ROLE_CASES_INVARIANTS.checks, pa.Check(spy, name="spy")],
    )
    assert validate_query(con, unnamed, "SELECT * FROM cases", batch_rows=7)[0].passed
    # the empty frame whose types are checked, then five batches of at most 7 rows
    assert len(seen) == 6 and all(columns == set(ROLE_CASES_INVARIANTS.columns) for columns in seen)

    # status has a check of its own and the rule reads quarantined: those two stream, with case_id,
    # the unique column that names a failing row; the rest is checked in SQL (case_id's uniqueness,
    # symbol's nulls) or on the empty frame (every type)
    seen.clear()
    spy.reads = frozenset({"quarantined"})
    narrow = pa.DataFrameSchema(
        {
            "case_id": pa.Column(pl.String, unique=True),
            "symbol": pa.Column(pl.String),
            "status": pa.Column(pl.String, pa.Check.isin(["eligible", "pending"])),
            "quarantined": pa.Column(pl.Boolean),
        },
        name="narrow",
        checks=[pa.Check(spy, name="spy")],
    )
    con.execute("UPDATE cases SET symbol = NULL, case_id = 'rc_000' WHERE case_id = 'rc_001'")
    validation = validate_query(con, narrow, "SELECT * FROM cases", batch_rows=7)[0]
    assert len(seen) == 6 and all(columns == {"case_id", "status", "quarantined"} for columns in seen[1:])
    assert _found(validation) == sorted(
        {
            ("case_id", "field_uniqueness"),
            ("symbol", "not_nullable"),
            ("status", "isin(['eligible', 'pending'])"),
        },
        key=str,
    )
    assert _found(validation) == _found(validate(narrow, con.sql("SELECT * FROM cases").pl()))


def test_a_rule_that_reads_a_column_it_does_not_name_fails_closed():
    con = duckdb.connect()
    _table(con)
    liar = row_rule(pl.col("status").is_not_null())
    liar.reads = frozenset({"case_id"})  # reads status, says case_id: status does not stream
    schema = pa.DataFrameSchema(
        {"case_id": pa.Column(pl.String), "status": pa.Column(pl.String)},
        name="liar",
        checks=[pa.Check(liar, name="status_present")],
    )
    validation = validate_query(con, schema, "SELECT * FROM cases")[0]
    assert not validation.passed
    assert "status_present" in validation.failure_cases.get_column("check").to_list()


def test_a_missing_column_and_a_wrong_type_are_reported_once():
    con = duckdb.connect()
    _table(con)
    query = "SELECT * EXCLUDE (role_id) REPLACE (quarantined::VARCHAR AS quarantined) FROM cases"
    validation = validate_query(con, ROLE_CASES_INVARIANTS, query, batch_rows=4)[0]
    checks = validation.failure_cases.select("column", "check").rows()
    missing = validation.failure_cases.filter(pl.col("check") == "column_in_dataframe")
    assert missing.select("column", "failure_case").rows() == [("role_cases", "role_id")]
    # a failure of the whole frame, which every batch of the streamed columns reports, comes once
    assert checks.count(("quarantined", "dtype('Boolean')")) == 1
    assert not validation.failure_cases.is_duplicated().any()


def test_parameters_bind_in_every_pass_over_the_query():
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE c AS SELECT * FROM (VALUES ('a', true, 1), ('b', true, 1), ('b', true, 1), "
        "(NULL, true, 2)) t(decision_id, names_a_role, n)"
    )
    query = "SELECT decision_id, names_a_role, n::BIGINT AS n_cases FROM c WHERE n <= $most"
    one = validate_query(con, DECISION_COVERAGE_INVARIANTS, query, {"most": 1}, batch_rows=1)[0]
    assert _found(one) == [("decision_id", "field_uniqueness")]
    two = validate_query(con, DECISION_COVERAGE_INVARIANTS, query, {"most": 2}, batch_rows=1)[0]
    assert _found(two) == sorted(
        {
            ("decision_id", "field_uniqueness"),
            ("decision_id", "not_nullable"),
            ("n_cases", "equal_to(1)"),
        },
        key=str,
    )
    whole = con.sql(query, params={"most": 2}).pl()
    assert _found(two) == _found(validate(DECISION_COVERAGE_INVARIANTS, whole))


def test_a_rule_may_read_a_column_the_schema_does_not_declare():
    con = duckdb.connect()
    _table(con)
    schema = pa.DataFrameSchema(
        {"case_id": pa.Column(pl.String, unique=True)},
        name="undeclared",
        checks=[pa.Check(row_rule(pl.col("status") != "pending"), name="no_pending")],
    )
    validation = validate_query(con, schema, "SELECT * FROM cases", batch_rows=7)[0]
    failing = validation.failure_cases.filter(pl.col("check") == "no_pending")
    assert failing.height == 10  # every third of the 30 cases is pending, each named by its case id
    assert failing.get_column("failure_case").str.contains('"case_id":"rc_').all()


def test_a_rule_that_does_not_name_its_columns_sees_every_column_of_the_query():
    con = duckdb.connect()
    _table(con)

    def unnamed(data: pa.PolarsData) -> pl.LazyFrame:  # reads status, which the schema does not declare
        return data.lazyframe.select((pl.col("status") != "pending").alias("ok"))

    schema = pa.DataFrameSchema(
        {"case_id": pa.Column(pl.String, unique=True)},
        name="unnamed",
        checks=[pa.Check(unnamed, name="no_pending")],
    )
    validation = validate_query(con, schema, "SELECT * FROM cases", batch_rows=7)[0]
    assert validation.failure_cases.filter(pl.col("check") == "no_pending").height == 10


def test_equal_key_hashes_of_different_values_are_not_a_repeated_key():
    # two different 64-bit values may hash alike: the stream's hashes only say where to look, and
    # SQL then finds no value repeated (a true repeat is found: the tampers above)
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 'id_' || range::VARCHAR AS id FROM range(3)")
    seen = StreamedChecks(["id"], [])
    seen.add(pl.DataFrame({"__tm_key_0": [7, 7, 9]}, schema={"__tm_key_0": pl.UInt64}))
    found = seen.found()
    assert found == (["id"], [])
    assert all(f.height == 0 for f in whole_query_failures(con, "t", *found))
    distinct = StreamedChecks(["id"], ["id"])
    distinct.add(pl.DataFrame({"__tm_key_0": [1, 2], "__tm_nulls": [False, False]}))
    assert distinct.found() == ([], [])  # nothing repeated, no null: SQL reads nothing again
