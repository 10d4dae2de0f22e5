"""Legacy role-memory migration: backup, migration and conservation report, per month (SPEC 11).

Each asset handles a whole partition range in one run (``context.partition_keys``), so a
backfill with ``BackfillPolicy.single_run()`` runs once, and re-running a partition replaces its
rows (DELETE of the run's partitions + INSERT, in one transaction).
"""

import os

import dagster as dg
import polars as pl

from tradingmem_assets.defs.migration.backup import (
    LEGACY_COLUMNS,
    MIGRATION_BACKUPS_DTYPES,
    BackupIntegrityError,
    MigrationInputError,
    decode_backup,
    legacy_rows,
    load_verified_backups,
    manifest_rows,
    prepare_backups,
    read_manifest,
    rows_outside_partitions,
    sha256_hex,
    stage_backup,
)
from tradingmem_assets.defs.migration.checks import (
    BACKUP_ASSET,
    BACKUP_CHECK_SPECS,
    BACKUP_MATCHES_RAW_CHECK,
    CONSERVATION_CHECK,
    LEGACY_ROWS_PARTITIONED_CHECK,
    MIGRATED_ASSET,
    MIGRATED_CHECK_SPECS,
    MIGRATED_INVARIANTS_CHECK,
    REPORT_ASSET,
    REPORT_CHECK_SPECS,
    combined,
    failures_as_validation,
    validation_result,
)
from tradingmem_assets.defs.migration.classification import (
    MIGRATED_ROLE_CASES_DTYPES,
    MIGRATION_REJECTS_DTYPES,
    classify,
)
from tradingmem_assets.defs.migration.conservation import (
    MIGRATION_CONSERVATION_REPORT_DTYPES,
    conservation_report,
    inspect_backups,
    partition_counts,
)
from tradingmem_assets.defs.migration.invariants import (
    MIGRATION_BACKUPS_INVARIANTS,
    MIGRATION_CONSERVATION_REPORT_INVARIANTS,
    MIGRATION_REJECTS_INVARIANTS,
    migrated_role_cases_schema,
)
from tradingmem_assets.defs.migration.partitions import LEGACY_MONTHLY_PARTITIONS
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import declared_metadata, table_metadata
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import append_rows, ensure_table, transaction

_PARTITIONED = dict(
    group_name=tables.MIGRATION_GROUP,
    partitions_def=LEGACY_MONTHLY_PARTITIONS,
    backfill_policy=dg.BackfillPolicy.single_run(),
)


def _replace_partitions(con, table: str, empty: pl.Schema, keys: list[str], frame: pl.DataFrame) -> None:
    """Replace the rows of the run's partitions (call inside ``transaction``)."""
    ensure_table(con, table, pl.DataFrame(schema=empty))
    con.execute(f"DELETE FROM {table} WHERE list_contains(?, partition_key)", [keys])
    append_rows(con, table, frame)


def _md_table(frame: pl.DataFrame, limit: int = 50) -> dg.MetadataValue:
    if frame.height == 0:
        return dg.MetadataValue.md("(none)")
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * frame.width + "\n"
    body = "\n".join(
        "| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in frame.head(limit).rows()
    )
    more = f"\n\n… and {frame.height - limit} more" if frame.height > limit else ""
    return dg.MetadataValue.md(head + body + more)


