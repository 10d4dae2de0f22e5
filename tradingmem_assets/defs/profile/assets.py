"""The customer profile under field ownership, its versioned snapshots, and what customers/advisors read.

``fin_customer_profile`` and ``profile_snapshots`` are written in one transaction so the current
profile and its current snapshot always agree. ``advisor_customer_view`` reads the profile only:
the asset graph shows that no consumer reads memory_unit.
"""

import dagster as dg

from tradingmem_assets.defs.profile import build, fields, incremental, snapshots
from tradingmem_assets.defs.profile import invariants as schemas
from tradingmem_assets.defs.profile import kb as knowledge_base
from tradingmem_assets.defs.profile.basis import basis_struct_sql
from tradingmem_assets.defs.profile.writes import (
    ensure_profile_tables,
    mark_rewrites,
    remove_vanished,
    supersede_and_append,
    write_profiles,
)
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import record_basis, touched_only
from tradingmem_assets.lib.dagster_kit import (
    blocking_check,
    check_result,
    refuse_write,
    table_asset,
    table_metadata,
    table_spec,
)
from tradingmem_assets.lib.sql_json import sql_literal
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import Validation, validate, validate_query
from tradingmem_assets.lib.warehouse import read_columns, read_frame, replace_table, scalar, transaction

# profiles validated at once, each with its basis struct: at SF 10 the validation held 700 MB beside
# the build in batches of 100,000, 530-580 MB in batches of 50,000, in the same second
PROFILE_BATCH_ROWS = 50_000
# temp tables of one materialization (they live until its connection closes)
BUILD = "_profile_build"
EXPECTED = "_profile_expected"
INPUTS = {  # table: a column, to fail clearly when it is missing
    tables.raw_table("customers"): "customer_id",
    tables.raw_table("questionnaire_results"): "assessment_id",
    tables.raw_table("customer_transactions"): "txn_id",
    tables.USER_FACTS: "fact_id",
    tables.MEMORY_PROMOTIONS: "unit_id",
}
# what the assets of this module write, and the checks they evaluate as they write (tuples: the
# defs loader would take a module-level list of AssetSpec for assets of their own)
PROFILE_SPECS = (
    table_spec(
        "fin_customer_profile",
        "Current customer profile: each field from its only writer, with a generation basis per field.",
        deps=[
            raw_key("customers"),
            raw_key("questionnaire_results"),
            raw_key("customer_transactions"),
            "user_facts",
            "memory_promotions",
        ],
    ),
    table_spec(
        "profile_snapshots",
        "Append-only profile versions: a new version only when the profile's hash changes.",
        deps=["fin_customer_profile"],
    ),
)
PROFILE_CHECK_SPECS = (
    blocking_check(
        schemas.INVESTOR_TYPE_CHECK,
        "fin_customer_profile",
        "investor_type equals the latest questionnaire result; no conversation can move it.",
    ),
    blocking_check(
        schemas.BASIS_CHECK,
        "fin_customer_profile",
        "Every field has a basis entry (source, row ids, rule, reason), even when null.",
    ),
    blocking_check(
        schemas.ONE_CURRENT_CHECK,
        "profile_snapshots",
        "Exactly one current snapshot per customer; versions 1..n without gaps.",
    ),
)
CUSTOMER_KB_CHECK_SPECS = (
    blocking_check(
        schemas.KB_CHECK,
        "customer_kb",
        "Every document in customer_kb is public in kb_documents.",
    ),
)


def profile_checked_sql(customers: str) -> str:
    """What the profile red lines read of the built rows of some customers: the values, the basis
    as a struct and the independently read latest questionnaire."""
    return (
        f"SELECT customer_id, {', '.join(fields.PROFILE_FIELDS)}, snapshot_hash, "
        f"{basis_struct_sql()} AS basis, expected_investor_type "
        f"FROM (SELECT * FROM {BUILD} WHERE {customers}) "
        f"LEFT JOIN (SELECT * FROM {EXPECTED} WHERE {customers}) USING (customer_id)"
    )


def validate_profiles(con, customers: str) -> Validation:
    """The profile red lines over the built rows of some customers (``validate_query``: Pandera on
    the rows as the connection streams them, the unique customer id in SQL over them all; every
    other rule is of one row)."""
    validation, _ = validate_query(
        con,
        schemas.FIN_CUSTOMER_PROFILE_INVARIANTS,
        profile_checked_sql(customers),
        batch_rows=PROFILE_BATCH_ROWS,
    )
    return validation


