"""A schedule tick, a landing-sensor run and a migration backfill launched together queue one after
the other and never half-write the warehouse (SPEC section 18: DuckDB has one writer).

Everything is real: an instance in a temp DAGSTER_HOME whose ``dagster.yaml`` takes the run queue
of the repo's shipped ``dagster.yaml`` (so the queued run coordinator with one concurrent run), the
workspace's code location in its own gRPC code server, the run requests of the real
``trading_memory_schedule`` and ``landing_sensor`` (real landing files), the runs of ``dagster job
backfill`` over three months of ``legacy_migration_job``, and the daemon's queued run coordinator,
iterated here in the test process, launching each run in its own run worker process through the
default run launcher. Afterwards ``warehouse_checks_job`` (queued the same way) re-reads every
stored table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from tests.operations.conftest import BUILT_AS_OF
from tradingmem_assets.defs.operations.runs import environment
from tradingmem_assets.demo import write_demo_world

REPO = Path(__file__).resolve().parents[2]
DAGSTER = Path(sys.executable).parent / "dagster"
LOCATION = "tradingmem_assets"
BACKFILL_MONTHS = ("2020-01-01", "2020-02-01", "2020-03-01")
RUNS_TIMEOUT_S = 900  # two cores shared with the rest of the machine
FINISHED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
IN_PROGRESS = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)


def shipped_queue_config(path: Path) -> dict:
    """The run-queue part of a shipped instance file (its ``concurrency`` section)."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "run_queue" not in config, f"{path.name}: the old run_queue keys do not mix with concurrency"
    return {"concurrency": config["concurrency"]}


def test_every_shipped_instance_queues_one_run_at_a_time():
    for path in (REPO / "dagster.yaml", REPO / "deploy" / "postgres" / "dagster.yaml"):
        assert shipped_queue_config(path)["concurrency"]["runs"]["max_concurrent_runs"] == 1, path


# --- the world ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def queued_world(tmp_path_factory):
    """The queue's setting, the landing folder and the warehouse path, in a temp DAGSTER_HOME."""
    root = tmp_path_factory.mktemp("queue")
    home = root / "dagster_home"
    home.mkdir()
    config = {"telemetry": {"enabled": False}, **shipped_queue_config(REPO / "dagster.yaml")}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    landing = root / "landing"
    landing.mkdir()
    write_demo_world(landing, scale=0.002, seed=3)
    settled = time.time() - 120  # written two minutes ago: the sensor does not wait for them to settle
    for path in landing.iterdir():
        os.utime(path, (settled, settled))
    env = {
        "DAGSTER_HOME": str(home),
        "TRADINGMEM_DB": str(root / "tradingmem.duckdb"),
        "TRADINGMEM_LANDING_DIR": str(landing),
        "TRADINGMEM_AS_OF": BUILT_AS_OF,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return root, env


@pytest.fixture(scope="module")
def queue_env(queued_world):
    """The environment the code server and every run worker inherit (set for the module's tests)."""
    _, env = queued_world
    with environment(env):
        yield env


# --- submitting as the daemons do -----------------------------------------------------------------


def submit(workspace, instance: dg.DagsterInstance, job_name: str, request: dg.RunRequest, tags: dict):
    """Create the run of a run request from the code location's job and submit it to the run
    coordinator, the way the scheduler and sensor daemons do (it lands in the queue)."""
    context = workspace.create_request_context()
    location = context.get_code_location(LOCATION)
    repository = location.get_repository("__repository__")
    remote_job = repository.get_full_job(job_name)
    plan = location.get_execution_plan(
        remote_job, request.run_config, step_keys_to_execute=None, known_state=None, instance=instance
    )
    run = instance.create_run(
        job_name=job_name,
        run_id=None,
        run_config=request.run_config,
        resolved_op_selection=None,
        step_keys_to_execute=None,
        status=dg.DagsterRunStatus.NOT_STARTED,
        op_selection=None,
        root_run_id=None,
        parent_run_id=None,
        tags={**(remote_job.run_tags or {}), **request.tags, **tags, "dagster/run_key": request.run_key},
        job_snapshot=remote_job.job_snapshot,
        execution_plan_snapshot=plan.execution_plan_snapshot,
        parent_job_snapshot=remote_job.parent_job_snapshot,
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
        asset_selection=None,
        asset_check_selection=None,
        asset_graph=repository.asset_graph,
    )
    submitted = instance.submit_run(run.run_id, context)
    assert submitted.status == dg.DagsterRunStatus.QUEUED
    return submitted.run_id


def run_queue(workspace, instance: dg.DagsterInstance, run_ids: list[str]) -> int:
    """Iterate the daemon's queued run coordinator until every run finished; the most runs seen in
    progress at once."""
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)
    most = 0
    deadline = time.monotonic() + RUNS_TIMEOUT_S
    while True:
        list(daemon.run_iteration(workspace))
        runs = [instance.get_run_by_id(run_id) for run_id in run_ids]
        most = max(most, sum(run.status in IN_PROGRESS for run in runs))
        if all(run.status in FINISHED for run in runs):
            return most
        assert time.monotonic() < deadline, {r.run_id[:8]: r.status.value for r in runs}
        time.sleep(0.5)


