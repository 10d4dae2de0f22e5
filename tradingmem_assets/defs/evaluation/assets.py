"""Evaluation runs and their components: append-only versions, explicit promotion."""

import dagster as dg
import polars as pl

from tradingmem_assets.core.evaluation import (
    RUNS_SCHEMA,
    EvaluationConfigError,
    assign_primary,
    check_primary_profiles,
    components_of,
    compute_measurements,
    new_versions,
    unmatched_promotions,
)
from tradingmem_assets.defs.landing.assets import raw_key
from tradingmem_assets.defs.metadata import check_result, table_metadata
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.schemas.evaluation import EVALUATION_RUNS_SCHEMA
from tradingmem_assets.schemas.validation import validate
from tradingmem_assets.warehouse import append_rows, read_frame, read_table, replace_table, scalar, transaction

EVALUATION_GROUP = "evaluation"
RUNS_INVARIANTS_CHECK = "evaluation_runs_invariants"

EVALUATION_INPUTS = [
    raw_key(t)
    for t in (
        "trading_decisions",
        "trade_previews",
        "preview_consumptions",
        "trade_executions",
        "trade_fills",
        "price_bars",
        "benchmark_profiles",
        "evaluation_promotions",
    )
]


@dg.multi_asset(
    group_name=EVALUATION_GROUP,
    specs=[
        dg.AssetSpec(
            "evaluation_runs",
            deps=EVALUATION_INPUTS,
            kinds={"duckdb", "polars"},
            description="Append-only, versioned evaluation of every executed decision against every profile.",
        ),
        dg.AssetSpec(
            "evaluation_components",
            deps=["evaluation_runs"],
            kinds={"duckdb", "polars"},
            description="The measured components of each evaluation run, with quality flags.",
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            RUNS_INVARIANTS_CHECK,
            asset="evaluation_runs",
            blocking=True,
            description="Unique run keys, known statuses, at most one primary run per decision.",
        )
    ],
)
def evaluation(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    roles = pl.DataFrame(warehouse.registry().rows()).select("role_id", "primary_profile")
    with warehouse.connect() as con:
        profiles = read_frame(con, "SELECT profile_id FROM raw.benchmark_profiles")
        decisions = read_frame(con, "SELECT decision_id, role_id FROM raw.trading_decisions")
        if decisions.height:
            try:
                check_primary_profiles(roles, set(profiles.get_column("profile_id").to_list()))
            except EvaluationConfigError as exc:
                raise dg.Failure(description=str(exc)) from exc
        measured = compute_measurements(con, as_of)
        existing = read_table(con, "main.evaluation_runs", pl.DataFrame(schema=RUNS_SCHEMA))
        promotions = read_frame(
            con, "SELECT decision_id, profile_id, run_version, promoted_at FROM raw.evaluation_promotions"
        )
        fresh = new_versions(measured, existing, as_of)
        appended = fresh.select(
            *[pl.col(c) for c in RUNS_SCHEMA.names() if c not in ("is_primary", "promoted_at")],
            pl.lit(False).alias("is_primary"),
            pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("promoted_at"),
        ).select(RUNS_SCHEMA.names())
        all_runs = assign_primary(
            pl.concat([existing.cast(RUNS_SCHEMA), appended.cast(RUNS_SCHEMA)]),  # type: ignore[arg-type]
            decisions,
            roles,
            promotions,
            as_of,
        ).sort("decision_id", "profile_id", "run_version")
        validation = validate(EVALUATION_RUNS_SCHEMA, all_runs)
        if not validation.passed:
            raise dg.Failure(
                description="evaluation runs would break their invariants; nothing was written",
                metadata={"summary": dg.MetadataValue.md(validation.summary())},
            )
        components = components_of(fresh)
        with transaction(con):
            replace_table(con, "main.evaluation_runs", all_runs)
            append_rows(con, "main.evaluation_components", components)
        total_components = scalar(con, "SELECT count(*) FROM main.evaluation_components")
    orphans = unmatched_promotions(all_runs, promotions)
    status_counts = dict(all_runs.group_by("status").len().rows())
    yield dg.MaterializeResult(
        asset_key="evaluation_runs",
        metadata={
            **table_metadata("main.evaluation_runs", all_runs),
            "as_of": as_of.isoformat(),
            "appended_versions": fresh.height,
            "primary_runs": int(all_runs.get_column("is_primary").sum()),
            "complete": status_counts.get("complete", 0),
            "pending": status_counts.get("pending", 0),
            "insufficient_data": status_counts.get("insufficient_data", 0),
            "promotions_without_run": orphans.height,
        },
        check_results=[check_result(RUNS_INVARIANTS_CHECK, validation, dg.AssetKey("evaluation_runs"))],
    )
    yield dg.MaterializeResult(
        asset_key="evaluation_components",
        metadata={
            **table_metadata("main.evaluation_components", components, row_count=total_components),
            "appended_rows": components.height,
        },
    )
