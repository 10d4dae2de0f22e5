"""The ``memory_efficacy`` asset (SPEC section 17): does what the system learned change later results?

Recomputed from the stored tables as of the run's ``as_of`` (``queries.memory_efficacy``) and
swapped in one transaction. Its metadata shows the verdict counts (numbers, so the UI plots them
across materializations) and a table of the strongest effects.
"""

import dagster as dg

from tradingmem_assets.defs.efficacy.queries import EfficacyInputsMissing
from tradingmem_assets.defs.efficacy.queries import memory_efficacy as compute_efficacy
from tradingmem_assets.defs.efficacy.verdicts import (
    markdown,
    strongest_effects,
    verdict_counts,
)
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.defs.role_memory.admission import registry_frame
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import column_schema, table_asset
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.warehouse import replace_table, transaction

EFFICACY_INPUTS = [
    "role_cases",
    "role_reflections",
    "evaluation_runs",
    "evaluation_primaries",
    "methodologies",
    "methodology_lifecycle_events",
    "methodology_cases",
    "methodology_case_hints",
    "institution_reflections",
] + [
    raw_key(t)
    for t in (
        "trading_decisions",
        "position_lifecycles",
        "benchmark_profiles",
        "methodology_injections",
        "institution_runs",
    )
]


@table_asset(
    "memory_efficacy",
    group=tables.EFFICACY_GROUP,
    deps=EFFICACY_INPUTS,
    description="Win rates before vs after each lesson, graduation and injection, with Wilson intervals.",
)
def memory_efficacy(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    as_of = warehouse.as_of_ts
    registry = registry_frame(warehouse.registry().rows())
    with warehouse.connect() as con:
        try:
            rows = compute_efficacy(con, registry, as_of)
        except EfficacyInputsMissing as exc:
            raise dg.Failure(description=str(exc)) from exc
        with transaction(con):
            replace_table(con, tables.MEMORY_EFFICACY, rows)
    counts = verdict_counts(rows)
    context.log.info(f"memory_efficacy at {as_of.isoformat()}: {rows.height} subjects, {counts}")
    by_kind = {kind: n for kind, n in rows.group_by("subject_kind").len().sort("subject_kind").rows()}
    return dg.MaterializeResult(
        metadata={
            "dagster/table_name": tables.MEMORY_EFFICACY,
            "dagster/row_count": rows.height,
            "dagster/column_schema": column_schema(tables.MEMORY_EFFICACY),
            "as_of": as_of.isoformat(),
            **{verdict: dg.MetadataValue.int(n) for verdict, n in counts.items()},
            "subjects_by_kind": dg.MetadataValue.json(by_kind),
            "strongest_effects": dg.MetadataValue.md(markdown(strongest_effects(rows))),
        }
    )
