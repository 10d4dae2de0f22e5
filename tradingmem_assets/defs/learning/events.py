"""The methodology ladder's records: lifecycle events with deterministic ids, and injection hints
with the methodology's injectability at the instant of each injection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb
import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes

METHODOLOGY_CASE_HINTS_DTYPES = table_dtypes(tables.METHODOLOGY_CASE_HINTS)
METHODOLOGY_LIFECYCLE_EVENTS_DTYPES = table_dtypes(tables.METHODOLOGY_LIFECYCLE_EVENTS)


def hashed_ids(frame: pl.DataFrame, column: str, prefix: str, parts: Sequence[str]) -> pl.DataFrame:
    """Add ``column`` = prefix + first 16 hex of sha256(parts joined by '|'), computed set-based in DuckDB."""
    if frame.height == 0:
        return frame.with_columns(pl.lit(None, dtype=pl.String).alias(column))
    con = duckdb.connect()
    try:
        con.register("_f", frame.select([pl.col(p).cast(pl.String).fill_null("") for p in parts]))
        joined = " || '|' || ".join(f'"{p}"' for p in parts)
        ids = con.sql(f"SELECT '{prefix}' || left(sha256({joined}), 16) AS id FROM _f").pl()
    finally:
        con.close()
    return frame.with_columns(ids.get_column("id").alias(column))


def case_hints(
    injections: pl.DataFrame, timeline: pl.DataFrame, base: pl.DataFrame, run_ids: pl.Series, as_of: datetime
) -> pl.DataFrame:
    """Every injection at or before ``as_of`` with the methodology's injectability at that moment."""
    inj = injections.filter(pl.col("injected_at") <= as_of).sort("injected_at")
    # ties at one instant: the state after the last outcome of that instant (fold order: case_id)
    states = timeline.select("methodology_id", "recorded_at", "case_id", "graduated").sort(
        "recorded_at", "case_id"
    )
    hinted = inj.join_asof(
        states,
        left_on="injected_at",
        right_on="recorded_at",
        by="methodology_id",
        strategy="backward",
        check_sortedness=False,
    )
    hinted = hinted.with_columns(
        pl.col("graduated").fill_null(False).alias("injectable_at_injection"),
        pl.col("methodology_id")
        .is_in(base.get_column("methodology_id").implode())
        .alias("methodology_exists"),
        pl.col("run_id").is_in(run_ids.implode()).alias("run_exists"),
    )
    return (
        hinted.select(METHODOLOGY_CASE_HINTS_DTYPES.names())
        .cast(METHODOLOGY_CASE_HINTS_DTYPES)
        .sort("injected_at", "injection_id")
    )  # type: ignore[arg-type]


def all_events(candidate_events: pl.DataFrame, outcome_evts: pl.DataFrame) -> pl.DataFrame:
    """The lifecycle events with deterministic ids, in time order."""
    cand = candidate_events.rename({"source_id": "_source"}).with_columns(
        pl.col("_source").alias("source_output_id")  # the candidate that caused the event
    )
    outc = outcome_evts.rename({"case_id": "_source"}).with_columns(
        pl.lit(None, dtype=pl.String).alias("source_output_id")
    )
    both = pl.concat(
        [
            cand.select("_source", "methodology_id", "event", "ts", "detail", "source_output_id"),
            outc.select("_source", "methodology_id", "event", "ts", "detail", "source_output_id"),
        ]
    )
    both = hashed_ids(both, "event_id", "me_", ["event", "_source", "methodology_id"])
    order = pl.col("event").replace_strict(
        {
            "created": 0,
            "merged": 1,
            "rejected_injection": 2,
            "rejected_invalid": 3,
            "outcome_recorded": 4,
            "graduated": 5,
            "demoted": 6,
        },
        return_dtype=pl.Int64,
    )
    return (
        both.with_columns(order.alias("_order"))
        .sort("ts", "_order", "event_id")
        .select(METHODOLOGY_LIFECYCLE_EVENTS_DTYPES.names())
        .cast(METHODOLOGY_LIFECYCLE_EVENTS_DTYPES)  # type: ignore[arg-type]
    )
