"""Role Memory assets: role cases (admission), reflections (lessons) and per-role statistics.

``ROLE_MEMORY_MODE`` is read once when the code location loads (``settings.SETTINGS``). In ``off``
these assets read and write nothing: each logs why and records an observation instead of a
materialization, so its checks and everything downstream are skipped. ``shadow`` and ``active``
produce the same tables; only recall and manual reflection (CLI/API) differ.
"""

from collections.abc import Callable, Iterator

import dagster as dg
import duckdb
import polars as pl

from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.defs.role_memory import incremental
from tradingmem_assets.defs.role_memory import invariants as schemas
from tradingmem_assets.defs.role_memory.admission import ROLE_CASES_DTYPES, admitted_cases, registry_frame
from tradingmem_assets.defs.role_memory.chain import CHAIN_TABLES, decision_coverage, with_chain
from tradingmem_assets.defs.role_memory.llm_reflector import ChatClient, LLMReflector
from tradingmem_assets.defs.role_memory.reasons import chain_eligible_sql
from tradingmem_assets.defs.role_memory.recall import rebuild_recall_index
from tradingmem_assets.defs.role_memory.reflection import (
    ROLE_REFLECTIONS_DTYPES,
    DeterministicReflector,
    Reflector,
    record_reflections,
    reflect,
    reflection_inputs,
)
from tradingmem_assets.defs.role_memory.stats import role_stats
from tradingmem_assets.defs.role_memory.writes import write_cases
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.basis import record_basis, touched_only
from tradingmem_assets.lib.budget import BudgetTracker, ensure_usage_table
from tradingmem_assets.lib.dagster_kit import table_asset, table_metadata
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import Validation, record_validated, validate, validate_query
from tradingmem_assets.lib.warehouse import replace_table, scalar, table_exists, transaction
from tradingmem_assets.settings import SETTINGS

ROLE_MEMORY_MODE = SETTINGS.role_memory_mode  # fixed for the life of this process
OFF_MESSAGE = (
    "ROLE_MEMORY_MODE=off for this process: role memory read and wrote nothing "
    "(set ROLE_MEMORY_MODE=shadow or active and restart the code location to produce it)"
)

ROLE_CASES_INPUTS = [
    raw_key(t) for t in (*tables.EXECUTION_CHAIN, "position_lifecycles", "benchmark_profiles")
] + ["evaluation_runs"]
ROLE_REFLECTIONS_INPUTS = [
    "role_cases",
    "evaluation_runs",
    "evaluation_primaries",
] + [
    raw_key(t)
    for t in (
        "trading_decisions",
        "trade_executions",
        "position_lifecycles",
        "market_events",
        "benchmark_profiles",
    )
]


def _off(context: dg.AssetExecutionContext) -> Iterator[dg.AssetObservation]:
    context.log.warning(OFF_MESSAGE)
    yield dg.AssetObservation(
        asset_key=context.asset_key,
        metadata={"role_memory_mode": "off", "rows_written": 0, "note": dg.MetadataValue.text(OFF_MESSAGE)},
    )


def _failure(what: str, *validations: Validation) -> dg.Failure:
    summary = "\n\n".join(v.summary() for v in validations if not v.passed)
    return dg.Failure(
        description=f"{what} would break its invariants; nothing was written.\n{summary}",
        metadata={"summary": dg.MetadataValue.md(summary)},
    )


def require_tables(con, *tables: str) -> None:
    """Fail with a message naming the upstream table to materialize first."""
    missing = [t for t in tables if not table_exists(con, t)]
    if missing:
        raise dg.Failure(description=f"{', '.join(missing)} does not exist yet: materialize it first")


def _counts_md(con, sql: str) -> dg.MetadataValue:
    """The (value, count) rows of ``sql``, most frequent first."""
    rows = sorted(con.execute(sql).fetchall(), key=lambda r: (-r[1], r[0]))
    if not rows:
        return dg.MetadataValue.md("(none)")
    return dg.MetadataValue.md("\n".join(f"- `{k}`: {n}" for k, n in rows))


Build = Callable[
    [dg.AssetExecutionContext, WarehouseResource, duckdb.DuckDBPyConnection, pl.DataFrame],
    dg.MaterializeResult,
]


