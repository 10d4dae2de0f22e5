"""Column descriptions of the migration tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

MIGRATION_TABLE_DOCS = (
    TableDoc(
        tables.main_table("migrated_role_cases"),
        "Legacy role memory migrated (known roles) or quarantined (unknown roles), never scoring-eligible.",
        (
            ("legacy_id", "VARCHAR", "Id of the legacy role-memory row."),
            ("role_id", "VARCHAR", "The role (the legacy role name, verbatim when unknown)."),
            ("skill_id", "VARCHAR", "The role's skill (null when quarantined)."),
            ("content", "VARCHAR", "The text, verbatim."),
            ("provenance", "VARCHAR", "Where the row came from, verbatim."),
            ("legacy_score", "DOUBLE", "The legacy score, for audit only."),
            ("status", "VARCHAR", "migrated or quarantined."),
            ("reason", "VARCHAR", "unknown_role when quarantined."),
            ("scoring_eligible", "BOOLEAN", "Always false."),
            ("symbol", "VARCHAR", "Instrument symbol, e.g. BTCUSD or GOOG."),
            ("decision_id", "VARCHAR", "The trading decision (raw.trading_decisions.decision_id)."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When the legacy row was written."),
            (
                "partition_key",
                "VARCHAR",
                "Monthly migration partition (first day of the month, e.g. 2024-01-01).",
            ),
            ("backup_sha256", "VARCHAR", "SHA-256 of the backup file the row was read from."),
        ),
    ),
    TableDoc(
        tables.main_table("migration_backups"),
        "Manifest of the legacy role-memory backups, one row per month.",
        (
            (
                "partition_key",
                "VARCHAR",
                "Monthly migration partition (first day of the month, e.g. 2024-01-01).",
            ),
            ("path", "VARCHAR", "Path of the backup Parquet file."),
            ("row_count", "BIGINT", "Rows in the file."),
            ("sha256", "VARCHAR", "SHA-256 of the file's bytes."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When the file was written (run's as_of)."),
        ),
    ),
    TableDoc(
        tables.main_table("migration_conservation_report"),
        "Per month: backup checksum verified and rows in = migrated + quarantined + rejected.",
        (
            (
                "partition_key",
                "VARCHAR",
                "Monthly migration partition (first day of the month, e.g. 2024-01-01).",
            ),
            ("rows_in", "BIGINT", "Rows of the month's backup."),
            ("migrated", "BIGINT", "Rows migrated."),
            ("quarantined", "BIGINT", "Rows quarantined."),
            ("rejected", "BIGINT", "Rows rejected."),
            ("checksum_ok", "BOOLEAN", "Backup matches its manifest and every row was read from it."),
            ("conserved", "BOOLEAN", "checksum_ok and rows_in = migrated + quarantined + rejected."),
            ("backup_sha256", "VARCHAR", "SHA-256 of the month's backup."),
            ("detail", "VARCHAR", "Why a month is not conserved (empty when it is)."),
        ),
    ),
    TableDoc(
        tables.main_table("migration_rejects"),
        "Legacy rows that cannot become cases, with every reason and their original values.",
        (
            ("legacy_id", "VARCHAR", "Id of the legacy role-memory row."),
            (
                "partition_key",
                "VARCHAR",
                "Monthly migration partition (first day of the month, e.g. 2024-01-01).",
            ),
            (
                "reason",
                "VARCHAR",
                "Every reason (missing_content, missing_role, missing_provenance, wrong_partition), "
                "joined with ; .",
            ),
            ("role", "VARCHAR", "Legacy role name."),
            ("content", "VARCHAR", "The text, verbatim."),
            ("provenance", "VARCHAR", "Where the row came from, verbatim."),
            ("legacy_score", "DOUBLE", "The legacy score."),
            ("symbol", "VARCHAR", "Instrument symbol, e.g. BTCUSD or GOOG."),
            ("decision_id", "VARCHAR", "The trading decision (raw.trading_decisions.decision_id)."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When the legacy row was written."),
            ("backup_sha256", "VARCHAR", "SHA-256 of the backup file the row was read from."),
        ),
    ),
)
