"""The busy-aware audit trigger: skip while learning runs, defer until idle, force after N deferrals."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from dagster._core.remote_origin import (  # real queued run records need an origin
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

from tradingmem_assets.defs.audit.scheduling import SchedulerState, decide
from tradingmem_assets.defs.audit.sensors import (
    SCHEDULER_NAME,
    SORTED_LEARNING_JOB_NAMES,
    build_audit_scheduler,
    methodology_audit_scheduler,
)

MIN_IDLE_S = 600
MAX_DEFERRALS = 3


@dg.op
def _noop() -> None:
    pass


@dg.job(name="trading_memory_job")
def learning_job_stand_in() -> None:
    """A stand-in with the learning job's name: the trigger only reads run records by job name."""
    _noop()


@dg.job(name="methodology_audit_job")
def audit_job_stand_in() -> None:
    _noop()


@pytest.fixture(scope="module")
def shared_instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def instance(shared_instance):
    """A real instance with no run history (wiped between tests; creating one costs ~1 s)."""
    shared_instance.wipe()
    return shared_instance


def add_run(
    instance: dg.DagsterInstance,
    status: dg.DagsterRunStatus,
    *,
    ended_s_ago: float | None = None,
    job: dg.JobDefinition = learning_job_stand_in,
) -> str:
    """A real run record; a finished one gets its end time from a run-end event at that instant."""
    if status == dg.DagsterRunStatus.QUEUED:
        # the run queue only holds runs launched from a code location: give the record that origin
        origin = RemoteJobOrigin(
            repository_origin=RemoteRepositoryOrigin(
                code_location_origin=RegisteredCodeLocationOrigin(location_name="tradingmem_assets"),
                repository_name="__repository__",
            ),
            job_name=job.name,
        )
        return instance.create_run_for_job(job_def=job, status=status, remote_job_origin=origin).run_id
    if ended_s_ago is None:
        return instance.create_run_for_job(job_def=job, status=status).run_id
    run = instance.create_run_for_job(job_def=job, status=dg.DagsterRunStatus.STARTED)
    event_type = {
        dg.DagsterRunStatus.SUCCESS: dg.DagsterEventType.RUN_SUCCESS,
        dg.DagsterRunStatus.FAILURE: dg.DagsterEventType.RUN_FAILURE,
    }[status]
    instance.report_dagster_event(
        dg.DagsterEvent(event_type_value=event_type.value, job_name=job.name),
        run.run_id,
        timestamp=time.time() - ended_s_ago,
    )
    return run.run_id


def tick(instance: dg.DagsterInstance, cursor: str | None = None, **overrides):
    params = {"min_idle_s": MIN_IDLE_S, "max_deferrals": MAX_DEFERRALS, "enabled": True, "cron_enabled": True}
    params.update(overrides)
    sensor = build_audit_scheduler(**params)
    return sensor(dg.build_sensor_context(instance=instance, cursor=cursor))


def state(result) -> dict:
    return json.loads(result.cursor)


def test_the_learning_job_is_a_learning_run():
    assert "trading_memory_job" in SORTED_LEARNING_JOB_NAMES


@pytest.mark.parametrize("status", [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTED])
def test_the_audit_is_skipped_while_a_learning_run_is_queued_or_started(instance, status):
    add_run(instance, status)
    cursor = SchedulerState(deferrals=2).to_cursor()
    result = tick(instance, cursor)
    assert not result.run_requests
    assert "learning is busy" in result.skip_reason.skip_message
    assert status.value.lower() in result.skip_reason.skip_message
    assert state(result)["deferrals"] == 2  # a busy skip is not a deferral, and never forces


def test_a_busy_learning_run_is_never_overridden_by_the_starvation_guard(instance):
    add_run(instance, dg.DagsterRunStatus.STARTED)
    result = tick(instance, SchedulerState(deferrals=MAX_DEFERRALS + 5).to_cursor())
    assert not result.run_requests


