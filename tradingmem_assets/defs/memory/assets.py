"""Memory layers: short-term session contexts and the mid-term -> long-term promotion (user_facts)."""

import dagster as dg

from tradingmem_assets.defs.memory import promotion, sessions
from tradingmem_assets.defs.profile import invariants as schemas
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import dagster_kit as kit
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import record_basis
from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import read_columns, read_frame, replace_table, transaction
from tradingmem_assets.settings import SETTINGS

# what the assets of this module write, and the checks they evaluate as they write (tuples: the
# defs loader would take a module-level list of AssetSpec for assets of their own)
SESSIONS_CHECK_SPECS = (
    kit.blocking_check(
        schemas.SESSIONS_CHECK,
        "session_contexts",
        "Only sessions active at as_of (last message <= 30 min, age <= 24 h), each within budget.",
    ),
)
PROMOTION_SPECS = (
    kit.table_spec(
        "memory_promotions",
        "The promotion decision of every mid-term memory unit at as_of "
        "(promoted / below_threshold / awaiting_adjudication / stale / expired / not_yet_valid).",
        deps=[raw_key("memory_unit"), raw_key("memory_evidence")],
    ),
    kit.table_spec(
        "user_facts",
        "Long-term memory: promoted units (evidence >= 2 or confidence >= 0.90, no conflict, "
        "valid, fresh), with source portal and episode.",
        deps=["memory_promotions"],
    ),
)
PROMOTION_CHECK_SPECS = (
    kit.blocking_check(
        schemas.FACTS_CHECK,
        "user_facts",
        "No one-off statement, conflicting, invalid or stale unit is a fact.",
    ),
)


