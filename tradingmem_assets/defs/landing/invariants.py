"""Landing tables of SPEC section 2: column types, keys and value rules, declared once.

``LANDING_TABLES`` is the single declaration; ``landing_schema(table)`` turns it into the
Pandera (polars) schema that decides which landing rows are accepted into ``raw.<table>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import pandera.polars as pa
import polars as pl

from tradingmem_assets.lib import vocabulary as v

Kind = Literal["str", "int", "float", "bool", "ts", "date", "json_list", "json_object"]

# DuckDB types the typing step casts to, and the Polars dtypes Pandera then checks.
DUCKDB_TYPES: dict[Kind, str] = {
    "str": "VARCHAR",
    "int": "BIGINT",
    "float": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
    "date": "DATE",
    "json_list": "VARCHAR",
    "json_object": "VARCHAR",
}
POLARS_TYPES: dict[Kind, pl.DataType] = {
    "str": pl.String(),
    "int": pl.Int64(),
    "float": pl.Float64(),
    "bool": pl.Boolean(),
    "ts": pl.Datetime("us", "UTC"),
    "date": pl.Date(),
    "json_list": pl.String(),
    "json_object": pl.String(),
}


@dataclass(frozen=True)
class Col:
    name: str
    kind: Kind = "str"
    nullable: bool = False
    isin: tuple[str, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None


@dataclass(frozen=True)
class LandingTable:
    name: str
    key: tuple[str, ...]
    columns: tuple[Col, ...]
    description: str = ""
    extra_checks: tuple[pa.Check, ...] = field(default=())

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def polars_schema(self) -> pl.Schema:
        return pl.Schema({c.name: POLARS_TYPES[c.kind] for c in self.columns})

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.polars_schema())


def _t(name: str, key: tuple[str, ...], description: str, *columns: Col) -> LandingTable:
    return LandingTable(name=name, key=key, columns=columns, description=description)


S, N = "str", True  # shorthands for the table below
LANDING_TABLE_DECLARATIONS: tuple[LandingTable, ...] = (
    _t(
        "trading_decisions",
        ("decision_id",),
        "Decisions the agent's roles took, with the evidence present at decision time.",
        Col("decision_id"),
        Col("role_id", nullable=N),
        Col("skill_id", nullable=N),
        Col("symbol"),
        Col("direction", isin=v.DIRECTIONS),
        Col("account_id"),
        Col("market"),
        Col("scenario", nullable=N),
        Col("decision_text", nullable=N),
        Col("evidence", "json_list", nullable=N),
        Col("preview_id", nullable=N),
        Col("decided_at", "ts"),
    ),
    _t(
        "trade_previews",
        ("preview_id",),
        "Trade previews created for decisions.",
        Col("preview_id"),
        Col("decision_id"),
        Col("created_at", "ts"),
    ),
    _t(
        "preview_consumptions",
        ("consumption_id",),
        "Which execution consumed which preview.",
        Col("consumption_id"),
        Col("preview_id"),
        Col("execution_id"),
        Col("consumed_at", "ts"),
    ),
    _t(
        "trade_executions",
        ("execution_id",),
        "Executions with their source and automation flag.",
        Col("execution_id"),
        Col("decision_id", nullable=N),
        Col("preview_id", nullable=N),
        Col("symbol"),
        Col("direction", isin=v.DIRECTIONS),
        Col("account_id"),
        Col("market"),
        Col("source", nullable=N),
        Col("source_verified", "bool", nullable=N),
        Col("automation_flag", "bool"),
        Col("executed_at", "ts"),
    ),
    _t(
        "trade_fills",
        ("fill_id",),
        "Fills of executions.",
        Col("fill_id"),
        Col("execution_id"),
        Col("qty", "float", gt=0),
        Col("price", "float", gt=0),
        Col("fee", "float", ge=0),
        Col("filled_at", "ts"),
    ),
    _t(
        "position_lifecycles",
        ("position_id",),
        "Positions opened by executions and how they ended.",
        Col("position_id"),
        Col("execution_id"),
        Col("status", isin=v.POSITION_STATUSES),
        Col("opened_at", "ts"),
        Col("closed_at", "ts", nullable=N),
        Col("realized_pnl", "float", nullable=N),
    ),
    _t(
        "price_bars",
        ("symbol", "ts"),
        "Daily bars; ts is the moment the close is known.",
        Col("symbol"),
        Col("ts", "ts"),
        Col("open", "float", gt=0),
        Col("high", "float", gt=0),
        Col("low", "float", gt=0),
        Col("close", "float", gt=0),
        Col("volume", "float", ge=0, nullable=N),
    ),
    _t(
        "market_events",
        ("event_id",),
        "Market events; exogenous ones explain outcomes no role could foresee.",
        Col("event_id"),
        Col("symbol"),
        Col("ts", "ts"),
        Col("kind"),
        Col("exogenous", "bool"),
    ),
    _t(
        "benchmark_profiles",
        ("profile_id",),
        "Evaluation profiles: horizon, optional benchmark, minimum coverage.",
        Col("profile_id"),
        Col("horizon_days", "int", gt=0),
        Col("benchmark_symbol", nullable=N),
        Col("min_coverage", "float", ge=0, le=1),
    ),
    _t(
        "evaluation_promotions",
        ("decision_id", "profile_id", "run_version"),
        "Explicit promotions of an evaluation run version to primary.",
        Col("decision_id"),
        Col("profile_id"),
        Col("run_version", "int", ge=1),
        Col("promoted_at", "ts"),
        Col("promoted_by"),
    ),
    _t(
        "agent_turns",
        ("turn_id",),
        "Agent turns with their tool calls.",
        Col("turn_id"),
        Col("session_id"),
        Col("started_at", "ts"),
        Col("user_message"),
        Col("route", nullable=N),
        Col("tool_calls", "json_list"),
        Col("completed", "bool"),
        Col("explicit_learn", "bool"),
    ),
    _t(
        "learning_feedback",
        ("feedback_id",),
        "Whether a suggested learning was adopted and worked.",
        Col("feedback_id"),
        Col("learning_id"),
        Col("turn_id", nullable=N),
        Col("adopted", "bool"),
        Col("success", "bool", nullable=N),
        Col("ts", "ts"),
    ),
    _t(
        "institution_runs",
        ("run_id",),
        "Runs of the multi-role investment institution.",
        Col("run_id"),
        Col("started_at", "ts"),
        Col("symbol"),
        Col("asset_class"),
        Col("kind", isin=v.INSTITUTION_RUN_KINDS),
    ),
    _t(
        "institution_role_outputs",
        ("output_id",),
        "Structured outputs of each institution role (validated against their schema downstream).",
        Col("output_id"),
        Col("run_id"),
        Col("role", isin=v.INSTITUTION_ROLES),
        Col("schema"),
        Col("action", nullable=N),
        Col("confidence", "float", nullable=N),
        Col("cited_methodology_ids", "json_list", nullable=N),
        Col("proposed_methodology", "json_object", nullable=N),
    ),
    _t(
        "methodology_injections",
        ("injection_id",),
        "Methodologies injected into institution runs.",
        Col("injection_id"),
        Col("run_id"),
        Col("methodology_id"),
        Col("injected_at", "ts"),
    ),
    _t(
        "customers",
        ("customer_id",),
        "Customer master data (identity fields of the profile).",
        Col("customer_id"),
        Col("real_name", nullable=N),
        Col("birth_date", "date", nullable=N),
        Col("occupation", nullable=N),
        Col("mobile", nullable=N),
        Col("opened_at", "ts", nullable=N),
    ),
    _t(
        "questionnaire_results",
        ("assessment_id",),
        "Risk questionnaires: the only source of investor_type.",
        Col("assessment_id"),
        Col("customer_id"),
        Col("investor_type", isin=v.INVESTOR_TYPES),
        Col("assessed_at", "ts"),
    ),
    _t(
        "customer_transactions",
        ("txn_id",),
        "Customer transactions with the product's risk level.",
        Col("txn_id"),
        Col("customer_id"),
        Col("ts", "ts"),
        Col("product_id"),
        Col("product_risk_level", isin=v.PRODUCT_RISK_LEVELS),
        Col("side", isin=v.TRANSACTION_SIDES),
        Col("amount", "float", gt=0),
        Col("balance_after", "float", ge=0, nullable=N),
    ),
    _t(
        "memory_unit",
        ("unit_id",),
        "Mid-term memory units extracted from conversations.",
        Col("unit_id"),
        Col("customer_id"),
        Col("fact_key"),
        Col("fact_value"),
        Col("confidence", "float", ge=0, le=1),
        Col("evidence_count", "int", ge=0),
        Col("conflict_count", "int", ge=0),
        Col("recall_count", "int", ge=0),
        Col("valid_from", "ts"),
        Col("valid_until", "ts", nullable=N),
        Col("source_portal", nullable=N),
        Col("source_episode_id", nullable=N),
        Col("created_at", "ts"),
        Col("updated_at", "ts"),
    ),
    _t(
        "memory_evidence",
        ("evidence_id",),
        "Conversation excerpts backing memory units.",
        Col("evidence_id"),
        Col("unit_id"),
        Col("excerpt", nullable=N),
        Col("message_id", nullable=N),
        Col("created_at", "ts"),
    ),
    _t(
        "conversation_message",
        ("message_id",),
        "Raw conversation messages (short-term memory only).",
        Col("message_id"),
        Col("session_id"),
        Col("customer_id"),
        Col("role", isin=v.MESSAGE_ROLES),
        Col("content", nullable=N),
        Col("created_at", "ts"),
    ),
    _t(
        "kb_documents",
        ("doc_id",),
        "Knowledge-base documents; only public ones may reach customers.",
        Col("doc_id"),
        Col("title"),
        Col("visibility", isin=v.KB_VISIBILITIES),
        Col("body", nullable=N),
    ),
    _t(
        "legacy_role_memory",
        ("legacy_id",),
        "Role memory of the legacy system, migrated by monthly backfills.",
        Col("legacy_id"),
        Col("role", nullable=N),
        Col("content", nullable=N),
        Col("score", "float", nullable=N),
        Col("created_at", "ts"),
        Col("provenance", nullable=N),
        Col("symbol", nullable=N),
        Col("decision_id", nullable=N),
    ),
)
LANDING_TABLES: dict[str, LandingTable] = {t.name: t for t in LANDING_TABLE_DECLARATIONS}


def _checks(col: Col) -> list[pa.Check]:
    checks: list[pa.Check] = []
    if col.isin is not None:
        checks.append(pa.Check.isin(list(col.isin)))
    if col.ge is not None:
        checks.append(pa.Check.ge(col.ge))
    if col.gt is not None:
        checks.append(pa.Check.gt(col.gt))
    if col.le is not None:
        checks.append(pa.Check.le(col.le))
    if col.kind == "str" and not col.nullable:
        checks.append(pa.Check.str_length(min_value=1))
    return checks


@cache
def landing_schema(table: str) -> pa.DataFrameSchema:
    """The Pandera schema a landing row must satisfy to enter ``raw.<table>``."""
    spec = LANDING_TABLES[table]
    return pa.DataFrameSchema(
        {
            c.name: pa.Column(POLARS_TYPES[c.kind], checks=_checks(c), nullable=c.nullable)
            for c in spec.columns
        },
        name=f"raw.{table}",
        strict="filter",
        checks=list(spec.extra_checks),
    )


RAW_REJECTS_DTYPES = pl.Schema(
    {
        "table_name": pl.String(),
        "source_file": pl.String(),
        "row_number": pl.Int64(),
        "row_key": pl.String(),
        "reason": pl.String(),
        "raw_row": pl.String(),
    }
)
