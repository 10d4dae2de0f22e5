"""The customer profile under field ownership, its versioned snapshots, and what customers/advisors read.

``fin_customer_profile`` and ``profile_snapshots`` are written in one transaction so the current
profile and its current snapshot always agree. ``advisor_customer_view`` reads the profile only:
the asset graph shows that no consumer reads memory_unit.
"""

import dagster as dg
import polars as pl

from tradingmem_assets.core import profile
from tradingmem_assets.defs.landing.assets import raw_key
from tradingmem_assets.defs.metadata import check_result, table_metadata
from tradingmem_assets.defs.profile.common import PROFILE_GROUP, fail_on, read_columns
from tradingmem_assets.defs.profile.writes import (
    PROFILE_TABLE,
    SNAPSHOTS_TABLE,
    ProfileStats,
    ensure_profile_tables,
    existing_profiles,
    remove_vanished,
    supersede_and_append,
    write_profiles,
)
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.schemas import profile as schemas
from tradingmem_assets.schemas.validation import validate
from tradingmem_assets.warehouse import read_frame, replace_table, transaction

CHUNK_SIZE = 50_000  # customers per chunk: bounds the working set at any number of customers
CUSTOMER_COLUMNS = ["customer_id", "real_name", "birth_date", "occupation", "mobile", "opened_at"]
QUESTIONNAIRE_COLUMNS = ["assessment_id", "customer_id", "investor_type", "assessed_at"]
PROFILE_HASHES = {"customer_id": pl.String, "profile_hash": pl.String}
PROFILE_FACTS_SQL = (  # only the keys a profile field reads; other facts stay in user_facts
    f"SELECT {', '.join(profile.FACT_COLUMNS)} FROM main.user_facts "
    "WHERE list_contains($1::VARCHAR[], fact_key)"
)
HELD_BACK_SQL = (
    "SELECT unit_id, customer_id, fact_key, status FROM main.memory_promotions "
    "WHERE status <> 'promoted' AND list_contains($1::VARCHAR[], fact_key)"
)


