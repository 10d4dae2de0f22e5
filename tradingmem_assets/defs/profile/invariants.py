"""Red lines of the memory layers and the customer profile (SPEC section 10), as Pandera schemas.

Each schema runs before its table is written and backs a *blocking* asset check:
- ``investor_type_from_latest_questionnaire``: investor_type equals the latest questionnaire value,
  recomputed by independent SQL (``expected_investor_type``); no conversation can move it.
- ``every_profile_field_has_basis``: every field's basis entry names a source and a rule and says
  why, including (above all) when the value is null.
- ``one_current_snapshot_per_customer``: exactly one current snapshot per customer, versions
  1..n without gaps, the current one is the newest, and it carries the profile's hash.
- ``no_internal_document_in_customer_kb``: every row of customer_kb is public in kb_documents.
- ``user_facts_meet_promotion_rule``: every fact's unit passes the promotion rule at as_of.
- ``session_contexts_within_window_and_budget``: active sessions only, within 4096 tokens.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pandera.polars as pa
import polars as pl

from tradingmem_assets.defs.memory.facts import CRITICAL_FACT_KEYS
from tradingmem_assets.defs.memory.promotion import PROMOTION_MIN_CONFIDENCE, PROMOTION_MIN_EVIDENCE
from tradingmem_assets.defs.memory.sessions import SESSION_IDLE, SESSION_MAX_AGE, SESSION_TOKEN_BUDGET
from tradingmem_assets.defs.profile.fields import PROFILE_FIELDS
from tradingmem_assets.lib.sql_json import sql_literal
from tradingmem_assets.lib.validation import row_rule
from tradingmem_assets.lib.vocabulary import INVESTOR_TYPES

INVESTOR_TYPE_CHECK = "investor_type_from_latest_questionnaire"
BASIS_CHECK = "every_profile_field_has_basis"
ONE_CURRENT_CHECK = "one_current_snapshot_per_customer"
KB_CHECK = "no_internal_document_in_customer_kb"
FACTS_CHECK = "user_facts_meet_promotion_rule"
SESSIONS_CHECK = "session_contexts_within_window_and_budget"


# --- fin_customer_profile ------------------------------------------------------------------------


def _basis_entry_ok(field: str) -> pl.Expr:
    """Source, rule and row ids are always named; a null value (and risk_tags, always) says why."""
    entry = pl.col("basis").struct.field(field)
    reason = entry.struct.field("reason")
    says_why = reason.is_not_null() & (reason.str.len_chars() > 0)
    needs_why = pl.lit(True) if field == "risk_tags" else pl.col(field).is_null()
    return (
        entry.is_not_null()
        & (entry.struct.field("source").str.len_chars() > 0)
        & (entry.struct.field("rule").str.len_chars() > 0)
        & entry.struct.field("row_ids").is_not_null()
        & (~needs_why | says_why)
    )


def _every_field_has_basis() -> pl.Expr:
    ok = pl.lit(True)
    for field in PROFILE_FIELDS:
        ok = ok & _basis_entry_ok(field)
    return ok


def _basis_entry_ok_sql(field: str) -> str:
    """``_basis_entry_ok`` in SQL (``lib.screen``)."""
    entry = f"struct_extract(basis, {sql_literal(field)})"
    says_why = (
        f"struct_extract({entry}, 'reason') IS NOT NULL AND length(struct_extract({entry}, 'reason')) > 0"
    )
    needs_why = "true" if field == "risk_tags" else f"{field} IS NULL"
    return (
        f"{entry} IS NOT NULL AND length(struct_extract({entry}, 'source')) > 0 "
        f"AND length(struct_extract({entry}, 'rule')) > 0 AND struct_extract({entry}, 'row_ids') IS NOT NULL "
        f"AND (NOT ({needs_why}) OR ({says_why}))"
    )


def latest_investor_types_sql() -> str:
    """Independent SQL for the red-line check: the latest questionnaire value per customer at $1."""
    return (
        "SELECT customer_id, investor_type AS expected_investor_type FROM raw.questionnaire_results "
        "WHERE assessed_at <= $1 QUALIFY row_number() OVER "
        "(PARTITION BY customer_id ORDER BY assessed_at DESC, assessment_id DESC) = 1"
    )


FIN_CUSTOMER_PROFILE_INVARIANTS = pa.DataFrameSchema(
    {
        "customer_id": pa.Column(pl.String, unique=True),
        "investor_type": pa.Column(pl.String, pa.Check.isin(list(INVESTOR_TYPES)), nullable=True),
        "expected_investor_type": pa.Column(pl.String, nullable=True),
        "behavior_score": pa.Column(pl.Float64, [pa.Check.ge(0), pa.Check.le(100)], nullable=True),
        "trading_frequency": pa.Column(pl.Int64, pa.Check.ge(0)),
        "snapshot_hash": pa.Column(pl.String, pa.Check.str_length(64, 64)),
        "basis": pa.Column(nullable=False),
    },
    name="fin_customer_profile",
    checks=[
        pa.Check(
            row_rule(
                pl.col("investor_type").eq_missing(pl.col("expected_investor_type")),
                sql="investor_type IS NOT DISTINCT FROM expected_investor_type",
            ),
            name=INVESTOR_TYPE_CHECK,
        ),
        pa.Check(
            row_rule(_every_field_has_basis(), sql=" AND ".join(map(_basis_entry_ok_sql, PROFILE_FIELDS))),
            name=BASIS_CHECK,
        ),
    ],
)


# --- profile_snapshots ---------------------------------------------------------------------------


def _snapshot_checks() -> list[pa.Check]:
    per_customer = "customer_id"
    current = pl.col("is_current").cast(pl.Int64)
    return [
        pa.Check(row_rule(current.sum().over(per_customer) == 1), name=ONE_CURRENT_CHECK),
        pa.Check(
            row_rule(
                (pl.col("version").min().over(per_customer) == 1)
                & (pl.col("version").max().over(per_customer) == pl.len().over(per_customer))
            ),
            name="versions_1_to_n_without_gaps",
        ),
        pa.Check(
            row_rule(
                ~pl.col("is_current") | (pl.col("version") == pl.col("version").max().over(per_customer))
            ),
            name="current_snapshot_is_the_newest",
        ),
        pa.Check(
            row_rule(
                ~pl.col("is_current")
                | pl.col("profile_hash").is_null()
                | (pl.col("snapshot_hash") == pl.col("profile_hash"))
            ),
            name="current_snapshot_matches_the_profile",
        ),
    ]


PROFILE_SNAPSHOTS_INVARIANTS = pa.DataFrameSchema(
    {
        "snapshot_id": pa.Column(pl.String, unique=True),
        "customer_id": pa.Column(pl.String),
        "version": pa.Column(pl.Int64, pa.Check.ge(1)),
        "snapshot_hash": pa.Column(pl.String, pa.Check.str_length(64, 64)),
        "is_current": pa.Column(pl.Boolean),
        "profile_hash": pa.Column(pl.String, nullable=True),
    },
    name="profile_snapshots",
    unique=["customer_id", "version"],
    checks=_snapshot_checks(),
)


# --- customer_kb ---------------------------------------------------------------------------------

CUSTOMER_KB_INVARIANTS = pa.DataFrameSchema(
    {
        "doc_id": pa.Column(pl.String, unique=True),
        "title": pa.Column(pl.String),
        "visibility": pa.Column(pl.String),
        "source_visibility": pa.Column(pl.String, nullable=True),
    },
    name="customer_kb",
    checks=[
        pa.Check(
            row_rule((pl.col("visibility") == "public") & (pl.col("source_visibility") == "public")),
            name=KB_CHECK,
        )
    ],
)


# --- user_facts ----------------------------------------------------------------------------------


def user_facts_schema(as_of: datetime, stale_days: int) -> pa.DataFrameSchema:
    """user_facts joined with its units' state: every fact must pass the promotion rule at as_of."""
    rule = (
        (
            (pl.col("evidence_count") >= PROMOTION_MIN_EVIDENCE)
            | (pl.col("confidence") >= PROMOTION_MIN_CONFIDENCE)
        )
        & (pl.col("conflict_count") == 0)
        & (pl.col("valid_from") <= as_of)
        & (pl.col("valid_until").is_null() | (pl.col("valid_until") > as_of))
        & (pl.col("updated_at") >= as_of - timedelta(days=stale_days))
    )
    return pa.DataFrameSchema(
        {
            "fact_id": pa.Column(pl.String, unique=True),
            "source_unit_id": pa.Column(pl.String, unique=True),
            "customer_id": pa.Column(pl.String),
            "fact_key": pa.Column(pl.String),
            "is_critical": pa.Column(pl.Boolean),
        },
        name="user_facts",
        checks=[
            pa.Check(row_rule(rule), name=FACTS_CHECK),
            pa.Check(
                row_rule(pl.col("is_critical") == pl.col("fact_key").is_in(list(CRITICAL_FACT_KEYS))),
                name="is_critical_marks_the_critical_keys",
            ),
        ],
    )


# --- session_contexts ----------------------------------------------------------------------------


def session_contexts_schema(as_of: datetime) -> pa.DataFrameSchema:
    active = (
        (pl.col("last_message_at") <= as_of)
        & (pl.col("last_message_at") >= as_of - SESSION_IDLE)
        & (pl.col("started_at") >= as_of - SESSION_MAX_AGE)
    )
    return pa.DataFrameSchema(
        {
            "session_id": pa.Column(pl.String, unique=True),
            "customer_id": pa.Column(pl.String),
            "token_estimate": pa.Column(pl.Int64, [pa.Check.ge(0), pa.Check.le(SESSION_TOKEN_BUDGET)]),
            "message_count": pa.Column(pl.Int64, pa.Check.ge(1)),
        },
        name="session_contexts",
        checks=[pa.Check(row_rule(active), name=SESSIONS_CHECK)],
    )
