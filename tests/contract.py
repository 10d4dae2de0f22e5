"""The table and column names SPEC.md fixes (sections 2-11), checked against a warehouse."""

import duckdb

RAW = {
    "trading_decisions": "decision_id role_id skill_id symbol direction account_id market scenario decision_text evidence preview_id decided_at",
    "trade_previews": "preview_id decision_id created_at",
    "preview_consumptions": "consumption_id preview_id execution_id consumed_at",
    "trade_executions": "execution_id decision_id preview_id symbol direction account_id market source source_verified automation_flag executed_at",
    "trade_fills": "fill_id execution_id qty price fee filled_at",
    "position_lifecycles": "position_id execution_id status opened_at closed_at realized_pnl",
    "price_bars": "symbol ts open high low close volume",
    "market_events": "event_id symbol ts kind exogenous",
    "benchmark_profiles": "profile_id horizon_days benchmark_symbol min_coverage",
    "evaluation_promotions": "decision_id profile_id run_version promoted_at promoted_by",
    "agent_turns": "turn_id session_id started_at user_message route tool_calls completed explicit_learn",
    "learning_feedback": "feedback_id learning_id turn_id adopted success ts",
    "institution_runs": "run_id started_at symbol asset_class kind",
    "institution_role_outputs": "output_id run_id role schema action confidence cited_methodology_ids proposed_methodology",
    "methodology_injections": "injection_id run_id methodology_id injected_at",
    "customers": "customer_id real_name birth_date occupation mobile opened_at",
    "questionnaire_results": "assessment_id customer_id investor_type assessed_at",
    "customer_transactions": "txn_id customer_id ts product_id product_risk_level side amount balance_after",
    "memory_unit": "unit_id customer_id fact_key fact_value confidence evidence_count conflict_count recall_count valid_from valid_until source_portal source_episode_id created_at updated_at",
    "memory_evidence": "evidence_id unit_id excerpt message_id created_at",
    "conversation_message": "message_id session_id customer_id role content created_at",
    "kb_documents": "doc_id title visibility body",
    "legacy_role_memory": "legacy_id role content score created_at provenance symbol decision_id",
}
# Derived tables of the main job (audit and migration tables are produced by their own runs).
MAIN = {
    "raw_rejects": "table_name source_file row_number row_key reason raw_row",
    "evaluation_runs": "run_id decision_id execution_id profile_id run_version inputs_hash status is_primary promoted_at created_at",
    "evaluation_components": "run_id component value quality_flag",
    "role_cases": "case_id decision_id role_id symbol scenario direction account_id market execution_id primary_run_id decision_text outcome status reasons quarantined scoring_eligible provenance created_at updated_at",
    "role_reflections": "case_id role_id classification trainable lesson reflector reflected_at",
    "role_stats": "role_id",
    "learnings": "learning_id name trigger tool_sequence guidance success_count failure_count ignored_count weight created_at last_used_at",
    "methodologies": "methodology_id name description direction primary_signal timeframe indicators asset_class phases dedup_key quarantine confidence times_used times_correct times_proposed created_at graduated_at updated_at",
    "methodology_lifecycle_events": "event_id methodology_id event ts detail",
    "methodology_cases": "case_id methodology_id run_id window correct recorded_at",
    "methodology_case_hints": "methodology_id run_id",
    "institution_reflections": "run_id window realized_return correct kind",
    "methodology_cron_runs": "status ts",
    "llm_usage": "id category task model input_tokens output_tokens cost_usd date ts",
    "session_contexts": "session_id customer_id messages token_estimate last_message_at",
    "user_facts": "fact_id customer_id fact_key fact_value is_critical confidence evidence_count source_unit_id source_portal source_episode_id promoted_at",
    "fin_customer_profile": "customer_id investor_type total_asset trading_frequency behavior_score preferred_asset_class investment_horizon risk_tags real_name birth_date occupation mobile_masked opened_at generation_basis snapshot_hash",
    "profile_snapshots": "snapshot_id customer_id version profile generation_basis snapshot_hash is_current created_at",
    "customer_kb": "doc_id",
}


def missing_contract_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """{schema.table: [missing columns]} — a missing table lists all its columns."""
    have: dict[tuple[str, str], set[str]] = {}
    for schema, table, col in con.execute(
        "SELECT table_schema, table_name, column_name FROM information_schema.columns"
    ).fetchall():
        have.setdefault((schema, table), set()).add(col)
    problems = {}
    for schema, spec in (("raw", RAW), ("main", MAIN)):
        for table, cols in spec.items():
            missing = [c for c in cols.split() if c not in have.get((schema, table), set())]
            if missing:
                problems[f"{schema}.{table}"] = missing
    return problems
