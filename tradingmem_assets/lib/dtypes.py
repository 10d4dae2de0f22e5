"""The one timestamp type of the warehouse: UTC, microseconds (no Dagster here)."""

from __future__ import annotations

import polars as pl

UTC_TS = pl.Datetime("us", "UTC")


def as_utc(frame: pl.DataFrame) -> pl.DataFrame:
    """Every timestamp column as UTC microseconds (DuckDB may hand back 'Etc/UTC' or naive values)."""
    fixes = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime) and dtype != UTC_TS:
            col = pl.col(name)
            col = (
                col.dt.replace_time_zone("UTC")
                if dtype.time_zone is None
                else col.dt.convert_time_zone("UTC")
            )
            fixes.append(col.cast(UTC_TS).alias(name))
    return frame.with_columns(fixes) if fixes else frame
