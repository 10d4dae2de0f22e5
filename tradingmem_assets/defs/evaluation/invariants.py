"""Invariants of evaluation runs (SPEC section 4)."""

from collections.abc import Callable

import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.validation import (
    Validation,
    buckets,
    named_checks,
    repeated_values,
    rule,
    validate_beside,
)
from tradingmem_assets.lib.vocabulary import EVALUATION_STATUSES

# What Pandera validates: not the 64-hex inputs_hash (sha256 output by construction), nor run_id,
# whose one rule, uniqueness, is checked in SQL over the whole relation (``repeated_values``).
VALIDATED_COLUMNS = (
    "decision_id, execution_id, profile_id, run_version, status, is_primary, promoted_at, created_at, "
    "known_at, raw_return, benchmark_return, excess_return"
)
# rows of one validation bucket: at SF 10 the 5.8 million runs are validated in six buckets
BUCKET_ROWS = 1_000_000

# the runs' rules over whole rows, by the check name a failure reports
EVALUATION_RUNS_RULES: dict[str, Callable] = {}


@rule(EVALUATION_RUNS_RULES, "at_most_one_primary_per_decision")
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
    unique=["decision_id", "profile_id", "run_version"],
    checks=named_checks(EVALUATION_RUNS_RULES),
)


def validate_runs(
    con: duckdb.DuckDBPyConnection, relation: str, stored: str | None = None
) -> tuple[Validation, int]:
    """Every invariant over ``relation`` (a run table), one decision bucket in Python at a time
    (each rule is per run or per decision; repeated run ids are found in SQL), and the rows
    validated. With ``stored``, the table ``relation``'s runs were just written into (in place of
    every run of their decisions): a run id of theirs that another run there also has is a
    failure too, so a table valid before stays valid as a whole.

    Pandera reads the buckets in a second thread while the connection finds the repeated run ids."""
    repeated = []

    def on_the_connection() -> None:
        repeated.append(repeated_values(con, relation, "run_id"))
        if stored is not None:
            sharing = f"(SELECT run_id FROM {stored} WHERE run_id IN (SELECT run_id FROM {relation}))"
            repeated.append(repeated_values(con, sharing, "run_id"))

    with buckets(con, relation, VALIDATED_COLUMNS, "decision_id", BUCKET_ROWS) as frames:
        validation, rows = validate_beside(EVALUATION_RUNS_INVARIANTS, frames, on_the_connection)
    return Validation(validation.schema_name, pl.concat([validation.failure_cases, *repeated])), rows
