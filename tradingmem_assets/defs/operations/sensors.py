"""The landing sensor: a new or changed landing file launches the main job, once per landing state.

It reads the landing folder's files and Dagster's run records, never the warehouse: sensors run
inside the long-lived code server and DuckDB has a single writer. The cursor is the JSON
fingerprint of the folder (names, sizes, mtimes, sha256); the run key is the state key (a hash of
names, sizes and sha256), so one landing state launches at most one run, even after the cursor is
reset. Like every run-launching automation it starts stopped unless TRADINGMEM_AUTOMATION=on.
"""

import time
from dataclasses import replace
from datetime import UTC, datetime

import dagster as dg

from tradingmem_assets.defs.landing.invariants import LANDING_TABLES
from tradingmem_assets.defs.operations.jobs import trading_memory_job
from tradingmem_assets.defs.operations.landing_state import LandingDiff, LandingState, diff, fingerprint
from tradingmem_assets.defs.operations.schedules import TRIGGER_TAG
from tradingmem_assets.settings import SETTINGS, default_landing_dir

LANDING_SENSOR_NAME = "landing_sensor"
MINIMUM_INTERVAL_S = 60
# a file modified less than this long ago may still be being written: wait for the next tick
SETTLE_S = 10.0
STATE_TAG = "tradingmem/landing_state"
ADDED_TAG = "tradingmem/landing_added"
CHANGED_TAG = "tradingmem/landing_changed"
REMOVED_TAG = "tradingmem/landing_removed"
_TAG_VALUE_MAX = 1000
LANDING_TABLE_NAMES: frozenset[str] = frozenset(LANDING_TABLES)


def default_status(automation: bool) -> dg.DefaultSensorStatus:
    return dg.DefaultSensorStatus.RUNNING if automation else dg.DefaultSensorStatus.STOPPED


def _now_iso(now: datetime) -> str:
    return now.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _names(names: tuple[str, ...]) -> str:
    text = ",".join(names)
    if len(text) <= _TAG_VALUE_MAX:
        return text
    cut = text[:_TAG_VALUE_MAX].rsplit(",", 1)[0]
    return f"{cut},... (+{len(names) - cut.count(',') - 1} more)"


def change_tags(state: LandingState, change: LandingDiff) -> dict[str, str]:
    """Run tags naming the landing state and the files that made it new."""
    tags = {TRIGGER_TAG: LANDING_SENSOR_NAME, STATE_TAG: state.key}
    named = ((ADDED_TAG, change.added), (CHANGED_TAG, change.changed), (REMOVED_TAG, change.removed))
    for tag, names in named:
        if names:
            tags[tag] = _names(names)
    return tags


def _launched_run(context: dg.SensorEvaluationContext, run_key: str) -> dg.DagsterRun | None:
    """The run this sensor already launched for the landing state, if any (from the run records)."""
    try:
        instance = context.instance
    except dg.DagsterInvariantViolationError:  # a test context built without an instance
        return None
    runs = instance.get_runs(
        filters=dg.RunsFilter(tags={"dagster/sensor_name": LANDING_SENSOR_NAME, "dagster/run_key": run_key}),
        limit=1,
    )
    return runs[0] if runs else None


def build_landing_sensor(
    *,
    automation: bool = SETTINGS.automation_enabled,
    landing_dir: str | None = None,
    settle_s: float = SETTLE_S,
    minimum_interval_seconds: int = MINIMUM_INTERVAL_S,
) -> dg.SensorDefinition:
    """The landing sensor; ``landing_dir`` None reads TRADINGMEM_LANDING_DIR (or data/landing) per tick."""

    @dg.sensor(
        name=LANDING_SENSOR_NAME,
        job=trading_memory_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status(automation),
        description=(
            "Launches trading_memory_job when a landing file (<table>.parquet|csv) is added or its "
            "content changes; one run per landing state (run key = state key). Reads no DuckDB."
        ),
    )
    def landing_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        folder = landing_dir or default_landing_dir()
        now = datetime.now(UTC)
        previous = LandingState.from_cursor(context.cursor)
        if previous is not None and previous.folder != folder:
            previous = None  # another folder: nothing of the old fingerprint applies
        current = fingerprint(folder, previous=previous, tables=LANDING_TABLE_NAMES, seen_at=_now_iso(now))

        if not current.entries:
            return dg.SensorResult(
                skip_reason=f"no landing files (<table>.parquet or <table>.csv) in {folder}",
                cursor=current.to_cursor(),
            )
        if previous is not None and previous.key == current.key:
            # same bytes (mtimes may have moved: keep them so the next tick hashes nothing)
            return dg.SensorResult(
                skip_reason=(
                    f"landing unchanged since {previous.seen_at or 'the previous tick'}: "
                    f"{len(current.entries)} file(s) in {folder}, state {current.key[:12]}"
                ),
                cursor=replace(current, seen_at=previous.seen_at).to_cursor(),
            )

        change = diff(previous, current)
        if settle_s > 0:
            now_ns = time.time_ns()
            fresh = [e.name for e in current.entries if now_ns - e.mtime_ns < settle_s * 1e9]
            if fresh:
                # keep the old cursor: the change is judged again once the files stopped moving
                return dg.SensorResult(
                    skip_reason=(
                        f"waiting for landing file(s) {', '.join(fresh)} in {folder} to settle "
                        f"(modified less than {settle_s:g} s ago; {change.describe()})"
                    ),
                    cursor=context.cursor,
                )
        if not change.launches:
            return dg.SensorResult(
                skip_reason=f"landing file(s) removed from {folder} ({change.describe()}); "
                "a removal alone launches no run",
                cursor=current.to_cursor(),
            )
        launched = _launched_run(context, current.key)
        if launched is not None:
            return dg.SensorResult(
                skip_reason=(
                    f"landing state {current.key[:12]} in {folder} already launched run "
                    f"{launched.run_id[:8]} ({launched.status.value.lower()}); a state launches once "
                    "(launch trading_memory_job by hand to rebuild from it again)"
                ),
                cursor=current.to_cursor(),
            )
        context.log.info(f"landing changed in {folder}: {change.describe()}; launching trading_memory_job")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=current.key, tags=change_tags(current, change))],
            cursor=current.to_cursor(),
        )

    return landing_sensor


landing_sensor = build_landing_sensor()
