"""Column descriptions of the memory tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

MEMORY_TABLE_DOCS = (
    TableDoc(
        tables.main_table("memory_promotions"),
        "Each memory unit's promotion decision, with its reasons.",
        (
            ("unit_id", "VARCHAR", "The memory unit (raw.memory_unit.unit_id)."),
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            ("fact_key", "VARCHAR", "The profile field the fact is about, e.g. risk_tolerance."),
            ("fact_value", "VARCHAR", "The fact's value, as text."),
            ("status", "VARCHAR", "promoted, waiting_adjudication, rejected or stale."),
            ("reasons", "VARCHAR[]", "Every reason code, sorted."),
            ("detail", "VARCHAR", "JSON: the thresholds and evidence the decision was taken on."),
            ("confidence", "DOUBLE", "Confidence of the fact, 0 to 1."),
            ("evidence_count", "BIGINT", "How many pieces of evidence support it."),
            ("conflict_count", "BIGINT", "How many pieces of evidence contradict it."),
            ("valid_from", "TIMESTAMP WITH TIME ZONE", "Start of the validity interval."),
            ("valid_until", "TIMESTAMP WITH TIME ZONE", "End of the validity interval (null: still valid)."),
            ("updated_at", "TIMESTAMP WITH TIME ZONE", "When the unit last changed."),
            ("source_portal", "VARCHAR", "The portal the fact came from (advisor, app, ...)."),
            ("source_episode_id", "VARCHAR", "The conversation episode the fact came from."),
            ("evidence_rows", "BIGINT", "Evidence rows found for the unit."),
        ),
    ),
    TableDoc(
        tables.main_table("session_contexts"),
        "Active conversation sessions: recent messages within the token budget.",
        (
            ("session_id", "VARCHAR", "The conversation or agent session."),
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            ("messages", "VARCHAR", "JSON list of the session's recent messages."),
            ("token_estimate", "BIGINT", "Estimated tokens of messages."),
            ("message_count", "BIGINT", "Messages in the session."),
            ("started_at", "TIMESTAMP WITH TIME ZONE", "First message."),
            ("last_message_at", "TIMESTAMP WITH TIME ZONE", "Latest message."),
        ),
    ),
    TableDoc(
        tables.main_table("user_facts"),
        "Promoted customer facts (long-term memory).",
        (
            ("fact_id", "VARCHAR", "The fact."),
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            ("fact_key", "VARCHAR", "The profile field the fact is about, e.g. risk_tolerance."),
            ("fact_value", "VARCHAR", "The fact's value, as text."),
            ("is_critical", "BOOLEAN", "Whether the fact is critical (needs adjudication to change)."),
            ("confidence", "DOUBLE", "Confidence of the fact, 0 to 1."),
            ("evidence_count", "BIGINT", "How many pieces of evidence support it."),
            ("source_unit_id", "VARCHAR", "The memory unit it was promoted from."),
            ("source_portal", "VARCHAR", "The portal the fact came from (advisor, app, ...)."),
            ("source_episode_id", "VARCHAR", "The conversation episode the fact came from."),
            ("promoted_at", "TIMESTAMP WITH TIME ZONE", "When it was promoted."),
            (
                "known_at",
                "TIMESTAMP WITH TIME ZONE",
                "When the row became knowable in the world (every as-of read filters on it).",
            ),
        ),
    ),
)