SNAPSHOTS_CHECKED_SQL = f"""
SELECT s.snapshot_id, s.customer_id, s.version, s.snapshot_hash, s.is_current, p.snapshot_hash AS profile_hash
FROM {tables.PROFILE_SNAPSHOTS} s LEFT JOIN {BUILD} p USING (customer_id)
WHERE {{customers}}
"""
PROFILE_COUNTS_SQL = f"""
SELECT count(*) AS profiles,
       count(*) FILTER (WHERE investor_type IS NULL) AS without_questionnaire,
       count(*) FILTER (WHERE len(list_filter(risk_tags, lambda t: starts_with(t, $self_reported))) > 0)
           AS self_reported,
       count(*) FILTER (WHERE list_contains(risk_tags, $conflict)) AS conflicts,
       (SELECT count(*) FROM raw.customers) AS customers,
       (SELECT count(*) FROM {tables.PROFILE_SNAPSHOTS}) AS snapshots
FROM {tables.FIN_CUSTOMER_PROFILE}
"""


def _touched_customers(con, warehouse: WarehouseResource, as_of) -> tuple[str | None, str]:
    """The table of the customers to build (None: all of them) and what the metadata says of it.
    Call after ``incremental.fact_digests``."""
    basis = warehouse.usable_basis(
        con, tables.PROFILE_BASIS, incremental.PROFILE_VISIBLE, incremental.PROFILE_TABLES
    )
    if basis is None:
        return None, "every customer opened by as_of (full build)"
    touched = incremental.touch(con, basis.as_of, as_of)
    count = scalar(con, f"SELECT count(*) FROM {touched}")
    return touched, (
        f"incremental since run {basis.run_id} (as_of {basis.as_of.isoformat()}): only the {count} "
        "customers who opened, answered a questionnaire, made a transaction or saw one leave a "
        "window since, or whose facts changed; every landing row stamped at or before that as_of, "
        "the code, settings and registry are unchanged, so every other profile holds"
    )


