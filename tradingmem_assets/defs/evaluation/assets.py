"""Evaluation runs and their components: append-only versions, explicit promotion."""

import dagster as dg
import polars as pl

from tradingmem_assets.defs.evaluation import incremental
from tradingmem_assets.defs.evaluation.components import COMPONENTS, create_components_view
from tradingmem_assets.defs.evaluation.invariants import validate_runs
from tradingmem_assets.defs.evaluation.scoring import EvaluationConfigError, check_primary_profiles, evaluate
from tradingmem_assets.defs.operations.ledger import learning_bound
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import record_basis
from tradingmem_assets.lib.dagster_kit import (
    DUCKDB_ONLY,
    blocking_check,
    check_result,
    refuse_write,
    table_metadata,
    table_spec,
)
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import record_validated
from tradingmem_assets.lib.warehouse import scalar, transaction

RUNS_INVARIANTS_CHECK = "evaluation_runs_invariants"

EVALUATION_LANDING = (
    *tables.EXECUTION_CHAIN,
    "trade_fills",
    "price_bars",
    "benchmark_profiles",
    "evaluation_promotions",
)
EVALUATION_INPUTS = [raw_key(t) for t in EVALUATION_LANDING]
# what the assets of this module write, and the checks they evaluate as they write (tuples: the
# defs loader would take a module-level list of AssetSpec for assets of their own)
EVALUATION_SPECS = (
    table_spec(
        "evaluation_runs",
        "Append-only, versioned evaluation of every executed decision against every profile.",
        deps=EVALUATION_INPUTS,
    ),
    table_spec(
        "evaluation_primaries",
        "Every interval during which a run was its decision's primary run (reads as of a past instant).",
        deps=["evaluation_runs"],
        kinds=DUCKDB_ONLY,
    ),
    table_spec(
        "evaluation_components",
        "The measured components of each evaluation run, with quality flags.",
        deps=["evaluation_runs"],
        kinds=DUCKDB_ONLY,
    ),
)
RUNS_CHECK_SPECS = (
    blocking_check(
        RUNS_INVARIANTS_CHECK,
        "evaluation_runs",
        "Unique run keys, known statuses, at most one primary run per decision.",
    ),
)


@dg.multi_asset(group_name=tables.EVALUATION_GROUP, specs=EVALUATION_SPECS, check_specs=RUNS_CHECK_SPECS)
def evaluation(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    as_of = warehouse.as_of_ts
    roles = pl.DataFrame(warehouse.registry().rows()).select("role_id", "primary_profile")
    with warehouse.connect() as con:
        if scalar(con, "SELECT count(*) FROM raw.trading_decisions"):
            profiles = {p for (p,) in con.execute("SELECT profile_id FROM raw.benchmark_profiles").fetchall()}
            try:
                check_primary_profiles(roles, profiles)
            except EvaluationConfigError as exc:
                raise dg.Failure(description=str(exc)) from exc
        basis = warehouse.usable_basis(
            con, tables.EVALUATION_BASIS, incremental.EVALUATION_VISIBLE, incremental.EVALUATION_TABLES
        )
        since = None if basis is None else basis.as_of
        evaluate(con, roles, as_of, learning_bound(con), since=since)
        # validated as written, before COMMIT: a broken invariant rolls the write back
        with transaction(con):
            written = incremental.write_runs(con, incremental=since is not None)
            create_components_view(con)
            # incremental: the rest of the table is as the last successful run left it, validated
            validation, _ = validate_runs(con, written, None if since is None else tables.EVALUATION_RUNS)
            yield from refuse_write(
                validation, "evaluation_runs", [(RUNS_INVARIANTS_CHECK, "evaluation_runs")]
            )
            record_basis(
                con,
                tables.EVALUATION_BASIS,
                incremental.EVALUATION_VISIBLE,
                context.run_id,
                as_of,
                warehouse.digests,
            )
        # every run is valid now: the stored check need not validate them again while they stay so
        record_validated(con, tables.EVALUATION_RUNS, context.run_id, digests=warehouse.digests)
        touched = None
        if since is not None:
            touched = scalar(con, "SELECT count(*) FROM _ev_touched")
            context.log.info(f"incremental since run {basis.run_id}: {touched} decisions evaluated again")
        appended = scalar(con, "SELECT count(*) FROM _ev_fresh")
        by_status = con.execute(
            f"SELECT status, count(*), count(*) FILTER (WHERE is_primary) FROM {tables.EVALUATION_RUNS} "
            "GROUP BY status"
        ).fetchall()
        status_counts = {status: n for status, n, _ in by_status}
        run_rows, primary_runs = sum(status_counts.values()), sum(p for _, _, p in by_status)
        primaries = scalar(con, f"SELECT count(*) FROM {tables.EVALUATION_PRIMARIES}")
        orphans = scalar(
            con,
            "SELECT count(*) FROM raw.evaluation_promotions p ANTI JOIN main.evaluation_runs r "
            "USING (decision_id, profile_id, run_version)",
        )
    yield dg.MaterializeResult(
        asset_key="evaluation_runs",
        metadata={
            **table_metadata(tables.EVALUATION_RUNS, row_count=run_rows),
            "as_of": as_of.isoformat(),
            "appended_versions": appended,
            "primary_runs": primary_runs,
            "complete": status_counts.get("complete", 0),
            "pending": status_counts.get("pending", 0),
            "insufficient_data": status_counts.get("insufficient_data", 0),
            "promotions_without_run": orphans,
            "evaluated": dg.MetadataValue.text(
                "every executed decision (full build)"
                if since is None
                else f"incremental since run {basis.run_id} (as_of {since.isoformat()}): only the "
                f"{touched} decisions decided, executed, consumed, filled, settled or promoted since; "
                "every landing row stamped at or before that as_of, the code, settings and registry "
                "are unchanged, so every other decision's stored runs hold"
            ),
        },
        check_results=[check_result(RUNS_INVARIANTS_CHECK, validation, dg.AssetKey("evaluation_runs"))],
    )
    yield dg.MaterializeResult(
        asset_key="evaluation_primaries",
        metadata=table_metadata(tables.EVALUATION_PRIMARIES, row_count=primaries),
    )
    yield dg.MaterializeResult(
        asset_key="evaluation_components",
        metadata={
            **table_metadata(tables.EVALUATION_COMPONENTS, row_count=run_rows * len(COMPONENTS)),
            "appended_rows": appended * len(COMPONENTS),
        },
    )
