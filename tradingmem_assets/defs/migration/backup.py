"""Legacy role-memory backups (SPEC section 11): deterministic Parquet bytes, manifest, verification.

``legacy_rows`` reads a month of ``raw.legacy_role_memory``; ``encode_backup`` turns it into
Parquet bytes that are the same for the same rows; the manifest (``migration_backups``) records
each backup's path, row count and sha256. The migration only ever reads rows back through
``load_verified_backups``, which checks every file against its manifest sha256 first.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.migration.classification import partition_key_sql
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.dtypes import UTC_TS
from tradingmem_assets.lib.warehouse import read_frame, table_exists

LEGACY_TABLE = tables.raw_table("legacy_role_memory")
BACKUP_SUBDIR = "legacy_role_memory"

LEGACY_ROLE_MEMORY_DTYPES: pl.Schema = LANDING_TABLES["legacy_role_memory"].polars_schema()
LEGACY_COLUMNS: list[str] = list(LEGACY_ROLE_MEMORY_DTYPES.names())

# The backup's Arrow schema, fixed so the same rows always give the same bytes.
_ARROW_TYPES = {pl.String(): pa.string(), pl.Float64(): pa.float64(), UTC_TS: pa.timestamp("us", tz="UTC")}
LEGACY_BACKUP_ARROW_TYPES = pa.schema(
    [pa.field(name, _ARROW_TYPES[dtype]) for name, dtype in LEGACY_ROLE_MEMORY_DTYPES.items()]
)

MIGRATION_BACKUPS_DTYPES = table_dtypes(tables.MIGRATION_BACKUPS)


class MigrationInputError(RuntimeError):
    """The migration cannot start (no raw table, no backup manifest); the message says what to run."""


class BackupIntegrityError(RuntimeError):
    """A backup file is missing or differs from its manifest; the message names file and checksums.

    ``problems`` holds one dict per bad file (partition_key, path, expected_sha256, actual_sha256;
    actual is None for a missing file), so callers can report them as data.
    """

    def __init__(self, message: str, problems: Sequence[Mapping[str, str | None]] = ()):
        super().__init__(message)
        self.problems: list[dict[str, str | None]] = [dict(p) for p in problems]


def backup_path(backup_dir: str | Path, partition_key: str) -> Path:
    """Where a partition's backup lives: ``<backup_dir>/legacy_role_memory/<partition>.parquet``."""
    return Path(backup_dir).resolve() / BACKUP_SUBDIR / f"{partition_key}.parquet"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- reading the legacy rows ------------------------------------------------------------------


def require_legacy_table(con: duckdb.DuckDBPyConnection) -> None:
    if not table_exists(con, LEGACY_TABLE):
        raise MigrationInputError(
            f"{LEGACY_TABLE} does not exist yet: materialize the landing asset raw/legacy_role_memory "
            "first (dagster asset materialize -m tradingmem_assets.definitions "
            "--select raw/legacy_role_memory)"
        )


def legacy_rows(con: duckdb.DuckDBPyConnection, partition_keys: Sequence[str]) -> pl.DataFrame:
    """The raw legacy rows of the given months, with their ``partition_key``, in backup order."""
    require_legacy_table(con)
    cols = ", ".join(f'"{c}"' for c in LEGACY_COLUMNS)
    frame = read_frame(
        con,
        f"SELECT {partition_key_sql()} AS partition_key, {cols} FROM {LEGACY_TABLE} "
        f"WHERE list_contains(?, {partition_key_sql()}) ORDER BY partition_key, legacy_id",
        [list(partition_keys)],
    )
    return frame.cast({"partition_key": pl.String(), **dict(LEGACY_ROLE_MEMORY_DTYPES)})  # type: ignore[arg-type]


def rows_outside_partitions(con: duckdb.DuckDBPyConnection, first_key: str, last_key: str) -> pl.DataFrame:
    """Legacy rows no partition covers (before the first month or after the last): never silently lost."""
    require_legacy_table(con)
    return read_frame(
        con,
        f"SELECT {partition_key_sql()} AS partition_key, count(*) AS rows FROM {LEGACY_TABLE} "
        f"WHERE {partition_key_sql()} < ? OR {partition_key_sql()} > ? GROUP BY ALL ORDER BY ALL",
        [first_key, last_key],
    )


# --- backups ----------------------------------------------------------------------------------


def encode_backup(rows: pl.DataFrame) -> bytes:
    """Deterministic Parquet bytes of one partition's legacy rows (same rows, same bytes).

    Rows are sorted by ``legacy_id``, the Arrow schema is fixed and every writer option is
    explicit; the writer records its library version, so bytes are stable for a given
    pyarrow version. Verification always compares with the manifest, never re-encodes.
    """
    table = (
        rows.select(LEGACY_COLUMNS).cast(dict(LEGACY_ROLE_MEMORY_DTYPES)).sort("legacy_id").to_arrow()  # type: ignore[arg-type]
    ).cast(LEGACY_BACKUP_ARROW_TYPES)
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=1 << 20,
        compression="zstd",
        compression_level=3,
        use_dictionary=False,
        write_statistics=True,
        data_page_version="1.0",
        version="2.6",
        store_schema=True,
    )
    return sink.getvalue()


def decode_backup(data: bytes) -> pl.DataFrame:
    """The legacy rows held in backup bytes."""
    frame = pl.read_parquet(io.BytesIO(data))
    return frame.select(LEGACY_COLUMNS).cast(dict(LEGACY_ROLE_MEMORY_DTYPES))  # type: ignore[arg-type]


