"""Legacy role-memory conservation report (SPEC section 11): every backed-up row is accounted for.

Per partition, rows in (from a backup whose file still matches the manifest) must equal migrated +
quarantined + rejected rows, all read from that very backup; ``detail`` says why a partition is
not conserved.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq

from tradingmem_assets.defs.migration.backup import manifest_by_key, sha256_hex
from tradingmem_assets.defs.migration.classification import MIGRATED, QUARANTINED
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.warehouse import read_frame, table_exists

MIGRATION_CONSERVATION_REPORT_DTYPES = table_dtypes(tables.MIGRATION_CONSERVATION_REPORT)


# what inspect_backups finds of each partition's backup: the manifest's word and the file's
BACKUP_INSPECTION_DTYPES = pl.Schema(
    {
        "partition_key": pl.String(),
        "path": pl.String(),
        "manifest_sha256": pl.String(),
        "manifest_rows": pl.Int64(),
        "file_sha256": pl.String(),
        "file_rows": pl.Int64(),
    }
)


def inspect_backups(manifest: pl.DataFrame, partition_keys: Sequence[str]) -> pl.DataFrame:
    """Re-read every partition's backup now: does the file still match the manifest, how many rows."""
    known = manifest_by_key(manifest)
    out = []
    for key in partition_keys:
        entry = known.get(key)
        file_sha, file_rows = None, None
        if entry is not None and Path(entry["path"]).exists():
            data = Path(entry["path"]).read_bytes()
            file_sha = sha256_hex(data)
            try:
                file_rows = pq.read_metadata(io.BytesIO(data)).num_rows
            except Exception:  # an unreadable file is reported as such, not raised
                file_rows = None
        out.append(
            {
                "partition_key": key,
                "path": entry["path"] if entry else None,
                "manifest_sha256": entry["sha256"] if entry else None,
                "manifest_rows": entry["row_count"] if entry else None,
                "file_sha256": file_sha,
                "file_rows": file_rows,
            }
        )
    return pl.DataFrame(out, schema=BACKUP_INSPECTION_DTYPES, orient="row")


def partition_counts(
    con: duckdb.DuckDBPyConnection, cases_table: str, rejects_table: str, partition_keys: Sequence[str]
) -> pl.DataFrame:
    """Per partition: migrated, quarantined and rejected rows, and from which backups they were read."""
    keys = pl.DataFrame({"partition_key": list(partition_keys)}, schema={"partition_key": pl.String})
    counts = pl.DataFrame(
        schema={
            "partition_key": pl.String,
            "migrated": pl.Int64,
            "quarantined": pl.Int64,
            "rejected": pl.Int64,
            "source_shas": pl.List(pl.String),
        }
    )
    if table_exists(con, cases_table) and table_exists(con, rejects_table):
        counts = read_frame(
            con,
            f"""
            WITH rows AS (
                SELECT partition_key, status, backup_sha256 FROM {cases_table}
                WHERE list_contains(?, partition_key)
                UNION ALL
                SELECT partition_key, 'rejected', backup_sha256 FROM {rejects_table}
                WHERE list_contains(?, partition_key)
            )
            SELECT partition_key,
                   count(*) FILTER (status = '{MIGRATED}')::BIGINT AS migrated,
                   count(*) FILTER (status = '{QUARANTINED}')::BIGINT AS quarantined,
                   count(*) FILTER (status = 'rejected')::BIGINT AS rejected,
                   list_sort(list_distinct(list(backup_sha256))) AS source_shas
            FROM rows GROUP BY partition_key
            """,
            [list(partition_keys), list(partition_keys)],
        ).cast(dict(counts.schema))  # type: ignore[arg-type]
    return keys.join(counts, on="partition_key", how="left").with_columns(
        pl.col("migrated", "quarantined", "rejected").fill_null(0),
        pl.col("source_shas").fill_null(pl.lit([], dtype=pl.List(pl.String))),
    )


def conservation_report(backups: pl.DataFrame, counts: pl.DataFrame) -> pl.DataFrame:
    """One row per partition: rows in = migrated + quarantined + rejected, from an intact backup.

    ``checksum_ok`` means the backup file on disk still has the manifest's sha256 and every
    migrated/rejected row of the partition was read from that very backup (a migration older
    than the current backup is not checksum-verified). ``detail`` says why a partition is not
    conserved.
    """
    f = backups.join(counts, on="partition_key", how="left")
    file_ok = pl.col("file_sha256").is_not_null() & (pl.col("file_sha256") == pl.col("manifest_sha256"))
    sources_ok = (
        pl.col("source_shas").list.set_difference(pl.concat_list(pl.col("manifest_sha256"))).list.len() == 0
    )
    checksum_ok = (file_ok & sources_ok).fill_null(False)
    rows_in = pl.coalesce(pl.when(file_ok).then(pl.col("file_rows")), pl.col("manifest_rows"), pl.lit(0))
    total = pl.col("migrated") + pl.col("quarantined") + pl.col("rejected")
    balanced = (rows_in == total).fill_null(False)
    rows_agree = (pl.col("manifest_rows") == pl.col("file_rows")).fill_null(False)
    detail = pl.concat_list(
        pl.when(pl.col("manifest_sha256").is_null()).then(pl.lit("no backup in migration_backups")),
        pl.when(pl.col("manifest_sha256").is_not_null() & pl.col("file_sha256").is_null()).then(
            pl.format("backup file {} is missing", pl.col("path"))
        ),
        pl.when(pl.col("file_sha256").is_not_null() & ~file_ok).then(
            pl.format(
                "backup file {} changed: expected sha256 {}, actual sha256 {}",
                pl.col("path"),
                pl.col("manifest_sha256"),
                pl.col("file_sha256"),
            )
        ),
        pl.when(~sources_ok.fill_null(True)).then(
            pl.lit("migrated rows come from another backup: re-run migrated_role_cases")
        ),
        pl.when(file_ok & ~rows_agree).then(pl.lit("manifest row_count differs from the file")),
        pl.when(~balanced).then(
            pl.format(
                "rows_in {} != migrated {} + quarantined {} + rejected {}",
                rows_in,
                pl.col("migrated"),
                pl.col("quarantined"),
                pl.col("rejected"),
            )
        ),
    ).list.drop_nulls()
    return (
        f.select(
            "partition_key",
            rows_in.cast(pl.Int64).alias("rows_in"),
            "migrated",
            "quarantined",
            "rejected",
            checksum_ok.alias("checksum_ok"),
            (checksum_ok & balanced & rows_agree).alias("conserved"),
            pl.col("manifest_sha256").alias("backup_sha256"),
            pl.when(detail.list.len() > 0).then(detail.list.join("; ")).alias("detail"),
        )
        .cast(dict(MIGRATION_CONSERVATION_REPORT_DTYPES))  # type: ignore[arg-type]
        .sort("partition_key")
    )
