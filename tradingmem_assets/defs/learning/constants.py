"""Names other domains import: the learning group, its asset keys and the jobs that are learning runs."""

import dagster as dg

LEARNING_GROUP = "learning"

# A learning run is any run of these jobs that includes learning assets; the audit scheduler
# defers while one is queued or in progress, and the heartbeat records each one.
LEARNING_JOB_NAMES: frozenset[str] = frozenset({"trading_memory_job"})

LEARNINGS_KEYS = ("learnings", "learning_reviews")
METHODOLOGY_KEYS = (
    "institution_output_rejects",
    "institution_reflections",
    "methodologies",
    "methodology_lifecycle_events",
    "methodology_cases",
    "methodology_case_hints",
)
HEARTBEAT_KEY = "methodology_cron_runs"
LEARNING_ASSET_KEYS: frozenset[dg.AssetKey] = frozenset(
    dg.AssetKey(k) for k in (*LEARNINGS_KEYS, *METHODOLOGY_KEYS, HEARTBEAT_KEY)
)

LEARNINGS_INVARIANTS_CHECK = "learnings_invariants"
METHODOLOGIES_INVARIANTS_CHECK = "methodologies_invariants"
METHODOLOGY_CASES_INVARIANTS_CHECK = "methodology_cases_invariants"
LIFECYCLE_EVENTS_INVARIANTS_CHECK = "methodology_lifecycle_events_invariants"
