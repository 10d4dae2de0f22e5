"""Legacy role-memory migration (SPEC section 11): backups, classification, conservation.

A month of ``raw.legacy_role_memory`` is written to a deterministic Parquet backup whose
sha256 is recorded in a manifest; the migration reads the rows back *from those verified
bytes*, so what is migrated is exactly what was backed up. Every backed-up row ends up in
exactly one of: migrated (known role), quarantined (unknown role) or rejected (malformed),
which is what the conservation report counts.
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

from tradingmem_assets.core.vocabulary import MIGRATION_STATUSES
from tradingmem_assets.schemas.landing import LANDING_TABLES
from tradingmem_assets.warehouse import read_frame, table_exists

LEGACY_TABLE = "raw.legacy_role_memory"
BACKUP_SUBDIR = "legacy_role_memory"

MIGRATED, QUARANTINED = MIGRATION_STATUSES
# A role that is not in the registry is quarantined, never mapped to a generic role.
UNKNOWN_ROLE = "unknown_role"
# Malformed rows: nothing trustworthy to migrate. Listed all that apply, sorted, joined by "; ".
MISSING_ROLE = "missing_role"
MISSING_CONTENT = "missing_content"
MISSING_PROVENANCE = "missing_provenance"
WRONG_PARTITION = "wrong_partition"
REJECT_REASONS = (MISSING_CONTENT, MISSING_PROVENANCE, MISSING_ROLE, WRONG_PARTITION)

UTC_TS = pl.Datetime("us", "UTC")
LEGACY_SCHEMA: pl.Schema = LANDING_TABLES["legacy_role_memory"].polars_schema()
LEGACY_COLUMNS: list[str] = list(LEGACY_SCHEMA.names())

# The backup's Arrow schema, fixed so the same rows always give the same bytes.
_ARROW_TYPES = {pl.String(): pa.string(), pl.Float64(): pa.float64(), UTC_TS: pa.timestamp("us", tz="UTC")}
BACKUP_ARROW_SCHEMA = pa.schema(
    [pa.field(name, _ARROW_TYPES[dtype]) for name, dtype in LEGACY_SCHEMA.items()]
)

MANIFEST_SCHEMA = pl.Schema(
    {
        "partition_key": pl.String(),
        "path": pl.String(),
        "row_count": pl.Int64(),
        "sha256": pl.String(),
        "created_at": UTC_TS,
    }
)
CASES_SCHEMA = pl.Schema(
    {
        "legacy_id": pl.String(),
        "role_id": pl.String(),
        "skill_id": pl.String(),
        "content": pl.String(),
        "provenance": pl.String(),
        "legacy_score": pl.Float64(),
        "status": pl.String(),
        "reason": pl.String(),
        "scoring_eligible": pl.Boolean(),
        "symbol": pl.String(),
        "decision_id": pl.String(),
        "created_at": UTC_TS,
        "partition_key": pl.String(),
        "backup_sha256": pl.String(),
    }
)
REJECTS_SCHEMA = pl.Schema(
    {
        "legacy_id": pl.String(),
        "partition_key": pl.String(),
        "reason": pl.String(),
        "role": pl.String(),
        "content": pl.String(),
        "provenance": pl.String(),
        "legacy_score": pl.Float64(),
        "symbol": pl.String(),
        "decision_id": pl.String(),
        "created_at": UTC_TS,
        "backup_sha256": pl.String(),
    }
)
REPORT_SCHEMA = pl.Schema(
    {
        "partition_key": pl.String(),
        "rows_in": pl.Int64(),
        "migrated": pl.Int64(),
        "quarantined": pl.Int64(),
        "rejected": pl.Int64(),
        "checksum_ok": pl.Boolean(),
        "conserved": pl.Boolean(),
        "backup_sha256": pl.String(),
        "detail": pl.String(),
    }
)


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


def partition_key_sql(column: str = "created_at") -> str:
    """Dagster's monthly key (UTC month start, ``YYYY-MM-01``) of a timestamp, as DuckDB SQL."""
    return f"strftime(date_trunc('month', {column}), '%Y-%m-%d')"


