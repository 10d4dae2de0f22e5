"""Invariants of evaluation runs (SPEC section 4)."""

from collections.abc import Callable

import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib.validation import named_checks, rule
from tradingmem_assets.lib.vocabulary import EVALUATION_STATUSES

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
    },
    name="evaluation_runs",
    unique=["decision_id", "profile_id", "run_version"],
    checks=named_checks(EVALUATION_RUNS_RULES),
)
