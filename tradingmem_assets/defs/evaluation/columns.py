"""Column descriptions of the evaluation tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

EVALUATION_TABLE_DOCS = (
    TableDoc(
        tables.main_table("evaluation_components"),
        "Components of each evaluation run (returns, volatility, coverage).",
        (
            ("run_id", "VARCHAR", "The evaluation run."),
            ("component", "VARCHAR", "Component name, e.g. excess_return, volatility, coverage."),
            ("value", "DOUBLE", "Its value."),
            ("quality_flag", "VARCHAR", "ok, or why the value is not trustworthy."),
        ),
    ),
    TableDoc(
        tables.main_table("evaluation_primaries"),
        "Which run was a decision's primary, over which interval.",
        (
            ("decision_id", "VARCHAR", "The trading decision (raw.trading_decisions.decision_id)."),
            ("run_id", "VARCHAR", "The evaluation run that was primary."),
            ("primary_from", "TIMESTAMP WITH TIME ZONE", "Start of the interval it was primary (inclusive)."),
            (
                "primary_until",
                "TIMESTAMP WITH TIME ZONE",
                "End of the interval (exclusive; null: still primary).",
            ),
        ),
    ),
    TableDoc(
        tables.main_table("evaluation_runs"),
        "Versioned evaluation runs of each decision (append-only).",
        (
            ("run_id", "VARCHAR", "The evaluation run: decision, profile and version hashed."),
            ("decision_id", "VARCHAR", "The trading decision (raw.trading_decisions.decision_id)."),
            ("execution_id", "VARCHAR", "The trade execution (raw.trade_executions.execution_id)."),
            ("profile_id", "VARCHAR", "Benchmark profile (raw.benchmark_profiles.profile_id)."),
            ("run_version", "BIGINT", "Version of the decision's evaluation under the profile (1, 2, ...)."),
            ("inputs_hash", "VARCHAR", "SHA-256 of the inputs the run was computed from."),
            ("status", "VARCHAR", "complete, pending or insufficient_data."),
            ("is_primary", "BOOLEAN", "Whether the run is the decision's primary run now."),
            ("promoted_at", "TIMESTAMP WITH TIME ZONE", "When it was promoted to primary (null: never)."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When the run was computed (world time)."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
        ),
    ),
)
