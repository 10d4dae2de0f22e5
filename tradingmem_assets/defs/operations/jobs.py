"""The main job: every non-partitioned asset of the learning loop, in dependency order."""

import dagster as dg

from tradingmem_assets.defs.learning.hooks import learning_failure_heartbeat

# The audit has its own job (it must never run inside a learning run) and the migration is
# partitioned (run by backfills), so both stay out of the main job.
MAIN_JOB_SELECTION = dg.AssetSelection.all() - dg.AssetSelection.groups("audit", "migration")

trading_memory_job = dg.define_asset_job(
    name="trading_memory_job",
    selection=MAIN_JOB_SELECTION,
    description="Ingest the landing folder and materialize every learned-memory table.",
    executor_def=dg.in_process_executor,
    # a failing run still leaves its `failed` learning heartbeat (methodology_cron_runs)
    hooks={learning_failure_heartbeat},
)