def warehouse_rows(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def check_evaluations(instance: dg.DagsterInstance, run_id: str) -> dict[str, bool]:
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    out = {}
    for record in records:
        data = record.dagster_event.event_specific_data
        out[f"{data.asset_key.to_user_string()}:{data.check_name}"] = data.passed
    return out


# --- the test -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def queued_runs(queued_world, queue_env):
    """Submit the three kinds of runs together, then let the queue run them; the record of it."""
    from dagster._core.run_coordinator import QueuedRunCoordinator
    from dagster._core.test_utils import create_test_daemon_workspace_context
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    from tradingmem_assets.defs.operations.schedules import trading_memory_schedule
    from tradingmem_assets.defs.operations.sensors import landing_sensor

    root, env = queued_world
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
        target = WorkspaceFileTarget(paths=[str(REPO / "workspace.yaml")])
        with create_test_daemon_workspace_context(target, instance) as workspace:
            # 1. the schedule's tick at 02:00 UTC
            tick_time = datetime(2024, 7, 1, 2, 0, tzinfo=UTC)
            schedule_requests = trading_memory_schedule.evaluate_tick(
                dg.build_schedule_context(instance=instance, scheduled_execution_time=tick_time)
            ).run_requests
            assert len(schedule_requests) == 1
            schedule_run = submit(
                workspace,
                instance,
                "trading_memory_job",
                schedule_requests[0],
                {"dagster/schedule_name": "trading_memory_schedule"},
            )
            # 2. the landing sensor sees the landing files (TRADINGMEM_LANDING_DIR)
            sensor_requests = landing_sensor.evaluate_tick(
                dg.build_sensor_context(instance=instance, cursor=None)
            ).run_requests
            assert len(sensor_requests) == 1
            sensor_run = submit(
                workspace,
                instance,
                "trading_memory_job",
                sensor_requests[0],
                {"dagster/sensor_name": "landing_sensor"},
            )
            # 3. a backfill of three months from the CLI: its runs go to the same queue
            backfill = subprocess.run(
                [
                    str(DAGSTER),
                    "job",
                    "backfill",
                    "-w",
                    str(REPO / "workspace.yaml"),
                    "-j",
                    "legacy_migration_job",
                    "--partitions",
                    ",".join(BACKFILL_MONTHS),
                    "--noprompt",
                ],
                cwd=REPO,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert backfill.returncode == 0, backfill.stdout + backfill.stderr
            backfill_runs = [
                r.run_id for r in instance.get_runs(filters=dg.RunsFilter(job_name="legacy_migration_job"))
            ]
            assert len(backfill_runs) == len(BACKFILL_MONTHS)

            runs = [schedule_run, sensor_run, *reversed(backfill_runs)]
            queued = {r: instance.get_run_by_id(r).status for r in runs}
            most_in_progress = run_queue(workspace, instance, runs)

            # 4. then the stored checks, through the same queue
            checks_run = submit(
                workspace, instance, "warehouse_checks_job", dg.RunRequest(run_key="checks"), {}
            )
            run_queue(workspace, instance, [checks_run])
            seconds = time.perf_counter() - started
            yield {
                "instance": instance,
                "db": root / "tradingmem.duckdb",
                "runs": runs,
                "kinds": {schedule_run: "learning", sensor_run: "learning"}
                | {r: "migration" for r in backfill_runs},
                "queued": queued,
                "most_in_progress": most_in_progress,
                "checks_run": checks_run,
                "seconds": seconds,
            }


def test_runs_launched_together_all_wait_in_the_queue(queued_runs):
    assert set(queued_runs["queued"].values()) == {dg.DagsterRunStatus.QUEUED}
    assert len(queued_runs["runs"]) == 2 + len(BACKFILL_MONTHS)


def test_every_queued_run_succeeds_and_the_ledger_records_it(queued_runs):
    instance = queued_runs["instance"]
    statuses = {r: instance.get_run_by_id(r).status for r in queued_runs["runs"]}
    assert set(statuses.values()) == {dg.DagsterRunStatus.SUCCESS}, statuses
    ledger = dict(
        (run_id, (kind, status))
        for run_id, kind, status in warehouse_rows(
            queued_runs["db"], "SELECT run_id, kind, status FROM main.warehouse_runs"
        )
    )
    assert ledger == {r: (kind, "ok") for r, kind in queued_runs["kinds"].items()}
    print(f"queue test: {len(statuses)} runs + checks in {queued_runs['seconds']:.0f} s")


def test_no_run_overlapped_another(queued_runs):
    instance = queued_runs["instance"]
    assert queued_runs["most_in_progress"] == 1
    records = sorted(
        (instance.get_run_record_by_id(r) for r in queued_runs["runs"]), key=lambda rec: rec.start_time
    )
    for earlier, later in zip(records, records[1:], strict=False):
        assert later.start_time >= earlier.end_time, (earlier.dagster_run.run_id, later.dagster_run.run_id)
    # the warehouse's own record of each run's writes: one window after the other
    windows = warehouse_rows(
        queued_runs["db"], "SELECT started_at, finished_at FROM main.warehouse_runs ORDER BY started_at"
    )
    assert len(windows) == len(queued_runs["runs"])
    for (_, finished), (started, _) in zip(windows, windows[1:], strict=False):
        assert started >= finished


def test_the_queue_runs_in_submission_order(queued_runs):
    instance = queued_runs["instance"]
    starts = [instance.get_run_record_by_id(r).start_time for r in queued_runs["runs"]]
    assert starts == sorted(starts)


def replayed(instance: dg.DagsterInstance, run_id: str) -> set[str]:
    """The runs a run's landing assets said it replays."""
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_OBSERVATION)
    return {
        r.dagster_event.event_specific_data.asset_observation.metadata["replay_of"].value
        for r in records
        if "replay_of" in r.dagster_event.event_specific_data.asset_observation.metadata
    }


def test_the_warehouse_is_consistent_after_the_queue(queued_runs):
    instance = queued_runs["instance"]
    checks = instance.get_run_by_id(queued_runs["checks_run"])
    evaluations = check_evaluations(instance, queued_runs["checks_run"])
    assert checks.status == dg.DagsterRunStatus.SUCCESS
    assert len(evaluations) >= 10 and all(evaluations.values()), evaluations
    learning = [r for r, kind in queued_runs["kinds"].items() if kind == "learning"]
    for run_id, kind in queued_runs["kinds"].items():
        evaluated = check_evaluations(instance, run_id)
        if kind == "learning" and not evaluated:
            # the same landing files at the same as_of: the later learning run is a replay of the
            # earlier one (operations/replay.py), which computes nothing and so evaluates no check
            assert replayed(instance, run_id) == {learning[0]}, run_id
            continue
        assert evaluated and all(evaluated.values()), (kind, evaluated)
    months = warehouse_rows(
        queued_runs["db"],
        "SELECT DISTINCT partition_key FROM main.migration_conservation_report ORDER BY 1",
    )
    assert [m for (m,) in months] == list(BACKFILL_MONTHS)
