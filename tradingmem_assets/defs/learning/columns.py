"""Column descriptions of the learning tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

LEARNING_TABLE_DOCS = (
    TableDoc(
        tables.main_table("institution_output_rejects"),
        "Institution role outputs refused by their schema, with every reason.",
        (
            ("output_id", "VARCHAR", "The role output."),
            ("run_id", "VARCHAR", "The institution run."),
            ("role", "VARCHAR", "analyst, bull, bear, risk, trader or portfolio_manager."),
            ("schema", "VARCHAR", "The schema it claimed."),
            ("reason", "VARCHAR", "Every reason, joined with ; ."),
            ("has_proposal", "BOOLEAN", "Whether it carried a methodology proposal (ignored)."),
            ("started_at", "TIMESTAMP WITH TIME ZONE", "When its run started."),
        ),
    ),
    TableDoc(
        tables.main_table("institution_reflections"),
        "Each institution run scored at each elapsed ladder window.",
        (
            ("run_id", "VARCHAR", "The institution run."),
            ("window", "BIGINT", "Reflection window in days (1, 7 or 30)."),
            ("realized_return", "DOUBLE", "Symbol's return over the window."),
            (
                "correct",
                "BOOLEAN",
                "Whether the portfolio manager's action was right at this window (null unless scored).",
            ),
            ("kind", "VARCHAR", "The run's kind."),
            ("symbol", "VARCHAR", "Instrument symbol, e.g. BTCUSD or GOOG."),
            ("action", "VARCHAR", "The portfolio manager's action."),
            ("status", "VARCHAR", "scored, no_price, no_decision or multiple_decisions."),
            ("started_at", "TIMESTAMP WITH TIME ZONE", "When the run or turn started."),
            ("recorded_at", "TIMESTAMP WITH TIME ZONE", "started_at + window."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
        ),
    ),
    TableDoc(
        tables.main_table("learning_deletions"),
        "Operator tombstones: deleted learnings never come back.",
        (
            ("learning_id", "VARCHAR", "The learning: l_ + first 16 hex of sha256(trigger | tool names)."),
            ("deleted_at", "TIMESTAMP WITH TIME ZONE", "When it was deleted."),
            ("reason", "VARCHAR", "Why (operator's words)."),
        ),
    ),
    TableDoc(
        tables.main_table("learning_reviews"),
        "One review per agent turn: why it became a learning or not.",
        (
            ("turn_id", "VARCHAR", "The agent turn (raw.agent_turns.turn_id)."),
            ("started_at", "TIMESTAMP WITH TIME ZONE", "When the turn started."),
            (
                "outcome",
                "VARCHAR",
                "not_reviewed, rejected, below_threshold, created, merged or suppressed_deleted.",
            ),
            ("reason", "VARCHAR", "Why."),
            ("score", "BIGINT", "Review score 0-10 (null when not reviewed)."),
            ("candidate_learning_id", "VARCHAR", "The learning id the turn would have."),
            ("learning_id", "VARCHAR", "The learning it created or joined (null otherwise)."),
        ),
    ),
    TableDoc(
        tables.main_table("learnings"),
        "Reusable learnings: redacted triggers and tool sequences that worked.",
        (
            ("learning_id", "VARCHAR", "The learning: l_ + first 16 hex of sha256(trigger | tool names)."),
            ("name", "VARCHAR", "Short name of the learning."),
            ("trigger", "VARCHAR", "The redacted user message that triggers it."),
            ("tool_sequence", "VARCHAR", "JSON list of redacted tool calls, in order."),
            ("guidance", "VARCHAR", "How to apply it."),
            ("success_count", "BIGINT", "Successes (the learned turns plus adopted successful feedback)."),
            ("failure_count", "BIGINT", "Adopted feedback that failed."),
            ("ignored_count", "BIGINT", "Feedback where it was not adopted."),
            ("weight", "DOUBLE", "0.95 ** ignored_count."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "First turn's time."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
            ("last_used_at", "TIMESTAMP WITH TIME ZONE", "Latest turn or adopted feedback."),
            (
                "required_tier",
                "BIGINT",
                "Highest tool tier of the sequence (tools.yaml; unknown tools are tier 4).",
            ),
            ("tool_names", "VARCHAR", "Tool names in call order, comma-joined."),
            ("turn_count", "BIGINT", "Turns that formed it."),
            ("source_turn_id", "VARCHAR", "The first turn."),
        ),
    ),
    TableDoc(
        tables.main_table("methodologies"),
        "Methodologies: deduplicated proposals with their Wilson-bounded track record.",
        (
            ("methodology_id", "VARCHAR", "The methodology: m_ + first 16 hex of sha256 of its dedup key."),
            ("name", "VARCHAR", "Name of the creating proposal."),
            ("description", "VARCHAR", "Description of the creating proposal."),
            ("direction", "VARCHAR", "long, short or neutral."),
            ("primary_signal", "VARCHAR", "Primary signal (lib/vocabulary.py)."),
            ("timeframe", "VARCHAR", "1h, 4h, 1d, 1w or 1m."),
            ("indicators", "VARCHAR", "JSON list of indicators, normalized."),
            ("asset_class", "VARCHAR", "Asset class."),
            ("phases", "VARCHAR", "JSON phase DAG (name, criteria, tools_used, depends_on)."),
            ("dedup_key", "VARCHAR", "direction|primary_signal|timeframe|indicators|asset_class."),
            ("quarantine", "BIGINT", "1 quarantined, 0 graduated (only 0 is injectable)."),
            ("confidence", "DOUBLE", "Wilson lower bound (z 1.96) of its accuracy."),
            ("times_used", "BIGINT", "Applied outcomes folded."),
            ("times_correct", "BIGINT", "Correct ones among them."),
            ("times_proposed", "BIGINT", "Proposals that created or merged into it."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When it was first proposed."),
            ("graduated_at", "TIMESTAMP WITH TIME ZONE", "Latest graduation (null: never)."),
            ("updated_at", "TIMESTAMP WITH TIME ZONE", "Latest change."),
            ("source_output_id", "VARCHAR", "The role output that created it."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
        ),
    ),
    TableDoc(
        tables.main_table("methodology_case_hints"),
        "Each injection with whether its methodology was injectable then.",
        (
            ("injection_id", "VARCHAR", "The injection."),
            ("methodology_id", "VARCHAR", "The methodology: m_ + first 16 hex of sha256 of its dedup key."),
            ("run_id", "VARCHAR", "The institution run."),
            ("injected_at", "TIMESTAMP WITH TIME ZONE", "When it was injected."),
            (
                "injectable_at_injection",
                "BOOLEAN",
                "Whether the methodology was graduated after its last outcome at or before the injection.",
            ),
            ("methodology_exists", "BOOLEAN", "Whether the methodology exists."),
            ("run_exists", "BOOLEAN", "Whether the run exists."),
        ),
    ),
    TableDoc(
        tables.main_table("methodology_cases"),
        "Ladder outcomes of scheduled runs per cited methodology and window.",
        (
            ("case_id", "VARCHAR", "mc_ + sha256(run|window|methodology)[:16]."),
            ("methodology_id", "VARCHAR", "The methodology: m_ + first 16 hex of sha256 of its dedup key."),
            ("run_id", "VARCHAR", "The institution run."),
            ("window", "BIGINT", "Reflection window in days (1, 7 or 30)."),
            (
                "correct",
                "BOOLEAN",
                "Whether the portfolio manager's action was right at this window (null unless scored).",
            ),
            ("recorded_at", "TIMESTAMP WITH TIME ZONE", "started_at + window."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
            ("applied", "BOOLEAN", "Whether the methodology existed when the run started (only these fold)."),
        ),
    ),
    TableDoc(
        tables.main_table("methodology_cron_runs"),
        "Learning heartbeat: one row per learning run.",
        (
            ("run_id", "VARCHAR", "The Dagster run."),
            ("job_name", "VARCHAR", "The Dagster job."),
            ("status", "VARCHAR", "ok or failed."),
            ("ts", "TIMESTAMP WITH TIME ZONE", "Wall clock when it was written."),
            ("as_of", "TIMESTAMP WITH TIME ZONE", "The run's time anchor (heartbeat rules use it)."),
            ("detail", "VARCHAR", "JSON: as_of and learning_enabled."),
        ),
    ),
    TableDoc(
        tables.main_table("methodology_lifecycle_events"),
        "Lifecycle of methodologies: created, merged, rejected_*, outcome_recorded, graduated, demoted.",
        (
            ("event_id", "VARCHAR", "me_ + sha256(event|source|methodology)[:16]."),
            ("methodology_id", "VARCHAR", "The methodology (null for rejected candidates)."),
            (
                "event",
                "VARCHAR",
                "created, merged, rejected_injection, rejected_invalid, outcome_recorded, graduated, demoted",
            ),
            ("ts", "TIMESTAMP WITH TIME ZONE", "When it happened (world time)."),
            (
                "detail",
                "VARCHAR",
                "JSON: via (dedup_key, tfidf, jaccard) for merges; output_id, run_id and reasons "
                "for rejections; counts for outcomes.",
            ),
            ("source_output_id", "VARCHAR", "The role output behind it (proposal events)."),
        ),
    ),
)
