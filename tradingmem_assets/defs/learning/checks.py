"""Learning-loop invariants re-read from the stored tables, so a hand edit fails a check."""

from tradingmem_assets.defs.learning.invariants import (
    LEARNINGS_INVARIANTS,
    METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS,
    methodologies_schema,
    methodology_cases_schema,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks
from tradingmem_assets.lib.dtypes import as_utc
from tradingmem_assets.lib.warehouse import read_frame
from tradingmem_assets.settings import SETTINGS

CASES_WITH_KIND_SQL = f"""
SELECT c.*, r.kind
FROM {tables.METHODOLOGY_CASES} c
LEFT JOIN (SELECT DISTINCT run_id, kind FROM {tables.INSTITUTION_REFLECTIONS}) r USING (run_id)
"""


def _table(name: str):
    return lambda con, _at: as_utc(read_frame(con, f"SELECT * FROM {name}"))


LEARNING_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            name="stored_learnings_invariants",
            asset="learnings",
            table=tables.LEARNINGS,
            description="The stored learnings: ids, counters, weight = 0.95^ignored, no secret in any field.",
            read=_table(tables.LEARNINGS),
            invariants=lambda _at: LEARNINGS_INVARIANTS,
            enabled=lambda: SETTINGS.learning_enabled,
        ),
        StoredTableCheck(
            name="stored_methodologies_invariants",
            asset="methodologies",
            table=tables.METHODOLOGIES,
            description="The stored methodologies: vocabularies, ids from dedup keys, no injected text, graduation.",
            read=_table(tables.METHODOLOGIES),
            invariants=lambda _at: methodologies_schema(
                SETTINGS.methodology_injection_threshold, SETTINGS.methodology_min_uses
            ),
        ),
        StoredTableCheck(
            name="stored_methodology_cases_invariants",
            asset="methodology_cases",
            table=tables.METHODOLOGY_CASES,
            description="The stored ladder outcomes: scheduled runs only, one case per (run, window, methodology).",
            read=lambda con, _at: as_utc(read_frame(con, CASES_WITH_KIND_SQL)),
            invariants=lambda _at: methodology_cases_schema(SETTINGS.reflection_windows_days),
        ),
        StoredTableCheck(
            name="stored_methodology_lifecycle_events_invariants",
            asset="methodology_lifecycle_events",
            table=tables.METHODOLOGY_LIFECYCLE_EVENTS,
            description="The stored lifecycle events: known event kinds, unique ids.",
            read=_table(tables.METHODOLOGY_LIFECYCLE_EVENTS),
            invariants=lambda _at: METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS,
        ),
    ]
)
