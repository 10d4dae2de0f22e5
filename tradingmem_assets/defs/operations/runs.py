"""Launching runs from outside the UI (CLI, benchmark): the instance the UI uses, the main job, one audit pass."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.settings import default_db_path


@dataclass
class JobReport:
    success: bool
    run_id: str
    seconds: float
    step_seconds: dict[str, float] = field(default_factory=dict)
    failed_steps: list[str] = field(default_factory=list)
    error: str | None = None


def step_durations(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Seconds per step (asset) of a run, from the run's own event log."""
    starts: dict[str, float] = {}
    out: dict[str, float] = {}
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type_value == "STEP_START":
            starts[event.step_key] = record.timestamp
        elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and event.step_key in starts:
            out[event.step_key] = record.timestamp - starts[event.step_key]
    return out


def run_main_job(
    instance: dg.DagsterInstance,
    *,
    database: str,
    landing_dir: str,
    as_of: str | None,
    job_name: str = "trading_memory_job",
) -> JobReport:
    """Execute a job of the code location in this process; the run is recorded in ``instance``."""
    from tradingmem_assets.definitions import defs

    resource = WarehouseResource(
        database=database,
        landing_dir=landing_dir,
        backup_dir=str(Path(database).parent / "backups"),
        as_of=as_of,
    )
    job = defs().resolve_job_def(job_name)
    started = time.perf_counter()
    result = job.execute_in_process(
        instance=instance, resources={"warehouse": resource}, raise_on_error=False
    )
    seconds = time.perf_counter() - started
    failed = [e.step_key for e in result.all_events if e.is_step_failure and e.step_key]
    error = None
    if not result.success:
        failures = [e for e in result.all_events if e.is_step_failure]
        if failures:
            data = failures[0].step_failure_data
            user = data.user_failure_data
            error = (user.description if user and user.description else None) or data.error.message
        else:
            error = "run failed"
    return JobReport(
        success=result.success,
        run_id=result.run_id,
        seconds=seconds,
        step_seconds=step_durations(instance, result.run_id),
        failed_steps=failed,
        error=error,
    )


def open_instance() -> dg.DagsterInstance:
    """The instance the UI uses: DAGSTER_HOME when set, else the project's ``dagster.yaml``.

    ``dagster dev`` in the repo root without DAGSTER_HOME reads ``./dagster.yaml``, whose storage
    lives under ``data/dagster``; the CLI opens the same storage, so its runs show up in the UI.
    """
    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    if Path("dagster.yaml").exists():
        return dg.DagsterInstance.from_config(str(Path.cwd()))
    home = Path(default_db_path()).resolve().parent / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    return dg.DagsterInstance.from_config(str(home))


def scratch_instance() -> dg.DagsterInstance:
    """A throw-away instance (the benchmark's runs must not crowd the UI's run history)."""
    return dg.instance_for_test()


def first_failure_message(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            return event.step_failure_data.error.message.strip().splitlines()[0]
    return "see the run in the Dagster UI"


def run_audit_pass(
    instance: dg.DagsterInstance, window_days: int
) -> tuple[dg.ExecuteInProcessResult, str | None]:
    """One audit pass as a run of methodology_audit_job on ``instance``: the result and its pass_id."""
    from tradingmem_assets.defs.audit.assets import methodology_audit_reports
    from tradingmem_assets.defs.audit.jobs import AUDIT_JOB_NAME, methodology_audit_job
    from tradingmem_assets.defs.resources import warehouse_from_env

    definitions = dg.Definitions(
        assets=[methodology_audit_reports],
        jobs=[methodology_audit_job],
        resources={"warehouse": warehouse_from_env()},
    )
    job = definitions.resolve_job_def(AUDIT_JOB_NAME)
    run_config = {
        "ops": {"methodology_audit_reports": {"config": {"window_days": window_days}}},
        "loggers": {"console": {"config": {"log_level": "WARNING"}}},
    }
    result = job.execute_in_process(
        run_config=run_config, instance=instance, raise_on_error=False, tags={"tradingmem/trigger": "cli"}
    )
    if not result.success:
        return result, None
    materializations = result.asset_materializations_for_node("methodology_audit_reports")
    return result, str(materializations[0].metadata["pass_id"].value)
