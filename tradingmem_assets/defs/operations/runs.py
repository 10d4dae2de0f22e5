"""Launching runs from outside the UI (CLI, benchmark): the UI's instance, the main job, one audit pass.

``run_main_job`` launches a run the way the UI does: a native run of the code location's own job
(``tradingmem_assets.definitions``, loaded with the warehouse settings in the environment, so the
run's job snapshot is the location's and no resource is overridden), recorded with the location's
origin and a ``tradingmem/trigger`` tag, executed in this process by the job's in-process executor.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import dagster as dg

from tradingmem_assets.settings import default_db_path

DEFINITIONS_MODULE = "tradingmem_assets.definitions"
LOCATION_NAME = "tradingmem_assets"  # pyproject [tool.dg.project] code_location_name, workspace.yaml
PROJECT_ROOT = Path(__file__).resolve().parents[3]
TRIGGER_TAG = "tradingmem/trigger"
WAREHOUSE_ENV = ("TRADINGMEM_DB", "TRADINGMEM_LANDING_DIR", "TRADINGMEM_AS_OF")


@dataclass(frozen=True)
class StepInfo:
    """One step of a run's plan: the assets it materializes and the checks it evaluates."""

    key: str
    assets: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    group: str | None = None


@dataclass(frozen=True)
class StepEvent:
    """What a run listener hears: the plan once, then each step as it starts and ends."""

    kind: Literal["planned", "started", "succeeded", "failed", "skipped"]
    run_id: str
    step: StepInfo | None = None
    seconds: float | None = None
    plan: tuple[StepInfo, ...] = ()


@dataclass
class JobReport:
    success: bool
    run_id: str
    seconds: float
    step_seconds: dict[str, float] = field(default_factory=dict)
    failed_steps: list[str] = field(default_factory=list)
    error: str | None = None
    steps: tuple[StepInfo, ...] = ()
    skipped_steps: list[str] = field(default_factory=list)


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