def test_the_audit_is_deferred_while_learning_has_been_idle_too_short(instance):
    add_run(instance, dg.DagsterRunStatus.SUCCESS, ended_s_ago=30)
    result = tick(instance, None)
    assert not result.run_requests
    assert result.skip_reason.skip_message.startswith(f"deferred (1/{MAX_DEFERRALS})")
    assert state(result)["deferrals"] == 1
    second = tick(instance, result.cursor)
    assert state(second)["deferrals"] == 2


def test_the_audit_is_forced_after_max_consecutive_deferrals(instance):
    add_run(instance, dg.DagsterRunStatus.SUCCESS, ended_s_ago=30)
    cursor = None
    for expected in range(1, MAX_DEFERRALS + 1):
        result = tick(instance, cursor)
        assert not result.run_requests and state(result)["deferrals"] == expected
        cursor = result.cursor
    forced = tick(instance, cursor)
    assert len(forced.run_requests) == 1
    assert forced.run_requests[0].tags["tradingmem/audit_trigger"] == "force"
    assert state(forced)["deferrals"] == 0
    assert state(forced)["last_pass"] is not None


def test_the_audit_runs_when_learning_has_been_idle_long_enough(instance):
    add_run(instance, dg.DagsterRunStatus.SUCCESS, ended_s_ago=7200)
    add_run(instance, dg.DagsterRunStatus.FAILURE, ended_s_ago=MIN_IDLE_S + 60)
    result = tick(instance, SchedulerState(deferrals=2).to_cursor())
    assert len(result.run_requests) == 1
    assert result.run_requests[0].tags["tradingmem/audit_trigger"] == "run"
    assert state(result)["deferrals"] == 0  # consecutive: a run resets the counter


def test_the_latest_finished_learning_run_decides_idleness(instance):
    add_run(instance, dg.DagsterRunStatus.SUCCESS, ended_s_ago=7200)
    add_run(instance, dg.DagsterRunStatus.FAILURE, ended_s_ago=10)  # a failed run is still learning activity
    result = tick(instance, None)
    assert not result.run_requests and state(result)["deferrals"] == 1


def test_the_audit_runs_when_learning_has_never_run(instance):
    result = tick(instance, None)
    assert len(result.run_requests) == 1


def test_an_audit_already_queued_is_not_doubled(instance):
    add_run(instance, dg.DagsterRunStatus.QUEUED, job=audit_job_stand_in)
    result = tick(instance, None)
    assert not result.run_requests
    assert "already queued or running" in result.skip_reason.skip_message


def test_a_switched_off_audit_is_never_scheduled(instance):
    result = tick(instance, None, enabled=False)
    assert not result.run_requests
    assert "switched off" in result.skip_reason.skip_message


def test_the_schedule_is_opt_in():
    assert methodology_audit_scheduler.name == SCHEDULER_NAME
    assert methodology_audit_scheduler.job_name == "methodology_audit_job"
    # METHODOLOGY_AUDIT_CRON_ENABLED is unset in tests: stopped unless switched on
    assert methodology_audit_scheduler.default_status == dg.DefaultSensorStatus.STOPPED
    on = build_audit_scheduler(cron_enabled=True)
    assert on.default_status == dg.DefaultSensorStatus.RUNNING


def test_an_unreadable_cursor_starts_afresh():
    assert SchedulerState.from_cursor("not json") == SchedulerState()
    assert SchedulerState.from_cursor(None) == SchedulerState()


def test_the_decision_is_a_pure_function_of_what_was_observed():
    now = datetime(2024, 7, 1, tzinfo=UTC)
    args = dict(enabled=True, learning_in_flight=[], audit_in_flight=False, min_idle_s=600, max_deferrals=0)
    assert (
        decide(now, SchedulerState(), last_learning_end=now - timedelta(seconds=5), **args).action == "force"
    )
    assert (
        decide(now, SchedulerState(), last_learning_end=now - timedelta(seconds=601), **args).action == "run"
    )
