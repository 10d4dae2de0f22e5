"""Memory-layer red lines re-read from the stored tables (facts must meet the promotion rule;
contexts must be active sessions within the token budget)."""

from tradingmem_assets.defs.profile import invariants as schemas
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks
from tradingmem_assets.settings import SETTINGS

FACTS_READ_SQL = f"""
SELECT f.fact_id, f.source_unit_id, f.customer_id, f.fact_key, f.is_critical, f.confidence, f.evidence_count,
       u.conflict_count, u.valid_from, u.valid_until, u.updated_at
FROM {tables.USER_FACTS} f LEFT JOIN {tables.MEMORY_PROMOTIONS} u ON u.unit_id = f.source_unit_id
"""

MEMORY_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            "stored_user_facts_meet_promotion_rule",
            "user_facts",
            "Every stored fact passes the promotion rule at the instant it was built.",
            lambda at: schemas.user_facts_schema(at, SETTINGS.memory_stale_days),
            read=FACTS_READ_SQL,
        ),
        StoredTableCheck(
            "stored_session_contexts_within_window_and_budget",
            "session_contexts",
            "Every stored context is an active session (30 min idle, 24 h age) within 4096 tokens.",
            schemas.session_contexts_schema,
        ),
    ]
)