@dataclass(frozen=True)
class PreparedBackup:
    partition_key: str
    path: Path
    data: bytes
    row_count: int

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)


def prepare_backups(
    rows: pl.DataFrame, partition_keys: Sequence[str], backup_dir: str | Path
) -> list[PreparedBackup]:
    """One backup per partition key, empty partitions included (an empty file proves zero rows)."""
    by_key = {k[0]: part for k, part in rows.partition_by("partition_key", as_dict=True).items()}
    out = []
    for key in partition_keys:
        part = by_key.get(key, rows.clear())
        out.append(PreparedBackup(key, backup_path(backup_dir, key), encode_backup(part), part.height))
    return out


def stage_backup(backup: PreparedBackup) -> Path | None:
    """Write the bytes next to their final path; None when the file already holds exactly these bytes."""
    if backup.path.exists() and sha256_hex(backup.path.read_bytes()) == backup.sha256:
        return None
    backup.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = backup.path.with_suffix(".parquet.tmp")
    with open(tmp, "wb") as fh:
        fh.write(backup.data)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def manifest_rows(backups: Sequence[PreparedBackup], previous: pl.DataFrame, as_of) -> pl.DataFrame:
    """Manifest rows; an unchanged backup (same sha256) keeps its original ``created_at``."""
    fresh = pl.DataFrame(
        {
            "partition_key": [b.partition_key for b in backups],
            "path": [str(b.path) for b in backups],
            "row_count": [b.row_count for b in backups],
            "sha256": [b.sha256 for b in backups],
        },
        schema={k: v for k, v in MIGRATION_BACKUPS_DTYPES.items() if k != "created_at"},
    )
    prev = previous.select("partition_key", "sha256", pl.col("created_at").alias("_prev"))
    return (
        fresh.join(prev, on=["partition_key", "sha256"], how="left")
        .with_columns(pl.coalesce("_prev", pl.lit(as_of, dtype=UTC_TS)).alias("created_at"))
        .select(MIGRATION_BACKUPS_DTYPES.names())
        .cast(dict(MIGRATION_BACKUPS_DTYPES))  # type: ignore[arg-type]
        .sort("partition_key")
    )


def verify_backup(partition_key: str, path: str | Path, expected_sha256: str) -> bytes:
    """The backup's bytes, after checking them against the manifest's sha256."""
    problem = {"partition_key": partition_key, "path": str(path), "expected_sha256": expected_sha256}
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise BackupIntegrityError(
            f"backup file {path} of partition {partition_key} is missing (expected sha256 "
            f"{expected_sha256}); re-run legacy_role_memory_backup for {partition_key}",
            [{**problem, "actual_sha256": None}],
        ) from exc
    actual = sha256_hex(data)
    if actual != expected_sha256:
        raise BackupIntegrityError(
            f"backup file {path} of partition {partition_key} was modified after the backup: "
            f"expected sha256 {expected_sha256}, actual sha256 {actual}. Restore the file, or re-run "
            f"legacy_role_memory_backup for {partition_key} to take a new backup from raw.",
            [{**problem, "actual_sha256": actual}],
        )
    return data


def read_manifest(con: duckdb.DuckDBPyConnection, table: str, partition_keys: Sequence[str]) -> pl.DataFrame:
    if not table_exists(con, table):
        return pl.DataFrame(schema=MIGRATION_BACKUPS_DTYPES)
    return read_frame(
        con,
        f"SELECT * FROM {table} WHERE list_contains(?, partition_key) ORDER BY ALL",
        [list(partition_keys)],
    ).cast(dict(MIGRATION_BACKUPS_DTYPES))  # type: ignore[arg-type]


def manifest_by_key(manifest: pl.DataFrame) -> dict[str, dict]:
    """Manifest rows as dicts, keyed by partition."""
    return {row["partition_key"]: row for row in manifest.iter_rows(named=True)}


def load_verified_backups(manifest: pl.DataFrame, partition_keys: Sequence[str]) -> pl.DataFrame:
    """All rows of the partitions' backups, read from verified bytes; any problem raises for all of them.

    The returned frame carries ``partition_key`` (the backup's, not recomputed) and
    ``backup_sha256`` so every migrated row says which backup it came from.
    """
    known = manifest_by_key(manifest)
    missing = [k for k in partition_keys if k not in known]
    if missing:
        raise MigrationInputError(
            f"no backup recorded in migration_backups for partition(s) {', '.join(missing)}: "
            "materialize legacy_role_memory_backup for them first"
        )
    messages: list[str] = []
    problems: list[dict] = []
    frames: list[pl.DataFrame] = []
    for key in partition_keys:
        entry = known[key]
        try:
            data = verify_backup(key, entry["path"], entry["sha256"])
        except BackupIntegrityError as exc:
            messages.append(str(exc))
            problems.extend(exc.problems)
            continue
        frames.append(
            decode_backup(data).with_columns(
                pl.lit(key).alias("partition_key"), pl.lit(entry["sha256"]).alias("backup_sha256")
            )
        )
    if problems:
        raise BackupIntegrityError("\n".join(messages), problems)
    empty = pl.DataFrame(
        schema={**dict(LEGACY_ROLE_MEMORY_DTYPES), "partition_key": pl.String(), "backup_sha256": pl.String()}
    )
    return pl.concat([empty, *frames], how="diagonal_relaxed") if frames else empty