def _set_env(values: Mapping[str, str | None]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Environment variables set for a block (None: unset), restored after."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        _set_env(values)
        yield
    finally:
        _set_env(saved)


def warehouse_env(database: str, landing_dir: str, as_of: str | None):
    """TRADINGMEM_DB / TRADINGMEM_LANDING_DIR / TRADINGMEM_AS_OF set for a block (the resource reads
    them when the definitions load); ``as_of`` None: unset, the run's start time. Restored after."""
    return environment(dict(zip(WAREHOUSE_ENV, (str(database), str(landing_dir), as_of), strict=True)))


def location_job(job_name: str):
    """The code location's job, reconstructable from its module (what a code server loads)."""
    from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

    # a reconstructable job caches its last definition: load the location again under this env
    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()
    repository = ReconstructableRepository.for_module(DEFINITIONS_MODULE, "defs", str(PROJECT_ROOT))
    return repository.get_reconstructable_job(job_name)


def location_origin(job_name: str, repository_name: str):
    """The run's origin as the UI records it: the workspace's code location, repository and job."""
    from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.workspace.load import (
        location_origin_from_module_name,
        location_origins_from_yaml_paths,
    )

    workspace = PROJECT_ROOT / "workspace.yaml"
    origins = location_origins_from_yaml_paths([str(workspace)]) if workspace.exists() else []
    code_location = next((o for o in origins if o.location_name == LOCATION_NAME), None)
    if code_location is None:
        code_location = location_origin_from_module_name(
            DEFINITIONS_MODULE, None, str(PROJECT_ROOT), LOCATION_NAME
        )
    return RemoteJobOrigin(RemoteRepositoryOrigin(code_location, repository_name), job_name)


def plan_steps(
    instance: dg.DagsterInstance, run: dg.DagsterRun, job: dg.JobDefinition
) -> tuple[StepInfo, ...]:
    """The steps of a run's execution plan, with the assets and checks of each and its asset group."""
    plan = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
    graph = job.asset_layer.asset_graph
    out = []
    for step in plan.steps:
        assets: list[dg.AssetKey] = []
        checks: list[str] = []
        for output in step.outputs:
            props = output.properties
            if props is None:
                continue
            if props.asset_check_key is not None:
                checks.append(
                    f"{props.asset_check_key.asset_key.to_user_string()}:{props.asset_check_key.name}"
                )
            elif props.asset_key is not None:
                assets.append(props.asset_key)
        owner = assets[0] if assets else None
        if owner is None and checks:
            owner = dg.AssetKey.from_user_string(checks[0].split(":", 1)[0])
        group = graph.get(owner).group_name if owner is not None and graph.has(owner) else None
        out.append(StepInfo(step.key, tuple(a.to_user_string() for a in assets), tuple(checks), group))
    return tuple(out)


def _failure_message(events: list) -> str | None:
    for event in events:
        if event.is_step_failure and event.step_failure_data is not None:
            data = event.step_failure_data
            user = data.user_failure_data
            if user and user.description:
                return user.description
            if data.error is not None:
                return data.error.message.strip()
    for event in events:
        if event.is_run_failure:
            data = event.event_specific_data
            error = getattr(data, "error", None)
            return (error.message.strip() if error is not None else None) or event.message or "run failed"
    return "run failed"


def run_main_job(
    instance: dg.DagsterInstance,
    *,
    database: str,
    landing_dir: str,
    as_of: str | None,
    job_name: str = "trading_memory_job",
    trigger: str = "cli",
    tags: Mapping[str, str] | None = None,
    console_level: str | None = "WARNING",
    listener: Callable[[StepEvent], None] | None = None,
) -> JobReport:
    """Launch a job of the code location as a native run recorded in ``instance`` and wait for it.

    The definitions load with ``database``, ``landing_dir`` and ``as_of`` in the environment (what
    the warehouse resource reads), so the run uses the location's own job snapshot and resource.
    The Dagster console logger prints from ``console_level`` up (None: everything, Dagster's
    default; "CRITICAL": nothing a run normally logs, not even a failed step's stack trace, which
    the caller reports in its own words); the full event log stays in the run's record.
    ``listener`` hears the plan and every step as it starts and ends.
    """
    from dagster._core.execution.api import execute_run_iterator

    with warehouse_env(database, landing_dir, as_of):
        recon = location_job(job_name)
        repository = recon.get_repository_definition()
        recon = recon.with_repository_load_data(repository.repository_load_data)
        job = recon.get_definition()
        run = instance.create_run_for_job(
            job_def=job,
            run_config=_console_config(console_level),
            tags={**(tags or {}), TRIGGER_TAG: trigger},
            remote_job_origin=location_origin(job_name, repository.name),
            job_code_origin=recon.get_python_origin(),
            repository_load_data=repository.repository_load_data,
        )
        steps = plan_steps(instance, run, job)
        by_key = {s.key: s for s in steps}
        hear = listener or (lambda _event: None)
        hear(StepEvent("planned", run.run_id, plan=steps))
        failures: list = []
        started_keys: list[str] = []
        started = time.perf_counter()
        for event in execute_run_iterator(recon, run, instance):
            if event.is_step_failure or event.is_run_failure:
                failures.append(event)
            step = by_key.get(event.step_key) if event.step_key else None
            if step is None:
                continue
            if event.is_step_start:
                started_keys.append(step.key)
                hear(StepEvent("started", run.run_id, step))
            elif event.is_step_success:
                seconds = event.event_specific_data.duration_ms / 1000
                hear(StepEvent("succeeded", run.run_id, step, seconds))
            elif event.is_step_failure:
                hear(StepEvent("failed", run.run_id, step))
            elif event.is_step_skipped:
                hear(StepEvent("skipped", run.run_id, step))
        seconds = time.perf_counter() - started
    # the steps in the order they started (then the ones that never did): landing first
    order = {key: i for i, key in enumerate(started_keys)}
    steps = tuple(sorted(steps, key=lambda s: order.get(s.key, len(order))))
    record = instance.get_run_by_id(run.run_id)
    success = record is not None and record.is_success
    return JobReport(
        success=success,
        run_id=run.run_id,
        seconds=seconds,
        step_seconds=step_durations(instance, run.run_id),
        failed_steps=[e.step_key for e in failures if e.is_step_failure and e.step_key],
        error=None if success else _failure_message(failures),
        steps=steps,
        skipped_steps=_skipped(instance, run.run_id),
    )


def _console_config(level: str | None) -> dict:
    return {} if level is None else {"loggers": {"console": {"config": {"log_level": level}}}}


def _skipped(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_SKIPPED)
    return [r.dagster_event.step_key for r in records if r.dagster_event and r.dagster_event.step_key]


def landing_ingested(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """The landing tables a run ingested (materialized, not kept as an earlier run left them), each
    with how: ``appended`` (read from its first new row) or ``whole``."""
    out = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        materialization = record.dagster_event.event_specific_data.materialization
        key = materialization.asset_key.path
        if key[0] == "raw" and "skipped" not in materialization.metadata:
            how = materialization.metadata.get("ingested")
            out[key[-1]] = str(how.value).split(":")[0] if how is not None else "whole"
    return dict(sorted(out.items()))


def instance_home() -> Path | None:
    """DAGSTER_HOME when set; a clear error when it names no folder (Dagster would raise deep inside)."""
    value = os.environ.get("DAGSTER_HOME")
    if not value:
        return None
    home = Path(value)
    if not home.is_dir():
        raise FileNotFoundError(f"DAGSTER_HOME {value} is not a folder: create it or unset DAGSTER_HOME")
    return home


def open_instance() -> dg.DagsterInstance:
    """The instance the UI uses: DAGSTER_HOME when set, else the project's ``dagster.yaml``.

    ``dagster dev`` in the repo root without DAGSTER_HOME reads ``./dagster.yaml``, whose storage
    lives under ``data/dagster``; the CLI opens the same storage, so its runs show up in the UI.
    """
    if instance_home() is not None:
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
    if not materializations:  # the pass yielded to a waiting learning run: no report
        return result, None
    return result, str(materializations[0].metadata["pass_id"].value)


def audit_yielded_to(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """The learning run an audit run yielded to (None: it did not yield)."""
    from tradingmem_assets.defs.audit.yielding import YIELDED_TO_TAG

    run = instance.get_run_by_id(run_id)
    return run.tags.get(YIELDED_TO_TAG) if run is not None else None
