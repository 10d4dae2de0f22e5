"""The operations jobs: the main job (every non-partitioned learning asset, in dependency order, with
the checks it evaluates as it writes) and the warehouse checks job (every stand-alone check re-reads
its stored table; nothing is materialized)."""

from collections.abc import Set as AbstractSet

import dagster as dg

from tradingmem_assets.lib import tables


class StoredTableChecksSelection(dg.AssetSelection):
    """Every asset check that runs on its own (an ``@asset_check`` re-reading the stored table) of a
    non-partitioned asset; with ``twins_only``, only those of an asset that also evaluates checks
    in its own step, as it writes (the stored twins of those checks).

    ``AssetSelection.all_asset_checks()`` cannot back the checks job: it also selects the checks
    declared in an asset's ``check_specs``, which run only when that asset materializes (such
    assets cannot be subset), so the job would fail to resolve (or would have to write the tables
    it is meant to check). Checks of partitioned assets (the migration) need a partition, so they
    stay with their backfills. A check added later as a stand-alone ``@asset_check`` joins the job
    by itself.
    """

    def __init__(self, twins_only: bool = False):
        self.twins_only = twins_only

    def resolve_inner(self, asset_graph, allow_missing: bool) -> AbstractSet[dg.AssetKey]:
        return set()

    def resolve_checks_inner(self, asset_graph, allow_missing: bool) -> AbstractSet[dg.AssetCheckKey]:
        # declared on an asset (its check_specs): they run when the asset materializes
        in_step = {key for key in asset_graph.asset_check_keys if asset_graph.assets_def_for_key(key).keys}
        checked_in_step = {key.asset_key for key in in_step}
        selected = set()
        for check_key in asset_graph.asset_check_keys - in_step:
            if asset_graph.get_check_spec(check_key).partitions_def is not None:
                continue
            if asset_graph.has(check_key.asset_key) and asset_graph.get(check_key.asset_key).is_partitioned:
                continue
            if check_key.asset_key.to_user_string() in tables.AUDIT_ASSETS:
                continue  # the audit's own checks run with its passes, outside the main job
            if self.twins_only and check_key.asset_key not in checked_in_step:
                continue
            selected.add(check_key)
        return selected

    def to_serializable_asset_selection(self, asset_graph) -> dg.AssetSelection:
        return dg.AssetSelection.checks(*sorted(self.resolve_checks(asset_graph), key=str))

    def to_selection_str(self) -> str:
        kind = "stored twins of in-step checks" if self.twins_only else "stand-alone checks"
        return f"{kind} of non-partitioned assets"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredTableChecksSelection) and other.twins_only == self.twins_only

    def __hash__(self) -> int:
        return hash((StoredTableChecksSelection, self.twins_only))


# The audit has its own job (it must never run inside a learning run) and the migration is
# partitioned (run by backfills), so both stay out of the main job. So do the stored twins of the
# checks an asset evaluates in its own step: the step has just validated what it wrote (a broken
# invariant rolls the write back), so re-reading it in the same run would find the same; they run
# in warehouse_checks_job, on its schedule and from the UI. A stand-alone check of an asset that
# checks nothing as it writes (role_cases, role_reflections, role_stats) is that asset's check in
# the run, and blocks what is downstream.
MAIN_JOB_SELECTION = (
    dg.AssetSelection.all()
    - dg.AssetSelection.groups(tables.AUDIT_GROUP, tables.MIGRATION_GROUP)
    - StoredTableChecksSelection(twins_only=True)
)

trading_memory_job = dg.define_asset_job(
    name=tables.TRADING_MEMORY_JOB,
    selection=MAIN_JOB_SELECTION,
    description="Ingest the landing folder and materialize every learned-memory table.",
    executor_def=dg.in_process_executor,
)


warehouse_checks_job = dg.define_asset_job(
    name=tables.WAREHOUSE_CHECKS_JOB,
    selection=StoredTableChecksSelection(),
    description=(
        "Re-read every stored table and run its asset checks, materializing nothing: a hand edit "
        "of the warehouse shows as a failed check."
    ),
    executor_def=dg.in_process_executor,
)
