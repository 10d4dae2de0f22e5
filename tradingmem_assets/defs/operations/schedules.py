"""The daily schedules: the main job (TRADINGMEM_SCHEDULE_CRON) and the warehouse checks job.

Both launch runs, so both start stopped unless TRADINGMEM_AUTOMATION=on (read once at load, see
``tradingmem_assets.settings``); an operator turns either on in the UI (Automation -> toggle).
"""

import logging
from typing import TYPE_CHECKING

import dagster as dg

from tradingmem_assets.defs.operations.jobs import trading_memory_job, warehouse_checks_job
from tradingmem_assets.defs.operations.runs import TRIGGER_TAG
from tradingmem_assets.settings import DEFAULT_CHECKS_SCHEDULE_CRON, DEFAULT_SCHEDULE_CRON, SETTINGS

if TYPE_CHECKING:  # what define_asset_job returns; not exported at the top level
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

log = logging.getLogger("tradingmem.operations")

TRADING_MEMORY_SCHEDULE_NAME = "trading_memory_schedule"
WAREHOUSE_CHECKS_SCHEDULE_NAME = "warehouse_checks_schedule"
SCHEDULE_TIMEZONE = "UTC"


def default_status(automation: bool) -> dg.DefaultScheduleStatus:
    return dg.DefaultScheduleStatus.RUNNING if automation else dg.DefaultScheduleStatus.STOPPED


def _daily(
    name: str,
    job: "UnresolvedAssetJobDefinition",
    description: str,
    *,
    cron: str,
    fallback_cron: str,
    automation: bool,
) -> dg.ScheduleDefinition:
    """A daily schedule of ``job`` on ``cron`` (``fallback_cron`` when it is not valid), running
    when ``automation`` is on."""

    def build(cron_schedule: str) -> dg.ScheduleDefinition:
        @dg.schedule(
            name=name,
            job=job,
            cron_schedule=cron_schedule,
            execution_timezone=SCHEDULE_TIMEZONE,
            default_status=default_status(automation),
            description=f"{description} Cron {cron_schedule} ({SCHEDULE_TIMEZONE}).",
        )
        def _schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
            scheduled = context.scheduled_execution_time
            stamp = scheduled.isoformat() if scheduled else "unscheduled"
            return dg.RunRequest(run_key=f"{name}:{stamp}", tags={TRIGGER_TAG: name})

        return _schedule

    try:
        return build(cron)
    except dg.DagsterInvalidDefinitionError:
        # a bad cron in the environment must not take the whole code location down
        log.warning("%s: cron %r is not valid; using %r", name, cron, fallback_cron)
        return build(fallback_cron)


def build_trading_memory_schedule(
    *, cron: str = SETTINGS.schedule_cron, automation: bool = SETTINGS.automation_enabled
) -> dg.ScheduleDefinition:
    """The main job, daily (SPEC section 18)."""
    description = "Ingest the landing folder and rebuild the learned memory (TRADINGMEM_SCHEDULE_CRON)."
    return _daily(
        TRADING_MEMORY_SCHEDULE_NAME,
        trading_memory_job,
        description,
        cron=cron,
        fallback_cron=DEFAULT_SCHEDULE_CRON,
        automation=automation,
    )


def build_warehouse_checks_schedule(
    *, cron: str = SETTINGS.checks_schedule_cron, automation: bool = SETTINGS.automation_enabled
) -> dg.ScheduleDefinition:
    """Every stored-table check, daily after the main job (SPEC section 18)."""
    description = "Re-run every stored-table check, materializing nothing (TRADINGMEM_CHECKS_SCHEDULE_CRON)."
    return _daily(
        WAREHOUSE_CHECKS_SCHEDULE_NAME,
        warehouse_checks_job,
        description,
        cron=cron,
        fallback_cron=DEFAULT_CHECKS_SCHEDULE_CRON,
        automation=automation,
    )


trading_memory_schedule = build_trading_memory_schedule()
warehouse_checks_schedule = build_warehouse_checks_schedule()
