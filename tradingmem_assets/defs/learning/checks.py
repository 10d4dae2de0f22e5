"""Learning-loop invariants re-read from the stored tables, so a hand edit fails a check."""

from tradingmem_assets.defs.learning.invariants import (
    LEARNINGS_INVARIANTS,
    METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS,
    methodologies_schema,
    methodology_cases_schema,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import StoredTableCheck, stored_table_checks
from tradingmem_assets.settings import SETTINGS

CASES_WITH_KIND_SQL = f"""
SELECT c.*, r.kind
FROM {tables.METHODOLOGY_CASES} c
LEFT JOIN (SELECT DISTINCT run_id, kind FROM {tables.INSTITUTION_REFLECTIONS}) r USING (run_id)
"""

LEARNING_CHECKS = stored_table_checks(
    [
        StoredTableCheck(
            "stored_learnings_invariants",
            "learnings",
            "The stored learnings: ids, counters, weight = 0.95^ignored, no secret in any field.",
            LEARNINGS_INVARIANTS,
            enabled=lambda: SETTINGS.learning_enabled,
        ),
        StoredTableCheck(
            "stored_methodologies_invariants",
            "methodologies",
            "The stored methodologies: vocabularies, ids from dedup keys, no injected text, graduation.",
            lambda _at: methodologies_schema(
                SETTINGS.methodology_injection_threshold, SETTINGS.methodology_min_uses
            ),
        ),
        StoredTableCheck(
            "stored_methodology_cases_invariants",
            "methodology_cases",
            "The stored ladder outcomes: scheduled runs only, one case per (run, window, methodology).",
            lambda _at: methodology_cases_schema(SETTINGS.reflection_windows_days),
            read=CASES_WITH_KIND_SQL,
        ),
        StoredTableCheck(
            "stored_methodology_lifecycle_events_invariants",
            "methodology_lifecycle_events",
            "The stored lifecycle events: known event kinds, unique ids.",
            METHODOLOGY_LIFECYCLE_EVENTS_INVARIANTS,
        ),
    ]
)