def partition_key_expr(column: str = "created_at") -> pl.Expr:
    """The same monthly key as a Polars expression."""
    return pl.col(column).dt.convert_time_zone("UTC").dt.truncate("1mo").dt.strftime("%Y-%m-%d")


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
    return frame.cast({"partition_key": pl.String(), **dict(LEGACY_SCHEMA)})  # type: ignore[arg-type]


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
        rows.select(LEGACY_COLUMNS).cast(dict(LEGACY_SCHEMA)).sort("legacy_id").to_arrow()  # type: ignore[arg-type]
    ).cast(BACKUP_ARROW_SCHEMA)
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
    return frame.select(LEGACY_COLUMNS).cast(dict(LEGACY_SCHEMA))  # type: ignore[arg-type]


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
        schema={k: v for k, v in MANIFEST_SCHEMA.items() if k != "created_at"},
    )
    prev = previous.select("partition_key", "sha256", pl.col("created_at").alias("_prev"))
    return (
        fresh.join(prev, on=["partition_key", "sha256"], how="left")
        .with_columns(pl.coalesce("_prev", pl.lit(as_of, dtype=UTC_TS)).alias("created_at"))
        .select(MANIFEST_SCHEMA.names())
        .cast(dict(MANIFEST_SCHEMA))  # type: ignore[arg-type]
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
        return pl.DataFrame(schema=MANIFEST_SCHEMA)
    return read_frame(
        con,
        f"SELECT * FROM {table} WHERE list_contains(?, partition_key) ORDER BY ALL",
        [list(partition_keys)],
    ).cast(dict(MANIFEST_SCHEMA))  # type: ignore[arg-type]


def load_verified_backups(manifest: pl.DataFrame, partition_keys: Sequence[str]) -> pl.DataFrame:
    """All rows of the partitions' backups, read from verified bytes; any problem raises for all of them.

    The returned frame carries ``partition_key`` (the backup's, not recomputed) and
    ``backup_sha256`` so every migrated row says which backup it came from.
    """
    known = {row["partition_key"]: row for row in manifest.iter_rows(named=True)}
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
        schema={**dict(LEGACY_SCHEMA), "partition_key": pl.String(), "backup_sha256": pl.String()}
    )
    return pl.concat([empty, *frames], how="diagonal_relaxed") if frames else empty


# --- classification ---------------------------------------------------------------------------


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
            "content",
            "provenance",
            pl.col("score").alias("legacy_score"),
            "symbol",
            "decision_id",
            "created_at",
            "backup_sha256",
        )
        .cast(dict(REJECTS_SCHEMA))  # type: ignore[arg-type]
        .sort("partition_key", "legacy_id")
    )
    known = pl.col("skill_id").is_not_null()
    cases = (
        flagged.filter(pl.col("_reject") == "")
        .select(
            "legacy_id",
            pl.col("role").alias("role_id"),
            "skill_id",
            "content",
            "provenance",
            pl.col("score").alias("legacy_score"),
            pl.when(known).then(pl.lit(MIGRATED)).otherwise(pl.lit(QUARANTINED)).alias("status"),
            pl.when(known)
            .then(pl.lit(None, dtype=pl.String))
            .otherwise(pl.lit(UNKNOWN_ROLE))
            .alias("reason"),
            # migrated memory is history, never evidence: it is not scoring-eligible, ever
            pl.lit(False).alias("scoring_eligible"),
            "symbol",
            "decision_id",
            "created_at",
            "partition_key",
            "backup_sha256",
        )
        .cast(dict(CASES_SCHEMA))  # type: ignore[arg-type]
        .sort("partition_key", "legacy_id")
    )
    return cases, rejects


# --- conservation -----------------------------------------------------------------------------


def inspect_backups(manifest: pl.DataFrame, partition_keys: Sequence[str]) -> pl.DataFrame:
    """Re-read every partition's backup now: does the file still match the manifest, how many rows."""
    known = {row["partition_key"]: row for row in manifest.iter_rows(named=True)}
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
    return pl.DataFrame(
        out,
        schema={
            "partition_key": pl.String,
            "path": pl.String,
            "manifest_sha256": pl.String,
            "manifest_rows": pl.Int64,
            "file_sha256": pl.String,
            "file_rows": pl.Int64,
        },
        orient="row",
    )


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
        .cast(dict(REPORT_SCHEMA))  # type: ignore[arg-type]
        .sort("partition_key")
    )
