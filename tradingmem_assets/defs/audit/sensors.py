"""The audit's sensors: the isolation watchdog and the busy-aware audit trigger.

Both read only Dagster's own records (materialization metadata, run records) and never open the
warehouse: sensors run inside the long-lived code server, and DuckDB has a single writer.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg

from tradingmem_assets.defs.audit.assets import asset_names, learning_runs_in
from tradingmem_assets.defs.audit.checks import AUDIT_ASSET_KEY, SHA_AFTER_KEY, SHA_BEFORE_KEY
from tradingmem_assets.defs.audit.jobs import (
    ALERT_OP_NAME,
    AUDIT_JOB_NAME,
    audit_isolation_alert_job,
    methodology_audit_job,
)
from tradingmem_assets.defs.audit.scheduling import SchedulerState, decide
from tradingmem_assets.defs.audit.yielding import (
    AUDIT_TRIGGER_TAG,
    YIELDED_TO_TAG,
    PassOutcome,
    is_learning_run,
    pass_outcome,
)
from tradingmem_assets.lib import tables
from tradingmem_assets.settings import SETTINGS

ISOLATION_SENSOR_NAME = "audit_isolation_sensor"
SCHEDULER_NAME = "methodology_audit_scheduler"
MATERIALIZATIONS_PER_TICK = 100
# finished runs of any job scanned for ad-hoc learning materializations (the idle clock)
RECENT_FINISHED_RUNS = 50

IN_FLIGHT_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
FINISHED_STATUSES = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


SORTED_LEARNING_JOB_NAMES: tuple[str, ...] = tuple(sorted(tables.LEARNING_JOB_NAMES))


# --- isolation ------------------------------------------------------------------------------------


def _meta_value(metadata: dict, key: str):
    value = metadata.get(key)
    return getattr(value, "value", value)


def _violation_request(record) -> dg.RunRequest | None:
    """A run request for the alert job when this audit materialization's hashes differ (or are missing)."""
    materialization = record.asset_materialization
    meta = dict(materialization.metadata or {}) if materialization else {}
    before = _meta_value(meta, SHA_BEFORE_KEY)
    after = _meta_value(meta, SHA_AFTER_KEY)
    if before and after and before == after:
        return None
    entry = record.event_log_entry
    pass_id = _meta_value(meta, "pass_id") or f"unknown-{record.storage_id}"
    config = {
        "pass_id": str(pass_id),
        # A pass that did not record its hashes cannot prove isolation: it is treated as violated.
        "sha256_before": str(before or "missing"),
        "sha256_after": str(after or "missing"),
        "storage_id": int(record.storage_id),
        "materialization_run_id": entry.run_id,
        "materialization_timestamp": float(entry.timestamp),
        "window_days": int(_meta_value(meta, "window_days") or 30),
        "tier": _meta_value(meta, "tier"),
        "composite": _meta_value(meta, "composite"),
    }
    return dg.RunRequest(
        run_key=f"audit_isolation:{record.storage_id}",
        run_config={"ops": {ALERT_OP_NAME: {"config": config}}},
        tags={"tradingmem/audit_pass_id": str(pass_id), "tradingmem/alert": "audit_isolation"},
    )


@dg.sensor(
    name=ISOLATION_SENSOR_NAME,
    job=audit_isolation_alert_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Checks the learning-table hashes of every audit pass; a difference launches an alert run.",
)
def audit_isolation_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    try:
        after_id = int(context.cursor) if context.cursor else 0
    except ValueError:
        after_id = 0
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=AUDIT_ASSET_KEY, after_storage_id=after_id),
        limit=MATERIALIZATIONS_PER_TICK,
        ascending=True,
    ).records
    if not records:
        return dg.SensorResult(
            skip_reason=f"no new audit pass since event storage id {after_id}", cursor=str(after_id)
        )
    cursor = str(max(r.storage_id for r in records))
    requests = [req for req in (_violation_request(r) for r in records) if req is not None]
    if requests:
        context.log.error(
            f"{len(requests)} audit pass(es) changed the learning tables: launching alert run(s)"
        )
        return dg.SensorResult(run_requests=requests, cursor=cursor)
    return dg.SensorResult(
        skip_reason=(
            f"{len(records)} audit pass(es) checked: learning tables unchanged during each pass "
            "(hashes before and after are equal)"
        ),
        cursor=cursor,
    )


# --- busy-aware trigger ---------------------------------------------------------------------------


