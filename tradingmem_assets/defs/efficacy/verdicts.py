"""Memory efficacy (SPEC section 17): the Wilson intervals of both sides and the verdict rule.

Each subject compares the win rate of the outcomes *after* something was learned with the win
rate *before*. Both sides get the Wilson 95 % interval (z = 1.96) of their win rate; the verdict:

- ``insufficient_data`` when either side has fewer than ``MIN_OUTCOMES`` (10) outcomes;
- ``helps`` when the intervals do not overlap and after is above (after_low > before_high);
- ``hurts`` when they do not overlap and after is below (after_high < before_low);
- ``no_evidence`` otherwise (the intervals overlap).

A side without outcomes has no win rate (null) and the interval [0, 1] (nothing known).
"""

from __future__ import annotations

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.wilson import Z_95, wilson_interval, wilson_intervals

MIN_OUTCOMES = 10
HELPS, HURTS, NO_EVIDENCE, INSUFFICIENT_DATA = "helps", "hurts", "no_evidence", "insufficient_data"
VERDICTS = (HELPS, HURTS, NO_EVIDENCE, INSUFFICIENT_DATA)
SUBJECT_KINDS = ("lesson", "methodology", "injection")

MEMORY_EFFICACY_DTYPES = table_dtypes(tables.MEMORY_EFFICACY)
COUNT_COLUMNS = (
    "subject_kind",
    "subject_id",
    "role_id",
    "scope",
    "before_n",
    "before_wins",
    "after_n",
    "after_wins",
    "mean_excess_before",
    "mean_excess_after",
    "as_of",
)


def verdict(before_n: int, before_wins: int, after_n: int, after_wins: int, z: float = Z_95) -> str:
    """The verdict of one subject from its counts (the rule of this module's docstring)."""
    if before_n < MIN_OUTCOMES or after_n < MIN_OUTCOMES:
        return INSUFFICIENT_DATA
    before_low, before_high = wilson_interval(before_wins, before_n, z)
    after_low, after_high = wilson_interval(after_wins, after_n, z)
    if after_low > before_high:
        return HELPS
    if after_high < before_low:
        return HURTS
    return NO_EVIDENCE


def verdict_expr() -> pl.Expr:
    """``verdict`` over the interval columns of a frame (the same rule, vectorized)."""
    few = (pl.col("before_n") < MIN_OUTCOMES) | (pl.col("after_n") < MIN_OUTCOMES)
    return (
        pl.when(few)
        .then(pl.lit(INSUFFICIENT_DATA))
        .when(pl.col("after_low") > pl.col("before_high"))
        .then(pl.lit(HELPS))
        .when(pl.col("after_high") < pl.col("before_low"))
        .then(pl.lit(HURTS))
        .otherwise(pl.lit(NO_EVIDENCE))
    )


def with_verdicts(counts: pl.DataFrame, z: float = Z_95) -> pl.DataFrame:
    """The ``memory_efficacy`` rows from their counts (``COUNT_COLUMNS``): rates, intervals, verdict."""
    out = counts
    for side in ("before", "after"):
        n, wins = out.get_column(f"{side}_n").to_numpy(), out.get_column(f"{side}_wins").to_numpy()
        low, high = wilson_intervals(wins, n, z)
        out = out.with_columns(
            pl.when(pl.col(f"{side}_n") > 0)
            .then(pl.col(f"{side}_wins") / pl.col(f"{side}_n"))
            .otherwise(None)
            .alias(f"{side}_win_rate"),
            pl.Series(f"{side}_low", low, dtype=pl.Float64),
            pl.Series(f"{side}_high", high, dtype=pl.Float64),
        )
    out = out.with_columns(verdict_expr().alias("verdict"))
    return out.select(MEMORY_EFFICACY_DTYPES.names()).cast(MEMORY_EFFICACY_DTYPES)  # type: ignore[arg-type]


def verdict_counts(rows: pl.DataFrame) -> dict[str, int]:
    """Rows per verdict, every verdict present (0 when none)."""
    found = dict(rows.group_by("verdict").len().rows()) if rows.height else {}
    return {v: int(found.get(v, 0)) for v in VERDICTS}


def strongest_effects(rows: pl.DataFrame, limit: int = 10) -> pl.DataFrame:
    """The subjects with the largest win-rate change, both sides with enough outcomes, for people."""
    decided = rows.filter(pl.col("verdict") != INSUFFICIENT_DATA).with_columns(
        (pl.col("after_win_rate") - pl.col("before_win_rate")).alias("change")
    )
    top = decided.sort(
        [pl.col("change").abs(), "subject_kind", "subject_id", "scope"],
        descending=[True, False, False, False],
        nulls_last=True,
    ).head(limit)
    return top.select(
        "subject_kind",
        "subject_id",
        "role_id",
        "scope",
        pl.format("{}/{}", "before_wins", "before_n").alias("before"),
        _interval("before"),
        pl.format("{}/{}", "after_wins", "after_n").alias("after"),
        _interval("after"),
        pl.col("change").round(3),
        "verdict",
    )


def _interval(side: str) -> pl.Expr:
    rate = pl.col(f"{side}_win_rate").round(3).cast(pl.String).fill_null("-")
    low, high = (pl.col(f"{side}_{end}").round(3).cast(pl.String) for end in ("low", "high"))
    return pl.format("{} [{}, {}]", rate, low, high).alias(f"{side}_rate")


def markdown(frame: pl.DataFrame) -> str:
    """A small frame as a markdown table (values as shown, nulls empty)."""
    if frame.height == 0:
        return "(none)"
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([head, rule, *body])
