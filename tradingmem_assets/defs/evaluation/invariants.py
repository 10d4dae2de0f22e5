"""Invariants of evaluation runs (SPEC section 4)."""

from collections.abc import Callable

import duckdb
import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.validation import (
    Validation,
    named_checks,
    row_rule,
    rule,
    validate,
    validate_query,
)
from tradingmem_assets.lib.vocabulary import EVALUATION_STATUSES
from tradingmem_assets.lib.whole_query import repeated_values

RUN_KEY = ("decision_id", "profile_id", "run_version")
# rows of one streamed batch: at SF 10 the 5.8 million runs are validated in six batches
RUN_BATCH_ROWS = 1_000_000

# the rule over a decision's runs, validated over the primary runs alone (the others add nothing)
PRIMARY_RUNS_RULES: dict[str, Callable] = {}


@rule(PRIMARY_RUNS_RULES, "at_most_one_primary_per_decision")
def _one_primary_per_decision(data: pa.PolarsData) -> pl.LazyFrame:
    return data.lazyframe.select(
        (pl.col("is_primary").cast(pl.Int64).sum().over("decision_id") <= 1).alias("ok")
    )


_pending = pl.col("status") == "pending"
# computed as that difference in SQL: the same doubles, exactly (null when a side is missing)
_difference = pl.col("raw_return") - pl.col("benchmark_return")
# the runs' rules over one row, by the check name a failure reports (each with its SQL twin)
EVALUATION_RUNS_RULES = {
    "primary_run_has_promoted_at": row_rule(
        ~pl.col("is_primary") | pl.col("promoted_at").is_not_null(),
        sql="NOT is_primary OR promoted_at IS NOT NULL",
    ),
    "version_0_is_the_open_window": row_rule(
        (pl.col("run_version") == 0) == _pending, sql="(run_version = 0) = (status = 'pending')"
    ),
    "known_at_once_settled": row_rule(
        pl.col("known_at").is_null() == _pending, sql="(known_at IS NULL) = (status = 'pending')"
    ),
    "excess_return_is_raw_minus_benchmark": row_rule(
        pl.col("excess_return").eq_missing(_difference)
        | (pl.col("excess_return") - _difference).abs().le(1e-12),
        sql="excess_return IS NOT DISTINCT FROM raw_return - benchmark_return "
        "OR abs(excess_return - (raw_return - benchmark_return)) <= 1e-12",
    ),
}


# Pandera sees the columns a rule reads; the ids' nulls and uniqueness are found in SQL
# (``validate_query``), and the 64-hex inputs_hash (SHA-256 output by construction) is checked for nulls.
EVALUATION_RUNS_INVARIANTS = pa.DataFrameSchema(
    {
        "run_id": pa.Column(pl.String, unique=True),
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
        "inputs_hash": pa.Column(pl.String),
    },
    name="evaluation_runs",
    unique=list(RUN_KEY),
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
    """Every invariant over ``relation`` (a run table), and the runs seen, with ``validate_query``:
    the rules of one run as the connection streams the runs, the unique run ids and run keys in
    SQL, and meanwhile the primary runs apart, for at most one per decision. With ``stored``, the
    table ``relation``'s runs were just written into (in place of every run of their decisions): a
    run id of theirs that another run there also has is a failure too, so a table valid before
    stays valid as a whole."""

    def across_runs() -> list[pl.DataFrame]:
        primaries = con.sql(f"SELECT decision_id, is_primary FROM {relation} WHERE is_primary").pl()
        found = [validate(PRIMARY_RUNS_INVARIANTS, primaries).failure_cases]
        if stored is not None:
            sharing = f"(SELECT run_id FROM {stored} WHERE run_id IN (SELECT run_id FROM {relation}))"
            found.append(repeated_values(con, sharing, "run_id"))
        return found

    return validate_query(
        con,
        EVALUATION_RUNS_INVARIANTS,
        f"SELECT * FROM {relation}",
        batch_rows=RUN_BATCH_ROWS,
        also=across_runs,
    )
