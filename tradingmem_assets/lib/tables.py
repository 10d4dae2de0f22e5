"""Every table, asset group and job name of the warehouse, declared once (no Dagster here).

Output tables live in schema ``main`` and are named as their assets; validated landing rows live
in ``raw.<landing table>``, whose asset key is ``raw/<landing table>`` (``raw_key``).
"""

from __future__ import annotations

RAW_SCHEMA_NAME = "raw"


def raw_table(landing_table: str) -> str:
    """The qualified table of a landing table's validated rows."""
    return f"{RAW_SCHEMA_NAME}.{landing_table}"


def raw_key(landing_table: str) -> list[str]:
    """The asset key path of a landing table (Dagster coerces a list of strings to an AssetKey)."""
    return [RAW_SCHEMA_NAME, landing_table]


def main_table(name: str) -> str:
    return f"main.{name}"


# landing
RAW_REJECTS = "main.raw_rejects"
LANDING_INGESTS = "main.landing_ingests"
# the landing tables that link a decision to its execution: decision, preview, consumption, execution
EXECUTION_CHAIN = ("trading_decisions", "trade_previews", "preview_consumptions", "trade_executions")
# evaluation
EVALUATION_RUNS = "main.evaluation_runs"
EVALUATION_BASIS = "main.evaluation_basis"
ROLE_CASES_BASIS = "main.role_cases_basis"
PROFILE_BASIS = "main.profile_basis"
PROMOTION_BASIS = "main.memory_promotion_basis"
PROFILE_FACT_DIGESTS = "main.profile_fact_digests"
EVALUATION_COMPONENTS = "main.evaluation_components"
EVALUATION_PRIMARIES = "main.evaluation_primaries"
# role memory
ROLE_CASES = "main.role_cases"
ROLE_REFLECTIONS = "main.role_reflections"
ROLE_STATS = "main.role_stats"
ROLE_RECALL_INDEX = "main.role_recall_index"
ROLE_RECALL_TERMS = "main.role_recall_terms"
ROLE_RECALL_DOCS = "main.role_recall_docs"
ROLE_RECALL_DF = "main.role_recall_df"
ROLE_RECALL_POSTINGS = "main.role_recall_postings"
ROLE_RECALL_NORMS = "main.role_recall_norms"
ROLE_RECALL_ROLES = "main.role_recall_roles"
# learning
LEARNINGS = "main.learnings"
LEARNING_REVIEWS = "main.learning_reviews"
LEARNING_DELETIONS = "main.learning_deletions"
INSTITUTION_OUTPUT_REJECTS = "main.institution_output_rejects"
INSTITUTION_REFLECTIONS = "main.institution_reflections"
METHODOLOGIES = "main.methodologies"
METHODOLOGY_LIFECYCLE_EVENTS = "main.methodology_lifecycle_events"
METHODOLOGY_CASES = "main.methodology_cases"
METHODOLOGY_CASE_HINTS = "main.methodology_case_hints"
METHODOLOGY_CRON_RUNS = "main.methodology_cron_runs"
LLM_USAGE = "main.llm_usage"
# memory layers and profile
SESSION_CONTEXTS = "main.session_contexts"
MEMORY_PROMOTIONS = "main.memory_promotions"
USER_FACTS = "main.user_facts"
FIN_CUSTOMER_PROFILE = "main.fin_customer_profile"
PROFILE_SNAPSHOTS = "main.profile_snapshots"
ADVISOR_CUSTOMER_VIEW = "main.advisor_customer_view"
CUSTOMER_KB = "main.customer_kb"
# Columns stored with a compression of their own rather than DuckDB's automatic choice (dictionary
# and FSST), set where the table is created (``warehouse.create_table_as``): DuckDB has no statement
# that changes a column's compression later. docs/performance-log.md has the measurements.
# - ZSTD for long JSON text: at SF 10, 1.9 KB of generation basis a profile and 0.7 KB of
#   provenance a case were written in half the time or less, in a fifth to a half of the file.
# - uncompressed for hex digests and the ids made of them, which repeat little or not at all: FSST
#   halves them at best, and writing them raw was faster (at SF 10: 1.2-1.7 s of the 4.7 s write
#   of 5.8 million runs, 0.1-0.3 s for each of the other tables; a whole-table digest reads them
#   faster too), for a larger file (these five tables 360 MB more at SF 10, 270 MB of it the runs').
#   The decision and execution ids of runs and cases too: each repeats over one decision's few
#   rows, and the 5.8 million runs at SF 10 were written 0.4-0.6 s faster for 100 MB more.
# - ZSTD for the cases' decision texts (a few thousand distinct texts of 110 characters on average
#   at SF 10): written faster than with DuckDB's dictionary, in a smaller file.
_RAW = "uncompressed"
COLUMN_COMPRESSION: dict[str, dict[str, str]] = {
    EVALUATION_RUNS: {"run_id": _RAW, "decision_id": _RAW, "execution_id": _RAW, "inputs_hash": _RAW},
    ROLE_CASES: {
        "case_id": _RAW,
        "decision_id": _RAW,
        "execution_id": _RAW,
        "primary_run_id": _RAW,
        "decision_text": "zstd",
        "provenance": "zstd",
    },
    ROLE_REFLECTIONS: {"reflection_id": _RAW, "case_id": _RAW, "run_id": _RAW},
    FIN_CUSTOMER_PROFILE: {"snapshot_hash": _RAW, "generation_basis": "zstd"},
    PROFILE_SNAPSHOTS: {
        "snapshot_id": _RAW,
        "snapshot_hash": _RAW,
        "profile": "zstd",
        "generation_basis": "zstd",
    },
}
# efficacy
MEMORY_EFFICACY = "main.memory_efficacy"
# audit
METHODOLOGY_AUDIT_REPORTS = "main.methodology_audit_reports"
# operations
WAREHOUSE_RUNS = "main.warehouse_runs"
RUN_INPUTS = "main.run_inputs"
RUN_TABLE_STATES = "main.run_table_states"
VALIDATED_CONTENTS = "main.validated_contents"
# migration
MIGRATION_BACKUPS = "main.migration_backups"
MIGRATED_ROLE_CASES = "main.migrated_role_cases"
MIGRATION_REJECTS = "main.migration_rejects"
MIGRATION_CONSERVATION_REPORT = "main.migration_conservation_report"