@kit.table_asset(
    "session_contexts",
    group=tables.PROFILE_GROUP,
    deps=[raw_key("conversation_message")],
    description="Short-term memory: the newest messages (<= 4096 tokens) of each session active at as_of; "
    "never an input of the profile.",
    check_specs=SESSIONS_CHECK_SPECS,
)
def session_contexts(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        read_columns(
            con, tables.raw_table("conversation_message"), ["message_id"], limit=0
        )  # clear failure if missing
        messages = read_frame(con, sessions.ACTIVE_SESSION_MESSAGES_SQL, [as_of])
        result = sessions.session_contexts(messages, as_of)
        validation = validate(schemas.session_contexts_schema(as_of), result.contexts)
        yield from kit.refuse_write(
            validation, "session_contexts", [(schemas.SESSIONS_CHECK, "session_contexts")]
        )
        with transaction(con):
            replace_table(con, tables.SESSION_CONTEXTS, result.contexts)
    mixed = result.mixed_customer_sessions
    if mixed.height:
        context.log.warning(
            f"{mixed.height} active session(s) mix several customers and got no context: "
            + ", ".join(mixed.get_column("session_id").head(10).to_list())
        )
    yield dg.MaterializeResult(
        metadata={
            **kit.table_metadata(tables.SESSION_CONTEXTS, result.contexts),
            "as_of": as_of.isoformat(),
            "active_sessions": result.active_sessions,
            "sessions_refused_mixed_customers": mixed.height,
            "messages_kept": int(result.contexts.get_column("message_count").sum() or 0),
            "truncated_sessions": int(
                result.contexts.get_column("messages").str.contains('"truncated":true', literal=True).sum()
                or 0
            ),
        },
        check_results=[kit.check_result(schemas.SESSIONS_CHECK, validation, dg.AssetKey("session_contexts"))],
    )


# the narrow projection the red line needs: every fact with the state of its unit
FACTS_CHECKED_SQL = """
SELECT f.fact_id, f.source_unit_id, f.customer_id, f.fact_key, f.is_critical, f.confidence, f.evidence_count,
       u.conflict_count, u.valid_from, u.valid_until, u.updated_at
FROM main.user_facts f LEFT JOIN main.memory_promotions u ON u.unit_id = f.source_unit_id
"""
STATUS_COUNTS_SQL = "SELECT status, count(*) FROM main.memory_promotions GROUP BY status"
COUNTS_SQL = """
SELECT (SELECT count(*) FROM main.memory_promotions),
       (SELECT count(*) FROM raw.memory_unit),
       (SELECT count(*) FROM raw.memory_evidence ANTI JOIN raw.memory_unit USING (unit_id)),
       count(*), count(*) FILTER (WHERE is_critical), count(DISTINCT customer_id)
FROM main.user_facts
"""


def _touched_units(con, warehouse: WarehouseResource, as_of, stale_days: int) -> tuple[str | None, str]:
    """The table of the units to decide again (None: all of them) and what the metadata says of it."""
    basis = warehouse.usable_basis(
        con, tables.PROMOTION_BASIS, promotion.PROMOTION_VISIBLE, promotion.PROMOTION_TABLES
    )
    if basis is None:
        return None, "every unit created by as_of (full build)"
    touched = promotion.touch_units(con, basis.as_of, as_of, stale_days)
    ((count,),) = con.execute(f"SELECT count(*) FROM {touched}").fetchall()
    return touched, (
        f"incremental since run {basis.run_id} (as_of {basis.as_of.isoformat()}): only the {count} "
        "units created, given evidence, made valid, expired or gone stale since; every memory unit "
        "and evidence row created at or before that as_of, the code, settings and registry are "
        "unchanged, so every other decision holds"
    )


@dg.multi_asset(group_name=tables.PROFILE_GROUP, specs=PROMOTION_SPECS, check_specs=PROMOTION_CHECK_SPECS)
def memory_promotion(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    stale_days = SETTINGS.memory_stale_days
    with warehouse.connect() as con:
        read_columns(
            con, tables.raw_table("memory_unit"), promotion.UNIT_COLUMNS, limit=0
        )  # clear failure if missing
        read_columns(con, tables.raw_table("memory_evidence"), ["unit_id", "created_at"], limit=0)
        touched, built = _touched_units(con, warehouse, as_of, stale_days)
        with transaction(con):  # a broken red line raises here: both tables stay as they were
            promotion.create_promotions(con, as_of, stale_days, units=touched)
            promotion.create_user_facts(con, units=touched)
            # every fact is validated, also those an incremental build kept
            validation = validate(
                schemas.user_facts_schema(as_of, stale_days), as_utc(read_frame(con, FACTS_CHECKED_SQL))
            )
            yield from kit.refuse_write(validation, "user_facts", [(schemas.FACTS_CHECK, "user_facts")])
            record_basis(
                con,
                tables.PROMOTION_BASIS,
                promotion.PROMOTION_VISIBLE,
                context.run_id,
                as_of,
                warehouse.digests,
            )
        statuses = dict(con.execute(STATUS_COUNTS_SQL).fetchall())
        promotions, units, orphans, facts, critical, customers = con.execute(COUNTS_SQL).fetchall()[0]
    yield dg.MaterializeResult(
        asset_key="memory_promotions",
        metadata={
            **kit.table_metadata(
                tables.MEMORY_PROMOTIONS,
                promotion.MEMORY_PROMOTIONS_DTYPES,
                row_count=promotions,
            ),
            "as_of": as_of.isoformat(),
            "built": built,
            "memory_stale_days": stale_days,
            "units_created_after_as_of": units - promotions,
            "evidence_rows_without_unit": orphans,
            **{f"units_{s}": int(statuses.get(s, 0)) for s in promotion.UNIT_STATUSES},
        },
    )
    yield dg.MaterializeResult(
        asset_key="user_facts",
        metadata={
            **kit.table_metadata(tables.USER_FACTS, promotion.USER_FACTS_DTYPES, row_count=facts),
            "critical_facts": critical,
            "customers_with_facts": customers,
        },
        check_results=[kit.check_result(schemas.FACTS_CHECK, validation, dg.AssetKey("user_facts"))],
    )
