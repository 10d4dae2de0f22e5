"""Role Memory assets: role cases (admission), reflections (lessons) and per-role statistics.

``ROLE_MEMORY_MODE`` is read once when the code location loads (``settings.SETTINGS``). In ``off``
these assets read and write nothing: each logs why and records an observation instead of a
materialization, so its checks and everything downstream are skipped. ``shadow`` and ``active``
produce the same tables; only recall and manual reflection (CLI/API) differ.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from tradingmem_assets.core.admission import (
    ROLE_CASES_SCHEMA,
    admit,
    changed_rows,
    decision_coverage,
    registry_frame,
    stamp,
    with_chain,
)
from tradingmem_assets.core.budget import BudgetTracker, ensure_usage_table
from tradingmem_assets.core.llm import ChatClient, LLMReflector
from tradingmem_assets.core.recall import rebuild_recall_index
from tradingmem_assets.core.reflection import (
    REFLECTIONS_SCHEMA,
    DeterministicReflector,
    Reflector,
    record_reflections,
    reflect,
    reflection_inputs,
    role_stats,
)
from tradingmem_assets.defs.landing.assets import raw_key
from tradingmem_assets.defs.metadata import table_metadata
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.schemas import role_memory as schemas
from tradingmem_assets.schemas.validation import Validation, validate
from tradingmem_assets.settings import SETTINGS
from tradingmem_assets.warehouse import read_table, replace_table, scalar, table_exists, transaction

ROLE_MEMORY_GROUP = "role_memory"
ROLE_MEMORY_MODE = SETTINGS.role_memory_mode  # fixed for the life of this process
OFF_MESSAGE = (
    "ROLE_MEMORY_MODE=off for this process: role memory read and wrote nothing "
    "(set ROLE_MEMORY_MODE=shadow or active and restart the code location to produce it)"
)

ROLE_CASES_INPUTS = [
    raw_key(t)
    for t in (
        "trading_decisions",
        "trade_previews",
        "preview_consumptions",
        "trade_executions",
        "position_lifecycles",
        "benchmark_profiles",
    )
] + ["evaluation_runs", "evaluation_components"]
ROLE_REFLECTIONS_INPUTS = ["role_cases", "evaluation_runs", "evaluation_components"] + [
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


def _counts_md(frame: pl.DataFrame, column: str) -> dg.MetadataValue:
    if frame.height == 0:
        return dg.MetadataValue.md("(none)")
    rows = frame.group_by(column).len().sort("len", column, descending=[True, False]).rows()
    return dg.MetadataValue.md("\n".join(f"- `{k}`: {n}" for k, n in rows))


def write_role_cases(con, cases: pl.DataFrame) -> None:
    """Replace ``main.role_cases``; reasons stay VARCHAR[] and provenance becomes JSON."""
    columns = ", ".join(
        "CAST(provenance AS JSON) AS provenance" if c == "provenance" else f'"{c}"'
        for c in ROLE_CASES_SCHEMA.names()
    )
    con.register("_tm_cases", cases)
    try:
        con.execute(f"CREATE OR REPLACE TABLE main.role_cases AS SELECT {columns} FROM _tm_cases")
    finally:
        con.unregister("_tm_cases")


@dg.asset(
    name="role_cases",
    group_name=ROLE_MEMORY_GROUP,
    kinds={"duckdb", "polars"},
    deps=ROLE_CASES_INPUTS,
    output_required=False,
    description="Fail-closed admission of every decision that names a role, with all reasons that apply.",
)
def role_cases(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    if ROLE_MEMORY_MODE == "off":
        yield from _off(context)
        return
    as_of = warehouse.as_of_ts
    registry = registry_frame(warehouse.registry().rows())
    with warehouse.connect() as con:
        require_tables(con, "main.evaluation_runs", "main.evaluation_components")
        cases = admit(con, registry, as_of)
        previous = read_table(con, "main.role_cases", pl.DataFrame(schema=ROLE_CASES_SCHEMA))
        stamped = stamp(cases, previous.cast(ROLE_CASES_SCHEMA), as_of)  # type: ignore[arg-type]
        con.register("_tm_new_cases", stamped)
        try:
            invariants = validate(schemas.ROLE_CASES_SCHEMA, with_chain(con, "_tm_new_cases"))
            coverage = validate(
                schemas.DECISION_COVERAGE_SCHEMA, decision_coverage(con, as_of, "_tm_new_cases")
            )
        finally:
            con.unregister("_tm_new_cases")
        if not (invariants.passed and coverage.passed):
            raise _failure("role_cases", invariants, coverage)
        with transaction(con):
            write_role_cases(con, stamped)
            rebuild_recall_index(con)  # recall must never see an eligibility that changed
    status = dict(stamped.group_by("status").len().rows())
    reasons = stamped.select(pl.col("reasons").explode().alias("reason")).drop_nulls()
    context.log.info(f"role_cases at {as_of.isoformat()}: {stamped.height} cases, {status}")
    yield dg.MaterializeResult(
        metadata={
            **table_metadata("main.role_cases", stamped),
            "as_of": as_of.isoformat(),
            "role_memory_mode": ROLE_MEMORY_MODE,
            "eligible": status.get("eligible", 0),
            "pending": status.get("pending", 0),
            "ineligible": status.get("ineligible", 0),
            "quarantined": status.get("quarantined", 0),
            "changed_rows": changed_rows(stamped, as_of),
            "reasons": _counts_md(reasons, "reason"),
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


@dg.asset(
    name="role_reflections",
    group_name=ROLE_MEMORY_GROUP,
    kinds={"duckdb", "polars"},
    deps=ROLE_REFLECTIONS_INPUTS,
    output_required=False,
    description="Outcome classification and short role-specific lessons, once per case and primary run.",
)
def role_reflections(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    if ROLE_MEMORY_MODE == "off":
        yield from _off(context)
        return
    as_of = warehouse.as_of_ts
    registry = registry_frame(warehouse.registry().rows())
    with warehouse.connect() as con:
        require_tables(con, "main.role_cases", "main.evaluation_runs", "main.evaluation_components")
        ensure_usage_table(con)  # the budget ledger exists even while no LLM is configured
        inputs = reflection_inputs(con, registry, as_of)
        existing = read_table(con, "main.role_reflections", pl.DataFrame(schema=REFLECTIONS_SCHEMA))
        reflector = make_reflector(con)
        # LLM calls (if any) happen here, each recorded in llm_usage at once: a failed write below
        # must not erase what was spent.
        batch = reflect(inputs, existing, as_of, reflector)
        checked = batch.rows.join(
            read_table(con, "main.role_cases").select("case_id", pl.col("status").alias("case_status")),
            on="case_id",
            how="left",
        )
        validation = validate(schemas.REFLECTION_BATCH_SCHEMA, checked)
        if not validation.passed:
            raise _failure("role_reflections", validation)
        appended = record_reflections(con, batch.rows)
        total = scalar(con, "SELECT count(*) FROM main.role_reflections")
    meta = {
        **table_metadata("main.role_reflections", batch.rows, row_count=total),
        "as_of": as_of.isoformat(),
        "role_memory_mode": ROLE_MEMORY_MODE,
        "reflector": reflector.name,
        "appended": appended,
        "not_yet_matured": batch.immature,
        "already_reflected": batch.already_reflected,
        "classifications": _counts_md(batch.rows, "classification"),
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
    yield dg.MaterializeResult(metadata=meta)


@dg.asset(
    name="role_stats",
    group_name=ROLE_MEMORY_GROUP,
    kinds={"duckdb", "polars"},
    deps=["role_cases", "role_reflections", "evaluation_runs", "evaluation_components"],
    output_required=False,
    description="Per role: case counts by status and class, win rate and mean excess return (primary runs).",
)
def role_stats_asset(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    if ROLE_MEMORY_MODE == "off":
        yield from _off(context)
        return
    as_of = warehouse.as_of_ts
    registry = registry_frame(warehouse.registry().rows())
    with warehouse.connect() as con:
        require_tables(
            con,
            "main.role_cases",
            "main.role_reflections",
            "main.evaluation_runs",
            "main.evaluation_components",
        )
        stats = role_stats(con, registry, as_of)
        validation = validate(schemas.ROLE_STATS_SCHEMA, stats)
        if not validation.passed:
            raise _failure("role_stats", validation)
        with transaction(con):
            replace_table(con, "main.role_stats", stats)
    yield dg.MaterializeResult(
        metadata={
            **table_metadata("main.role_stats", stats),
            "as_of": as_of.isoformat(),
            "role_memory_mode": ROLE_MEMORY_MODE,
            "scored_cases": int(stats.get_column("scored").sum() or 0),
        }
    )
