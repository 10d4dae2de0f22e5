"""Monthly partitions of the legacy migration, keyed on ``legacy_role_memory.created_at``.

They run from ``TRADINGMEM_MIGRATION_START`` to the month of the newest legacy row in the landing
file (or ``TRADINGMEM_MIGRATION_END``), not to the wall clock: the backfill dialog offers exactly
the months that hold data. Only with no legacy landing file at all do they run to the current month. The landing file is read once, when the code location loads (only its
``created_at`` column); a new month of legacy data appears after a reload.
"""

import os
from datetime import date
from pathlib import Path

import dagster as dg
import polars as pl

from tradingmem_assets.defs.landing.ingest import find_landing_file
from tradingmem_assets.settings import SETTINGS, default_landing_dir


def first_month(start: str, name: str = "TRADINGMEM_MIGRATION_START") -> str:
    """A month's first day from ``YYYY-MM[-DD]`` (the env var is named in the error)."""
    text = start.strip()
    try:
        day = date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError as exc:
        raise ValueError(
            f"{name}={start!r} is not a date like 2020-01-01 (a month of the migration)"
        ) from exc
    return day.replace(day=1).isoformat()


def newest_legacy_month(landing_dir: Path) -> str | None:
    """The month of the newest ``created_at`` in the legacy landing file (None: no file, no rows)."""
    try:
        path = find_landing_file(landing_dir, "legacy_role_memory")
        if path is None:
            return None
        frame = pl.scan_parquet(path) if path.suffix == ".parquet" else pl.scan_csv(path, infer_schema=False)
        # the month of every readable timestamp (a malformed one is a landing reject, not a month)
        month = pl.col("created_at").cast(pl.String).str.extract(r"^(\d{4}-(?:0[1-9]|1[0-2]))", 1)
        newest = frame.select(month.max()).collect().item()
    except Exception:  # an unreadable file fails its landing asset with a clear message, not the load
        return None
    return None if newest is None else first_month(newest)


def _month_after(month: str) -> str:
    day = date.fromisoformat(month)
    return (
        day.replace(year=day.year + 1, month=1) if day.month == 12 else day.replace(month=day.month + 1)
    ).isoformat()


def monthly_partitions(start: str, last: str | None = None) -> dg.MonthlyPartitionsDefinition:
    """Months ``start``..``last``; with no legacy data to bound them (no landing file at load),
    up to the current month, so rows landed later still have a partition."""
    first = first_month(start)
    if last is None:
        return dg.MonthlyPartitionsDefinition(start_date=first, timezone="UTC", end_offset=1)
    return dg.MonthlyPartitionsDefinition(
        start_date=first, end_date=_month_after(max(first, last)), timezone="UTC"
    )


def _last_month() -> str | None:
    end = os.environ.get("TRADINGMEM_MIGRATION_END", "").strip()
    if end:
        return first_month(end, "TRADINGMEM_MIGRATION_END")
    return newest_legacy_month(Path(default_landing_dir()))


LEGACY_MONTHLY_PARTITIONS = monthly_partitions(SETTINGS.migration_start, _last_month())