def role_memory_asset(name: str, *, deps: list, requires: tuple[str, ...], description: str):
    """A role memory asset: in ``off`` mode it only records why it wrote nothing; otherwise it fails
    clearly while a ``requires`` table is missing, then ``build(context, warehouse, con, registry)``
    writes the table and returns its materialization."""

    def decorate(build: Build) -> dg.AssetsDefinition:
        @table_asset(
            name, group=tables.ROLE_MEMORY_GROUP, deps=deps, output_required=False, description=description
        )
        def _asset(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
            if ROLE_MEMORY_MODE == "off":
                yield from _off(context)
                return
            registry = registry_frame(warehouse.registry().rows())
            with warehouse.connect() as con:
                require_tables(con, *requires)
                result = build(context, warehouse, con, registry)
            yield result

        return _asset

    return decorate


@role_memory_asset(
    "role_cases",
    deps=ROLE_CASES_INPUTS,
    requires=(tables.EVALUATION_RUNS,),
    description="Fail-closed admission of every decision that names a role, with all reasons that apply.",
)
def role_cases(context, warehouse, con, registry) -> dg.MaterializeResult:
    as_of = warehouse.as_of_ts
    basis = warehouse.usable_basis(
        con, tables.ROLE_CASES_BASIS, incremental.ADMISSION_VISIBLE, incremental.KEPT_TABLES
    )
    touched = None if basis is None else incremental.touch(con, basis.as_of, as_of)
    # Validated before COMMIT, from the table as written: a failure rolls back to the previous
    # table (nothing is written). Incremental: every other case is as the last run validated it.
    with transaction(con):
        with admitted_cases(con, registry, as_of, touched=touched) as admitted:
            changed = write_cases(con, admitted, as_of, partial=touched is not None)
        invariants, _ = validate_query(
            con,
            schemas.ROLE_CASES_INVARIANTS,
            with_chain(decisions=touched_only(touched, "rc.decision_id")),
        )
        coverage, _ = validate_query(
            con,
            schemas.DECISION_COVERAGE_INVARIANTS,
            decision_coverage(decisions=touched_only(touched, "decision_id")),
            {"as_of": as_of},
        )
        if not (invariants.passed and coverage.passed):
            raise _failure("role_cases", invariants, coverage)
        # recall must never see an eligibility that changed
        recall_index = rebuild_recall_index(con, keep_if_unchanged=True, changed_decisions=touched)
        record_basis(
            con,
            tables.ROLE_CASES_BASIS,
            incremental.ADMISSION_VISIBLE,
            context.run_id,
            as_of,
            warehouse.digests,
        )
    # both stored checks would validate what was just validated: they need not, while it is unchanged
    record_validated(con, tables.ROLE_CASES, context.run_id, CHAIN_TABLES, as_of, warehouse.digests)
    total = scalar(con, "SELECT count(*) FROM main.role_cases")
    status = dict(con.execute("SELECT status, count(*) FROM main.role_cases GROUP BY status").fetchall())
    admitted_again = (
        "every decision that names a role (full build)"
        if touched is None
        else f"incremental since run {basis.run_id} (as_of {basis.as_of.isoformat()}): only the "
        f"{scalar(con, f'SELECT count(*) FROM {touched}')} decisions whose chain or evaluation changed "
        "since; every row the admission reads at or before that as_of, the code, settings and "
        "registry are unchanged, so every other case holds"
    )
    reasons = _counts_md(
        con,
        "SELECT reason, count(*) FROM (SELECT unnest(reasons) AS reason FROM main.role_cases) GROUP BY 1",
    )
    context.log.info(f"role_cases at {as_of.isoformat()}: {total} cases, {status}")
    return dg.MaterializeResult(
        metadata={
            **table_metadata(tables.ROLE_CASES, ROLE_CASES_DTYPES, row_count=total),
            "as_of": as_of.isoformat(),
            "role_memory_mode": ROLE_MEMORY_MODE,
            "eligible": status.get("eligible", 0),
            "pending": status.get("pending", 0),
            "ineligible": status.get("ineligible", 0),
            "quarantined": status.get("quarantined", 0),
            "changed_rows": changed,
            "admitted": dg.MetadataValue.text(admitted_again),
            "reasons": reasons,
            # kept when no case with a recallable reflection changed (recall.rebuild_recall_index)
            "recall_index": recall_index or "not built (no reflections yet)",
        }
    )


def make_reflector(con) -> Reflector:
    """The LLM reflector when TRADINGMEM_LLM_BASE_URL is configured, else the deterministic one."""
    if not SETTINGS.llm_base_url:
        return DeterministicReflector()
    client = ChatClient(
        base_url=SETTINGS.llm_base_url,
        model=SETTINGS.llm_model,
        api_key=SETTINGS.llm_api_key,
        tracker=BudgetTracker(con),
    )
    return LLMReflector(client)


@role_memory_asset(
    "role_reflections",
    deps=ROLE_REFLECTIONS_INPUTS,
    requires=(tables.ROLE_CASES, tables.EVALUATION_RUNS),
    description="Outcome classification and short role-specific lessons, once per case and primary run.",
)
def role_reflections(context, warehouse, con, registry) -> dg.MaterializeResult:
    as_of = warehouse.as_of_ts
    ensure_usage_table(con)  # the budget ledger exists even while no LLM is configured
    inputs = reflection_inputs(con, registry, as_of)
    reflector = make_reflector(con)
    # LLM calls (if any) happen here, each recorded in llm_usage at once: a failed write below
    # must not erase what was spent.
    batch = reflect(con, inputs, as_of, reflector)
    checked = (
        f"SELECT b.*, {chain_eligible_sql('rc')} AS case_chain_eligible FROM {batch.table} b "
        "LEFT JOIN main.role_cases rc ON rc.case_id = b.case_id"
    )
    validation, _ = validate_query(con, schemas.REFLECTION_BATCH_INVARIANTS, checked)
    if not validation.passed:
        raise _failure("role_reflections", validation)
    appended = record_reflections(con, batch.table)
    total = scalar(con, "SELECT count(*) FROM main.role_reflections")
    classifications = _counts_md(
        con, f"SELECT classification, count(*) FROM {batch.table} GROUP BY classification"
    )
    meta = {
        **table_metadata(tables.ROLE_REFLECTIONS, ROLE_REFLECTIONS_DTYPES, row_count=total),
        "as_of": as_of.isoformat(),
        "role_memory_mode": ROLE_MEMORY_MODE,
        "reflector": reflector.name,
        "appended": appended,
        "not_yet_matured": batch.immature,
        "already_reflected": inputs.already_reflected,
        "classifications": classifications,
    }
    if isinstance(reflector, LLMReflector):
        meta.update(
            {
                "llm_calls": reflector.calls,
                "llm_refused_by_budget": reflector.refused,
                "llm_errors": len(reflector.errors),
            }
        )
        if reflector.refused:
            context.log.warning(
                "LLM reflection budget exhausted: remaining lessons written by the deterministic reflector"
            )
        for warning in reflector.client.tracker.warnings:
            context.log.warning(f"llm budget soft threshold: {warning}")
    return dg.MaterializeResult(metadata=meta)


@role_memory_asset(
    "role_stats",
    deps=["role_cases", "role_reflections", "evaluation_runs"],
    requires=(tables.ROLE_CASES, tables.ROLE_REFLECTIONS, tables.EVALUATION_RUNS),
    description="Per role: case counts by status and class, win rate and mean excess return (primary runs).",
)
def role_stats_asset(context, warehouse, con, registry) -> dg.MaterializeResult:
    as_of = warehouse.as_of_ts
    stats = role_stats(con, registry, as_of)
    validation = validate(schemas.ROLE_STATS_INVARIANTS, stats)
    if not validation.passed:
        raise _failure("role_stats", validation)
    with transaction(con):
        replace_table(con, tables.ROLE_STATS, stats)
    return dg.MaterializeResult(
        metadata={
            **table_metadata(tables.ROLE_STATS, stats),
            "as_of": as_of.isoformat(),
            "role_memory_mode": ROLE_MEMORY_MODE,
            "scored_cases": int(stats.get_column("scored").sum() or 0),
        }
    )
