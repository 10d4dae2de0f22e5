"""Run the main job in-process against a Dagster instance and summarize the warehouse (CLI, benchmark)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib.warehouse import connection, table_exists

SUMMARY_TABLES = (
    "raw_rejects",
    "evaluation_runs",
    "role_cases",
    "role_reflections",
    "learnings",
    "methodologies",
    "user_facts",
    "fin_customer_profile",
    "profile_snapshots",
    "customer_kb",
)


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


def warehouse_summary(database: str) -> dict[str, int | None]:
    """Row counts of the main output tables (None: not materialized)."""
    out: dict[str, int | None] = {}
    with connection(database, read_only=True) as con:
        for table in SUMMARY_TABLES:
            if table_exists(con, f"main.{table}"):
                out[table] = con.execute(f"SELECT count(*) FROM main.{table}").fetchall()[0][0]
            else:
                out[table] = None
        if table_exists(con, "main.role_cases"):
            out.update(
                {
                    f"role_cases.{status}": n
                    for status, n in con.execute(
                        "SELECT status, count(*) FROM main.role_cases GROUP BY status ORDER BY status"
                    ).fetchall()
                }
            )
    return out