def _range_text(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else f"{keys[0]}...{keys[-1]} ({len(keys)} partitions)"


def _per_partition(context: dg.AssetExecutionContext, keys: list[str], metadata_of) -> None:
    """Give each partition of the run its own metadata (counts of its rows only), not the range's:
    a single-run backfill records one materialization per partition, all from one return value."""
    for key in keys:
        context.add_asset_metadata({"partition": key, **metadata_of(key)}, partition_key=key)


def _rows_of(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    return frame.filter(pl.col("partition_key") == key)


@dg.asset(
    metadata=declared_metadata("legacy_role_memory_backup"),
    name="legacy_role_memory_backup",
    deps=[raw_key("legacy_role_memory")],
    kinds={"duckdb", "polars", "parquet"},
    description="Checksummed Parquet backup of each legacy role-memory month (manifest: migration_backups).",
    check_specs=BACKUP_CHECK_SPECS,
    **_PARTITIONED,
)
def legacy_role_memory_backup(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    keys = list(context.partition_keys)
    all_keys = LEGACY_MONTHLY_PARTITIONS.get_partition_keys()
    with warehouse.connect() as con:
        try:
            rows = legacy_rows(con, keys)
            outside = rows_outside_partitions(con, all_keys[0], all_keys[-1])
        except MigrationInputError as exc:
            raise dg.Failure(description=str(exc)) from exc
        backups = prepare_backups(rows, keys, warehouse.backup_dir)
        manifest = manifest_rows(
            backups, read_manifest(con, tables.MIGRATION_BACKUPS, keys), warehouse.as_of_ts
        )
        manifest_check = validate(MIGRATION_BACKUPS_INVARIANTS, manifest)
        if not manifest_check.passed:
            raise dg.Failure(
                description="the backup manifest would break its invariants; nothing was written",
                metadata={"summary": dg.MetadataValue.md(manifest_check.summary())},
            )
        staged = [(b, stage_backup(b)) for b in backups]
        try:
            with transaction(con):
                _replace_partitions(con, tables.MIGRATION_BACKUPS, MIGRATION_BACKUPS_DTYPES, keys, manifest)
                # the files move into place only while the manifest write can still roll back
                for backup, tmp in staged:
                    if tmp is not None:
                        os.replace(tmp, backup.path)
        finally:
            for _, tmp in staged:
                if tmp is not None and tmp.exists():
                    tmp.unlink()

    # Read every file back from disk: it must hold exactly the month's raw rows and match the manifest.
    problems: list[tuple[str, str, str]] = []
    for backup in backups:
        data = backup.path.read_bytes()
        if sha256_hex(data) != backup.sha256:
            problems.append(("sha256", "file_matches_manifest", f"{backup.path}"))
            continue
        expected = rows.filter(pl.col("partition_key") == backup.partition_key).select(LEGACY_COLUMNS)
        if not decode_backup(data).equals(expected.sort("legacy_id")):
            problems.append(("rows", "backup_equals_raw_month", backup.partition_key))
    outside_rows = int(outside.get_column("rows").sum()) if outside.height else 0
    written = sum(1 for _, tmp in staged if tmp is not None)
    staged_by_key = {b.partition_key: tmp is not None for b, tmp in staged}
    _per_partition(
        context,
        keys,
        lambda key: {
            **table_metadata(tables.MIGRATION_BACKUPS, _rows_of(manifest, key)),
            "rows_backed_up": _rows_of(rows, key).height,
            "file_written": staged_by_key.get(key, False),
            "backup_file": dg.MetadataValue.path(
                str(next(b.path for b in backups if b.partition_key == key))
            ),
            "sha256": next(b.sha256 for b in backups if b.partition_key == key),
        },
    )
    return dg.MaterializeResult(
        metadata={
            "run_partitions": _range_text(keys),
            "run_files_written": written,
            "backup_dir": dg.MetadataValue.path(str(backups[0].path.parent)),
            "legacy_rows_outside_partitions": outside_rows,
        },
        check_results=[
            validation_result(
                BACKUP_MATCHES_RAW_CHECK,
                failures_as_validation("legacy_role_memory_backup", problems),
                BACKUP_ASSET,
            ),
            dg.AssetCheckResult(
                check_name=LEGACY_ROWS_PARTITIONED_CHECK,
                asset_key=BACKUP_ASSET,
                passed=outside_rows == 0,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={
                    "rows_outside_partitions": outside_rows,
                    "first_partition": all_keys[0],
                    "last_partition": all_keys[-1],
                    "months": _md_table(outside),
                },
            ),
        ],
    )


@dg.asset(
    metadata=declared_metadata("migrated_role_cases"),
    name="migrated_role_cases",
    deps=[BACKUP_ASSET],
    kinds={"duckdb", "polars"},
    description=(
        "Legacy role memory read back from its verified backup: known roles migrated verbatim, "
        "unknown roles quarantined, malformed rows in migration_rejects; never scoring-eligible."
    ),
    check_specs=MIGRATED_CHECK_SPECS,
    **_PARTITIONED,
)
def migrated_role_cases(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    keys = list(context.partition_keys)
    roles = {r.role_id: r.skill_id for r in warehouse.registry().roles.values()}
    with warehouse.connect() as con:
        manifest = read_manifest(con, tables.MIGRATION_BACKUPS, keys)
        try:
            rows = load_verified_backups(manifest, keys)
        except MigrationInputError as exc:
            raise dg.Failure(description=str(exc)) from exc
        except BackupIntegrityError as exc:
            raise dg.Failure(
                description=f"backup verification failed, nothing was migrated:\n{exc}",
                metadata={"bad_backups": _md_table(pl.DataFrame(exc.problems))},
            ) from exc
        cases, rejects = classify(rows, roles)
        validation = combined(
            "migrated_role_cases",
            validate(migrated_role_cases_schema(roles), cases),
            validate(MIGRATION_REJECTS_INVARIANTS, rejects),
        )
        if not validation.passed:
            raise dg.Failure(
                description="migrated cases would break their invariants; nothing was written",
                metadata={"summary": dg.MetadataValue.md(validation.summary())},
            )
        with transaction(con):
            _replace_partitions(con, tables.MIGRATED_ROLE_CASES, MIGRATED_ROLE_CASES_DTYPES, keys, cases)
            _replace_partitions(con, tables.MIGRATION_REJECTS, MIGRATION_REJECTS_DTYPES, keys, rejects)

    def metadata_of(key: str) -> dict:
        part, part_rejects = _rows_of(cases, key), _rows_of(rejects, key)
        status = dict(part.group_by("status").len().rows())
        reasons = part_rejects.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        unknown = (
            part.filter(pl.col("status") == "quarantined")
            .group_by("role_id")
            .len()
            .sort(["len", "role_id"], descending=[True, False])
        )
        return {
            **table_metadata(tables.MIGRATED_ROLE_CASES, part),
            "rows_in": _rows_of(rows, key).height,
            "migrated": status.get("migrated", 0),
            "quarantined": status.get("quarantined", 0),
            "rejected": part_rejects.height,
            "reject_reasons": _md_table(reasons),
            "quarantined_roles": _md_table(unknown),
        }

    _per_partition(context, keys, metadata_of)
    return dg.MaterializeResult(
        metadata={
            "run_partitions": _range_text(keys),
            "rejects_table": dg.MetadataValue.text(tables.MIGRATION_REJECTS),
        },
        check_results=[validation_result(MIGRATED_INVARIANTS_CHECK, validation, MIGRATED_ASSET)],
    )


@dg.asset(
    metadata=declared_metadata("migration_conservation_report"),
    name="migration_conservation_report",
    deps=[MIGRATED_ASSET],
    kinds={"duckdb", "polars"},
    description="Per month: backup checksum verified and rows in = migrated + quarantined + rejected.",
    check_specs=REPORT_CHECK_SPECS,
    **_PARTITIONED,
)
def migration_conservation_report(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    keys = list(context.partition_keys)
    with warehouse.connect() as con:
        backups = inspect_backups(read_manifest(con, tables.MIGRATION_BACKUPS, keys), keys)
        counts = partition_counts(con, tables.MIGRATED_ROLE_CASES, tables.MIGRATION_REJECTS, keys)
        report = conservation_report(backups, counts)
        # The report is the finding: it is written even when a partition is not conserved, so the
        # operator can read why; the blocking check below then stops the run.
        with transaction(con):
            _replace_partitions(
                con, tables.MIGRATION_CONSERVATION_REPORT, MIGRATION_CONSERVATION_REPORT_DTYPES, keys, report
            )
    validation = validate(MIGRATION_CONSERVATION_REPORT_INVARIANTS, report)
    bad = report.filter(~pl.col("conserved")).select("partition_key", "detail")
    result = validation_result(CONSERVATION_CHECK, validation, REPORT_ASSET)

    def metadata_of(key: str) -> dict:
        part = _rows_of(report, key)
        return {
            **table_metadata(tables.MIGRATION_CONSERVATION_REPORT, part),
            **{c: int(part.get_column(c).sum()) for c in ("rows_in", "migrated", "quarantined", "rejected")},
            "conserved": bool(part.get_column("conserved").all()),
        }

    _per_partition(context, keys, metadata_of)
    return dg.MaterializeResult(
        metadata={"run_partitions": _range_text(keys), "run_partitions_not_conserved": bad.height},
        check_results=[
            dg.AssetCheckResult(
                check_name=result.check_name,
                asset_key=REPORT_ASSET,
                passed=result.passed,
                metadata={**result.metadata, "not_conserved": _md_table(bad)},
            )
        ],
    )


legacy_migration_job = dg.define_asset_job(
    name="legacy_migration_job",
    selection=dg.AssetSelection.groups(tables.MIGRATION_GROUP),
    partitions_def=LEGACY_MONTHLY_PARTITIONS,
    description="Back up, migrate and reconcile legacy role memory, one month per partition.",
    executor_def=dg.in_process_executor,
)
