"""The benchmark's two days: the landing folder as it stood at the end of a day, then one weekday later.

A run "after one more day of landing data" (SPEC section 14) reads landing files that grew by the
rows of that day. The demo world is written once, up to its anchor; these are the files as they
stood at an earlier instant: each Parquet file whose rows arrive by an instant of their own keeps
the rows stamped at or before it, the others are copied whole (their rows carry no arrival
instant, or, for the CSV files, a cut would rewrite the text the landing reads). A position's row
is the only one that changes after it arrives: it is kept as it stood then, still open when it
closed later.

The files are written in the order their rows arrived, as a feed appends them: the next day's file
starts with the earlier day's rows, unchanged and in the same order (the landing reads only the
rows after them: ``defs/landing/appended.py``), unless an earlier row changed: a position that
closed since it landed (the landing then reads that file whole).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from tradingmem_assets.defs.evaluation.incremental import VISIBLE_BY

# the column by which a row of each landing table arrives (the instant it was recorded): the
# evaluation's inputs by the column its point-in-time reads filter on, and the others
ARRIVES_BY = {
    **{table: column for table, column in VISIBLE_BY.items() if column is not None},
    "agent_turns": "started_at",
    "conversation_message": "created_at",
    "customer_transactions": "ts",
    "institution_runs": "started_at",
    "learning_feedback": "ts",
    "market_events": "ts",
    "memory_evidence": "created_at",
    "memory_unit": "created_at",
    "methodology_injections": "injected_at",
    "position_lifecycles": "opened_at",
    "trade_previews": "created_at",
}


def last_weekday(anchor: datetime) -> tuple[datetime, datetime]:
    """(start, end) of the last whole weekday ending at or before ``anchor``'s midnight: a full
    build at ``start``, then one more day of landing rows at ``end``."""
    end = anchor.replace(hour=0, minute=0, second=0, microsecond=0)
    while (end - timedelta(days=1)).weekday() >= 5:
        end -= timedelta(days=1)
    return end - timedelta(days=1), end


def positions_as_known(positions: pl.LazyFrame, until: datetime) -> pl.LazyFrame:
    """Position rows as they stood at ``until``: one that closed later was still open then."""
    later = pl.col("closed_at") > until
    return positions.with_columns(
        pl.when(later).then(pl.lit("open")).otherwise(pl.col("status")).alias("status"),
        *(pl.when(later).then(None).otherwise(pl.col(c)).alias(c) for c in ("closed_at", "realized_pnl")),
    )


def landing_until(source: Path, target: Path, until: datetime) -> dict[str, int]:
    """Write ``target`` as the landing folder ``source`` stood at ``until``; the rows kept per file."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    kept: dict[str, int] = {}
    for path in sorted(source.iterdir()):
        table = path.name.split(".")[0]
        column = ARRIVES_BY.get(table)
        scan = pl.scan_parquet(path) if path.suffix == ".parquet" else None
        if scan is None or column is None or not scan.collect_schema().get(column, pl.Null).is_temporal():
            shutil.copy(path, target / path.name)
            continue
        # a row without its instant is kept: the landing rejects it, on both days alike. The rows
        # are in the order they arrived, as a feed appends them (those without an instant first),
        # so a later day's file is the earlier one with that day's rows after it
        frame = scan.filter(pl.col(column).is_null() | (pl.col(column) <= until)).sort(
            column, nulls_last=False, maintain_order=True
        )
        if table == "position_lifecycles":
            frame = positions_as_known(frame, until)
        frame = frame.collect()
        frame.write_parquet(target / path.name)
        kept[table] = frame.height
    return kept
