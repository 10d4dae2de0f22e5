"""The fields of the customer profile (SPEC section 10): each field's only writer and its rule.

No Dagster here. Each field has exactly one writer (``FIELD_OWNERS``) and one rule (``RULES``,
described in ``RULE_DESCRIPTIONS``):

- ``investor_type``: the latest questionnaire result (assessed_at <= as_of; ties: highest
  assessment_id). Nothing said in a conversation can reach it.
- ``total_asset``: balance_after of the latest transaction (ts, txn_id) at or before as_of that
  carries a balance. ``trading_frequency``: transactions with ts in (as_of - 30 days, as_of].
  ``behavior_score``: 100 x share of buys with ts in (as_of - 90 days, as_of] whose product risk
  level is <= the investor type's (C1->R1 ... C5->R5, ``risk_ceiling_sql``), rounded to 2 decimals
  (half to even); null without a questionnaire or without buys.
- ``preferred_asset_class``, ``investment_horizon``, ``risk_tags``: promoted user_facts only (the
  newest by promoted_at, then confidence, evidence_count, fact_id). A self-reported risk level
  becomes the tag ``self_reported:<value>``; ``suitability_conflict`` is added when two of the
  three sources disagree (self-report class != investor_type; a buy above the investor type's
  level; without a questionnaire, a buy above the self-report's level).
- identity: the customers row; ``mobile_masked`` keeps the first 3 and last 4 characters of the
  number (whitespace and dashes removed) and stars the rest; 7 characters or fewer are fully starred.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from tradingmem_assets.defs.memory.facts import ASSET_CLASS_KEY, HORIZON_KEY, RISK_LEVEL_KEY
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.columns import table_dtypes
from tradingmem_assets.lib.sql_json import sql_literal

FREQUENCY_WINDOW = timedelta(days=30)
BEHAVIOR_WINDOW = timedelta(days=90)

# Self-reported risk preferences and the investor class each one claims (SPEC section 10).
SELF_REPORT_CLASSES: dict[str, str] = {
    "保守型": "C1",
    "conservative": "C1",
    "稳健型": "C2",
    "moderately conservative": "C2",
    "平衡型": "C3",
    "balanced": "C3",
    "成长型": "C4",
    "growth": "C4",
    "进取型": "C5",
    "激进型": "C5",
    "aggressive": "C5",
    **{f"c{i}": f"C{i}" for i in range(1, 6)},
}
SELF_REPORTED_TAG = "self_reported:"
SUITABILITY_CONFLICT_TAG = "suitability_conflict"
# The product risk level an investor type allows: C1->R1 ... C5->R5 (same digit, this prefix).
PRODUCT_RISK_PREFIX = "R"


def risk_ceiling_sql(investor_type: str) -> str:
    """SQL: the highest product risk level the investor type ``investor_type`` allows (C<n> -> R<n>)."""
    return f"{sql_literal(PRODUCT_RISK_PREFIX)} || substr({investor_type}, 2)"


# The profile, in canonical (alphabetical) order: this order is what the snapshot hash covers.
PROFILE_FIELDS: tuple[str, ...] = (
    "behavior_score",
    "birth_date",
    "investment_horizon",
    "investor_type",
    "mobile_masked",
    "occupation",
    "opened_at",
    "preferred_asset_class",
    "real_name",
    "risk_tags",
    "total_asset",
    "trading_frequency",
)
FIELD_OWNERS: dict[str, str] = {
    "investor_type": "questionnaire_results",
    "total_asset": "customer_transactions",
    "trading_frequency": "customer_transactions",
    "behavior_score": "customer_transactions",
    "preferred_asset_class": "user_facts",
    "investment_horizon": "user_facts",
    "risk_tags": "user_facts",
    "real_name": "customers",
    "birth_date": "customers",
    "occupation": "customers",
    "mobile_masked": "customers",
    "opened_at": "customers",
}

FIN_CUSTOMER_PROFILE_DTYPES = table_dtypes(tables.FIN_CUSTOMER_PROFILE)
# The rule each basis entry names (a short id, so 500,000 profiles stay small) and what it means.
RULES: dict[str, str] = {
    "investor_type": "latest_questionnaire",
    "total_asset": "latest_balance",
    "trading_frequency": "transactions_30d",
    "behavior_score": "buys_within_risk_90d",
    "preferred_asset_class": "newest_promoted_fact",
    "investment_horizon": "newest_promoted_fact",
    "risk_tags": "self_report_and_suitability",
    "real_name": "customers_field",
    "birth_date": "customers_field",
    "occupation": "customers_field",
    "mobile_masked": "customers_mobile_masked",
    "opened_at": "customers_field",
}
RULE_DESCRIPTIONS: dict[str, str] = {
    "latest_questionnaire": "investor_type of the latest questionnaire_results row with assessed_at <= as_of "
    "(ties: highest assessment_id); nothing from memory or conversation can write it",
    "latest_balance": "balance_after of the latest transaction (ts, txn_id) at or before as_of that has one",
    "transactions_30d": "number of transactions with ts in (as_of - 30 days, as_of]",
    "buys_within_risk_90d": "100 x share of buys with ts in (as_of - 90 days, as_of] whose product risk "
    "level <= the investor type's (C1->R1 ... C5->R5); null without questionnaire or buys",
    "newest_promoted_fact": "fact_value of the customer's newest promoted user_fact for the field's key "
    "(promoted_at, confidence, evidence_count, fact_id)",
    "self_report_and_suitability": f"'{SELF_REPORTED_TAG}<value>' from the newest promoted {RISK_LEVEL_KEY} "
    f"fact; '{SUITABILITY_CONFLICT_TAG}' when two of questionnaire, self-report and 90-day buys disagree",
    "customers_field": "copied from the customers row",
    "customers_mobile_masked": "customers.mobile without whitespace/dashes: first 3 and last 4 characters "
    "kept, the rest starred (7 characters or fewer: all starred)",
}

# The short column prefix of each profile fact key in the build (rl_value, ac_fact_id, ...).
FACT_PREFIXES = {RISK_LEVEL_KEY: "rl", ASSET_CLASS_KEY: "ac", HORIZON_KEY: "hz"}


def normalize_self_report(value: pl.Expr) -> pl.Expr:
    """Lower-case, trim, and fold '_'/'-'/repeated spaces, so 'Moderately_Conservative' matches."""
    return value.str.strip_chars().str.to_lowercase().str.replace_all(r"[_\-\s]+", " ")


def self_report_class(value: pl.Expr) -> pl.Expr:
    """The investor class a self-reported risk preference claims (null when not in the mapping)."""
    return normalize_self_report(value).replace_strict(
        SELF_REPORT_CLASSES, default=None, return_dtype=pl.String
    )


def self_reports(values: pl.Series) -> pl.DataFrame:
    """Per distinct self-reported value: its class and its tag (a lookup of a few rows, joined in SQL)."""
    return pl.DataFrame({"rl_value": values.cast(pl.String).unique()}).select(
        "rl_value",
        self_report_class(pl.col("rl_value")).alias("self_class"),
        (pl.lit(SELF_REPORTED_TAG) + pl.col("rl_value").str.strip_chars()).alias("self_tag"),
    )
