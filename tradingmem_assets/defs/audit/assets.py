"""The methodology audit pass: a 0-100 health report of the learning loop that never writes learning state."""

import json
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from tradingmem_assets.defs.audit.checks import (
    AUDIT_ASSET_KEY,
    AUDIT_CHECK_SPECS,
    REPORT_INVARIANTS_CHECK,
    SHA_AFTER_KEY,
    SHA_BEFORE_KEY,
    isolation_check_result,
)
from tradingmem_assets.defs.audit.inputs import AuditInputError, AuditWindow
from tradingmem_assets.defs.audit.invariants import METHODOLOGY_AUDIT_REPORTS_INVARIANTS
from tradingmem_assets.defs.audit.queries import read_audit_inputs
from tradingmem_assets.defs.audit.scoring import (
    DIMENSIONS,
    disabled_score,
    pass_id_for,
    report_frame,
    report_row,
    score_audit,
)
from tradingmem_assets.defs.audit.table_hash import tables_sha256
from tradingmem_assets.defs.audit.yielding import (
    AUDIT_TRIGGER_TAG,
    YIELDED_TO_TAG,
    Phase,
    RunSeen,
    YieldDecision,
    learning_runs,
    should_yield,
)
from tradingmem_assets.defs.resources import WarehouseResource
from tradingmem_assets.lib import tables
from tradingmem_assets.lib.dagster_kit import (
    check_result,
    rounded_metadata,
    score_metadata,
    table_metadata,
    table_spec,
)
from tradingmem_assets.lib.tables import raw_key
from tradingmem_assets.lib.validation import validate
from tradingmem_assets.lib.warehouse import append_rows, scalar, table_exists, transaction
from tradingmem_assets.settings import SETTINGS

DEFAULT_WINDOW_DAYS = 30
AUDIT_INPUTS = [
    dg.AssetKey(name)
    for name in (
        "methodologies",
        "methodology_lifecycle_events",
        "methodology_cases",
        "methodology_case_hints",
        "methodology_cron_runs",
    )
] + [raw_key("institution_runs")]


# a learning run waiting for (or holding) the warehouse: the pass gives way to it between phases
WAITING_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]
RUNS_SCANNED = 100


def asset_names(run: dg.DagsterRun) -> frozenset[str] | None:
    if run.asset_selection is None:
        return None
    return frozenset(key.to_user_string() for key in run.asset_selection)


def learning_runs_in(
    instance: dg.DagsterInstance,
    statuses: Sequence[dg.DagsterRunStatus],
    *,
    exclude_run_id: str | None = None,
) -> list[RunSeen]:
    """Learning runs (a learning job's, or any run selecting a learning asset) with these statuses,
    oldest first (the queue's order), read from the instance's run records."""
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(statuses)), limit=RUNS_SCANNED)
    seen = [
        RunSeen(
            run_id=rec.dagster_run.run_id,
            job_name=rec.dagster_run.job_name,
            status=rec.dagster_run.status.value.lower(),
            asset_selection=asset_names(rec.dagster_run),
        )
        for rec in sorted(records, key=lambda r: r.create_timestamp)
    ]
    return learning_runs(seen, exclude_run_id=exclude_run_id)


def _yield_to_learning(context: dg.AssetExecutionContext, phase: Phase) -> YieldDecision | None:
    """Between phases: look for a learning run that waits, and give way unless the pass was forced."""
    waiting = learning_runs_in(context.instance, WAITING_STATUSES, exclude_run_id=context.run_id)
    return should_yield(waiting, phase=phase, trigger=context.run.tags.get(AUDIT_TRIGGER_TAG))


def _yielded(context: dg.AssetExecutionContext, decision: YieldDecision) -> dg.AssetObservation:
    """End the pass without a report: tag the run (the scheduler reads it) and say why."""
    context.instance.add_run_tags(context.run_id, {YIELDED_TO_TAG: decision.yielded_to.run_id})
    context.log.warning(decision.reason)
    return dg.AssetObservation(
        asset_key=AUDIT_ASSET_KEY,
        description=decision.reason,
        metadata={
            "yielded_to": decision.yielded_to.run_id,
            "yielded_to_job": decision.yielded_to.job_name,
            "yielded_to_status": decision.yielded_to.status,
            "yielded_before_phase": decision.phase,
            "learning_runs_waiting": len(decision.waiting),
        },
    )


class AuditConfig(dg.Config):
    window_days: int = Field(
        default=DEFAULT_WINDOW_DAYS,
        description="Days before as_of the pass looks at: [as_of - N days, as_of].",
    )


def isolation_finding(changed: list[str]) -> dict:
    return {
        "dimension": "audit",
        "severity": "high",
        "code": "isolation_violation",
        "message": "learning tables changed during the audit pass; the pass is excluded from trends",
        "detail": {"changed_tables": changed},
    }


def _findings_markdown(findings: list[dict]) -> str:
    if not findings:
        return "no findings"
    lines = ["| severity | dimension | finding |", "|---|---|---|"]
    lines += [f"| {f['severity']} | {f['dimension']} | {f['message']} |" for f in findings[:30]]
    return "\n".join(lines)


