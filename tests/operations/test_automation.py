"""The landing sensor, the daily schedules and their default status, and the warehouse checks job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.operations.landing_state import LandingState
from tradingmem_assets.defs.operations.schedules import (
    build_trading_memory_schedule,
    build_warehouse_checks_schedule,
    trading_memory_schedule,
    warehouse_checks_schedule,
)
from tradingmem_assets.defs.operations.sensors import (
    ADDED_TAG,
    CHANGED_TAG,
    LANDING_SENSOR_NAME,
    STATE_TAG,
    build_landing_sensor,
    landing_sensor,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def landing(tmp_path) -> Path:
    folder = tmp_path / "landing"
    folder.mkdir()
    return folder


def tick(sensor: dg.SensorDefinition, instance: dg.DagsterInstance, cursor: str | None):
    return sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor))


def sensor_for(folder: Path, **kwargs) -> dg.SensorDefinition:
    return build_landing_sensor(landing_dir=str(folder), settle_s=kwargs.pop("settle_s", 0), **kwargs)


def test_added_landing_file_launches_the_main_job_once_per_state(landing, run_instance):
    sensor = sensor_for(landing)
    (landing / "trading_decisions.csv").write_text("decision_id\nd_1\n")
    first = tick(sensor, run_instance, None)
    assert len(first.run_requests) == 1
    request = first.run_requests[0]
    state = LandingState.from_cursor(first.cursor)
    assert state is not None and request.run_key == state.key
    assert request.tags[ADDED_TAG] == "trading_decisions.csv"
    assert request.tags[STATE_TAG] == state.key
    assert sensor.job_name == "trading_memory_job"

    again = tick(sensor, run_instance, first.cursor)
    assert again.run_requests == []
    assert again.skip_message.startswith("landing unchanged since ")
    assert str(landing) in again.skip_message


def test_changed_content_of_the_same_size_launches_a_new_run_with_a_new_key(landing, run_instance):
    sensor = sensor_for(landing)
    path = landing / "customers.csv"
    path.write_text("customer_id\nc_1\n")
    first = tick(sensor, run_instance, None)
    before = path.stat()
    path.write_text("customer_id\nc_2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))  # a coarse clock may not tick
    assert path.stat().st_size == before.st_size
    second = tick(sensor, run_instance, first.cursor)
    assert len(second.run_requests) == 1
    assert second.run_requests[0].tags[CHANGED_TAG] == "customers.csv"
    assert second.run_requests[0].run_key != first.run_requests[0].run_key
    # going back to the first bytes is the first state: the same run key as before
    path.write_text("customer_id\nc_1\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 2_000_000))
    third = tick(sensor, run_instance, second.cursor)
    assert third.run_requests[0].run_key == first.run_requests[0].run_key


def test_touching_a_file_without_changing_it_launches_nothing(landing, run_instance):
    sensor = sensor_for(landing)
    path = landing / "customers.csv"
    path.write_text("customer_id\nc_1\n")
    first = tick(sensor, run_instance, None)
    os.utime(path, ns=(10**18, 10**18))
    second = tick(sensor, run_instance, first.cursor)
    assert second.run_requests == [] and "unchanged" in second.skip_message
    # the cursor keeps the new mtime, so the next tick reuses the hash
    assert LandingState.from_cursor(second.cursor).entries[0].mtime_ns == 10**18


def test_empty_landing_folder_skips_in_operator_words(landing, run_instance):
    result = tick(sensor_for(landing), run_instance, None)
    assert result.run_requests == []
    assert result.skip_message == f"no landing files (<table>.parquet or <table>.csv) in {landing}"
    (landing / "notes.csv").write_text("not a landing table")
    assert tick(sensor_for(landing), run_instance, None).run_requests == []


def test_removal_alone_skips_and_names_the_file(landing, run_instance):
    sensor = sensor_for(landing)
    (landing / "customers.csv").write_text("a\n")
    (landing / "kb_documents.csv").write_text("b\n")
    first = tick(sensor, run_instance, None)
    (landing / "kb_documents.csv").unlink()
    second = tick(sensor, run_instance, first.cursor)
    assert second.run_requests == []
    assert "removed kb_documents.csv" in second.skip_message


def test_a_file_still_being_written_waits_for_the_next_tick(landing, run_instance):
    sensor = sensor_for(landing, settle_s=3600)
    (landing / "customers.csv").write_text("a\n")
    result = tick(sensor, run_instance, None)
    assert result.run_requests == [] and "to settle" in result.skip_message
    assert result.cursor is None  # the change is judged again later
    old = time.time_ns() - 7200 * 10**9
    os.utime(landing / "customers.csv", ns=(old, old))
    assert len(tick(sensor, run_instance, result.cursor).run_requests) == 1


def test_a_state_that_already_launched_a_run_never_launches_again_even_without_cursor(landing, run_instance):
    sensor = sensor_for(landing)
    (landing / "price_bars.parquet").write_bytes(b"bars v1")
    key = tick(sensor, run_instance, None).run_requests[0].run_key
    run = dg.DagsterRun(
        job_name="trading_memory_job",
        run_id=f"landing-{key[:12]}-{time.time_ns()}",
        tags={"dagster/sensor_name": LANDING_SENSOR_NAME, "dagster/run_key": key},
        status=dg.DagsterRunStatus.SUCCESS,
    )
    run_instance.add_run(run)
    result = tick(sensor, run_instance, None)  # cursor lost (reset in the UI)
    assert result.run_requests == []
    assert f"already launched run {run.run_id[:8]}" in result.skip_message


def test_the_sensor_never_opens_the_warehouse(landing, run_instance, monkeypatch):
    import duckdb

    def refuse(*args, **kwargs):
        raise AssertionError("the landing sensor opened DuckDB")

    monkeypatch.setattr(duckdb, "connect", refuse)
    (landing / "customers.csv").write_text("a\n")
    assert len(tick(sensor_for(landing), run_instance, None).run_requests) == 1


def test_loaded_sensor_reads_the_landing_folder_from_the_environment(tmp_path, monkeypatch, run_instance):
    monkeypatch.setenv("TRADINGMEM_LANDING_DIR", str(tmp_path))
    result = tick(landing_sensor, run_instance, None)
    assert result.skip_message == f"no landing files (<table>.parquet or <table>.csv) in {tmp_path}"
    assert landing_sensor.minimum_interval_seconds == 60


# --- schedules ------------------------------------------------------------------------------------


def test_trading_memory_schedule_runs_the_main_job_daily_in_utc():
    assert trading_memory_schedule.job_name == "trading_memory_job"
    assert trading_memory_schedule.execution_timezone == "UTC"
    schedule = build_trading_memory_schedule(cron="15 3 * * *", automation=False)
    assert schedule.cron_schedule == "15 3 * * *"
    at = datetime(2024, 7, 1, 3, 15, tzinfo=UTC)
    data = schedule.evaluate_tick(dg.build_schedule_context(scheduled_execution_time=at))
    assert len(data.run_requests) == 1
    assert data.run_requests[0].tags["tradingmem/trigger"] == "trading_memory_schedule"
    assert data.run_requests[0].run_key == f"trading_memory_schedule:{at.isoformat()}"


def test_an_invalid_cron_falls_back_to_the_default_instead_of_breaking_the_location():
    assert build_trading_memory_schedule(cron="61 2 * * *", automation=False).cron_schedule == "0 2 * * *"


def test_warehouse_checks_schedule_targets_the_checks_job():
    assert warehouse_checks_schedule.job_name == "warehouse_checks_job"
    assert warehouse_checks_schedule.cron_schedule == "30 2 * * *"
    assert build_warehouse_checks_schedule(automation=True).default_status == dg.DefaultScheduleStatus.RUNNING


def test_builders_start_stopped_unless_automation_is_on(landing):
    assert build_trading_memory_schedule(automation=False).default_status == dg.DefaultScheduleStatus.STOPPED
    assert build_trading_memory_schedule(automation=True).default_status == dg.DefaultScheduleStatus.RUNNING
    assert build_landing_sensor(automation=False).default_status == dg.DefaultSensorStatus.STOPPED
    assert build_landing_sensor(automation=True).default_status == dg.DefaultSensorStatus.RUNNING


def test_settings_read_the_automation_switch_and_crons_once():
    from tradingmem_assets.settings import load_settings

    assert load_settings({}).automation_enabled is False
    assert load_settings({"TRADINGMEM_AUTOMATION": "on"}).automation_enabled is True
    assert load_settings({"TRADINGMEM_AUTOMATION": "maybe"}).automation_enabled is False  # warns
    assert load_settings({}).schedule_cron == "0 2 * * *"
    assert load_settings({"TRADINGMEM_SCHEDULE_CRON": " 15  3 * * 1-5 "}).schedule_cron == "15 3 * * 1-5"
    assert load_settings({"TRADINGMEM_SCHEDULE_CRON": "daily"}).schedule_cron == "0 2 * * *"  # warns
    assert load_settings({"TRADINGMEM_CHECKS_SCHEDULE_CRON": "0 4 * * *"}).checks_schedule_cron == "0 4 * * *"


_PROBE = """
import json
import tradingmem_assets.definitions as d
defs = d.defs()
out = {s.name: [s.default_status.value, s.cron_schedule] for s in defs.schedules}
out.update({s.name: [s.default_status.value, None] for s in defs.sensors})
print("PROBE" + json.dumps(out))
"""


def _probe(automation: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADINGMEM_") and k != "DAGSTER_HOME"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["TRADINGMEM_SCHEDULE_CRON"] = "5 4 * * *"
    if automation is not None:
        env["TRADINGMEM_AUTOMATION"] = automation
    return subprocess.Popen(
        [sys.executable, "-c", _PROBE],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _statuses(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    line = next(x for x in out.splitlines() if x.startswith("PROBE"))
    return json.loads(line[len("PROBE") :])


def test_loaded_definitions_start_stopped_and_automation_on_starts_them_running():
    unset, on = _probe(None), _probe("on")  # two code-location loads in parallel
    stopped, running = _statuses(unset), _statuses(on)
    launching = ["trading_memory_schedule", "warehouse_checks_schedule", "landing_sensor"]
    for name in launching:
        assert stopped[name][0] == "STOPPED", name
        assert running[name][0] == "RUNNING", name
    assert stopped["trading_memory_schedule"][1] == "5 4 * * *"
    # the audit keeps its own opt-in (METHODOLOGY_AUDIT_CRON_ENABLED), whatever the switch says
    assert stopped["methodology_audit_scheduler"][0] == running["methodology_audit_scheduler"][0] == "STOPPED"


# --- the warehouse checks job ---------------------------------------------------------------------


def test_warehouse_checks_job_selects_stand_alone_checks_and_no_asset():
    from tests.world import DEFS

    job = DEFS.resolve_job_def("warehouse_checks_job")
    assert job.asset_layer.executable_asset_keys == set()
    checks = {(k.asset_key.to_user_string(), k.name) for k in job.asset_layer.asset_graph.asset_check_keys}
    assert ("role_cases", "role_cases_invariants") in checks
    # every landing table's conservation is re-read from the stored tables too
    assert ("raw/trading_decisions", "stored_rows_read_equal_accepted_plus_rejected") in checks
    # checks declared on an asset run with its materialization, and partitioned assets need a partition
    assert not any(name == "rows_read_equal_accepted_plus_rejected" for _, name in checks)
    assert not any(
        asset.startswith("migrated_") or asset == "methodology_audit_reports" for asset, _ in checks
    )


def test_the_main_job_leaves_the_stored_twins_of_in_step_checks_to_the_checks_job():
    """An asset that evaluates its checks as it writes is not re-read in the same run; an asset with
    no check of its own keeps its stand-alone checks in the run (blocking what is downstream)."""
    from tests.world import DEFS

    def checks(job_name: str) -> set[tuple[str, str]]:
        job = DEFS.resolve_job_def(job_name)
        return {(k.asset_key.to_user_string(), k.name) for k in job.asset_layer.asset_graph.asset_check_keys}

    main, stored = checks("trading_memory_job"), checks("warehouse_checks_job")
    assert ("raw/trading_decisions", "rows_read_equal_accepted_plus_rejected") in main
    assert ("evaluation_runs", "evaluation_runs_invariants") in main
    assert not any(name.startswith("stored_") for _, name in main)
    for role_check in [("role_cases", "role_cases_invariants"), ("role_stats", "role_stats_consistent")]:
        assert role_check in main and role_check in stored
    # every stored twin left out of the main job runs in the checks job, and its asset evaluates
    # checks in its own step in the main job (every landing table among them)
    twins = stored - main
    checked_in_step = {asset for asset, name in main if (asset, name) not in stored}
    assert {asset for asset, _ in twins} <= checked_in_step
    assert sum(asset.startswith("raw/") for asset, _ in twins) == len(LANDING_TABLES)


def _run_checks(world) -> dg.ExecuteInProcessResult:
    from tests.world import DEFS

    job = DEFS.resolve_job_def("warehouse_checks_job")
    return job.execute_in_process(
        instance=world.instance, resources={"warehouse": world.resource()}, raise_on_error=False
    )


def _materializations(result: dg.ExecuteInProcessResult) -> list:
    return [e for e in result.all_events if e.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION]


def test_warehouse_checks_job_runs_every_check_and_materializes_nothing(world):
    world.write("trading_decisions", [])
    world.materialize()  # the main job on an empty landing set: every table exists, empty
    result = _run_checks(world)
    assert result.success
    assert _materializations(result) == []
    evaluations = result.get_asset_check_evaluations()
    expected = set(result.job_def.asset_layer.asset_graph.asset_check_keys)
    assert {e.asset_check_key for e in evaluations} == expected
    assert all(e.passed for e in evaluations)


def test_warehouse_checks_job_fails_when_a_stored_table_is_missing(world):
    result = _run_checks(world)  # nothing was ever built
    assert not result.success  # a failed blocking check fails the run, so the operator sees it
    assert _materializations(result) == []
    evaluations = result.get_asset_check_evaluations()
    expected = set(result.job_def.asset_layer.asset_graph.asset_check_keys)
    assert {e.asset_check_key for e in evaluations} == expected
    # with no landing file and no raw table, conservation holds (0 = 0 + 0); every other check fails
    derived = [e for e in evaluations if not e.asset_key.to_user_string().startswith("raw/")]
    assert derived and not any(e.passed for e in derived)
