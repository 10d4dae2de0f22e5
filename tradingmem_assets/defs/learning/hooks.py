"""The failed heartbeat: a job failure hook, so every failing learning run leaves a ``failed`` row.

Chosen over a run-failure sensor because it fires inside the run process (no daemon needed: a
``dagster job execute`` from a system cron records it too) and needs no DuckDB connection in the
long-lived code server. It fires once per failed step; the row is keyed by run id, so a run keeps
one heartbeat. A hard-killed process runs no hook: that run simply has no ``ok`` heartbeat, which
the audit's cron_health already counts against the loop.
"""

import dagster as dg

from tradingmem_assets.defs.learning.heartbeat import write_heartbeat
from tradingmem_assets.lib import tables


def run_includes_learning(instance: dg.DagsterInstance, run_id: str) -> bool:
    """A run of the whole job, or of a selection that contains a learning asset."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.asset_selection is None:
        return True
    return any(key.to_user_string() in tables.LEARNING_ASSETS for key in run.asset_selection)


@dg.failure_hook(name="learning_failure_heartbeat", required_resource_keys={"warehouse"})
def learning_failure_heartbeat(context: dg.HookContext) -> None:
    if not run_includes_learning(context.instance, context.run_id):
        return
    error = context.op_exception
    detail = {
        "failed_step": context.step_key,
        "error": (f"{type(error).__name__}: {error}"[:500] if error is not None else None),
    }
    try:
        with context.resources.warehouse.connect() as con:
            write_heartbeat(
                con,
                run_id=context.run_id,
                job_name=context.job_name,
                status="failed",
                as_of=context.resources.warehouse.as_of_ts,
                detail=detail,
            )
    except Exception as exc:  # a hook must not hide the run's own failure
        context.log.error(f"could not write the failed learning heartbeat for run {context.run_id}: {exc}")
