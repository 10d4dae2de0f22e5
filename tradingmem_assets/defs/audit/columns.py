"""Column descriptions of the audit tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

AUDIT_TABLE_DOCS = (
    TableDoc(
        tables.main_table("methodology_audit_reports"),
        "One row per audit pass: six dimension scores, composite, tier, findings, isolation.",
        (
            ("pass_id", "VARCHAR", "The pass: ap_ + sha256(ran_at|run id)[:16]."),
            ("ran_at", "TIMESTAMP WITH TIME ZONE", "Wall clock when the pass ran."),
            ("window_days", "BIGINT", "Days before as_of the pass looked at."),
            ("composite", "DOUBLE", "Weighted mean of the scored dimensions, 0-100 (null: none scored)."),
            ("tier", "VARCHAR", "healthy, watch, degraded, alarm, disabled or insufficient_data."),
            ("dimension_scores", "VARCHAR", "JSON: each dimension's score (null: too little data)."),
            ("dimension_weights_used", "VARCHAR", "JSON: the renormalized weights of the scored dimensions."),
            ("findings", "VARCHAR", "JSON list of findings, most severe first."),
            ("advisory_actions", "VARCHAR", "JSON list of advisory actions with their reasons."),
            (
                "learning_tables_sha256_before",
                "VARCHAR",
                "SHA-256 over the four learning tables before the pass.",
            ),
            ("learning_tables_sha256_after", "VARCHAR", "The same after the pass."),
            ("isolation_ok", "BOOLEAN", "Whether both hashes are equal (the audit wrote no learning state)."),
        ),
    ),
)