@dg.multi_asset(group_name=tables.PROFILE_GROUP, specs=PROFILE_SPECS, check_specs=PROFILE_CHECK_SPECS)
def customer_profile(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    with warehouse.connect() as con:
        for table, column in INPUTS.items():
            read_columns(con, table, [column], limit=0)  # clear failure if missing
        incremental.fact_digests(con)
        touched, built = _touched_customers(con, warehouse, as_of)
        customers = touched_only(touched, "customer_id")
        with transaction(con):  # a broken red line rolls everything back: the old tables stay
            ensure_profile_tables(con)
            build.create_profiles(con, as_of, BUILD, customers)
            # the red line is checked against an independent SQL reading of the questionnaires
            expected = f"SELECT * FROM ({schemas.latest_investor_types_sql()}) WHERE {customers}"
            con.execute(f"CREATE OR REPLACE TEMP TABLE {EXPECTED} AS {expected}", [as_of])
            profile_validation = validate_profiles(con, customers)
            yield from refuse_write(
                profile_validation,
                "fin_customer_profile",
                [
                    (schemas.INVESTOR_TYPE_CHECK, "fin_customer_profile"),
                    (schemas.BASIS_CHECK, "fin_customer_profile"),
                ],
            )
            snapshots.assign_versions(con, BUILD, snapshots.latest_sql(tables.PROFILE_SNAPSHOTS))
            rewritten = mark_rewrites(con, BUILD)
            write_profiles(con, BUILD)
            superseded, appended = supersede_and_append(con, BUILD, as_of)
            # incremental: no customer of the unchanged past can vanish, every other one holds
            removed = remove_vanished(con, BUILD) if touched is None else 0
            snapshot_validation = validate(
                schemas.PROFILE_SNAPSHOTS_INVARIANTS,
                read_frame(
                    con, SNAPSHOTS_CHECKED_SQL.format(customers=touched_only(touched, "s.customer_id"))
                ),
            )
            yield from refuse_write(
                snapshot_validation, "profile_snapshots", [(schemas.ONE_CURRENT_CHECK, "profile_snapshots")]
            )
            incremental.record_fact_digests(con)
            record_basis(
                con,
                tables.PROFILE_BASIS,
                incremental.PROFILE_VISIBLE,
                context.run_id,
                as_of,
                warehouse.digests,
            )
        counts = (
            con.sql(
                PROFILE_COUNTS_SQL,
                params={
                    "self_reported": fields.SELF_REPORTED_TAG,
                    "conflict": fields.SUITABILITY_CONFLICT_TAG,
                },
            )
            .pl()
            .row(0, named=True)
        )
    yield dg.MaterializeResult(
        asset_key="fin_customer_profile",
        metadata={
            **table_metadata(
                tables.FIN_CUSTOMER_PROFILE, fields.FIN_CUSTOMER_PROFILE_DTYPES, counts["profiles"]
            ),
            "as_of": as_of.isoformat(),
            "rows_rewritten": rewritten,
            "built": dg.MetadataValue.text(built),
            "rows_removed": removed,
            "customers_not_yet_opened": counts["customers"] - counts["profiles"],
            "without_questionnaire": counts["without_questionnaire"],
            "with_self_reported_risk": counts["self_reported"],
            "with_suitability_conflict": counts["conflicts"],
        },
        check_results=[
            check_result(
                schemas.INVESTOR_TYPE_CHECK, profile_validation, dg.AssetKey("fin_customer_profile")
            ),
            check_result(schemas.BASIS_CHECK, profile_validation, dg.AssetKey("fin_customer_profile")),
        ],
    )
    yield dg.MaterializeResult(
        asset_key="profile_snapshots",
        metadata={
            **table_metadata(
                tables.PROFILE_SNAPSHOTS, snapshots.PROFILE_SNAPSHOTS_DTYPES, counts["snapshots"]
            ),
            "appended_versions": appended,
            "superseded_versions": superseded,
        },
        check_results=[
            check_result(schemas.ONE_CURRENT_CHECK, snapshot_validation, dg.AssetKey("profile_snapshots"))
        ],
    )


# the profile rules' tags and suitability ceiling, formatted from fields (declared there once)
ADVISOR_VIEW_SQL = f"""
CREATE OR REPLACE TABLE main.advisor_customer_view AS
SELECT customer_id, real_name, mobile_masked, investor_type,
       CASE WHEN investor_type IS NULL THEN NULL ELSE {fields.risk_ceiling_sql("investor_type")} END
           AS max_product_risk_level,
       investor_type IS NULL AS needs_questionnaire,
       list_contains(risk_tags, {sql_literal(fields.SUITABILITY_CONFLICT_TAG)}) AS suitability_conflict,
       substr(list_filter(risk_tags, lambda t: starts_with(t, {sql_literal(fields.SELF_REPORTED_TAG)}))[1],
              {len(fields.SELF_REPORTED_TAG) + 1})
           AS self_reported_risk,
       risk_tags, total_asset, trading_frequency, behavior_score, preferred_asset_class, investment_horizon,
       profile_version, snapshot_hash
FROM main.fin_customer_profile
ORDER BY customer_id
"""


@table_asset(
    "advisor_customer_view",
    group=tables.PROFILE_GROUP,
    kinds=frozenset({"duckdb"}),
    deps=["fin_customer_profile"],
    description="What advisors and risk see: the current profile only (never memory_unit), with the "
    "suitability ceiling (C1->R1 ... C5->R5) and the conflict flag.",
)
def advisor_customer_view(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        read_columns(
            con, tables.FIN_CUSTOMER_PROFILE, ["customer_id"], limit=0
        )  # clear failure when the profile is missing
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
            **table_metadata(tables.ADVISOR_CUSTOMER_VIEW, view, row_count=int(counts[0])),
            "suitability_conflicts": int(counts[1]),
            "needs_questionnaire": int(counts[2]),
        }
    )


@table_asset(
    "customer_kb",
    group=tables.PROFILE_GROUP,
    deps=[raw_key("kb_documents")],
    description="The customer-facing knowledge base: public kb_documents only.",
    check_specs=CUSTOMER_KB_CHECK_SPECS,
)
def customer_kb(warehouse: WarehouseResource):
    with warehouse.connect() as con:
        documents = read_columns(
            con, tables.raw_table("kb_documents"), ["doc_id", "title", "visibility", "body"]
        )
        kb = knowledge_base.customer_kb(documents)
        source = read_frame(con, "SELECT doc_id, visibility AS source_visibility FROM raw.kb_documents")
        validation = validate(schemas.CUSTOMER_KB_INVARIANTS, kb.join(source, on="doc_id", how="left"))
        yield from refuse_write(validation, "customer_kb", [(schemas.KB_CHECK, "customer_kb")])
        with transaction(con):
            replace_table(con, tables.CUSTOMER_KB, kb)
    yield dg.MaterializeResult(
        metadata={
            **table_metadata(tables.CUSTOMER_KB, kb),
            "internal_documents_withheld": documents.height - kb.height,
        },
        check_results=[check_result(schemas.KB_CHECK, validation, dg.AssetKey("customer_kb"))],
    )
