"""The audit yields to learning (SPEC section 9): between its phases a pass gives way to a waiting
learning run, ends without a report, names that run, and the scheduler counts it as a deferral.

Real run records in a real instance, made from the project's own job snapshots (the main job and
Dagster's implicit asset job of an ad-hoc materialization), and the real audit asset and scheduler.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import dagster as dg
import duckdb
import pytest
from dagster._core.remote_origin import (  # the run queue only holds runs launched from a location
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

from tests.audit.world import healthy_learning_state, write_learning_state
from tests.world import DEFS, World
from tradingmem_assets.defs.audit import assets as audit_assets
from tradingmem_assets.defs.audit.assets import methodology_audit_reports
from tradingmem_assets.defs.audit.checks import AUDIT_ASSET_KEY
from tradingmem_assets.defs.audit.scheduling import SchedulerState
from tradingmem_assets.defs.audit.sensors import SCHEDULER_NAME, build_audit_scheduler
from tradingmem_assets.defs.audit.yielding import (
    AUDIT_TRIGGER_TAG,
    IMPLICIT_ASSET_JOB,
    YIELDED_TO_TAG,
    RunSeen,
    is_learning_run,
    pass_outcome,
    should_yield,
)
from tradingmem_assets.defs.resources import WarehouseResource

AUDIT_AS_OF = "2024-07-01T00:00:00Z"
MIN_IDLE_S = 600

# --- real run records -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def instance(shared_instance):
    shared_instance.wipe()
    return shared_instance


@pytest.fixture
def world(tmp_path, instance) -> World:
    world = World(tmp_path, instance, as_of=AUDIT_AS_OF)
    write_learning_state(world.db, healthy_learning_state())
    return world


def _origin(job_name: str) -> RemoteJobOrigin:
    return RemoteJobOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=RegisteredCodeLocationOrigin(location_name="tradingmem_assets"),
            repository_name="__repository__",
        ),
        job_name=job_name,
    )


def learning_run(
    instance: dg.DagsterInstance, status: dg.DagsterRunStatus, *, assets: list[str] | None = None
) -> str:
    """A run record of the main job (``assets`` None) or an ad-hoc materialization of ``assets``
    (Dagster's implicit asset job with that selection), with the project's real job snapshot."""
    if assets is None:
        job = DEFS.resolve_job_def("trading_memory_job")
        selection = None
    else:
        job = DEFS.resolve_implicit_global_asset_job_def()
        # what the UI selects: the named assets and the rest of their (unsplittable) multi-assets
        selection = (
            dg.AssetSelection.assets(*assets)
            .required_multi_asset_neighbors()
            .resolve(DEFS.resolve_asset_graph())
        )
    run = instance.create_run_for_job(
        job_def=job,
        status=status,
        asset_selection=selection,
        remote_job_origin=_origin(job.name),
    )
    assert run.job_name == ("trading_memory_job" if assets is None else IMPLICIT_ASSET_JOB)
    return run.run_id


def finish(instance: dg.DagsterInstance, run_id: str, ended_s_ago: float = 0) -> None:
    instance.report_dagster_event(
        dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_SUCCESS.value, job_name="trading_memory_job"
        ),
        run_id,
        timestamp=time.time() - ended_s_ago,
    )
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS


def audit(world: World, *, resource: WarehouseResource | None = None, tags: dict | None = None):
    return dg.materialize(
        [methodology_audit_reports],
        resources={"warehouse": resource or world.resource(AUDIT_AS_OF)},
        instance=world.instance,
        tags=tags,
    )


def report_rows(world: World) -> int:
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'methodology_audit_reports'"
        ).fetchall()[0][0]
        return (
            con.execute("SELECT count(*) FROM main.methodology_audit_reports").fetchall()[0][0]
            if exists
            else 0
        )
    finally:
        con.close()


def yielded_observation(result) -> dict:
    observations = [
        e.event_specific_data.asset_observation
        for e in result.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    ]
    assert len(observations) == 1, "a pass that yields says so once"
    assert observations[0].asset_key == AUDIT_ASSET_KEY
    return {k: getattr(v, "value", v) for k, v in observations[0].metadata.items()} | {
        "description": observations[0].description
    }


def assert_yielded(world: World, result, to_run_id: str, phase: str) -> None:
    assert result.success, "yielding is a clean end, not a failure"
    assert result.asset_materializations_for_node("methodology_audit_reports") == []
    assert report_rows(world) == 0, "a pass that yields writes no report"
    meta = yielded_observation(result)
    assert meta["yielded_to"] == to_run_id
    assert meta["yielded_before_phase"] == phase
    assert to_run_id[:8] in meta["description"]
    assert world.instance.get_run_by_id(result.run_id).tags[YIELDED_TO_TAG] == to_run_id
    logs = [r.user_message for r in world.instance.all_logs(result.run_id)]
    assert any("yielded to" in m and to_run_id[:8] in m for m in logs), "the run's log names the run"


# --- the pass -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
)
def test_a_pass_yields_to_a_waiting_learning_run_and_writes_no_report(world, status):
    waiting = learning_run(world.instance, status)
    assert_yielded(world, audit(world), waiting, "score")


def test_an_ad_hoc_materialization_of_a_learning_asset_is_a_learning_run(world):
    waiting = learning_run(world.instance, dg.DagsterRunStatus.QUEUED, assets=["methodologies"])
    assert_yielded(world, audit(world), waiting, "score")


def test_a_run_that_writes_no_learning_asset_does_not_make_the_audit_yield(world):
    learning_run(world.instance, dg.DagsterRunStatus.QUEUED, assets=["migrated_role_cases"])
    learning_run(world.instance, dg.DagsterRunStatus.SUCCESS)  # finished learning waits for nothing
    result = audit(world)
    assert len(result.asset_materializations_for_node("methodology_audit_reports")) == 1
    assert report_rows(world) == 1


def test_a_pass_forced_by_the_starvation_guard_never_yields(world):
    learning_run(world.instance, dg.DagsterRunStatus.QUEUED)
    result = audit(world, tags={AUDIT_TRIGGER_TAG: "force"})
    assert len(result.asset_materializations_for_node("methodology_audit_reports")) == 1
    assert report_rows(world) == 1
    assert YIELDED_TO_TAG not in world.instance.get_run_by_id(result.run_id).tags


class QueuesLearningDuringRead(WarehouseResource):
    """The real warehouse; a learning run is queued while the pass is in its read phase (the
    resource is copied into the run, so the instance and the queued run live on the class)."""

    instance: ClassVar[dg.DagsterInstance | None] = None
    queued: ClassVar[list[str]] = []

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with super().connect() as con:
            yield con
        if not QueuesLearningDuringRead.queued:
            QueuesLearningDuringRead.queued.append(learning_run(self.instance, dg.DagsterRunStatus.QUEUED))


def test_a_learning_run_queued_during_the_read_phase_is_yielded_to_before_scoring(world, monkeypatch):
    monkeypatch.setattr(QueuesLearningDuringRead, "instance", world.instance)
    monkeypatch.setattr(QueuesLearningDuringRead, "queued", [])
    resource = QueuesLearningDuringRead(**world.resource(AUDIT_AS_OF).model_dump())
    result = audit(world, resource=resource)
    assert len(QueuesLearningDuringRead.queued) == 1
    assert_yielded(world, result, QueuesLearningDuringRead.queued[0], "score")


def test_a_learning_run_queued_while_scoring_is_yielded_to_before_the_write(world, monkeypatch):
    queued: list[str] = []
    real_score = audit_assets.score_audit

    def score_then_queue(*args, **kwargs):
        score = real_score(*args, **kwargs)
        queued.append(learning_run(world.instance, dg.DagsterRunStatus.QUEUED))
        return score

    monkeypatch.setattr(audit_assets, "score_audit", score_then_queue)
    assert_yielded(world, audit(world), queued[0], "write")


# --- the scheduler ----------------------------------------------------------------------------------


def tick(instance: dg.DagsterInstance, cursor: str | None, *, max_deferrals: int):
    sensor = build_audit_scheduler(
        min_idle_s=MIN_IDLE_S, max_deferrals=max_deferrals, enabled=True, cron_enabled=True
    )
    return sensor(dg.build_sensor_context(instance=instance, cursor=cursor))


def launch(world: World, request: dg.RunRequest):
    """Run the scheduler's request as the daemon would: its tags, run key and sensor name."""
    tags = {**request.tags, "dagster/run_key": request.run_key, "dagster/sensor_name": SCHEDULER_NAME}
    return audit(world, tags=tags)


def test_a_pass_that_yielded_counts_as_a_deferral_and_the_guard_then_forces_one(world):
    instance = world.instance
    first = tick(instance, None, max_deferrals=1)
    assert len(first.run_requests) == 1 and first.run_requests[0].tags[AUDIT_TRIGGER_TAG] == "run"
    assert json.loads(first.cursor)["pending_run_key"] == first.run_requests[0].run_key

    waiting = learning_run(instance, dg.DagsterRunStatus.QUEUED)
    assert_yielded(world, launch(world, first.run_requests[0]), waiting, "score")

    busy = tick(instance, first.cursor, max_deferrals=1)
    assert not busy.run_requests
    message = busy.skip_reason.skip_message
    assert f"the last pass yielded to {waiting}: deferral 1/1" in message
    assert "learning is busy" in message
    assert json.loads(busy.cursor)["deferrals"] == 1
    assert json.loads(busy.cursor)["pending_run_key"] is None

    finish(instance, waiting, ended_s_ago=30)  # learning just ended: idle too short, but 1/1 deferrals
    forced = tick(instance, busy.cursor, max_deferrals=1)
    assert len(forced.run_requests) == 1
    assert forced.run_requests[0].tags[AUDIT_TRIGGER_TAG] == "force"

    learning_run(instance, dg.DagsterRunStatus.QUEUED)  # a forced pass finishes whatever waits
    result = launch(world, forced.run_requests[0])
    assert len(result.asset_materializations_for_node("methodology_audit_reports")) == 1
    assert report_rows(world) == 1

    after = tick(instance, forced.cursor, max_deferrals=1)
    assert json.loads(after.cursor)["pending_run_key"] is None
    assert json.loads(after.cursor)["deferrals"] == 0  # the pass completed: nothing to count
    assert "yielded" not in after.skip_reason.skip_message


def test_a_pass_that_completed_is_not_a_deferral(world):
    first = tick(world.instance, SchedulerState(deferrals=0).to_cursor(), max_deferrals=3)
    launch(world, first.run_requests[0])
    assert report_rows(world) == 1
    second = tick(world.instance, first.cursor, max_deferrals=3)
    assert json.loads(second.cursor)["deferrals"] == 0
    # the completed pass is settled; the new launch is the one pending now
    assert json.loads(second.cursor)["pending_run_key"] == second.run_requests[0].run_key
    assert second.run_requests[0].run_key != first.run_requests[0].run_key


@pytest.mark.parametrize("status", [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTED])
def test_the_scheduler_skips_while_an_ad_hoc_learning_materialization_waits_or_runs(instance, status):
    run_id = learning_run(instance, status, assets=["learnings", "role_cases"])
    result = tick(instance, None, max_deferrals=3)
    assert not result.run_requests
    assert "learning is busy" in result.skip_reason.skip_message
    assert run_id[:8] in result.skip_reason.skip_message
    assert "materialization of learning_reviews, learnings" in result.skip_reason.skip_message


def test_a_recent_ad_hoc_learning_materialization_defers_the_audit(instance):
    run_id = learning_run(instance, dg.DagsterRunStatus.STARTED, assets=["methodology_cases"])
    finish(instance, run_id, ended_s_ago=30)
    result = tick(instance, None, max_deferrals=3)
    assert not result.run_requests
    assert result.skip_reason.skip_message.startswith("deferred (1/3)")


def test_an_ad_hoc_run_without_learning_assets_is_not_learning_activity(instance):
    run_id = learning_run(instance, dg.DagsterRunStatus.STARTED, assets=["migrated_role_cases"])
    finish(instance, run_id, ended_s_ago=30)
    learning_run(instance, dg.DagsterRunStatus.QUEUED, assets=["migration_conservation_report"])
    result = tick(instance, None, max_deferrals=3)
    assert len(result.run_requests) == 1  # migration runs neither busy nor recent learning
    assert result.run_requests[0].tags[AUDIT_TRIGGER_TAG] == "run"


# --- the pure rules ---------------------------------------------------------------------------------


def test_which_runs_are_learning_runs():
    assert is_learning_run("trading_memory_job", None)
    assert is_learning_run(IMPLICIT_ASSET_JOB, {"methodologies"})
    assert is_learning_run(IMPLICIT_ASSET_JOB, None)  # every asset, learning included
    assert is_learning_run("some_job", {"methodology_cron_runs", "customers"})
    assert not is_learning_run(IMPLICIT_ASSET_JOB, {"migrated_role_cases", "methodology_audit_reports"})
    assert not is_learning_run("methodology_audit_job", None)
    assert not is_learning_run("warehouse_checks_job", None)


def test_only_the_starvation_guard_keeps_a_pass_from_yielding():
    waiting = [RunSeen("r1" * 8, "trading_memory_job", "queued")]
    decision = should_yield(waiting, phase="write", trigger="run")
    assert decision is not None and decision.yielded_to.run_id == "r1" * 8
    assert "before its write phase" in decision.reason and "deferral" in decision.reason
    assert should_yield(waiting, phase="write", trigger=None) is not None  # a CLI pass yields too
    assert should_yield(waiting, phase="write", trigger="force") is None
    assert should_yield([], phase="score", trigger="run") is None


def test_a_pass_outcome_is_read_from_its_run_record():
    assert pass_outcome(None, {}) == "unknown"
    assert pass_outcome("started", {}) == "in_flight"
    assert pass_outcome("success", {YIELDED_TO_TAG: "abc"}) == "yielded"
    assert pass_outcome("success", {}) == "completed"
    assert pass_outcome("failure", {}) == "failed"
