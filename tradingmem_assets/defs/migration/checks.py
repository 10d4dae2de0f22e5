"""The migration's asset checks: names as constants, specs declared once, results from Pandera."""

import dagster as dg
import polars as pl

from tradingmem_assets.lib.dagster_kit import check_result
from tradingmem_assets.lib.validation import Validation

BACKUP_ASSET = dg.AssetKey("legacy_role_memory_backup")
MIGRATED_ASSET = dg.AssetKey("migrated_role_cases")
REPORT_ASSET = dg.AssetKey("migration_conservation_report")

BACKUP_MATCHES_RAW_CHECK = "backup_holds_every_raw_row_of_its_month"
LEGACY_ROWS_PARTITIONED_CHECK = "every_legacy_row_has_a_partition"
MIGRATED_INVARIANTS_CHECK = "migrated_role_cases_invariants"
CONSERVATION_CHECK = "migration_partitions_conserved"

BACKUP_CHECK_SPECS = [
    dg.AssetCheckSpec(
        BACKUP_MATCHES_RAW_CHECK,
        asset=BACKUP_ASSET,
        blocking=True,
        description="Each backup file holds exactly its month's raw rows and matches its manifest sha256.",
    ),
    dg.AssetCheckSpec(
        LEGACY_ROWS_PARTITIONED_CHECK,
        asset=BACKUP_ASSET,
        blocking=False,
        description=(
            "No legacy row is dated before TRADINGMEM_MIGRATION_START or after the last partition "
            "(such rows would never be migrated)."
        ),
    ),
]
MIGRATED_CHECK_SPECS = [
    dg.AssetCheckSpec(
        MIGRATED_INVARIANTS_CHECK,
        asset=MIGRATED_ASSET,
        blocking=True,
        description=(
            "Migrated only for registered roles, unknown roles quarantined, never scoring-eligible, "
            "rejects carry known reason codes."
        ),
    )
]
REPORT_CHECK_SPECS = [
    dg.AssetCheckSpec(
        CONSERVATION_CHECK,
        asset=REPORT_ASSET,
        blocking=True,
        description="Per partition: checksum verified and rows_in = migrated + quarantined + rejected.",
    )
]


def combined(name: str, *validations: Validation) -> Validation:
    """One validation out of several schemas' failures (e.g. cases and rejects)."""
    cases = [v.failure_cases for v in validations if v.failure_cases.height]
    frame = pl.concat(cases) if cases else validations[0].failure_cases
    return Validation(name, frame)


def validation_result(name: str, validation: Validation, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
    return check_result(name, validation, asset_key)


def failures_as_validation(name: str, problems: list[tuple[str, str, str]]) -> Validation:
    """A Validation from (column, check, failure_case) triples found without Pandera (e.g. file checks)."""
    return Validation(
        name,
        pl.DataFrame(
            [(c, k, f, None) for c, k, f in problems],
            schema={"column": pl.String, "check": pl.String, "failure_case": pl.String, "index": pl.Int64},
            orient="row",
        ),
    )
