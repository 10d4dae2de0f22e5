"""Legacy role-memory migration (SPEC section 11): row classification, and the module map.

A month of ``raw.legacy_role_memory`` is written to a deterministic Parquet backup whose sha256 is
recorded in a manifest; the migration reads the rows back *from those verified bytes*, so what is
migrated is exactly what was backed up (``core.migration_backup``). Every backed-up row ends up in
exactly one of: migrated (known role), quarantined (unknown role) or rejected (malformed), which is
what this module decides (``classify``) and what the conservation report counts
(``core.migration_report``). Partitions are Dagster's monthly keys (``partition_key_sql/expr``).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.vocabulary import MIGRATION_STATUSES

MIGRATED, QUARANTINED = MIGRATION_STATUSES
# A role that is not in the registry is quarantined, never mapped to a generic role.
UNKNOWN_ROLE = "unknown_role"
# Malformed rows: nothing trustworthy to migrate. Listed all that apply, sorted, joined by "; ".
MISSING_ROLE = "missing_role"
MISSING_CONTENT = "missing_content"
MISSING_PROVENANCE = "missing_provenance"
WRONG_PARTITION = "wrong_partition"
REJECT_REASONS = (MISSING_CONTENT, MISSING_PROVENANCE, MISSING_ROLE, WRONG_PARTITION)


def partition_key_sql(column: str = "created_at") -> str:
    """Dagster's monthly key (UTC month start, ``YYYY-MM-01``) of a timestamp, as DuckDB SQL."""
    return f"strftime(date_trunc('month', {column}), '%Y-%m-%d')"


def partition_key_expr(column: str = "created_at") -> pl.Expr:
    """The same monthly key as a Polars expression."""
    return pl.col(column).dt.convert_time_zone("UTC").dt.truncate("1mo").dt.strftime("%Y-%m-%d")


MIGRATED_ROLE_CASES_DTYPES = table_dtypes(tables.MIGRATED_ROLE_CASES)
MIGRATION_REJECTS_DTYPES = table_dtypes(tables.MIGRATION_REJECTS)

# --- classification ---------------------------------------------------------------------------


# what a legacy row carries as it was into a migrated case or a reject: its text, then its context
LEGACY_TEXT = ("content", "provenance", pl.col("score").alias("legacy_score"))
LEGACY_CONTEXT = ("symbol", "decision_id", "created_at")


def _blank(column: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column).str.strip_chars() == "")


def classify(rows: pl.DataFrame, roles: Mapping[str, str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split backed-up rows into role cases (migrated / quarantined) and rejects with reasons.

    ``roles`` maps each registered role_id to its skill. Role names match exactly (no trimming,
    no case folding): anything else is an unknown role and goes to quarantine. Text and
    provenance are copied as they are, byte for byte.
    """
    registry = pl.DataFrame(
        {"role": list(roles), "skill_id": list(roles.values())},
        schema={"role": pl.String, "skill_id": pl.String},
    )
    flagged = rows.with_columns(
        pl.concat_list(
            pl.when(_blank("content")).then(pl.lit(MISSING_CONTENT)),
            pl.when(_blank("provenance")).then(pl.lit(MISSING_PROVENANCE)),
            pl.when(_blank("role")).then(pl.lit(MISSING_ROLE)),
            pl.when(partition_key_expr("created_at") != pl.col("partition_key")).then(
                pl.lit(WRONG_PARTITION)
            ),
        )
        .list.drop_nulls()
        .list.sort()
        .list.join("; ")
        .alias("_reject")
    ).join(registry, on="role", how="left", maintain_order="left")

    rejects = (
        flagged.filter(pl.col("_reject") != "")
        .select(
            "legacy_id",
            "partition_key",
            pl.col("_reject").alias("reason"),
            "role",
            *LEGACY_TEXT,
            *LEGACY_CONTEXT,
            "backup_sha256",
        )
        .cast(dict(MIGRATION_REJECTS_DTYPES))  # type: ignore[arg-type]
        .sort("partition_key", "legacy_id")
    )
    known = pl.col("skill_id").is_not_null()
    cases = (
        flagged.filter(pl.col("_reject") == "")
        .select(
            "legacy_id",
            pl.col("role").alias("role_id"),
            "skill_id",
            *LEGACY_TEXT,
            pl.when(known).then(pl.lit(MIGRATED)).otherwise(pl.lit(QUARANTINED)).alias("status"),
            pl.when(known)
            .then(pl.lit(None, dtype=pl.String))
            .otherwise(pl.lit(UNKNOWN_ROLE))
            .alias("reason"),
            # migrated memory is history, never evidence: it is not scoring-eligible, ever
            pl.lit(False).alias("scoring_eligible"),
            *LEGACY_CONTEXT,
            "partition_key",
            "backup_sha256",
        )
        .cast(dict(MIGRATED_ROLE_CASES_DTYPES))  # type: ignore[arg-type]
        .sort("partition_key", "legacy_id")
    )
    return cases, rejects
