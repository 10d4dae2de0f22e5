"""Invariants of evaluation runs (SPEC section 4)."""

from collections.abc import Callable

import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.validation import (
    Validation,
    named_checks,
    repeated_values,
    rule,
    stream_validated,
    validate,
)
from tradingmem_assets.lib.vocabulary import EVALUATION_STATUSES

# What Pandera validates row by row: not the 64-hex inputs_hash (sha256 output by construction),
# nor run_id, whose one rule, uniqueness, is checked in SQL over the whole relation, as is the run
# key's (``repeated_values``).
VALIDATED_COLUMNS = (
    "decision_id, execution_id, profile_id, run_version, status, is_primary, promoted_at, created_at, "
    "known_at, raw_return, benchmark_return, excess_return"
)
RUN_KEY = ("decision_id", "profile_id", "run_version")
# rows of one streamed batch: at SF 10 the 5.8 million runs are validated in six batches
RUN_BATCH_ROWS = 1_000_000

# the runs' rules over one row, by the check name a failure reports
EVALUATION_RUNS_RULES: dict[str, Callable] = {}
# the rule over a decision's runs, validated over the primary runs alone (the others add nothing)
PRIMARY_RUNS_RULES: dict[str, Callable] = {}


@rule(PRIMARY_RUNS_RULES, "at_most_one_primary_per_decision")
def _one_primary_per_decision(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (pl.col("is_primary").cast(pl.Int64).sum().over("decision_id") <= 1).alias("ok")
    )


@rule(EVALUATION_RUNS_RULES, "primary_run_has_promoted_at")
def _primary_has_promotion_time(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select((~pl.col("is_primary") | pl.col("promoted_at").is_not_null()).alias("ok"))


@rule(EVALUATION_RUNS_RULES, "version_0_is_the_open_window")
def _version_zero_is_the_open_window(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        ((pl.col("run_version") == 0) == (pl.col("status") == "pending")).alias("ok")
    )


@rule(EVALUATION_RUNS_RULES, "known_at_once_settled")
def _known_once_settled(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (pl.col("known_at").is_null() == (pl.col("status") == "pending")).alias("ok")
    )


@rule(EVALUATION_RUNS_RULES, "excess_return_is_raw_minus_benchmark")
def _excess_is_raw_minus_benchmark(data: pa.PolarsData) -> pl.LazyFrame:
    # computed as that difference in SQL: the same doubles, exactly (null when a side is missing)
    difference = pl.col("raw_return") - pl.col("benchmark_return")
    return data.lazyframe.select(
        (
            pl.col("excess_return").eq_missing(difference)
            | (pl.col("excess_return") - difference).abs().le(1e-12)
        )
        .fill_null(False)
        .alias("ok")
    )


EVALUATION_RUNS_INVARIANTS = pa.DataFrameSchema(
    {
        "decision_id": pa.Column(pl.String),
        "execution_id": pa.Column(pl.String),
        "profile_id": pa.Column(pl.String),
        "run_version": pa.Column(pl.Int64, pa.Check.ge(0)),
        "status": pa.Column(pl.String, pa.Check.isin(list(EVALUATION_STATUSES))),
        "is_primary": pa.Column(pl.Boolean),
        "promoted_at": pa.Column(pl.Datetime("us", "UTC"), nullable=True),
        "created_at": pa.Column(pl.Datetime("us", "UTC")),
        "known_at": pa.Column(pl.Datetime("us", "UTC"), nullable=True),
        "raw_return": pa.Column(pl.Float64, nullable=True),
        "benchmark_return": pa.Column(pl.Float64, nullable=True),
        "excess_return": pa.Column(pl.Float64, nullable=True),
    },
    name="evaluation_runs",
    checks=named_checks(EVALUATION_RUNS_RULES),
)
PRIMARY_RUNS_INVARIANTS = pa.DataFrameSchema(
    {"decision_id": pa.Column(pl.String), "is_primary": pa.Column(pl.Boolean)},
    name="evaluation_runs",
    checks=named_checks(PRIMARY_RUNS_RULES),
)


def validate_runs(
    con: duckdb.DuckDBPyConnection, relation: str, stored: str | None = None
) -> tuple[Validation, int]:
    """Every invariant over ``relation`` (a run table), and the rows validated: Pandera validates
    the runs row by row as the connection streams them (``stream_validated``), then the primary
    runs for at most one per decision; the unique run ids and run keys are found in SQL over the
    whole relation meanwhile. With ``stored``, the table ``relation``'s runs were just written into
    (in place of every run of their decisions): a run id of theirs that another run there also has
    is a failure too, so a table valid before stays valid as a whole."""

    def on_the_connection() -> list[pl.DataFrame]:
        primaries = con.sql(f"SELECT decision_id, is_primary FROM {relation} WHERE is_primary").pl()
        found = [
            validate(PRIMARY_RUNS_INVARIANTS, primaries).failure_cases,
            repeated_values(con, relation, "run_id"),
            repeated_values(con, relation, RUN_KEY, EVALUATION_RUNS_INVARIANTS.name),
        ]
        if stored is not None:
            sharing = f"(SELECT run_id FROM {stored} WHERE run_id IN (SELECT run_id FROM {relation}))"
            found.append(repeated_values(con, sharing, "run_id"))
        return found

    return stream_validated(
        con,
        EVALUATION_RUNS_INVARIANTS,
        f"SELECT {VALIDATED_COLUMNS} FROM {relation}",
        RUN_BATCH_ROWS,
        on_the_connection,
    )
