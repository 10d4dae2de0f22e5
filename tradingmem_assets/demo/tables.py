"""The landing set the demo writes: the instant it is built around, the default seed, and per SPEC §2
table its columns (names and order), its file format and how its row count scales.

Scale. SF 1 is about 100,000 decisions (with previews, consumptions, executions, fills and
positions), 20,000 institution runs (6 role outputs each), 50,000 customers (~3 memory units,
~10 transactions, ~5 conversation messages each), 20,000 agent turns, 20,000 legacy rows. Counts
are max(minimum, round(SF x base)) (BASE_ROWS / MIN_ROWS), so tiny scales still hold every case
kind. Prices, benchmark profiles, kb documents and the bad rows do not scale.
"""

from __future__ import annotations

from datetime import UTC, datetime

DEMO_AS_OF = datetime(2024, 7, 1, tzinfo=UTC)
DEMO_SEED = 7
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    table: tuple(columns.split())
    for table, columns in {
        "trading_decisions": "decision_id role_id skill_id symbol direction account_id market scenario "
        "decision_text evidence preview_id decided_at",
        "trade_previews": "preview_id decision_id created_at",
        "preview_consumptions": "consumption_id preview_id execution_id consumed_at",
        "trade_executions": "execution_id decision_id preview_id symbol direction account_id market source "
        "source_verified automation_flag executed_at",
        "trade_fills": "fill_id execution_id qty price fee filled_at",
        "position_lifecycles": "position_id execution_id status opened_at closed_at realized_pnl",
        "price_bars": "symbol ts open high low close volume",
        "market_events": "event_id symbol ts kind exogenous",
        "benchmark_profiles": "profile_id horizon_days benchmark_symbol min_coverage",
        "evaluation_promotions": "decision_id profile_id run_version promoted_at promoted_by",
        "agent_turns": "turn_id session_id started_at user_message route tool_calls completed explicit_learn",
        "learning_feedback": "feedback_id learning_id turn_id adopted success ts",
        "institution_runs": "run_id started_at symbol asset_class kind",
        "institution_role_outputs": "output_id run_id role schema action confidence cited_methodology_ids "
        "proposed_methodology",
        "methodology_injections": "injection_id run_id methodology_id injected_at",
        "customers": "customer_id real_name birth_date occupation mobile opened_at",
        "questionnaire_results": "assessment_id customer_id investor_type assessed_at",
        "customer_transactions": "txn_id customer_id ts product_id product_risk_level side amount "
        "balance_after",
        "memory_unit": "unit_id customer_id fact_key fact_value confidence evidence_count conflict_count "
        "recall_count valid_from valid_until source_portal source_episode_id created_at updated_at",
        "memory_evidence": "evidence_id unit_id excerpt message_id created_at",
        "conversation_message": "message_id session_id customer_id role content created_at",
        "kb_documents": "doc_id title visibility body",
        "legacy_role_memory": "legacy_id role content score created_at provenance symbol decision_id",
    }.items()
}
CSV_TABLES = frozenset(
    {"customers", "kb_documents", "benchmark_profiles", "legacy_role_memory", "questionnaire_results"}
)
BASE_ROWS = {
    "trading_decisions": 100_000,
    "institution_runs": 20_000,
    "customers": 50_000,
    "agent_turns": 20_000,
    "learning_feedback": 8_000,
    "legacy_role_memory": 20_000,
}
MIN_ROWS = {
    "trading_decisions": 80,
    "institution_runs": 150,
    "customers": 30,
    "agent_turns": 80,
    "learning_feedback": 20,
    "legacy_role_memory": 48,
}


def _count(table: str, scale: float) -> int:
    return max(MIN_ROWS[table], round(scale * BASE_ROWS[table]))
