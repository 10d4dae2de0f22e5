"""The SQL screen of a validated query (``lib.screen``) passes a row only where Pandera passes it:
every schema that ``validate_query`` screens, over random rows drawn from small pools (each
column's allowed values, the rules' literals, nulls, NaN, infinities) so that every rule both holds
and breaks. A row the screen flags and Pandera passes may only be one it flags on purpose: a
float that is not finite, or a null among a case's reasons."""

import math
import random
import re
from datetime import UTC, datetime

import duckdb
import pandera.polars as pa
import polars as pl
import pytest

from tests.profile.test_ownership import checked_profile
from tradingmem_assets.defs.evaluation.invariants import EVALUATION_RUNS_INVARIANTS
from tradingmem_assets.defs.profile.invariants import FIN_CUSTOMER_PROFILE_INVARIANTS
from tradingmem_assets.defs.role_memory.invariants import (
    DECISION_COVERAGE_INVARIANTS,
    REFLECTION_BATCH_INVARIANTS,
    ROLE_CASES_INVARIANTS,
)
from tradingmem_assets.lib import validation
from tradingmem_assets.lib.screen import screen_sql
from tradingmem_assets.lib.validation import row_rule, validate, validate_query, without_unique

SCREENED = {
    s.name: s
    for s in (
        EVALUATION_RUNS_INVARIANTS,
        ROLE_CASES_INVARIANTS,
        DECISION_COVERAGE_INVARIANTS,
        REFLECTION_BATCH_INVARIANTS,
        FIN_CUSTOMER_PROFILE_INVARIANTS,
    )
}
ROWS = 3000
T = datetime(2024, 3, 4, tzinfo=UTC)
FLOATS = [None, 0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.0, 1e-13, math.nan, math.inf, -math.inf]


