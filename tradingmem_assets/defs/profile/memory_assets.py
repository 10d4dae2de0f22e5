"""Memory layers: short-term session contexts and the mid-term -> long-term promotion (user_facts)."""

import dagster as dg
import polars as pl

from tradingmem_assets.core import memory
from tradingmem_assets.defs.landing.assets import raw_key
from tradingmem_assets.defs.metadata import check_result, table_metadata
from tradingmem_assets.defs.profile.common import PROFILE_GROUP, fail_on, read_columns
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.schemas import profile as schemas
from tradingmem_assets.schemas.validation import validate
from tradingmem_assets.settings import SETTINGS
from tradingmem_assets.warehouse import read_frame, replace_table, transaction

UNIT_COLUMNS = [
    "unit_id",
    "customer_id",
    "fact_key",
    "fact_value",
    "confidence",
    "evidence_count",
    "conflict_count",
    "valid_from",
    "valid_until",
    "source_portal",
    "source_episode_id",
    "created_at",
    "updated_at",
]


@dg.asset(
    group_name=PROFILE_GROUP,
    deps=[raw_key("conversation_message")],
    kinds={"duckdb", "polars"},
    description="Short-term memory: the newest messages (<= 4096 tokens) of each session active at as_of; "
    "never an input of the profile.",
    check_specs=[
        dg.AssetCheckSpec(
            schemas.SESSIONS_CHECK,
            asset="session_contexts",
            blocking=True,
            description="Only sessions active at as_of (last message <= 30 min, age <= 24 h), "
            "each within budget.",
        )
    ],
)
def session_contexts(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        read_columns(con, "raw.conversation_message", ["message_id"], limit=0)  # clear failure if missing
        messages = read_frame(con, memory.ACTIVE_SESSION_MESSAGES_SQL, [as_of])
        result = memory.session_contexts(messages, as_of)
        validation = validate(schemas.session_contexts_schema(as_of), result.contexts)
        fail_on(validation, "session_contexts")
        with transaction(con):
            replace_table(con, "main.session_contexts", result.contexts)
    mixed = result.mixed_customer_sessions
    if mixed.height:
        context.log.warning(
            f"{mixed.height} active session(s) mix several customers and got no context: "
            + ", ".join(mixed.get_column("session_id").head(10).to_list())
        )
    return dg.MaterializeResult(
        metadata={
            **table_metadata("main.session_contexts", result.contexts),
            "as_of": as_of.isoformat(),
            "active_sessions": result.active_sessions,
            "sessions_refused_mixed_customers": mixed.height,
            "messages_kept": int(result.contexts.get_column("message_count").sum() or 0),
            "truncated_sessions": int(
                result.contexts.get_column("messages").str.contains('"truncated":true', literal=True).sum()
                or 0
            ),
        },
        check_results=[check_result(schemas.SESSIONS_CHECK, validation, dg.AssetKey("session_contexts"))],
    )


@dg.multi_asset(
    group_name=PROFILE_GROUP,
    specs=[
        dg.AssetSpec(
            "memory_promotions",
            deps=[raw_key("memory_unit"), raw_key("memory_evidence")],
            kinds={"duckdb", "polars"},
            description="The promotion decision of every mid-term memory unit at as_of "
            "(promoted / below_threshold / awaiting_adjudication / stale / expired / not_yet_valid).",
        ),
        dg.AssetSpec(
            "user_facts",
            deps=["memory_promotions"],
            kinds={"duckdb", "polars"},
            description="Long-term memory: promoted units (evidence >= 2 or confidence >= 0.90, no conflict, "
            "valid, fresh), with source portal and episode.",
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            schemas.FACTS_CHECK,
            asset="user_facts",
            blocking=True,
            description="No one-off statement, conflicting, invalid or stale unit is a fact.",
        )
    ],
)
def memory_promotion(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    stale_days = SETTINGS.memory_stale_days
    with warehouse.connect() as con:
        units = read_columns(con, "raw.memory_unit", UNIT_COLUMNS)
        evidence = read_columns(con, "raw.memory_evidence", ["evidence_id", "unit_id", "created_at"])
        promotions = memory.classify_units(units, as_of, stale_days, evidence)
        facts = memory.user_facts(promotions)
        checked = facts.join(
            promotions.select(
                pl.col("unit_id").alias("source_unit_id"),
                "conflict_count",
                "valid_from",
                "valid_until",
                "updated_at",
            ),
            on="source_unit_id",
            how="left",
        )
        validation = validate(schemas.user_facts_schema(as_of, stale_days), checked)
        fail_on(validation, "user_facts")
        with transaction(con):
            replace_table(con, "main.memory_promotions", promotions)
            replace_table(con, "main.user_facts", facts)
    statuses = dict(promotions.group_by("status").len().rows())
    orphans = evidence.join(units.select("unit_id"), on="unit_id", how="anti").height
    yield dg.MaterializeResult(
        asset_key="memory_promotions",
        metadata={
            **table_metadata("main.memory_promotions", promotions),
            "as_of": as_of.isoformat(),
            "memory_stale_days": stale_days,
            "units_created_after_as_of": units.height - promotions.height,
            "evidence_rows_without_unit": orphans,
            **{f"units_{s}": int(statuses.get(s, 0)) for s in memory.UNIT_STATUSES},
        },
    )
    yield dg.MaterializeResult(
        asset_key="user_facts",
        metadata={
            **table_metadata("main.user_facts", facts),
            "critical_facts": int(facts.get_column("is_critical").sum() or 0),
            "customers_with_facts": facts.get_column("customer_id").n_unique(),
        },
        check_results=[check_result(schemas.FACTS_CHECK, validation, dg.AssetKey("user_facts"))],
    )