def _in_flight(instance: dg.DagsterInstance, job_names: Sequence[str]) -> list[str]:
    found = []
    for name in job_names:
        for rec in instance.get_run_records(
            filters=dg.RunsFilter(job_name=name, statuses=IN_FLIGHT_STATUSES), limit=5
        ):
            found.append(f"{name} run {rec.dagster_run.run_id[:8]} {rec.dagster_run.status.value.lower()}")
    return found


def _learning_in_flight(instance: dg.DagsterInstance) -> list[str]:
    """Learning runs queued or in progress: the learning jobs' and ad-hoc materializations of
    learning assets (any job whose selection holds one)."""
    return [r.describe() for r in learning_runs_in(instance, IN_FLIGHT_STATUSES)]


def _last_end(instance: dg.DagsterInstance, job_names: Sequence[str]) -> datetime | None:
    """When learning last finished: the learning jobs' runs, and the latest finished runs of any
    job whose selection holds a learning asset."""
    records = []
    for name in job_names:
        records += instance.get_run_records(
            filters=dg.RunsFilter(job_name=name, statuses=FINISHED_STATUSES),
            limit=1,
            order_by="end_time",
            ascending=False,
        )
    records += [
        rec
        for rec in instance.get_run_records(
            filters=dg.RunsFilter(statuses=FINISHED_STATUSES),
            limit=RECENT_FINISHED_RUNS,
            order_by="end_time",
            ascending=False,
        )
        if is_learning_run(rec.dagster_run.job_name, asset_names(rec.dagster_run))
    ]
    ends = [datetime.fromtimestamp(rec.end_time or rec.update_timestamp.timestamp(), UTC) for rec in records]
    return max(ends) if ends else None


def _pending_pass(instance: dg.DagsterInstance, run_key: str | None) -> tuple[PassOutcome | None, str | None]:
    """What became of the pass launched with ``run_key``: its outcome and the run it yielded to."""
    if run_key is None:
        return None, None
    runs = instance.get_runs(
        filters=dg.RunsFilter(tags={"dagster/sensor_name": SCHEDULER_NAME, "dagster/run_key": run_key}),
        limit=1,
    )
    if not runs:
        return pass_outcome(None, {}), None
    run = runs[0]
    return pass_outcome(run.status.value.lower(), dict(run.tags)), run.tags.get(YIELDED_TO_TAG)


def build_audit_scheduler(
    *,
    interval_s: float = SETTINGS.audit_interval_s,
    min_idle_s: float = SETTINGS.audit_min_idle_s,
    max_deferrals: int = SETTINGS.audit_max_deferrals,
    enabled: bool = SETTINGS.audit_enabled,
    cron_enabled: bool = SETTINGS.audit_cron_enabled,
    learning_jobs: Sequence[str] = SORTED_LEARNING_JOB_NAMES,
) -> dg.SensorDefinition:
    """The audit's opt-in schedule as a sensor, so the deferral counter can live in its cursor."""

    @dg.sensor(
        name=SCHEDULER_NAME,
        job=methodology_audit_job,
        minimum_interval_seconds=max(30, int(interval_s)),
        default_status=dg.DefaultSensorStatus.RUNNING if cron_enabled else dg.DefaultSensorStatus.STOPPED,
        description=(
            "Opt-in audit schedule (METHODOLOGY_AUDIT_CRON_ENABLED=1): skips while learning runs, defers "
            "until learning is idle (a pass that yielded to learning is a deferral), forces a pass after "
            "METHODOLOGY_AUDIT_MAX_DEFERRALS deferrals."
        ),
    )
    def _scheduler(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        now = datetime.now(UTC)
        state = SchedulerState.from_cursor(context.cursor)
        outcome, yielded_to = _pending_pass(context.instance, state.pending_run_key)
        decision = decide(
            now,
            state,
            enabled=enabled,
            learning_in_flight=sorted(
                set(_in_flight(context.instance, learning_jobs)) | set(_learning_in_flight(context.instance))
            ),
            audit_in_flight=bool(_in_flight(context.instance, [AUDIT_JOB_NAME])),
            last_learning_end=_last_end(context.instance, learning_jobs),
            min_idle_s=min_idle_s,
            max_deferrals=max_deferrals,
            last_pass_outcome=outcome,
            last_pass_yielded_to=yielded_to,
        )
        context.log.info(decision.reason)
        if decision.launch:
            return dg.SensorResult(
                run_requests=[
                    dg.RunRequest(
                        run_key=decision.run_key,
                        tags={AUDIT_TRIGGER_TAG: decision.action},
                    )
                ],
                cursor=decision.state.to_cursor(),
            )
        return dg.SensorResult(skip_reason=decision.reason, cursor=decision.state.to_cursor())

    return _scheduler


methodology_audit_scheduler = build_audit_scheduler()