def _strings(schema: pa.DataFrameSchema) -> list[str | None]:
    """Every allowed value of a column check and every literal of a rule's SQL, a long text and
    a 64-character one, an empty one and one nobody allows."""
    found: set[str] = {"", "x", "a" * 64, "a" * 281}
    for column in schema.columns.values():
        for check in column.checks:
            found.update(v for v in check.statistics.get("allowed_values", []) if isinstance(v, str))
    for check in schema.checks:
        found.update(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", check._check_fn.sql))
    return [None, *sorted(found)]


def _value(rng: random.Random, dtype: pl.DataType, strings: list[str | None], valid: object) -> object:
    """A value from the pools of ``dtype``; of a struct, the ``valid`` one with one field changed."""
    if dtype == pl.Boolean:
        return rng.choice([None, True, False])
    if dtype == pl.Int64:
        return rng.choice([None, -1, 0, 1, 2])
    if dtype == pl.Float64:
        return rng.choice(FLOATS)
    if dtype == pl.String:
        return rng.choice(strings)
    if isinstance(dtype, pl.List) and dtype.inner == pl.String:
        return (
            None if rng.random() < 0.05 else [rng.choice(strings) for _ in range(rng.choice([0, 0, 1, 1, 2]))]
        )
    if isinstance(dtype, pl.Datetime):
        return rng.choice([None, T])
    if isinstance(dtype, pl.Struct) and valid is not None and rng.random() < 0.9:
        field = rng.choice(dtype.fields)
        return valid | {field.name: _value(rng, field.dtype, strings, valid[field.name])}
    return None


_CASE = {
    "case_id": "rc_1", "decision_id": "d1", "role_id": "swing_trader", "symbol": "GOOG", "scenario": None,
    "direction": "long", "account_id": "acct_1", "market": "us_equity", "decision_text": "buy the breakout",
    "provenance": "{}", "created_at": T, "updated_at": T, "quarantined": False,
}  # fmt: skip
_REFLECTION = {
    "reflection_id": "rf_1", "case_id": "rc_1", "role_id": "swing_trader", "run_id": "er_1",
    "outcome": "loss", "reflector": "rules", "reflected_at": T, "known_at": T, "case_chain_eligible": True,
}  # fmt: skip
# valid rows of each screened schema, which the random rows start from
VALID = {
    "evaluation_runs": [
        {
            "run_id": "er_1",
            "decision_id": "d1",
            "execution_id": "x1",
            "profile_id": "p",
            "run_version": v,
            "status": status,
            "is_primary": v == 1,
            "promoted_at": T if v == 1 else None,
            "created_at": T,
            "known_at": None if status == "pending" else T,
            "raw_return": raw,
            "benchmark_return": 0.5,
            "excess_return": None if raw is None else raw - 0.5,
            "inputs_hash": "0" * 64,
        }
        for v, status, raw in [(0, "pending", None), (1, "complete", 1.5), (2, "insufficient_data", 2.0)]
    ],
    "role_cases": [
        _CASE
        | {
            "execution_id": "x1",
            "primary_run_id": "er_1",
            "outcome": "win",
            "status": "eligible",
            "reasons": [],
            "scoring_eligible": True,
            "known_at": T,
            "chain_source": "manual_external",
            "chain_automation_flag": False,
            "chain_source_verified": True,
        },
        _CASE
        | {
            "execution_id": "x1",
            "primary_run_id": None,
            "outcome": None,
            "status": "pending",
            "reasons": ["not_settled"],
            "scoring_eligible": False,
            "known_at": None,
            "chain_source": "manual_agent",
            "chain_automation_flag": False,
            "chain_source_verified": None,
        },
        _CASE
        | {
            "execution_id": None,
            "primary_run_id": None,
            "outcome": None,
            "status": "ineligible",
            "reasons": ["no_execution", "not_settled"],
            "scoring_eligible": False,
            "known_at": None,
            "chain_source": None,
            "chain_automation_flag": None,
            "chain_source_verified": None,
        },
        _CASE
        | {
            "execution_id": "x1",
            "primary_run_id": None,
            "outcome": None,
            "status": "quarantined",
            "reasons": ["unknown_role"],
            "scoring_eligible": False,
            "known_at": None,
            "quarantined": True,
            "chain_source": "broker_sync",
            "chain_automation_flag": True,
            "chain_source_verified": False,
        },
    ],
    "role_cases_decision_coverage": [{"decision_id": "d1", "names_a_role": True, "n_cases": 1}],
    "role_reflections_batch": [
        _REFLECTION | {"classification": "logic_error", "trainable": True, "lesson": "size down on gaps"},
        _REFLECTION | {"classification": "variance", "trainable": False, "lesson": None},
    ],
}


def _valid(name: str) -> pl.DataFrame:
    if name == "fin_customer_profile":  # as the profile's build makes them
        return checked_profile()
    return pl.DataFrame(VALID[name], schema={n: c.dtype.type for n, c in SCREENED[name].columns.items()})


def _frame(schema: pa.DataFrameSchema, seed: int) -> pl.DataFrame:
    """Valid rows with up to three of the columns a rule reads each set to a value from the pools."""
    rng, strings, valid = random.Random(seed), _strings(schema), _valid(schema.name)
    read = sorted(set(schema.columns).union(*(check._check_fn.reads for check in schema.checks)))
    rows, bases = [], valid.to_dicts()
    for _ in range(ROWS):
        row = dict(rng.choice(bases))
        for name in rng.sample(read, rng.choice([0, 1, 1, 2, 3])):
            row[name] = _value(rng, valid.schema[name], strings, row[name])
        rows.append(row)
    return pl.DataFrame(rows, schema=valid.schema)


def _on_purpose(frame: pl.DataFrame) -> pl.Series:
    """Rows the screen flags whatever the rules say: a float not finite, a null reason."""
    flags = [
        ~frame.get_column(name).is_finite().fill_null(True)
        for name, dtype in frame.schema.items()
        if dtype == pl.Float64
    ]
    if "reasons" in frame.columns:
        flags.append(
            frame.get_column("reasons").list.eval(pl.element().is_null()).list.any().fill_null(False)
        )
    return (
        pl.DataFrame([pl.Series([False] * frame.height), *flags])
        .select(pl.any_horizontal(pl.all()))
        .to_series()
    )


def _pandera_fails(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> pl.Series:
    """Whether Pandera fails each row: each column's checks by Pandera on that column alone, each
    frame-wide rule as Pandera runs it (its frame of verdicts; Pandera's failure cases of a whole
    row cannot hold these mixed rows)."""
    fails = pl.Series([False] * frame.height)
    for name, column in schema.columns.items():
        failed = validate(pa.DataFrameSchema({name: column}), frame.select(name)).failure_cases
        fails |= pl.Series(range(frame.height)).is_in(failed.get_column("index").drop_nulls().implode())
    for check in schema.checks:
        fails |= ~check._check_fn(pa.PolarsData(frame.lazy())).collect().get_column("ok")
    return fails


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", list(SCREENED))
def test_a_row_the_screen_passes_pandera_passes(name, seed):
    schema = without_unique(SCREENED[name])
    frame = _frame(schema, seed)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("frame", frame.with_row_index("row"))
    screen = screen_sql(schema, frame.head(0))
    assert screen is not None, f"{name} has a rule without an SQL form"
    suspect = con.sql(f"SELECT {screen} AS s FROM frame ORDER BY row").pl().get_column("s")

    fails = _pandera_fails(schema, frame)

    assert not (fails & ~suspect).any(), frame.filter(fails & ~suspect).head(3)
    # not vacuous: rows pass and rows fail, and the screen flags a passing row only on purpose
    assert 0 < fails.sum() < ROWS
    flagged_passing = suspect & ~fails
    on_purpose = _on_purpose(frame)
    assert not (flagged_passing & ~on_purpose).any(), frame.filter(flagged_passing & ~on_purpose).head(3)


def test_a_rule_without_sql_or_a_check_without_one_means_no_screen():
    frame = pl.DataFrame({"a": [1]})
    with_sql = pa.DataFrameSchema({"a": pa.Column(pl.Int64, pa.Check.ge(0))}, name="s")
    assert (
        screen_sql(with_sql, frame) == 'NOT coalesce("a" IS NOT NULL AND ("a" IS NULL OR ("a" >= 0)), false)'
    )
    custom = pa.DataFrameSchema({"a": pa.Column(pl.Int64, pa.Check(lambda s: s > 0))}, name="s")
    assert screen_sql(custom, frame) is None
    no_twin = pa.DataFrameSchema(
        {"a": pa.Column(pl.Int64)}, name="s", checks=[pa.Check(row_rule(pl.col("a") > 0), name="pos")]
    )
    assert screen_sql(no_twin, frame) is None


def _runs(con) -> None:
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        "CREATE TABLE runs AS SELECT 'er_' || i AS run_id, 'd' || i AS decision_id, "
        "'x' || i AS execution_id, 'p' AS profile_id, 1::BIGINT AS run_version, 'complete' AS status, "
        "true AS is_primary, "
        "$t AS promoted_at, $t AS created_at, $t AS known_at, 0.5 * i::DOUBLE AS raw_return, "
        "0.25::DOUBLE AS benchmark_return, 0.5 * i::DOUBLE - 0.25 AS excess_return, "
        "repeat('0', 64) AS inputs_hash FROM range(40) r(i)",
        {"t": T},
    )


@pytest.mark.parametrize(
    ("tamper", "passes"),
    [
        (None, True),
        ("UPDATE runs SET excess_return = excess_return + 1e-9 WHERE run_id = 'er_7'", False),
        ("UPDATE runs SET promoted_at = NULL WHERE run_id IN ('er_3', 'er_30')", False),
        # flagged for Pandera to judge, which finds NaN - 0.25 equal to NaN
        (
            "UPDATE runs SET raw_return = 'nan'::DOUBLE, excess_return = 'nan'::DOUBLE WHERE run_id = 'er_5'",
            True,
        ),
    ],
    ids=["clean", "excess_off", "promoted_at_missing", "nan_returns"],
)
def test_pandera_reads_the_rows_only_when_the_screen_flags_one(tamper, passes, monkeypatch):
    con = duckdb.connect()
    _runs(con)
    if tamper:
        con.execute(tamper)
    streamed: list[str] = []
    real = validation.stream_validated

    def counting(con_, schema, query, *args, **kwargs):
        streamed.append(query)
        return real(con_, schema, query, *args, **kwargs)

    monkeypatch.setattr(validation, "stream_validated", counting)
    found, rows = validate_query(con, EVALUATION_RUNS_INVARIANTS, "SELECT * FROM runs", batch_rows=16)
    whole = validate(EVALUATION_RUNS_INVARIANTS, con.sql("SELECT * FROM runs").pl())

    assert rows == 40
    assert bool(streamed) == (tamper is not None)
    assert found.passed == whole.passed == passes
    # the same rules fail (a failure of a whole row is spelled with the columns that streamed)
    assert set(found.failure_cases.select("column", "check").rows()) == set(
        whole.failure_cases.select("column", "check").rows()
    )