@dg.multi_asset(
    group_name=PROFILE_GROUP,
    specs=[
        dg.AssetSpec(
            "fin_customer_profile",
            deps=[
                raw_key("customers"),
                raw_key("questionnaire_results"),
                raw_key("customer_transactions"),
                "user_facts",
                "memory_promotions",
            ],
            kinds={"duckdb", "polars"},
            description="Current customer profile: each field from its only writer, "
            "with a generation basis per field.",
        ),
        dg.AssetSpec(
            "profile_snapshots",
            deps=["fin_customer_profile"],
            kinds={"duckdb", "polars"},
            description="Append-only profile versions: a new version only when the profile's hash changes.",
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            schemas.INVESTOR_TYPE_CHECK,
            asset="fin_customer_profile",
            blocking=True,
            description="investor_type equals the latest questionnaire result; no conversation can move it.",
        ),
        dg.AssetCheckSpec(
            schemas.BASIS_CHECK,
            asset="fin_customer_profile",
            blocking=True,
            description="Every field has a basis entry (source, row ids, rule, reason), even when null.",
        ),
        dg.AssetCheckSpec(
            schemas.ONE_CURRENT_CHECK,
            asset="profile_snapshots",
            blocking=True,
            description="Exactly one current snapshot per customer; versions 1..n without gaps.",
        ),
    ],
)
def customer_profile(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        customers = read_columns(con, "raw.customers", CUSTOMER_COLUMNS)
        questionnaires = read_columns(con, "raw.questionnaire_results", QUESTIONNAIRE_COLUMNS)
        read_columns(con, "raw.customer_transactions", ["txn_id"], limit=0)  # clear failure if missing
        transactions = read_frame(con, profile.TRANSACTIONS_NEEDED_SQL, [as_of])
        read_columns(con, "main.user_facts", ["fact_id"], limit=0)
        facts = read_frame(con, PROFILE_FACTS_SQL, [list(profile.FACT_PREFIXES)])
        read_columns(con, "main.memory_promotions", ["unit_id"], limit=0)
        held_back = read_frame(con, HELD_BACK_SQL, [list(profile.FACT_PREFIXES)])
        # the red line is checked against an independent SQL reading of the questionnaires
        expected = read_frame(con, profile.latest_investor_types_sql(), [as_of])

        stats = ProfileStats()
        hashes: list[pl.DataFrame] = []
        with transaction(con):  # a failing chunk rolls every chunk back: the old tables stay
            ensure_profile_tables(con)
            existing = existing_profiles(con)
            latest = read_frame(
                con,
                "SELECT customer_id, max(version) AS version, arg_max(snapshot_hash, version) "
                f"AS snapshot_hash FROM {SNAPSHOTS_TABLE} GROUP BY customer_id",
            )
            for chunk in profile.customer_chunks(customers, CHUNK_SIZE):
                ids = chunk.get_column("customer_id")
                built = profile.build_profiles(
                    chunk,
                    profile.rows_of(questionnaires, ids),
                    profile.rows_of(transactions, ids),
                    profile.rows_of(facts, ids),
                    as_of,
                    profile.rows_of(held_back, ids),
                )
                checked = built.with_columns(
                    built.select("customer_id")
                    .join(expected, on="customer_id", how="left", maintain_order="left")
                    .get_column("expected_investor_type")
                )
                stats.add_validation(validate(schemas.FIN_CUSTOMER_PROFILE_SCHEMA, checked))
                fail_on(stats.profile_validation, "fin_customer_profile")
                plan = profile.plan_snapshots(built, profile.rows_of(latest, ids), as_of)
                current = built.select(*profile.PROFILE_SCHEMA.names(), "basis_md5").with_columns(
                    plan.versions.get_column("profile_version")
                )
                del built, checked  # the JSON of this chunk is all that stays until it is written
                stats.rewritten += write_profiles(con, current, profile.rows_of(existing, ids))
                supersede_and_append(con, plan)
                stats.count(current, plan)
                hashes.append(current.select("customer_id", pl.col("snapshot_hash").alias("profile_hash")))
            profile_hashes = pl.concat(hashes) if hashes else pl.DataFrame(schema=PROFILE_HASHES)
            stats.removed = remove_vanished(con, profile_hashes.select("customer_id"))
            snapshots_after = read_frame(
                con,
                f"SELECT snapshot_id, customer_id, version, snapshot_hash, is_current FROM {SNAPSHOTS_TABLE}",
            ).join(profile_hashes, on="customer_id", how="left")
            snapshot_validation = validate(schemas.PROFILE_SNAPSHOTS_SCHEMA, snapshots_after)
            fail_on(snapshot_validation, "profile_snapshots")
    yield dg.MaterializeResult(
        asset_key="fin_customer_profile",
        metadata={
            **table_metadata(
                PROFILE_TABLE, pl.DataFrame(schema=profile.PROFILE_SCHEMA), row_count=stats.profiles
            ),
            "as_of": as_of.isoformat(),
            "rows_rewritten": stats.rewritten,
            "rows_removed": stats.removed,
            "customers_not_yet_opened": customers.height - stats.profiles,
            "without_questionnaire": stats.without_questionnaire,
            "with_self_reported_risk": stats.self_reported,
            "with_suitability_conflict": stats.conflicts,
        },
        check_results=[
            check_result(
                schemas.INVESTOR_TYPE_CHECK, stats.profile_validation, dg.AssetKey("fin_customer_profile")
            ),
            check_result(schemas.BASIS_CHECK, stats.profile_validation, dg.AssetKey("fin_customer_profile")),
        ],
    )
    yield dg.MaterializeResult(
        asset_key="profile_snapshots",
        metadata={
            **table_metadata(
                SNAPSHOTS_TABLE,
                pl.DataFrame(schema=profile.SNAPSHOTS_SCHEMA),
                row_count=snapshots_after.height,
            ),
            "appended_versions": stats.appended,
            "superseded_versions": stats.superseded,
        },
        check_results=[
            check_result(schemas.ONE_CURRENT_CHECK, snapshot_validation, dg.AssetKey("profile_snapshots"))
        ],
    )


ADVISOR_VIEW_SQL = """
CREATE OR REPLACE TABLE main.advisor_customer_view AS
SELECT customer_id, real_name, mobile_masked, investor_type,
       CASE WHEN investor_type IS NULL THEN NULL ELSE 'R' || substr(investor_type, 2) END
           AS max_product_risk_level,
       investor_type IS NULL AS needs_questionnaire,
       list_contains(risk_tags, 'suitability_conflict') AS suitability_conflict,
       substr(list_filter(risk_tags, lambda t: starts_with(t, 'self_reported:'))[1], 15)
           AS self_reported_risk,
       risk_tags, total_asset, trading_frequency, behavior_score, preferred_asset_class, investment_horizon,
       profile_version, snapshot_hash
FROM main.fin_customer_profile
ORDER BY customer_id
"""


@dg.asset(
    group_name=PROFILE_GROUP,
    deps=["fin_customer_profile"],
    kinds={"duckdb"},
    description="What advisors and risk see: the current profile only (never memory_unit), with the "
    "suitability ceiling (C1->R1 ... C5->R5) and the conflict flag.",
)
def advisor_customer_view(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        read_columns(con, PROFILE_TABLE, ["customer_id"])  # clear failure when the profile is missing
        with transaction(con):
            con.execute(ADVISOR_VIEW_SQL)
        view = read_frame(con, "SELECT * FROM main.advisor_customer_view LIMIT 0")
        counts = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE suitability_conflict), "
            "count(*) FILTER (WHERE needs_questionnaire) "
            "FROM main.advisor_customer_view"
        ).fetchall()[0]
    return dg.MaterializeResult(
        metadata={
            **table_metadata("main.advisor_customer_view", view, row_count=int(counts[0])),
            "suitability_conflicts": int(counts[1]),
            "needs_questionnaire": int(counts[2]),
        }
    )


@dg.asset(
    group_name=PROFILE_GROUP,
    deps=[raw_key("kb_documents")],
    kinds={"duckdb", "polars"},
    description="The customer-facing knowledge base: public kb_documents only.",
    check_specs=[
        dg.AssetCheckSpec(
            schemas.KB_CHECK,
            asset="customer_kb",
            blocking=True,
            description="Every document in customer_kb is public in kb_documents.",
        )
    ],
)
def customer_kb(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        documents = read_columns(con, "raw.kb_documents", ["doc_id", "title", "visibility", "body"])
        kb = profile.customer_kb(documents)
        source = read_frame(con, "SELECT doc_id, visibility AS source_visibility FROM raw.kb_documents")
        validation = validate(schemas.CUSTOMER_KB_SCHEMA, kb.join(source, on="doc_id", how="left"))
        fail_on(validation, "customer_kb")
        with transaction(con):
            replace_table(con, "main.customer_kb", kb)
    return dg.MaterializeResult(
        metadata={
            **table_metadata("main.customer_kb", kb),
            "internal_documents_withheld": documents.height - kb.height,
        },
        check_results=[check_result(schemas.KB_CHECK, validation, dg.AssetKey("customer_kb"))],
    )
