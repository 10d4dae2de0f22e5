"""The operations jobs: the main job (every non-partitioned learning asset, in dependency order) and
the warehouse checks job (every stand-alone check re-reads its stored table; nothing is materialized)."""

from collections.abc import Set as AbstractSet

import dagster as dg

from tradingmem_assets.defs.learning.hooks import learning_failure_heartbeat
from tradingmem_assets.lib import tables

# The audit has its own job (it must never run inside a learning run) and the migration is
# partitioned (run by backfills), so both stay out of the main job.
MAIN_JOB_SELECTION = dg.AssetSelection.all() - dg.AssetSelection.groups(
    tables.AUDIT_GROUP, tables.MIGRATION_GROUP
)

trading_memory_job = dg.define_asset_job(
    name=tables.TRADING_MEMORY_JOB,
    selection=MAIN_JOB_SELECTION,
    description="Ingest the landing folder and materialize every learned-memory table.",
    executor_def=dg.in_process_executor,
    # a failing run still leaves its `failed` learning heartbeat (methodology_cron_runs)
    hooks={learning_failure_heartbeat},
)


class StoredTableChecksSelection(dg.AssetSelection):
    """Every asset check that runs on its own (an ``@asset_check`` re-reading the stored table) of a
    non-partitioned asset.

    ``AssetSelection.all_asset_checks()`` cannot back this job: it also selects the checks declared
    in an asset's ``check_specs``, which run only when that asset materializes (such assets cannot
    be subset), so the job would fail to resolve (or would have to write the tables it is meant to
    check). Checks of partitioned assets (the migration) need a partition, so they stay with their
    backfills. A check added later as a stand-alone ``@asset_check`` joins the job by itself.
    """

    def resolve_inner(self, asset_graph, allow_missing: bool) -> AbstractSet[dg.AssetKey]:
        return set()

    def resolve_checks_inner(self, asset_graph, allow_missing: bool) -> AbstractSet[dg.AssetCheckKey]:
        selected = set()
        for check_key in asset_graph.asset_check_keys:
            owner = asset_graph.assets_def_for_key(check_key)
            if owner.keys:  # declared on an asset: it runs when the asset materializes
                continue
            if asset_graph.get_check_spec(check_key).partitions_def is not None:
                continue
            if asset_graph.has(check_key.asset_key) and asset_graph.get(check_key.asset_key).is_partitioned:
                continue
            if check_key.asset_key.to_user_string() in tables.AUDIT_ASSETS:
                continue  # the audit's own checks run with its passes, outside the main job
            selected.add(check_key)
        return selected

    def to_serializable_asset_selection(self, asset_graph) -> dg.AssetSelection:
        return dg.AssetSelection.checks(*sorted(self.resolve_checks(asset_graph), key=str))

    def to_selection_str(self) -> str:
        return "stand-alone checks of non-partitioned assets"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredTableChecksSelection)

    def __hash__(self) -> int:
        return hash(StoredTableChecksSelection)


warehouse_checks_job = dg.define_asset_job(
    name=tables.WAREHOUSE_CHECKS_JOB,
    selection=StoredTableChecksSelection(),
    description=(
        "Re-read every stored table and run its asset checks, materializing nothing: a hand edit "
        "of the warehouse shows as a failed check."
    ),
    executor_def=dg.in_process_executor,
)
