"""What one audit pass reads (SPEC section 9): its window and the learning rows, typed.

The audit's scoring functions take plain rows (Polars frames or sequences of dicts) of the
learning tables, the heartbeats and the known institution run ids. ``as_frame`` narrows such rows
to the columns a dimension needs, with the types it expects, and raises :class:`AuditInputError`
naming the table and column when one is missing. No database handle reaches this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from tradingmem_assets.lib.dtypes import UTC_TS


class AuditInputError(ValueError):
    """A learning table handed to the audit lacks a column the scoring needs (named in the message)."""


@dataclass(frozen=True)
class AuditWindow:
    """The closed interval ``[as_of - window_days, as_of]`` every dimension looks at."""

    start: datetime
    end: datetime
    days: int

    @classmethod
    def ending(cls, as_of: datetime, window_days: int) -> AuditWindow:
        if window_days < 1:
            raise ValueError(f"window_days must be at least 1, got {window_days}")
        return cls(start=as_of - timedelta(days=window_days), end=as_of, days=window_days)

    def contains(self, column: str) -> pl.Expr:
        return pl.col(column).is_between(pl.lit(self.start), pl.lit(self.end), closed="both")


METHODOLOGY_COLUMNS = {
    "methodology_id": pl.String,
    "quarantine": pl.Int64,
    "graduated_at": UTC_TS,
    "created_at": UTC_TS,
}
EVENT_COLUMNS = {"methodology_id": pl.String, "event": pl.String, "ts": UTC_TS}
CASE_COLUMNS = {
    "case_id": pl.String,
    "methodology_id": pl.String,
    "run_id": pl.String,
    "correct": pl.Boolean,
    "recorded_at": UTC_TS,
}
HINT_COLUMNS = {
    "methodology_id": pl.String,
    "run_id": pl.String,
    "injection_id": pl.String,
    "injected_at": UTC_TS,
    "injectable_at_injection": pl.Boolean,
}
HEARTBEAT_COLUMNS = {"status": pl.String, "ts": UTC_TS}
RUN_ID_COLUMNS = {"run_id": pl.String}

Rows = pl.DataFrame | Sequence[Mapping[str, Any]]


def _cast(column: str, dtype: pl.DataType, source: pl.DataType) -> pl.Expr:
    col = pl.col(column)
    if dtype == UTC_TS:
        if isinstance(source, pl.Datetime):
            return (
                col.dt.replace_time_zone("UTC")
                if source.time_zone is None
                else col.dt.convert_time_zone("UTC")
            ).dt.cast_time_unit("us")
        if source == pl.Date:
            return col.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        if source == pl.String:
            return col.str.to_datetime(time_zone="UTC", time_unit="us")
        return col.cast(UTC_TS)
    if dtype == pl.Boolean and source == pl.String:
        return col.str.to_lowercase().is_in(["true", "1", "t", "yes"])
    return col.cast(dtype)


def as_frame(rows: Rows, columns: Mapping[str, pl.DataType], table: str) -> pl.DataFrame:
    """The columns the scoring needs, typed; raises AuditInputError naming a missing column."""
    if isinstance(rows, pl.DataFrame):
        frame = rows
    else:
        rows = list(rows)
        if not rows:
            return pl.DataFrame(schema=dict(columns))
        missing = [c for c in columns if c not in rows[0]]
        if missing:
            raise AuditInputError(f"{table} rows have no column(s) {', '.join(missing)}")
        frame = pl.DataFrame({c: [r.get(c) for r in rows] for c in columns}, strict=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise AuditInputError(f"{table} has no column(s) {', '.join(missing)}")
    if frame.height == 0:
        return pl.DataFrame(schema=dict(columns))
    return frame.select(
        _cast(c, dtype, frame.schema[c]).alias(c) if frame.schema[c] != dtype else pl.col(c)
        for c, dtype in columns.items()
    )


@dataclass(frozen=True)
class AuditInputs:
    """Plain rows of everything one pass reads (learning tables, heartbeats, known run ids)."""

    methodologies: Rows = ()
    lifecycle_events: Rows = ()
    cases: Rows = ()
    case_hints: Rows = ()
    heartbeats: Rows = ()
    known_run_ids: Rows = ()