# A multi-asset of one asset, because only ``can_subset`` makes the check outputs optional too: a
# pass that yields to a waiting learning run ends without a report, so without a materialization
# and without check evaluations (an ``@asset`` with ``output_required=False`` still requires them).
@dg.multi_asset(
    name="methodology_audit_reports",
    specs=[
        table_spec(
            AUDIT_ASSET_KEY,
            "One append-only health report per audit pass; reads the learning tables, never writes them.",
            deps=AUDIT_INPUTS,
            group_name=tables.AUDIT_GROUP,
            skippable=True,
        )
    ],
    check_specs=AUDIT_CHECK_SPECS,
    can_subset=True,
)
def methodology_audit_reports(
    context: dg.AssetExecutionContext, config: AuditConfig, warehouse: WarehouseResource
) -> Iterator[dg.MaterializeResult | dg.AssetObservation]:
    if AUDIT_ASSET_KEY not in context.selected_asset_keys:
        raise dg.Failure(
            description="the audit's checks are evaluated by its pass: select methodology_audit_reports"
        )
    if config.window_days < 1:
        raise dg.Failure(description=f"window_days must be at least 1, got {config.window_days}")
    as_of = warehouse.as_of_ts
    ran_at = datetime.now(UTC)  # audit reports record runs: the wall clock, not as_of
    window = AuditWindow.ending(as_of, config.window_days)
    pass_id = pass_id_for(ran_at, context.run_id)
    enabled = SETTINGS.audit_enabled

    # Read phase: hash, then read. No connection is held while scoring, so any writer that slips
    # in before the write phase changes the second hash and the pass is caught.
    started = time.perf_counter()
    with warehouse.connect() as con:
        before = tables_sha256(con)
        hash_s = time.perf_counter() - started
        try:
            inputs = read_audit_inputs(con, window) if enabled else None
        except AuditInputError as exc:
            raise dg.Failure(description=str(exc)) from exc
    if (decision := _yield_to_learning(context, "score")) is not None:
        yield _yielded(context, decision)
        return
    try:
        score = score_audit(inputs, window) if inputs is not None else disabled_score()
    except AuditInputError as exc:
        raise dg.Failure(description=str(exc)) from exc
    if (decision := _yield_to_learning(context, "write")) is not None:
        yield _yielded(context, decision)
        return

    # Write phase: hash again, then append the report row (the only write of a pass).
    with warehouse.connect() as con:
        after = tables_sha256(con)
        row = report_row(
            pass_id=pass_id,
            ran_at=ran_at,
            window_days=config.window_days,
            score=score,
            sha256_before=before.combined,
            sha256_after=after.combined,
        )
        changed = before.changed_tables(after)
        if changed:
            row["findings"] = json.dumps(
                [isolation_finding(changed), *json.loads(row["findings"])], sort_keys=True, ensure_ascii=False
            )
        frame = report_frame([row])
        validation = validate(METHODOLOGY_AUDIT_REPORTS_INVARIANTS, frame)
        if not validation.passed:
            raise dg.Failure(
                description="the audit report row breaks its invariants; nothing was written",
                metadata={"summary": dg.MetadataValue.md(validation.summary())},
            )
        with transaction(con):
            if table_exists(con, tables.METHODOLOGY_AUDIT_REPORTS) and scalar(
                con, f"SELECT count(*) FROM {tables.METHODOLOGY_AUDIT_REPORTS} WHERE pass_id = ?", [pass_id]
            ):
                raise dg.Failure(description=f"audit pass {pass_id} is already recorded")
            append_rows(con, tables.METHODOLOGY_AUDIT_REPORTS, frame)
        total = scalar(con, f"SELECT count(*) FROM {tables.METHODOLOGY_AUDIT_REPORTS}")
    elapsed = time.perf_counter() - started

    findings = json.loads(row["findings"])
    if score.composite is None:
        context.log.info(f"audit pass {pass_id}: tier {score.tier}")
    else:
        context.log.info(f"audit pass {pass_id}: composite {score.composite:.1f}, tier {score.tier}")
    metadata: dict = {
        **table_metadata(tables.METHODOLOGY_AUDIT_REPORTS, frame, row_count=total),
        "pass_id": pass_id,
        "tier": score.tier,
        "window_days": config.window_days,
        "as_of": as_of.isoformat(),
        "ran_at": ran_at.isoformat(),
        SHA_BEFORE_KEY: before.combined,
        SHA_AFTER_KEY: after.combined,
        "isolation_ok": not changed,
        "learning_table_rows": dg.MetadataValue.json({t: n for t, n in before.rows.items()}),
        "findings_high": sum(1 for f in findings if f["severity"] == "high"),
        "findings": dg.MetadataValue.md(_findings_markdown(findings)),
        "pass_seconds": round(elapsed, 3),
        "hash_seconds": round(hash_s, 3),
    }
    if score.composite is not None:
        metadata["composite"] = score_metadata(score.composite)
    for dim in DIMENSIONS:
        value = score.dimension_scores.get(dim)
        if value is not None:
            metadata[f"score_{dim}"] = score_metadata(value)
    yield dg.MaterializeResult(
        metadata=rounded_metadata(metadata),
        check_results=[
            result
            for result in (
                isolation_check_result(before, after, pass_id),
                check_result(REPORT_INVARIANTS_CHECK, validation, AUDIT_ASSET_KEY),
            )
            if dg.AssetCheckKey(AUDIT_ASSET_KEY, result.check_name) in context.selected_asset_check_keys
        ],
    )
