"""Monthly partitions of the legacy migration, keyed on ``legacy_role_memory.created_at``."""

from datetime import date

import dagster as dg

from tradingmem_assets.settings import SETTINGS


def first_month(start: str) -> str:
    """The first partition key: TRADINGMEM_MIGRATION_START truncated to its month (YYYY-MM[-DD] accepted)."""
    text = start.strip()
    try:
        day = date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError as exc:
        raise ValueError(
            f"TRADINGMEM_MIGRATION_START={start!r} is not a date like 2020-01-01 (the first migrated month)"
        ) from exc
    return day.replace(day=1).isoformat()


def monthly_partitions(start: str) -> dg.MonthlyPartitionsDefinition:
    # end_offset=1: the current month is a partition too, so rows written this month are not left
    # without a partition until it ends (re-running that partition later replaces its rows).
    return dg.MonthlyPartitionsDefinition(start_date=first_month(start), timezone="UTC", end_offset=1)


LEGACY_MONTHLY_PARTITIONS = monthly_partitions(SETTINGS.migration_start)
