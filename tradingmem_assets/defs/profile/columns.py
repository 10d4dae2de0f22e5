"""Column descriptions of the profile tables: the data dictionary (docs/tables.md) and the column
schemas the assets declare, so the UI shows them before the first materialization."""

from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import TableDoc

PROFILE_TABLE_DOCS = (
    TableDoc(
        tables.main_table("advisor_customer_view"),
        "What the advisor sees: masked identity, suitability and profile.",
        (
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            ("real_name", "VARCHAR", "Customer's real name (shown only to the advisor)."),
            ("mobile_masked", "VARCHAR", "Mobile number with all but the last four digits masked."),
            (
                "investor_type",
                "VARCHAR",
                "Investor type C1 (most cautious) to C5 from the latest questionnaire.",
            ),
            ("max_product_risk_level", "VARCHAR", "Highest product risk level the investor type allows."),
            ("needs_questionnaire", "BOOLEAN", "Whether the questionnaire is missing or stale."),
            ("suitability_conflict", "BOOLEAN", "Whether held products exceed the allowed risk."),
            ("self_reported_risk", "VARCHAR", "Risk attitude the customer stated in conversation."),
            ("risk_tags", "VARCHAR[]", "Risk tags derived from behavior and memory, sorted."),
            ("total_asset", "DOUBLE", "Total assets held, from the transactions' balances."),
            ("trading_frequency", "BIGINT", "Transactions in the last 90 days."),
            ("behavior_score", "DOUBLE", "0-100 score of how aggressive the customer's own trading is."),
            ("preferred_asset_class", "VARCHAR", "Asset class the customer trades most."),
            ("investment_horizon", "VARCHAR", "short, medium or long, from conversation memory."),
            (
                "profile_version",
                "BIGINT",
                "Version of the customer's profile (increments when the profile changes).",
            ),
            ("snapshot_hash", "VARCHAR", "SHA-256 of the canonical profile JSON."),
        ),
    ),
    TableDoc(
        tables.main_table("customer_kb"),
        "Knowledge base the customer-facing side may use (public documents only).",
        (
            ("doc_id", "VARCHAR", "The knowledge-base document."),
            ("title", "VARCHAR", "Document title."),
            ("body", "VARCHAR", "Document body text."),
            ("visibility", "VARCHAR", "public or internal (internal never reaches customer-facing views)."),
        ),
    ),
    TableDoc(
        tables.main_table("fin_customer_profile"),
        "Current customer profile under strict field ownership.",
        (
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            (
                "investor_type",
                "VARCHAR",
                "Investor type C1 (most cautious) to C5 from the latest questionnaire.",
            ),
            ("total_asset", "DOUBLE", "Total assets held, from the transactions' balances."),
            ("trading_frequency", "BIGINT", "Transactions in the last 90 days."),
            ("behavior_score", "DOUBLE", "0-100 score of how aggressive the customer's own trading is."),
            ("preferred_asset_class", "VARCHAR", "Asset class the customer trades most."),
            ("investment_horizon", "VARCHAR", "short, medium or long, from conversation memory."),
            ("risk_tags", "VARCHAR[]", "Risk tags derived from behavior and memory, sorted."),
            ("real_name", "VARCHAR", "Customer's real name (shown only to the advisor)."),
            ("birth_date", "DATE", "Date of birth."),
            ("occupation", "VARCHAR", "Occupation."),
            ("mobile_masked", "VARCHAR", "Mobile number with all but the last four digits masked."),
            ("opened_at", "TIMESTAMP WITH TIME ZONE", "When the account was opened."),
            (
                "generation_basis",
                "VARCHAR",
                "JSON: which inputs (questionnaire, transactions, facts) built the profile.",
            ),
            ("snapshot_hash", "VARCHAR", "SHA-256 of the canonical profile JSON."),
            (
                "profile_version",
                "BIGINT",
                "Version of the customer's profile (increments when the profile changes).",
            ),
        ),
    ),
    TableDoc(
        tables.main_table("profile_snapshots"),
        "Every version of every customer profile.",
        (
            ("snapshot_id", "VARCHAR", "The snapshot."),
            ("customer_id", "VARCHAR", "The customer (raw.customers.customer_id)."),
            ("version", "BIGINT", "Profile version."),
            ("profile", "VARCHAR", "The profile, canonical JSON."),
            (
                "generation_basis",
                "VARCHAR",
                "JSON: which inputs (questionnaire, transactions, facts) built the profile.",
            ),
            ("snapshot_hash", "VARCHAR", "SHA-256 of the canonical profile JSON."),
            ("is_current", "BOOLEAN", "Whether it is the current version."),
            ("created_at", "TIMESTAMP WITH TIME ZONE", "When the version was built."),
        ),
    ),
)