# asset groups (one per domain folder; the memory layers share the profile group)
LANDING_GROUP = "landing"
EVALUATION_GROUP = "evaluation"
ROLE_MEMORY_GROUP = "role_memory"
LEARNING_GROUP = "learning"
PROFILE_GROUP = "profile"
EFFICACY_GROUP = "efficacy"
AUDIT_GROUP = "audit"
MIGRATION_GROUP = "migration"

# the learning assets: a run that materializes one of them is a learning run
LEARNINGS_ASSETS = ("learnings", "learning_reviews")
METHODOLOGY_ASSETS = (
    "institution_output_rejects",
    "institution_reflections",
    "methodologies",
    "methodology_lifecycle_events",
    "methodology_cases",
    "methodology_case_hints",
)
HEARTBEAT_ASSET = "methodology_cron_runs"
LEARNING_ASSETS: frozenset[str] = frozenset({*LEARNINGS_ASSETS, *METHODOLOGY_ASSETS, HEARTBEAT_ASSET})

# the assets outside the main job: the audit and the partitioned migration
AUDIT_ASSETS: frozenset[str] = frozenset({"methodology_audit_reports"})
MIGRATION_ASSETS: frozenset[str] = frozenset(
    {"legacy_role_memory_backup", "migrated_role_cases", "migration_conservation_report"}
)

# jobs
TRADING_MEMORY_JOB = "trading_memory_job"
METHODOLOGY_AUDIT_JOB = "methodology_audit_job"
AUDIT_ISOLATION_ALERT_JOB = "audit_isolation_alert_job"
WAREHOUSE_CHECKS_JOB = "warehouse_checks_job"
LEGACY_MIGRATION_JOB = "legacy_migration_job"
# A learning run is any run of these jobs; the audit scheduler defers while one is queued or
# in progress, and the heartbeat records each one.
LEARNING_JOB_NAMES: frozenset[str] = frozenset({TRADING_MEMORY_JOB})
